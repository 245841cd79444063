// Package review is the review engine behind `diffpal review` and
// `diffpal context`: it gathers the change (range, diff, contents, scope,
// evidence packet), drives an orchestration session in-process through
// package qa, runs each profile on its provider, anchors findings to
// changed lines, applies suppressions and baselines, and produces the
// findings bundle and the session audit trail. It never prints or exits;
// the CLI renders what it returns.
package review

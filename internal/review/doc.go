// Package review is the review engine behind `diffpal review` and
// `diffpal context`: it gathers the change (range, diff, contents, scope,
// evidence packet), drives an orchestration session in-process through
// package qa (engine.go: triage, one report per profile, the deep review
// when the session asks for it, synthesis, finish), runs each profile on
// its provider through the seam of package provider, and puts what the
// providers report through one ordered list of finding stages
// (pipeline.go: validate, scope, anchor, suppress, cite, merge, identify,
// bind, the session's steps, verify, refuted, baseline, bundle), one file
// per stage. The bundle comes from the session's final report through
// qa.BuildExport, the mapping export_qa_findings uses too, with the
// session and the audit trail beside it.
//
// It never prints or exits; the CLI renders what it returns. Providers
// never import it.
package review

package cli

import (
	"context"
	"os"

	"github.com/diffpalhq/diffpal/internal/git"
	"github.com/diffpalhq/diffpal/internal/policy"
	"github.com/diffpalhq/diffpal/internal/repofs"
	"github.com/diffpalhq/diffpal/internal/review"
)

// loadPolicy resolves the range and reads the review policy (config,
// .diffpalignore, rule packs) from the side --config-source chooses:
// base in CI by default, so the change under review cannot choose how it
// is judged (docs/security.md). Whether this is CI is read from ios's
// environment; g runs git at the repository root.
func loadPolicy(ctx context.Context, ios *IOStreams, g *git.Runner, co review.ChangeOptions, source, configPath string) (*policy.Loaded, *git.Range, error) {
	return loadPolicyFor(ctx, ios, g, co, source, configPath, false)
}

// loadPolicyFor is loadPolicy; lenient (doctor) reads a work-tree policy
// even when no range resolves (no default branch yet), without comparing.
func loadPolicyFor(ctx context.Context, ios *IOStreams, r *git.Runner, co review.ChangeOptions, source, configPath string, lenient bool) (*policy.Loaded, *git.Range, error) {
	src, why, err := policy.Choose(source, ios.Getenv)
	if err != nil {
		return nil, nil, usageErr("%v", err)
	}
	root := r.Dir
	rg, err := r.ResolveRange(ctx, co.Range)
	if err != nil {
		if !lenient || src != policy.Worktree {
			return nil, nil, usageErr("%v", err)
		}
		pol, lerr := policy.Load(ctx, policy.Request{Root: root, Git: r, Source: src, Why: why, ConfigPath: configPath, NoCompare: true})
		if lerr != nil {
			return nil, nil, usageErr("%v", lerr)
		}
		return pol, nil, nil
	}
	head := rg.Head
	if rg.Worktree {
		head = ""
	}
	// A diff started ahead lends its cat-file for the policy's reads.
	batch, give, _ := co.Diff.Lend()
	pol, err := policy.Load(ctx, policy.Request{Root: root, Git: r, Source: src, Why: why,
		Base: rg.DiffBase, Head: head, ConfigPath: configPath, Batch: batch})
	give()
	if err != nil {
		return nil, nil, usageErr("%v", err)
	}
	return pol, &rg, nil
}

// readBounded reads a file the user named on the command line, up to max
// bytes (the path is theirs to choose, devices included; the size is
// still bounded).
func readBounded(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return repofs.ReadAtMost(f, max)
}

// packsOf splits the policy's rule packs into the names and contents the
// builtin provider takes.
func packsOf(p *policy.Loaded) (names []string, data [][]byte) {
	for _, pk := range p.Packs {
		names, data = append(names, pk.Name), append(data, pk.Data)
	}
	return names, data
}

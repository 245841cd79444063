// Command tokens measures what a model-backed review sends: tokens per
// review against the naive "whole diff to every profile" approach on the
// same change, and the tokens of a re-review after a one-line push as a
// fraction of the first. It runs the real engine and the real llm
// provider (budgets, chunking, cache) against a counting client that
// answers validly without a network, on a generated git repository.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/diffpalhq/diffpal/internal/git"
	"github.com/diffpalhq/diffpal/internal/provider"
	"github.com/diffpalhq/diffpal/internal/provider/llm"
	"github.com/diffpalhq/diffpal/internal/qa"
	"github.com/diffpalhq/diffpal/internal/review"
)

// quiet answers every call validly with nothing to report; the bench is
// about what is sent, not what comes back.
type quiet struct{}

func (quiet) Name() string { return "counting" }

func (quiet) Complete(_ context.Context, req llm.Request) (llm.Response, error) {
	if req.SchemaName == llm.VerifySchemaName {
		return llm.Response{JSON: json.RawMessage(`{"verdicts":[]}`)}, nil
	}
	return llm.Response{JSON: json.RawMessage(`{"candidates":[],"coverage_gaps":[],"unverified":[]}`)}, nil
}

func main() {
	files := flag.Int("files", 40, "changed files")
	lines := flag.Int("lines", 200, "lines per file")
	flag.Parse()
	dir, err := os.MkdirTemp("", "diffpal-tokens-")
	if err != nil {
		fail(err)
	}
	defer os.RemoveAll(dir)
	repo := filepath.Join(dir, "repo")
	g := func(args ...string) {
		cmd := exec.Command("git", args...)
		cmd.Dir = repo
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir, "GIT_AUTHOR_NAME=b", "GIT_AUTHOR_EMAIL=b@example.com",
			"GIT_COMMITTER_NAME=b", "GIT_COMMITTER_EMAIL=b@example.com")
		if out, err := cmd.CombinedOutput(); err != nil {
			fail(fmt.Errorf("git %v: %v: %s", args, err, out))
		}
	}
	write := func(i int, edit func([]string) []string) {
		p := filepath.Join(repo, fmt.Sprintf("svc/pkg%02d/file.go", i))
		os.MkdirAll(filepath.Dir(p), 0o755)
		body := []string{fmt.Sprintf("package pkg%02d", i), ""}
		for k := 0; k < *lines; k++ {
			body = append(body, fmt.Sprintf("var v%d = compute(%d) // statement %d of pkg%d", k, k, k, i))
		}
		if edit != nil {
			body = edit(body)
		}
		os.WriteFile(p, []byte(strings.Join(body, "\n")+"\n"), 0o644)
	}
	os.MkdirAll(repo, 0o755)
	g("init", "-q", "-b", "main")
	for i := 0; i < *files; i++ {
		write(i, nil)
	}
	g("add", "-A")
	g("commit", "-q", "-m", "base")
	g("checkout", "-q", "-b", "feature")
	change := func(b []string) []string {
		// five added lines in three places per file
		out := append([]string{}, b[:20]...)
		out = append(out, "var added1 = risky(input)", "var added2 = risky(input)")
		out = append(out, b[20:90]...)
		out = append(out, "var added3 = other(input)", "var added4 = other(input)")
		out = append(out, b[90:150]...)
		out = append(out, "var added5 = last(input)")
		return append(out, b[150:]...)
	}
	for i := 0; i < *files; i++ {
		write(i, change)
	}
	g("add", "-A")
	g("commit", "-q", "-m", "feature")

	cache := filepath.Join(dir, "cache")
	run := func() (llm.Stats, int64, []qa.Profile) {
		p, err := llm.New(llm.Config{Client: quiet{}, Model: "bench", CacheDir: cache})
		if err != nil {
			fail(err)
		}
		res, err := review.Run(context.Background(), review.Options{
			Change: review.ChangeOptions{Dir: repo, Range: git.RangeOptions{Base: "main"}}, Provider: p, DeepVerifier: p, SynthesisVerifier: p})
		if err != nil {
			fail(err)
		}
		var naive int64
		for _, pr := range res.Session.ReviewProfiles {
			naive += int64(llm.NaiveRequestBytes(provider.ProfileRequest{Profile: pr, Change: res.Change.ForProviders()}))
		}
		return p.Stats(), naive, res.Session.ReviewProfiles
	}
	first, naiveBytes, profiles := run()
	// One-line push: a single added line changes in one file.
	write(17, func(b []string) []string {
		b = change(b)
		b[21] = "var added2 = risky(sanitize(input))"
		return b
	})
	g("commit", "-qam", "one-line push")
	push, _, _ := run()
	naive := llm.EstimateTokens(strings.Repeat("x", int(naiveBytes)))
	fmt.Printf("change: %d files, %d added lines each; session profiles: %v\n\n", *files, 5, profiles)
	fmt.Println("| review | calls | cache hits | request KB | est. tokens | vs naive | vs first |")
	fmt.Println("|---|---:|---:|---:|---:|---:|---:|")
	fmt.Printf("| naive: whole diff to every profile | %d | – | %.1f | %d | 1.00 | |\n", len(profiles), float64(naiveBytes)/1024, naive)
	fmt.Printf("| diffpal, first review | %d | %d | %.1f | %d | %.2f | 1.00 |\n", first.Calls, first.CacheHits, float64(first.RequestBytes)/1024, first.EstimatedTokens, ratio(first.EstimatedTokens, int64(naive)))
	fmt.Printf("| diffpal, re-review after a one-line push | %d | %d | %.1f | %d | %.2f | %.3f |\n", push.Calls, push.CacheHits, float64(push.RequestBytes)/1024, push.EstimatedTokens, ratio(push.EstimatedTokens, int64(naive)), ratio(push.EstimatedTokens, first.EstimatedTokens))
}

func ratio(a, b int64) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "tokens:", err)
	os.Exit(1)
}

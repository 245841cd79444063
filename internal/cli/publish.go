package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"

	"github.com/diffpalhq/diffpal/findings"
	"github.com/diffpalhq/diffpal/internal/publish"
	"github.com/diffpalhq/diffpal/internal/publish/azure"
	"github.com/diffpalhq/diffpal/internal/publish/github"
	"github.com/diffpalhq/diffpal/internal/publish/gitlab"
	"github.com/diffpalhq/diffpal/internal/safefile"
	"github.com/diffpalhq/diffpal/internal/textsafe"
	"github.com/spf13/cobra"
)

// PublishFlags are the flags publish and review --publish share: how to
// publish, and overrides of what the host's CI environment says.
type PublishFlags struct {
	Feedback   string
	Channel    string
	DryRun     bool
	CheckRun   bool
	Repo       string
	PR         int
	Project    string
	APIURL     string
	GraphQLURL string
	ServerURL  string
	Head       string
}

func (f *PublishFlags) register(cmd *cobra.Command, inReview bool) {
	fl := cmd.Flags()
	fl.StringVar(&f.Feedback, "feedback", string(publish.FeedbackReview), "review: inline comments and the summary; summary: the summary only")
	fl.StringVar(&f.Channel, "review-channel", "", "separate this workflow's comments and summary from other diffpal workflows on the same pull request")
	dry := "write <host>-plan.json and send no write request"
	if inReview {
		dry = "with --publish: " + dry
	}
	fl.BoolVar(&f.DryRun, "dry-run", false, dry)
	fl.BoolVar(&f.CheckRun, "check-run", false, "github: also report the gate decision as a check run (needs checks: write)")
	fl.IntVar(&f.PR, "pr", 0, "pull request (merge request iid) to publish on (default: from the CI environment)")
	fl.StringVar(&f.Project, "project", "", "azure: team project (default SYSTEM_TEAMPROJECT)")
	fl.StringVar(&f.APIURL, "api-url", "", "REST API base (default GITHUB_API_URL, CI_API_V4_URL or SYSTEM_COLLECTIONURI)")
	fl.StringVar(&f.GraphQLURL, "graphql-url", "", "github: GraphQL endpoint (default GITHUB_GRAPHQL_URL)")
	fl.StringVar(&f.ServerURL, "server-url", "", "web UI base for links (default GITHUB_SERVER_URL or CI_PROJECT_URL)")
	if !inReview {
		// review has --repo (the repository id it records) and --head (the
		// revision it reviews) already; publish takes the same names for the
		// pull request's repository and head commit.
		fl.StringVar(&f.Repo, "repo", "", "repository: OWNER/NAME on github, project id or path on gitlab, repository id on azure")
		fl.StringVar(&f.Head, "head", "", "head commit the comments are placed on (default: the CI environment's, else the bundle's head_sha)")
	}
	_ = cmd.RegisterFlagCompletionFunc("feedback", fixedCompletion(string(publish.FeedbackReview), string(publish.FeedbackSummary)))
}

// options checks the flags and returns the publish options.
func (f *PublishFlags) options(gate bool, log io.Writer) (publish.Options, error) {
	fb := publish.Feedback(f.Feedback)
	if fb != publish.FeedbackReview && fb != publish.FeedbackSummary {
		return publish.Options{}, usageErr("--feedback %q: want review or summary", f.Feedback)
	}
	if err := publish.CheckChannel(f.Channel); err != nil {
		return publish.Options{}, usageErr("%v", err)
	}
	if f.PR < 0 {
		return publish.Options{}, usageErr("--pr %d: want a positive number", f.PR)
	}
	return publish.Options{Feedback: fb, Channel: f.Channel, DryRun: f.DryRun, Gate: gate, CheckRun: f.CheckRun, Log: log}, nil
}

// target reads the host's CI environment and applies the flags over it.
func (f *PublishFlags) target(ios *IOStreams, host string) (*publish.Target, error) {
	if !isHost(host) {
		return nil, usageErr("unknown host %q: want %s", host, strings.Join(publish.Hosts, ", "))
	}
	t, err := publish.FromEnv(host, publish.Env{Getenv: ios.Getenv})
	if err != nil {
		return nil, usageErr("%v", err)
	}
	set := func(dst *string, v string) {
		if v != "" {
			*dst = v
		}
	}
	set(&t.Repo, f.Repo)
	set(&t.Project, f.Project)
	set(&t.APIURL, f.APIURL)
	set(&t.GraphQLURL, f.GraphQLURL)
	set(&t.ServerURL, f.ServerURL)
	set(&t.HeadSHA, f.Head)
	if f.PR > 0 {
		t.Number = f.PR
	}
	return t, nil
}

func isHost(h string) bool {
	for _, x := range publish.Hosts {
		if h == x {
			return true
		}
	}
	return false
}

// PublishOptions are the inputs of `diffpal publish`.
type PublishOptions struct {
	IO     *IOStreams
	Host   string
	Input  string
	OutDir string
	Gate   bool
	Dir    string
	Flags  PublishFlags
}

// NewCmdPublish builds `diffpal publish`.
func NewCmdPublish(ios *IOStreams, runF func(*PublishOptions) error) *cobra.Command {
	opts := &PublishOptions{IO: ios}
	cmd := &cobra.Command{
		Use:   "publish github|gitlab|azure [flags]",
		Short: "Publish a findings bundle on its pull request",
		Long: `Publish findings.json on the pull request (merge request) it reviewed:
inline comments on the changed lines (removed lines on the base side), one
sticky summary per --review-channel updated in place, threads of findings
that are gone resolved with a reply naming the commit, and a status
(GitLab commit status, Azure PR status, GitHub check run with --check-run).

Findings are matched across runs by stable_id: a finding whose thread is
there is not posted again, even after a push moved it; a finding that
cannot be placed on a line of the diff is listed in the summary.

The pull request, the API URLs and the token come from the CI environment:
  github  GITHUB_TOKEN, GITHUB_REPOSITORY, GITHUB_EVENT_PATH, GITHUB_API_URL,
          GITHUB_GRAPHQL_URL, GITHUB_SERVER_URL, GITHUB_SHA
  gitlab  CI_API_V4_URL, CI_PROJECT_ID, CI_MERGE_REQUEST_IID,
          CI_MERGE_REQUEST_DIFF_BASE_SHA, CI_COMMIT_SHA, GITLAB_TOKEN or CI_JOB_TOKEN
  azure   SYSTEM_COLLECTIONURI, SYSTEM_TEAMPROJECT, BUILD_REPOSITORY_ID,
          SYSTEM_PULLREQUEST_PULLREQUESTID, SYSTEM_ACCESSTOKEN or AZURE_DEVOPS_EXT_PAT
Flags override them. Tokens are read from the environment only.

The plan — every create, update, resolve and summary line, with its
reason and outcome — is written to <out-dir>/<host>-plan.json before
anything is sent and again after; --dry-run writes it and sends no write
request. gitlab also writes gl-code-quality-report.json with every finding.
A pull request from a fork (read-only token) publishes nothing, says why
and exits 0. Publishing failures exit 4.`,
		Example: `  # In a GitHub pull_request workflow, after diffpal review
  diffpal publish github

  # See what would be posted, without posting
  diffpal publish gitlab --dry-run

  # A second workflow on the same pull request, summary only
  diffpal publish azure --review-channel nightly --feedback summary`,
		Args:      cobra.ExactArgs(1),
		ValidArgs: publish.Hosts,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Host = args[0]
			if runF != nil {
				return runF(opts)
			}
			return publishRun(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.Input, "input", filepath.Join(DefaultOutDir, "findings.json"), "findings bundle to publish")
	fl.StringVar(&opts.OutDir, "out-dir", DefaultOutDir, "directory for <host>-plan.json (and gl-code-quality-report.json)")
	fl.BoolVar(&opts.Gate, "gate", false, "the review gates the merge: a blocking finding makes the status fail")
	fl.StringVarP(&opts.Dir, "dir", "C", ".", "run as if started in this directory")
	opts.Flags.register(cmd, false)
	return cmd
}

func publishRun(ctx context.Context, opts *PublishOptions) error {
	po, err := opts.Flags.options(opts.Gate, opts.IO.ErrOut)
	if err != nil {
		return err
	}
	t, err := opts.Flags.target(opts.IO, opts.Host)
	if err != nil {
		return err
	}
	input := inDir(opts.Dir, opts.Input)
	b, _, err := findings.ReadFile(input)
	if err != nil {
		return usageErr("--input: %v", err)
	}
	outDir, err := filepath.Abs(inDir(opts.Dir, opts.OutDir))
	if err != nil {
		return ioErr(err)
	}
	_, err = publishBundle(ctx, opts.IO, t, b, po, outDir)
	return err
}

// publishBundle publishes b and writes the plan (and the host's report
// files) in outDir. Its error is an *ExitError: usage for a target that
// lacks something, ExitPublish for a failed publication.
func publishBundle(ctx context.Context, ios *IOStreams, t *publish.Target, b *findings.Bundle, po publish.Options, outDir string) (*publish.Plan, error) {
	if t.HeadSHA == "" {
		t.HeadSHA = b.HeadSHA
	}
	needToken := !po.DryRun && t.Fork == ""
	if err := t.Check(needToken); err != nil {
		return nil, usageErr("%v", err)
	}
	if t.Host == publish.GitLab {
		data, err := gitlab.CodeQuality(b)
		if err != nil {
			return nil, ioErr(err)
		}
		if err := writeOutput(ctx, outDir, filepath.Join(outDir, "gl-code-quality-report.json"), safefile.Options{}, func(w io.Writer) error {
			_, err := w.Write(data)
			return err
		}); err != nil {
			return nil, err
		}
	}
	var host publish.Host
	if !t.Token.Empty() && t.Fork == "" {
		h, err := openHost(t, po, publish.HTTPClient(ios.ErrOut))
		if err != nil {
			return nil, usageErr("%v", err)
		}
		host = h
	}
	planPath := filepath.Join(outDir, t.Host+"-plan.json")
	save := func(p *publish.Plan) error {
		return writeOutput(ctx, outDir, planPath, safefile.Options{}, func(w io.Writer) error {
			enc := json.NewEncoder(w)
			enc.SetIndent("", "  ")
			enc.SetEscapeHTML(false)
			return enc.Encode(p)
		})
	}
	p, err := publish.Run(ctx, host, t, b, po, save)
	if err != nil {
		var ee *ExitError
		if errors.As(err, &ee) {
			return p, err
		}
		if ctx.Err() != nil {
			return p, ctx.Err()
		}
		return p, &ExitError{Code: ExitPublish, Err: fmt.Errorf("publish %s: %w", t.Host, err)}
	}
	what := "published on"
	switch {
	case p.Skipped != "":
		what = "nothing published on"
	case po.DryRun || host == nil:
		what = "planned (dry run) for"
	}
	fmt.Fprintf(ios.ErrOut, "diffpal: %s %s #%d: %d new, %d updated, %d kept, %d resolved, summary %s; plan %s\n",
		what, t.Host, t.Number, p.Count(publish.Create), p.Count(publish.Update), p.Count(publish.Keep), p.Count(publish.Resolve),
		summaryWord(p), textsafe.Terminal(planPath))
	if p.Skipped != "" {
		fmt.Fprintf(ios.ErrOut, "diffpal: publishing skipped: %s\n", textsafe.Terminal(p.Skipped))
	}
	return p, nil
}

func summaryWord(p *publish.Plan) string {
	switch {
	case p.Count(publish.UpdateSummary) > 0:
		return "updated"
	case p.Count(publish.CreateSummary) > 0:
		return "created"
	}
	return "untouched"
}

// openHost opens the target's host client.
func openHost(t *publish.Target, po publish.Options, hc *http.Client) (publish.Host, error) {
	switch t.Host {
	case publish.GitHub:
		h, err := github.New(t, hc)
		if err != nil {
			return nil, err
		}
		h.CheckRun = po.CheckRun
		return h, nil
	case publish.GitLab:
		h, err := gitlab.New(t, hc)
		if err != nil {
			return nil, err
		}
		return h, nil
	case publish.Azure:
		h, err := azure.New(t, hc)
		if err != nil {
			return nil, err
		}
		return h, nil
	}
	return nil, fmt.Errorf("unknown host %q", t.Host)
}

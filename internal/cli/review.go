package cli

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/diffpalhq/diffpal/findings"
	"github.com/diffpalhq/diffpal/internal/config"
	"github.com/diffpalhq/diffpal/internal/diff"
	"github.com/diffpalhq/diffpal/internal/git"
	"github.com/diffpalhq/diffpal/internal/output"
	"github.com/diffpalhq/diffpal/internal/output/markdown"
	"github.com/diffpalhq/diffpal/internal/policy"
	"github.com/diffpalhq/diffpal/internal/provider"
	"github.com/diffpalhq/diffpal/internal/providerset"
	"github.com/diffpalhq/diffpal/internal/publish"
	"github.com/diffpalhq/diffpal/internal/review"
	"github.com/diffpalhq/diffpal/internal/rules"
	"github.com/diffpalhq/diffpal/internal/scope"
	"github.com/diffpalhq/diffpal/internal/textsafe"
	"github.com/diffpalhq/diffpal/internal/yamlsafe"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// DefaultOutDir is where review writes its artifacts.
const DefaultOutDir = ".artifacts/diffpal"

// ReviewOptions are the inputs of `diffpal review`.
type ReviewOptions struct {
	IO            *IOStreams
	Range         RangeFlags
	Paths         []string
	OutDir        string
	Formats       []string
	FilterMode    string
	Bundle        string
	Profile       string
	BlockOn       string
	MinConfidence float64
	minConfSet    bool
	Gate          bool
	Baseline      string
	ReviewID      string
	JSON          bool
	Color         string
	RulePacks     []string
	Include       []string
	Exclude       []string
	NoDefaultSkip bool
	MaxFileBytes  int
	ConfigPath    string
	ConfigSource  string
	Provider      string
	Model         string
	Command       string
	NoCache       bool
	// Language, Instructions and InstructionsFile tune what model
	// providers are asked (see instructions).
	Language         string
	Instructions     string
	InstructionsFile string
	// Publish is the host --publish names ("" for none); Pub its flags.
	Publish string
	Pub     PublishFlags
	// record, set by diffpal debug prompt, replaces every model transport
	// with a recorder; the review then writes nothing and the prompts are
	// printed instead.
	record *promptRecorder

	changed map[string]bool
	// settings are the resolved settings (resolve), with where each came
	// from.
	settings config.Settings
}

// NewCmdReview builds `diffpal review`.
func NewCmdReview(ios *IOStreams, runF func(*ReviewOptions) error) *cobra.Command {
	opts := &ReviewOptions{IO: ios}
	cmd := &cobra.Command{
		Use:   "review [flags] [-- PATH...]",
		Short: "Review a git change and write the findings bundle",
		Long: `Review a git change offline with the built-in rule packs and write
.artifacts/diffpal/findings.json (v3), qa-session.json (the orchestration
audit trail), summary.md, diffpal.sarif and report.html.

--format (else the config's review.formats) chooses the outputs, each NAME
or NAME=PATH, comma-separated or repeated:
` + formatHelp() + `
findings.json, the canonical bundle that gate, sarif and validate read, is
always written. The outputs in --out-dir are replaced as one set, with
manifest.json last; NAME=PATH writes one elsewhere instead (a relative PATH
is taken from -C), after the set. An unknown NAME is an error.

With no flags, the current branch is reviewed against its merge-base with
the default branch (origin/HEAD, then main, then master); on the default
branch itself the last commit is reviewed; in a repository without commits
the work tree is. Findings must overlap changed lines (--filter-mode);
every dropped, suppressed or skipped item is listed with its reason.

In a pull-request pipeline (GitHub Actions, GitLab CI, Azure Pipelines)
the default range is the pull request's own base and head, read from the
CI environment, when both commits are in the clone.

--gate exits 10 when a finding blocks (severity >= --block-on, default
high, and confidence >= --min-confidence when set).

--publish HOST then publishes the review on the pull request (as
diffpal publish HOST does); a failure to publish exits 4 after every
output is written, unless the gate blocked (10): the gate decision does
not depend on publishing.`,
		Example: `  # The main job: review this branch
  diffpal review

  # Fail CI on blocking findings
  diffpal review --gate --block-on high

  # Only report what is new since the last release's bundle
  diffpal review --baseline old/findings.json

  # Uncommitted work, machine-readable
  diffpal review --uncommitted --json

  # Only the bundle and SARIF, the SARIF where the upload step expects it
  diffpal review --format json,sarif=results.sarif

  # In a pull-request job: review the pull request and comment on it
  diffpal review --gate --publish github`,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Paths = args
			opts.changed = map[string]bool{}
			cmd.Flags().Visit(func(f *pflag.Flag) { opts.changed[f.Name] = true })
			if runF != nil {
				return runF(opts)
			}
			return reviewRun(cmd.Context(), opts)
		},
	}
	opts.Range.register(cmd)
	fl := cmd.Flags()
	fl.StringVar(&opts.OutDir, "out-dir", DefaultOutDir, "directory for the outputs (--format) and manifest.json")
	fl.StringSliceVar(&opts.Formats, "format", nil, "outputs to write, NAME or NAME=PATH, comma-separated or repeated: "+strings.Join(output.Builtin().Names(), ", ")+" (default: all; json is always written)")
	fl.StringVar(&opts.FilterMode, "filter-mode", config.DefaultFilterMode, "lines findings may sit on: added, diff_context, file, nofilter")
	fl.StringVar(&opts.Bundle, "bundle", "", "force the orchestration bundle (default: chosen from the changed files)")
	fl.StringVar(&opts.Profile, "profile", "", "review with one profile instead of a bundle")
	fl.StringVar(&opts.BlockOn, "block-on", config.DefaultBlockOn, "lowest blocking severity: low, medium, high, critical")
	fl.Float64Var(&opts.MinConfidence, "min-confidence", 0, "also require confidence >= this (0 to 1) to block")
	fl.BoolVar(&opts.Gate, "gate", false, "exit 10 when any finding blocks")
	fl.StringVar(&opts.Baseline, "baseline", "", "earlier findings bundle; findings with a stable_id in it are not reported again")
	fl.StringVar(&opts.ReviewID, "review-id", "local", "review id recorded in the bundle and its finding ids")
	fl.BoolVar(&opts.JSON, "json", false, "print a machine-readable result on stdout instead of the summary")
	fl.StringVar(&opts.Color, "color", string(ColorAuto), "colour the summary: auto, always, never (NO_COLOR is honoured)")
	fl.StringArrayVar(&opts.RulePacks, "rules", nil, "extra rule pack (YAML) to load; repeatable")
	fl.StringArrayVar(&opts.Include, "include", nil, "review only paths matching this glob; repeatable")
	fl.StringArrayVar(&opts.Exclude, "exclude", nil, "skip paths matching this glob; repeatable")
	fl.BoolVar(&opts.NoDefaultSkip, "no-default-skips", false, "also review lock files, vendored and generated files")
	fl.IntVar(&opts.MaxFileBytes, "max-file-bytes", config.DefaultMaxFileBytes, "skip files larger than this")
	fl.StringVar(&opts.ConfigPath, "config", "", "config file (default: .config/diffpal/config.yaml in the repository, if present)")
	fl.StringVar(&opts.ConfigSource, "config-source", "auto", "where config, .diffpalignore and rule packs are read from: auto (base in CI, else worktree), base, head, worktree")
	fl.StringVar(&opts.Provider, "provider", "", "provider: builtin (default), openai, anthropic, command, or a name from the config's providers")
	fl.StringVar(&opts.Model, "model", "", "model for the provider (openai and anthropic read OPENAI_API_KEY/OPENAI_BASE_URL, ANTHROPIC_API_KEY/ANTHROPIC_BASE_URL)")
	fl.StringVar(&opts.Command, "command", "", "agent CLI for --provider command, e.g. \"claude -p\" (prompt on stdin, JSON on stdout)")
	fl.BoolVar(&opts.NoCache, "no-cache", false, "do not reuse or store model answers in .artifacts/diffpal/cache")
	fl.StringVar(&opts.Language, "language", "", "language model providers write their text in, recorded in the bundle (default: the config's review.language)")
	fl.StringVar(&opts.Instructions, "instructions", "", "review instructions for model providers, replacing the config's review.instructions")
	fl.StringVar(&opts.InstructionsFile, "instructions-file", "", "file of review instructions appended to the instructions (a blank line between)")
	fl.StringVar(&opts.Publish, "publish", "", "after writing the outputs, publish on the pull request: "+strings.Join(publish.Hosts, ", ")+" (see diffpal publish --help)")
	opts.Pub.register(cmd, true)
	_ = cmd.RegisterFlagCompletionFunc("publish", fixedCompletion(publish.Hosts...))
	_ = cmd.RegisterFlagCompletionFunc("filter-mode", fixedCompletion(diff.FilterModes...))
	_ = cmd.RegisterFlagCompletionFunc("block-on", fixedCompletion(findings.SeverityNames()...))
	_ = cmd.RegisterFlagCompletionFunc("color", fixedCompletion("auto", "always", "never"))
	_ = cmd.RegisterFlagCompletionFunc("format", fixedCompletion(output.Builtin().Names()...))
	_ = cmd.RegisterFlagCompletionFunc("config-source", fixedCompletion(append([]string{"auto"}, policy.Sources...)...))
	return cmd
}

func fixedCompletion(values ...string) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return values, cobra.ShellCompDirectiveNoFileComp
	}
}

// ReviewOutput is the --json result.
type ReviewOutput struct {
	Blocked  bool              `json:"blocked"`
	Blocking int               `json:"blocking"`
	Files    map[string]string `json:"files"`
	Bundle   *findings.Bundle  `json:"bundle"`
	Audit    review.Audit      `json:"audit"`
}

// checkFlags checks what is flag syntax rather than review policy.
func (o *ReviewOptions) checkFlags() error {
	if _, err := parseColorMode(o.Color); err != nil {
		return err
	}
	if o.ReviewID == "" {
		return usageErr("--review-id must not be empty")
	}
	return nil
}

// overrides are the review settings the user gave on the command line.
func (o *ReviewOptions) overrides() config.Overrides {
	str := func(flag string, v *string) *string {
		if o.changed[flag] {
			return v
		}
		return nil
	}
	ov := config.Overrides{
		FilterMode: str("filter-mode", &o.FilterMode), BlockOn: str("block-on", &o.BlockOn),
		Bundle: str("bundle", &o.Bundle), Profile: str("profile", &o.Profile),
		Provider: str("provider", &o.Provider), Model: str("model", &o.Model), Language: str("language", &o.Language),
		Include: o.Include, Exclude: o.Exclude,
	}
	if o.changed["min-confidence"] {
		ov.MinConfidence = &o.MinConfidence
	}
	if o.changed["max-file-bytes"] {
		ov.MaxFileBytes = &o.MaxFileBytes
	}
	if o.changed["no-default-skips"] {
		ov.NoDefaultSkips = &o.NoDefaultSkip
	}
	if o.changed["format"] {
		ov.Formats = append([]string{}, o.Formats...)
	}
	return ov
}

// resolve checks the flags, then has config.Resolve layer them over the
// DIFFPAL_* variables and the config file (flag > variable > file >
// default) and check the result; the effective values are written back
// into o, so the rest of the run reads one set of fields.
func (o *ReviewOptions) resolve(cfg *config.Config) (findings.Policy, []review.Ignore, error) {
	if err := o.checkFlags(); err != nil {
		return findings.Policy{}, nil, err
	}
	s, err := config.Resolve(cfg, o.overrides(), o.IO.Getenv)
	if err != nil {
		return findings.Policy{}, nil, usageErr("%v", err)
	}
	o.settings = s
	o.FilterMode, o.BlockOn, o.Bundle, o.Profile = s.FilterMode, string(s.BlockOn), s.Bundle, s.Profile
	o.Provider, o.Model, o.MaxFileBytes, o.NoDefaultSkip = s.Provider, s.Model, s.MaxFileBytes, s.NoDefaultSkips
	o.Language = s.Language
	o.Include, o.Exclude, o.Formats = s.Include, s.Exclude, s.Formats
	o.minConfSet = s.MinConfidence != nil
	if o.minConfSet {
		o.MinConfidence = *s.MinConfidence
	}
	var ignores []review.Ignore
	for _, ig := range s.Ignores {
		ignores = append(ignores, review.Ignore{Rule: ig.Rule, Category: ig.Category, Path: ig.Path, Reason: ig.Reason})
	}
	return s.Policy(), ignores, nil
}

// instructions are the review instructions model providers get: the
// config's, replaced by --instructions when given, with the trimmed
// content of --instructions-file appended after a blank line.
func (o *ReviewOptions) instructions(cfg *config.Config) (string, error) {
	text := cfg.Review.Instructions
	if o.changed["instructions"] {
		text = o.Instructions
	}
	text = strings.TrimSpace(text)
	if o.InstructionsFile != "" {
		data, err := readBounded(inDir(o.Range.Dir, o.InstructionsFile), 1<<20)
		if err != nil {
			return "", usageErr("--instructions-file %s: %v", o.InstructionsFile, err)
		}
		extra := strings.TrimSpace(string(data))
		if extra == "" {
			return "", usageErr("--instructions-file %s: the file is blank", o.InstructionsFile)
		}
		if text != "" {
			text += "\n\n"
		}
		text += extra
	}
	return text, nil
}

// formatHelp lists the output formats for review's help.
func formatHelp() string {
	var b strings.Builder
	reg := output.Builtin()
	for _, n := range reg.Names() {
		f, _ := reg.Lookup(n)
		fmt.Fprintf(&b, "  %-10s %s\n", n, f.DefaultFile())
	}
	fmt.Fprintf(&b, "Default: %s.\n", strings.Join(reg.Defaults(), ","))
	return b.String()
}

func reviewRun(ctx context.Context, opts *ReviewOptions) error {
	defer review.PrintPhases()
	review.Phase("startup: process")
	// The driver environment's git config starts first, before the
	// CPU-bound goroutines below are there to delay it.
	at := &git.Runner{Dir: opts.Range.Dir}
	at.Warm(ctx)
	if p := cmp.Or(opts.Provider, opts.IO.Getenv(config.EnvProvider)); p == "" || p == "builtin" {
		// The built-in rules compile while git resolves the range (the
		// config may still name another provider: then they are dropped
		// once the providers are built).
		rules.Prewarm()
	}
	// The root and the range's named commits in one git process.
	var mbBase, mbHead string
	if r := opts.Range; r.Base != "" && r.Since == "" && !r.Uncommitted && !r.NoMergeBase {
		mbBase, mbHead = r.Base, cmp.Or(r.Head, "HEAD")
	}
	root, err := at.LocateRange(ctx, mbBase, mbHead, "HEAD", opts.Range.Head, opts.Range.Base, opts.Range.Since)
	if err != nil {
		return changeErrOf(err)
	}
	// What the outputs compile on first use, compiled on the other core
	// while git reads the policy and diffs.
	go func() {
		findings.Prewarm()
		output.Prewarm()
	}()
	// One runner at the root for everything the review asks git: the
	// repository's driver environment is worked out once.
	g := at.At(root)
	// -C means "as if started there" (git's rule, shared by every
	// command): relative paths in flags are relative to that directory.
	opts.ConfigPath, opts.Baseline = inDir(opts.Range.Dir, opts.ConfigPath), inDir(opts.Range.Dir, opts.Baseline)
	for i, p := range opts.RulePacks {
		opts.RulePacks[i] = inDir(opts.Range.Dir, p)
	}
	// --publish is checked before the review runs: a missing token or pull
	// request should not cost a (model) review first.
	var pubOpts publish.Options
	var pubTarget *publish.Target
	if opts.Publish != "" {
		if !isHost(opts.Publish) {
			return usageErr("--publish %q: want %s", opts.Publish, strings.Join(publish.Hosts, ", "))
		}
		if pubOpts, err = opts.Pub.options(opts.Gate, opts.IO.ErrOut); err != nil {
			return err
		}
		if pubTarget, err = opts.Pub.target(opts.IO, opts.Publish); err != nil {
			return err
		}
		if err := pubTarget.Check(!pubOpts.DryRun && pubTarget.Fork == ""); err != nil {
			return usageErr("--publish: %v", err)
		}
	}
	opts.prRange(ctx, g, pubTarget)
	co := opts.Range.options(opts.Paths)
	// A committed range's diff starts now: git diffs while the policy is
	// read and the rules load (the range resolves from what LocateRange
	// found, without asking git again). The review streams it, or closes
	// it if it asks for another; the defer stops it on an early return.
	if rg, err := g.ResolveRange(ctx, co.Range); err == nil && !rg.Worktree && rg.Head != "" {
		// When the head is the checked-out commit (as in CI), the new
		// contents are read from the work tree, each checked against
		// its blob id.
		root := ""
		if rg.CheckedOut {
			root = g.Dir
		}
		co.Diff = g.At(co.Dir).StartDiffFilesFrom(ctx, rg.DiffBase, rg.Head, root, co.Paths...)
		defer co.Diff.Close()
	}
	pol, rg, err := loadPolicy(ctx, opts.IO, g, co, opts.ConfigSource, opts.ConfigPath)
	if err != nil {
		return err
	}
	co.Resolved, co.Git = rg, g
	review.Phase("startup: range and policy")
	cfg := pol.Config
	policyRec, ignores, err := opts.resolve(cfg)
	if err != nil {
		return err
	}
	arts, outDir, err := opts.planOutputs(root)
	if err != nil {
		return err
	}
	packNames, packs := packsOf(pol)
	for _, p := range opts.RulePacks {
		// The user's own flag: any path, but a bounded read.
		data, err := readBounded(p, int64(yamlsafe.RulePack.MaxBytes))
		if err != nil {
			return usageErr("--rules %s: %v", p, err)
		}
		packs, packNames = append(packs, data), append(packNames, p)
	}
	instructions, err := opts.instructions(cfg)
	if err != nil {
		return err
	}
	providers, err := buildProviders(providerset.Choice{Getenv: opts.IO.Getenv, Name: opts.Provider, Model: opts.Model, Command: opts.Command,
		NoCache: opts.NoCache, Root: root, Packs: packs, PackNames: packNames, Instructions: instructions, Language: opts.Language,
		Record: opts.record.transport()}, cfg)
	if err != nil {
		return err
	}
	rules.DiscardPrewarm()
	review.Phase("startup: providers (rule packs)")
	var baseline *findings.Bundle
	if opts.Baseline != "" {
		b, _, err := findings.ReadFile(opts.Baseline)
		if err != nil {
			return usageErr("--baseline: %v", err)
		}
		baseline = b
	}
	co.Scope = scope.Options{Ignore: pol.Ignore, Include: opts.Include, Exclude: opts.Exclude, NoDefaultSkips: opts.NoDefaultSkip, MaxBytes: opts.MaxFileBytes}
	prog := newProgress(opts.IO)
	res, err := review.Run(ctx, review.Options{
		Change: co, FilterMode: opts.FilterMode, Bundle: opts.Bundle, Profile: opts.Profile,
		Provider: providers.Provider, DeepVerifier: providers.Deep, SynthesisVerifier: providers.Synthesis,
		Policy: policyRec, ReviewID: opts.ReviewID, Baseline: baseline, Progress: prog.step, Ignores: ignores,
		ReviewPolicy: &pol.Record, Language: opts.Language, InspectionRequired: cfg.Inspection.Required,
	})
	prog.done()
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if errors.Is(err, provider.ErrNotInspected) {
			return &ExitError{Code: ExitProvider, Err: err}
		}
		if perr := providerErr(err, providers); perr != nil {
			return perr
		}
		return changeErrOf(err)
	}
	if opts.record != nil {
		return opts.record.print(opts.IO.Out, res)
	}
	review.Phase("review")
	paths, err := writeArtifactsContext(ctx, outDir, res, arts)
	if err != nil {
		return ioErr(err)
	}
	review.Phase("write outputs")
	blocking := res.Bundle.Tally().Blocking
	if opts.JSON {
		enc := json.NewEncoder(opts.IO.Out)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		if err := enc.Encode(ReviewOutput{Blocked: blocking > 0, Blocking: blocking, Files: paths, Bundle: res.Bundle, Audit: res.Audit}); err != nil {
			return ioErr(err)
		}
	} else {
		wd, _ := opts.IO.Getwd()
		shown := map[string]string{}
		for k, p := range paths {
			shown[k] = relToWd(wd, p)
		}
		writeTerminalSummaryIn(opts.IO.Out, wd, res, shown, opts.IO.ColorEnabled(ColorMode(opts.Color)), opts.Gate)
	}
	var pubErr error
	if opts.Publish != "" {
		_, pubErr = publishBundle(ctx, opts.IO, pubTarget, res.Bundle, pubOpts, outDir)
	}
	if opts.Gate && blocking > 0 {
		if pubErr != nil {
			fmt.Fprintf(opts.IO.ErrOut, "diffpal: %v\n", pubErr)
		}
		return silent(ExitGateBlocked)
	}
	return pubErr
}

// prRange fills --base and --head from the CI environment's pull request
// (the --publish host's, else the CI system diffpal runs on) when no
// range flag is given and both commits are in the clone; otherwise the
// default range stands, with a note when the pull request's commits are
// missing (a shallow checkout). t is --publish's target, already read;
// nil without --publish.
func (o *ReviewOptions) prRange(ctx context.Context, g *git.Runner, t *publish.Target) {
	if t == nil {
		var host string
		switch {
		case o.IO.Getenv("GITHUB_ACTIONS") == "true":
			host = publish.GitHub
		case o.IO.Getenv("GITLAB_CI") == "true":
			host = publish.GitLab
		case strings.EqualFold(o.IO.Getenv("TF_BUILD"), "true"):
			host = publish.Azure
		default:
			return
		}
		var err error
		if t, err = publish.FromEnv(host, publish.Env{Getenv: o.IO.Getenv}); err != nil {
			return
		}
	}
	if t.Number == 0 {
		return
	}
	r := o.Range
	if r.Base != "" || r.Head != "" || r.Since != "" || r.Uncommitted || o.changed["no-merge-base"] {
		return
	}
	base := t.BaseSHA
	if base == "" && t.BaseRef != "" {
		base = "origin/" + t.BaseRef
	}
	if base == "" || t.HeadSHA == "" {
		return
	}
	for _, rev := range []string{base, t.HeadSHA} {
		if _, err := g.ResolveCommit(ctx, rev); err != nil {
			fmt.Fprintf(o.IO.ErrOut, "diffpal: the pull request's commit %s is not in this clone (check out with fetch-depth: 0); reviewing the default range\n", textsafe.Terminal(output.ShortSHA(rev)))
			return
		}
	}
	o.Range.Base, o.Range.Head = base, t.HeadSHA
}

// summaryInfo is what summary.md says besides the findings.
func summaryInfo(res *review.Result) markdown.Info { return output.SummaryInfo(res) }

// planOutputs selects the outputs (--format, else review.formats, else the
// defaults) and resolves where each goes: the output directory is at the
// repository root by default, wherever diffpal was started, and an
// explicit relative --out-dir is relative to -C, as is a --format path; a
// review.formats path is relative to the repository root.
func (o *ReviewOptions) planOutputs(root string) ([]artifact, string, error) {
	from := o.settings.From["formats"]
	outs, err := output.Builtin().Select(o.Formats, from)
	if err != nil {
		return nil, "", usageErr("%v", err)
	}
	outDir := o.OutDir
	if !filepath.IsAbs(outDir) {
		if outDir == DefaultOutDir {
			outDir = filepath.Join(root, outDir)
		} else if abs, err := filepath.Abs(inDir(o.Range.Dir, outDir)); err == nil {
			outDir = abs
		}
	}
	resolve := func(p string) string {
		if filepath.IsAbs(p) {
			return p
		}
		if from != "--format" {
			return filepath.Join(root, filepath.FromSlash(p))
		}
		if abs, err := filepath.Abs(inDir(o.Range.Dir, p)); err == nil {
			return abs
		}
		return p
	}
	arts, err := planArtifacts(outs, outDir, from, resolve)
	return arts, outDir, err
}

// relToWd shows p relative to the working directory when it is below it.
func relToWd(wd, p string) string {
	if wd == "" {
		return p
	}
	if rel, err := filepath.Rel(wd, p); err == nil && !strings.HasPrefix(rel, "..") {
		return rel
	}
	return p
}

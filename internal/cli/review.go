package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/diffpalhq/diffpal/findings"
	"github.com/diffpalhq/diffpal/internal/config"
	"github.com/diffpalhq/diffpal/internal/diff"
	"github.com/diffpalhq/diffpal/internal/git"
	"github.com/diffpalhq/diffpal/internal/output/markdown"
	"github.com/diffpalhq/diffpal/internal/policy"
	"github.com/diffpalhq/diffpal/internal/review"
	"github.com/diffpalhq/diffpal/internal/scope"
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

	changed map[string]bool
}

// NewCmdReview builds `diffpal review`.
func NewCmdReview(ios *IOStreams, runF func(*ReviewOptions) error) *cobra.Command {
	opts := &ReviewOptions{IO: ios}
	cmd := &cobra.Command{
		Use:   "review [flags] [-- PATH...]",
		Short: "Review a git change and write the findings bundle",
		Long: `Review a git change offline with the built-in rule packs and write
.artifacts/diffpal/findings.json (v3), qa-session.json (the orchestration
audit trail), summary.md and diffpal.sarif.

With no flags, the current branch is reviewed against its merge-base with
the default branch (origin/HEAD, then main, then master); on the default
branch itself the last commit is reviewed; in a repository without commits
the work tree is. Findings must overlap changed lines (--filter-mode);
every dropped, suppressed or skipped item is listed with its reason.

--gate exits 10 when a finding blocks (severity >= --block-on, default
high, and confidence >= --min-confidence when set).`,
		Example: `  # The main job: review this branch
  diffpal review

  # Fail CI on blocking findings
  diffpal review --gate --block-on high

  # Only report what is new since the last release's bundle
  diffpal review --baseline old/findings.json

  # Uncommitted work, machine-readable
  diffpal review --uncommitted --json`,
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
	fl.StringVar(&opts.OutDir, "out-dir", DefaultOutDir, "directory for findings.json, qa-session.json, summary.md and diffpal.sarif")
	fl.StringVar(&opts.FilterMode, "filter-mode", diff.FilterAdded, "lines findings may sit on: added, diff_context, file, nofilter")
	fl.StringVar(&opts.Bundle, "bundle", "", "force the orchestration bundle (default: chosen from the changed files)")
	fl.StringVar(&opts.Profile, "profile", "", "review with one profile instead of a bundle")
	fl.StringVar(&opts.BlockOn, "block-on", "high", "lowest blocking severity: low, medium, high, critical")
	fl.Float64Var(&opts.MinConfidence, "min-confidence", 0, "also require confidence >= this (0 to 1) to block")
	fl.BoolVar(&opts.Gate, "gate", false, "exit 10 when any finding blocks")
	fl.StringVar(&opts.Baseline, "baseline", "", "earlier findings bundle; findings with a stable_id in it are not reported again")
	fl.StringVar(&opts.ReviewID, "review-id", "local", "review id recorded in the bundle and its finding ids")
	fl.BoolVar(&opts.JSON, "json", false, "print a machine-readable result on stdout instead of the summary")
	fl.StringVar(&opts.Color, "color", "auto", "colour the summary: auto, always, never (NO_COLOR is honoured)")
	fl.StringArrayVar(&opts.RulePacks, "rules", nil, "extra rule pack (YAML) to load; repeatable")
	fl.StringArrayVar(&opts.Include, "include", nil, "review only paths matching this glob; repeatable")
	fl.StringArrayVar(&opts.Exclude, "exclude", nil, "skip paths matching this glob; repeatable")
	fl.BoolVar(&opts.NoDefaultSkip, "no-default-skips", false, "also review lock files, vendored and generated files")
	fl.IntVar(&opts.MaxFileBytes, "max-file-bytes", 1<<20, "skip files larger than this")
	fl.StringVar(&opts.ConfigPath, "config", "", "config file (default: .config/diffpal/config.yaml in the repository, if present)")
	fl.StringVar(&opts.ConfigSource, "config-source", "auto", "where config, .diffpalignore and rule packs are read from: auto (base in CI, else worktree), base, head, worktree")
	fl.StringVar(&opts.Provider, "provider", "", "provider: builtin (default), openai, anthropic, command, or a name from the config's providers")
	fl.StringVar(&opts.Model, "model", "", "model for the provider (openai and anthropic read OPENAI_API_KEY/OPENAI_BASE_URL, ANTHROPIC_API_KEY/ANTHROPIC_BASE_URL)")
	fl.StringVar(&opts.Command, "command", "", "agent CLI for --provider command, e.g. \"claude -p\" (prompt on stdin, JSON on stdout)")
	fl.BoolVar(&opts.NoCache, "no-cache", false, "do not reuse or store model answers in .artifacts/diffpal/cache")
	_ = cmd.RegisterFlagCompletionFunc("filter-mode", fixedCompletion(diff.FilterModes...))
	_ = cmd.RegisterFlagCompletionFunc("block-on", fixedCompletion("low", "medium", "high", "critical"))
	_ = cmd.RegisterFlagCompletionFunc("color", fixedCompletion("auto", "always", "never"))
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

func (o *ReviewOptions) validate() (findings.Policy, error) {
	var pol findings.Policy
	if err := diff.ValidFilter(o.FilterMode); err != nil {
		return pol, usageErr("--filter-mode: %v", err)
	}
	s, err := findings.ParseSeverity(o.BlockOn)
	if err != nil {
		return pol, usageErr("invalid --block-on %q: want one of low, medium, high, critical", o.BlockOn)
	}
	pol.BlockOn = s
	if o.minConfSet {
		if math.IsNaN(o.MinConfidence) || o.MinConfidence < 0 || o.MinConfidence > 1 {
			return pol, usageErr("invalid --min-confidence %v: want a number from 0 to 1", o.MinConfidence)
		}
		mc := o.MinConfidence
		pol.MinConfidence = &mc
	}
	switch o.Color {
	case "auto", "always", "never":
	default:
		return pol, usageErr("invalid --color %q: want auto, always or never", o.Color)
	}
	if o.Bundle != "" && o.Profile != "" {
		return pol, usageErr("--bundle and --profile are mutually exclusive")
	}
	if o.MaxFileBytes <= 0 {
		return pol, usageErr("invalid --max-file-bytes %d: want a positive number of bytes", o.MaxFileBytes)
	}
	if o.ReviewID == "" {
		return pol, usageErr("--review-id must not be empty")
	}
	if err := checkGlobs(o.Include, o.Exclude); err != nil {
		return pol, err
	}
	return pol, nil
}

// layer applies the config file and DIFFPAL_* variables under the flags:
// a flag the user set wins, then the environment, then the file, then the
// flag's default.
func (o *ReviewOptions) layer(cfg *config.Config) ([]review.Ignore, error) {
	set := func(flag, env string, fromCfg string, dst *string) {
		if o.changed[flag] {
			return
		}
		if v, ok := os.LookupEnv(env); ok && v != "" {
			*dst = v
			return
		}
		if fromCfg != "" {
			*dst = fromCfg
		}
	}
	r := cfg.Review
	set("filter-mode", "DIFFPAL_FILTER_MODE", r.FilterMode, &o.FilterMode)
	set("block-on", "DIFFPAL_BLOCK_ON", r.BlockOn, &o.BlockOn)
	// Bundle and profile are one choice (triage's): the first layer that
	// sets either decides it.
	switch {
	case o.changed["bundle"] || o.changed["profile"]:
	case os.Getenv("DIFFPAL_BUNDLE") != "" || os.Getenv("DIFFPAL_PROFILE") != "":
		o.Bundle, o.Profile = os.Getenv("DIFFPAL_BUNDLE"), os.Getenv("DIFFPAL_PROFILE")
	default:
		o.Bundle, o.Profile = r.Bundle, r.Profile
	}
	set("provider", "DIFFPAL_PROVIDER", cfg.Provider, &o.Provider)
	set("model", "DIFFPAL_MODEL", "", &o.Model)
	if !o.changed["min-confidence"] {
		if v, ok := os.LookupEnv("DIFFPAL_MIN_CONFIDENCE"); ok && v != "" {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return nil, usageErr("invalid DIFFPAL_MIN_CONFIDENCE %q: want a number from 0 to 1", v)
			}
			o.MinConfidence, o.minConfSet = f, true
		} else if r.MinConfidence != nil {
			o.MinConfidence, o.minConfSet = *r.MinConfidence, true
		}
	} else {
		o.minConfSet = true
	}
	if !o.changed["max-file-bytes"] && r.MaxFileBytes > 0 {
		o.MaxFileBytes = r.MaxFileBytes
	}
	if !o.changed["no-default-skips"] && r.DefaultSkips != nil {
		o.NoDefaultSkip = !*r.DefaultSkips
	}
	o.Include = append(append([]string(nil), r.Include...), o.Include...)
	o.Exclude = append(append([]string(nil), r.Exclude...), o.Exclude...)
	var ignores []review.Ignore
	for _, ig := range cfg.Ignores {
		ignores = append(ignores, review.Ignore{Rule: ig.Rule, Category: ig.Category, Path: ig.Path, Reason: ig.Reason})
	}
	return ignores, nil
}

func reviewRun(ctx context.Context, opts *ReviewOptions) error {
	root, err := (&git.Runner{Dir: opts.Range.Dir}).TopLevel(ctx)
	if err != nil {
		return changeErrOf(err)
	}
	// -C means "as if started there" (git's rule, shared by every
	// command): relative paths in flags are relative to that directory.
	opts.ConfigPath, opts.Baseline = inDir(opts.Range.Dir, opts.ConfigPath), inDir(opts.Range.Dir, opts.Baseline)
	for i, p := range opts.RulePacks {
		opts.RulePacks[i] = inDir(opts.Range.Dir, p)
	}
	co := opts.Range.options(opts.Paths)
	pol, rg, err := loadPolicy(ctx, root, co, opts.ConfigSource, opts.ConfigPath)
	if err != nil {
		return err
	}
	co.Resolved = rg
	cfg := pol.Config
	ignores, err := opts.layer(cfg)
	if err != nil {
		return err
	}
	policyRec, err := opts.validate()
	if err != nil {
		return err
	}
	if err := validateChoice("--bundle", opts.Bundle, bundleNames()); err != nil {
		return err
	}
	if err := validateChoice("--profile", opts.Profile, profileNames()); err != nil {
		return err
	}
	var packs [][]byte
	var packNames []string
	for _, p := range pol.Packs {
		packs, packNames = append(packs, p.Data), append(packNames, p.Name)
	}
	for _, p := range opts.RulePacks {
		// The user's own flag: any path, but a bounded read.
		data, err := readBounded(p, int64(yamlsafe.RulePack.MaxBytes))
		if err != nil {
			return usageErr("--rules %s: %v", p, err)
		}
		packs, packNames = append(packs, data), append(packNames, p)
	}
	providers, err := buildProviders(providerChoice{name: opts.Provider, model: opts.Model, command: opts.Command,
		noCache: opts.NoCache, root: root, packs: packs, packNames: packNames, instructions: cfg.Review.Instructions}, cfg)
	if err != nil {
		return err
	}
	var baseline *findings.Bundle
	if opts.Baseline != "" {
		b, _, err := findings.ReadFile(opts.Baseline)
		if err != nil {
			return usageErr("--baseline: %v", err)
		}
		baseline = b
	}
	co.Scope = scope.Options{Ignore: pol.Ignore, Include: opts.Include, Exclude: opts.Exclude, NoDefaultSkips: opts.NoDefaultSkip, MaxBytes: opts.MaxFileBytes}
	prog := newProgress(opts.IO.ErrOut)
	res, err := review.Run(ctx, review.Options{
		Change: co, FilterMode: opts.FilterMode, Bundle: opts.Bundle, Profile: opts.Profile,
		Provider: providers.provider, DeepVerifier: providers.deep, SynthesisVerifier: providers.synthesis,
		Policy: policyRec, ReviewID: opts.ReviewID, Baseline: baseline, Progress: prog.step, Ignores: ignores,
		ReviewPolicy: &pol.Record,
	})
	prog.done()
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if perr := providerErr(err, providers); perr != nil {
			return perr
		}
		return changeErrOf(err)
	}
	// The default lives at the repository root, wherever diffpal was
	// started; an explicit relative --out-dir is relative to -C.
	outDir := opts.OutDir
	if !filepath.IsAbs(outDir) {
		if outDir == DefaultOutDir {
			outDir = filepath.Join(res.Change.Root, outDir)
		} else if abs, err := filepath.Abs(inDir(opts.Range.Dir, outDir)); err == nil {
			outDir = abs
		}
	}
	paths, err := writeArtifactsContext(ctx, outDir, res)
	if err != nil {
		return ioErr(err)
	}
	blocking := res.Bundle.Tally().Blocking
	if opts.JSON {
		enc := json.NewEncoder(opts.IO.Out)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		if err := enc.Encode(ReviewOutput{Blocked: blocking > 0, Blocking: blocking, Files: paths, Bundle: res.Bundle, Audit: res.Audit}); err != nil {
			return ioErr(err)
		}
	} else {
		shown := map[string]string{}
		wd, _ := os.Getwd()
		for k, p := range paths {
			shown[k] = p
			if rel, err := filepath.Rel(wd, p); err == nil && !strings.HasPrefix(rel, "..") {
				shown[k] = rel
			}
		}
		writeTerminalSummary(opts.IO.Out, res, shown, useColor(opts.Color, opts.IO.Out), opts.Gate)
	}
	if opts.Gate && blocking > 0 {
		return silent(ExitGateBlocked)
	}
	return nil
}

func validateChoice(flag, v string, allowed []string) error {
	if v == "" {
		return nil
	}
	for _, a := range allowed {
		if a == v {
			return nil
		}
	}
	return usageErr("invalid %s %q: want one of %s", flag, v, strings.Join(allowed, ", "))
}

func summaryInfo(res *review.Result) markdown.Info {
	a := res.Audit
	ch := res.Change
	in := markdown.Info{
		Repository: ch.Repository, Range: shortSHA(ch.Range.DiffBase) + ".." + shortSHA(ch.Range.Head), Why: ch.Range.Why,
		Provider: a.Provider, Triage: a.Triage, Files: a.Files, AddedLines: a.AddedLines, Notes: a.Notes,
	}
	if ch.Range.Worktree {
		in.Range = shortSHA(ch.Range.DiffBase) + "..worktree"
	}
	for _, s := range a.Skips {
		in.Skips = append(in.Skips, markdown.Note{What: s.Path, Reason: s.Reason + ": " + s.Detail})
	}
	for _, d := range a.Drops {
		in.Drops = append(in.Drops, markdown.Note{Reason: d.Reason, Count: d.Count, What: strings.Join(d.Samples, ", ")})
	}
	for _, s := range a.Suppressed {
		in.Suppressed = append(in.Suppressed, markdown.Note{What: fmt.Sprintf("%s:%d %s", s.Path, s.Line, nonEmptyStr(s.RuleID, s.Category)), Reason: s.By + ": " + s.Reason})
	}
	for _, s := range a.Invalid {
		in.Invalid = append(in.Invalid, markdown.Note{What: fmt.Sprintf("%s:%d %s", s.Path, s.Line, nonEmptyStr(s.RuleID, s.Category)), Reason: s.Reason})
	}
	if a.Baseline != nil {
		in.Baseline = &markdown.Baseline{New: len(a.Baseline.New), Unchanged: len(a.Baseline.Unchanged), Fixed: len(a.Baseline.Fixed)}
	}
	if a.Deep != nil {
		in.Deep = fmt.Sprintf("ran (%s): examined %d, lowered %d, raised %d", strings.Join(a.Deep.Reasons, ", "), a.Deep.Examined, a.Deep.Lowered, a.Deep.Raised)
	}
	if pol := a.Policy; pol != nil {
		in.PolicySource, in.PolicyWhy = pol.Source, pol.Why
		for _, c := range pol.Changes {
			what := c.Path
			if c.Line > 0 {
				what = fmt.Sprintf("%s:%d", c.Path, c.Line)
			}
			in.PolicyChanges = append(in.PolicyChanges, markdown.Note{What: what, Reason: c.Kind + ": " + c.Detail})
		}
	}
	return in
}

func nonEmptyStr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// isTerminal reports whether w is a character device.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

func useColor(mode string, w io.Writer) bool {
	switch mode {
	case "always":
		return true
	case "never":
		return false
	}
	if _, ok := os.LookupEnv("NO_COLOR"); ok {
		return false
	}
	return isTerminal(w) && os.Getenv("TERM") != "dumb"
}

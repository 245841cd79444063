package cli

import (
	"bufio"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strings"

	"github.com/diffpalhq/diffpal/findings"
	"github.com/diffpalhq/diffpal/internal/secrets"
	"github.com/diffpalhq/diffpal/internal/textsafe"
	"github.com/spf13/cobra"
)

// GateOptions are the inputs of `diffpal gate`.
type GateOptions struct {
	IO *IOStreams
	// Dir is -C; File is resolved from it.
	Dir           string
	File          string
	BlockOn       string
	MinConfidence float64
	minConfSet    bool
	JSON          bool
	// Annotations is "github" to print workflow commands (::error and
	// ::warning with file and line) for the findings.
	Annotations string
}

// GateReport is the --json output.
type GateReport struct {
	File    string               `json:"file"`
	Blocked bool                 `json:"blocked"`
	Version string               `json:"version"`
	Policy  *findings.GatePolicy `json:"policy,omitempty"`
	// Warnings are the values read only after normalizing them (a
	// severity that is not lower-case); they do not change the answer.
	Warnings []findings.Problem `json:"warnings,omitempty"`
	findings.GateResult
}

// NewCmdGate builds `diffpal gate`.
func NewCmdGate(ios *IOStreams, runF func(*GateOptions) error) *cobra.Command {
	opts := &GateOptions{IO: ios}
	cmd := &cobra.Command{
		Use:   "gate [FILE]",
		Short: "Exit 10 when a findings bundle has blocking findings",
		Long: `Gate a CI step on a findings bundle (default .artifacts/diffpal/findings.json).

By default the stored blocking flags are trusted, so the answer is exactly
that of jq -e '[.findings[] | select(.blocking == true)] | length == 0'.
--block-on and --min-confidence recompute blocking from each finding's
severity and confidence instead.

A severity that is not lower-case ("HIGH", "Medium") is read as its
lower-case value with a warning on stderr, as DiffPal's reader does; it
does not change the answer.

Exit 0 when nothing blocks, 10 when something does, 2 when the bundle is
invalid. One summary line goes to stderr; --json prints a report on stdout.

` + dirHelp,
		Example: `  diffpal gate
  diffpal gate --block-on medium
  diffpal gate --block-on high --min-confidence 0.8 findings.json
  diffpal review -C repo && diffpal gate -C repo
  diffpal gate --json | jq .blocking`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkDir(opts.Dir); err != nil {
				return err
			}
			if len(args) == 1 {
				opts.File = inDir(opts.Dir, args[0])
			} else {
				opts.File = filepath.Join(artifactsRoot(cmd.Context(), opts.Dir), findings.DefaultPath)
			}
			opts.minConfSet = cmd.Flags().Changed("min-confidence")
			if runF != nil {
				return runF(opts)
			}
			return gateRun(opts)
		},
	}
	cmd.Flags().StringVar(&opts.BlockOn, "block-on", "", "recompute blocking: lowest blocking severity (low, medium, high, critical)")
	cmd.Flags().Float64Var(&opts.MinConfidence, "min-confidence", 0, "recompute blocking: also require confidence >= this (0 to 1)")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print a machine-readable report on stdout")
	cmd.Flags().StringVar(&opts.Annotations, "annotations", "", "github: print GitHub Actions annotations on stdout (::error for blocking findings, ::warning for the others)")
	addDirFlag(cmd, &opts.Dir)
	_ = cmd.RegisterFlagCompletionFunc("block-on", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return findings.SeverityNames(), cobra.ShellCompDirectiveNoFileComp
	})
	return cmd
}

// policyFromFlags returns nil when the stored flags are to be trusted.
func policyFromFlags(blockOn string, minConf float64, minConfSet bool) (*findings.Policy, error) {
	if blockOn == "" && !minConfSet {
		return nil, nil
	}
	p := &findings.Policy{BlockOn: findings.DefaultBlockOn}
	if blockOn != "" {
		s, err := findings.ParseSeverity(blockOn)
		if err != nil {
			return nil, usageErr("invalid --block-on %q: want one of low, medium, high, critical", blockOn)
		}
		p.BlockOn = s
	}
	if minConfSet {
		if math.IsNaN(minConf) || minConf < 0 || minConf > 1 {
			return nil, usageErr("invalid --min-confidence %v: want a number from 0 to 1", minConf)
		}
		p.MinConfidence = &minConf
	}
	return p, nil
}

func gateRun(opts *GateOptions) error {
	policy, err := policyFromFlags(opts.BlockOn, opts.MinConfidence, opts.minConfSet)
	if err != nil {
		return err
	}
	switch {
	case opts.Annotations != "" && opts.Annotations != "github":
		return usageErr("--annotations %q: want github", opts.Annotations)
	case opts.Annotations != "" && opts.JSON:
		return usageErr("--annotations and --json both write stdout: choose one")
	}
	name := displayName(opts.File)
	var (
		data     []byte
		res      findings.GateResult
		info     findings.ReadInfo
		problems findings.Problems
	)
	if opts.Annotations == "" {
		// Streamed: memory stays flat whatever the bundle's size.
		err = decodeBundleStream(opts.IO, opts.File, func(r io.Reader, limit int64) error {
			var err error
			res, info, problems, err = findings.GateReader(r, limit, policy)
			return err
		})
	} else {
		// Annotations need the findings: the bundle is read in whole.
		if data, err = readBundleBytes(opts.IO, opts.File); err != nil {
			return usageErr("%s: %s", name, errorText(err, opts.File))
		}
		res, info, problems, err = findings.Gate(data, policy)
	}
	if err != nil {
		var se *findings.SyntaxError
		var re *bundleReadError
		switch {
		case errors.As(err, &se):
			return usageErr("%s: %v", name, err)
		case errors.As(err, &re):
			return usageErr("%s: %s", name, errorText(re.err, opts.File))
		}
		return ioErr(err)
	}
	if len(problems) > 0 {
		for _, p := range problems {
			fmt.Fprintf(opts.IO.ErrOut, "%s: %s\n", name, p)
		}
		fmt.Fprintf(opts.IO.ErrOut, "gate: %s is not a valid findings bundle (%d problems); run `diffpal validate %s`\n", name, len(problems), opts.File)
		return silent(ExitUsage)
	}
	printWarnings(opts.IO.ErrOut, name, info.Warnings)
	report := GateReport{File: opts.File, Blocked: res.Blocked(), Version: info.Effective, Warnings: info.Warnings, GateResult: res}
	if policy != nil {
		report.Policy = &findings.GatePolicy{BlockOn: policy.BlockOn, MinConfidence: policy.MinConfidence}
	}
	fmt.Fprintln(opts.IO.ErrOut, gateSummary(report))
	if opts.Annotations == "github" {
		b, _, err := findings.Parse(data)
		if err != nil {
			return usageErr("%s: %v", name, err)
		}
		if err := writeAnnotations(opts.IO.Out, b, policy); err != nil {
			return ioErr(err)
		}
	}
	if opts.JSON {
		enc := json.NewEncoder(opts.IO.Out)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		if err := enc.Encode(report); err != nil {
			return ioErr(err)
		}
	}
	if report.Blocked {
		return silent(ExitGateBlocked)
	}
	return nil
}

// bundleReadError is an error reading a bundle (opening it, its size
// limit, the reader), as readBundleBytes would have reported it.
type bundleReadError struct{ err error }

func (e *bundleReadError) Error() string { return e.err.Error() }
func (e *bundleReadError) Unwrap() error { return e.err }

// decodeBundleStream hands decode a reader of the bundle file, or of
// standard input for "-", and its size limit, for a streaming decode
// (findings.DecodeReader): the whole bundle is never in memory. Errors
// opening or reading it, the size limit included, are *bundleReadError
// with readBundleBytes' messages; decode's own (a *findings.SyntaxError)
// are returned as they are.
func decodeBundleStream(ios *IOStreams, path string, decode func(r io.Reader, limit int64) error) error {
	limit, err := maxBundleBytes(ios)
	if err != nil {
		return &bundleReadError{err}
	}
	var r io.Reader = ios.In
	if path != "-" {
		f, err := findings.OpenBundle(path, limit)
		if err != nil {
			return &bundleReadError{limitHint(err)}
		}
		defer f.Close()
		r = f
	}
	err = decode(r, limit)
	var se *findings.SyntaxError
	if err == nil || errors.As(err, &se) {
		return err
	}
	if path != "-" {
		err = fmt.Errorf("%s: %w", path, err)
	}
	return &bundleReadError{limitHint(err)}
}

// limitHint adds how to raise the size limit to an error that is about it.
func limitHint(err error) error {
	if errors.Is(err, findings.ErrTooLarge) {
		return fmt.Errorf("%w; set %s to raise the limit", err, envMaxBundleBytes)
	}
	return err
}

func gateSummary(r GateReport) string {
	var b strings.Builder
	status := "passed"
	if r.Blocked {
		status = "blocked"
	}
	fmt.Fprintf(&b, "gate: %s blocking=%d", status, r.Blocking)
	for i := len(findings.Severities) - 1; i >= 0; i-- {
		s := findings.Severities[i]
		fmt.Fprintf(&b, " %s=%d", s, r.BlockingBySeverity[s])
	}
	fmt.Fprintf(&b, " findings=%d", r.Findings)
	if r.Policy != nil {
		fmt.Fprintf(&b, " block_on=%s", r.Policy.BlockOn)
		if r.Policy.MinConfidence != nil {
			fmt.Fprintf(&b, " min_confidence=%g", *r.Policy.MinConfidence)
		}
	} else {
		b.WriteString(" policy=stored")
	}
	return b.String()
}

// maxAnnotations is GitHub's limit per step for each of error and warning
// annotations; more are dropped by GitHub, so they are counted instead.
const maxAnnotations = 10

// writeAnnotations prints GitHub Actions workflow commands for the
// findings, blocking ones as ::error first. Every value is escaped as
// @actions/core escapes it ("%", CR and LF in the message; also ":" and
// "," in properties), so a title or path from the change cannot end the
// command or start another.
func writeAnnotations(w io.Writer, b *findings.Bundle, policy *findings.Policy) error {
	blocks := func(f *findings.Finding) bool {
		if policy != nil {
			return policy.Blocks(f)
		}
		return f.Blocking
	}
	var errs, warns []*findings.Finding
	for i := range b.Findings {
		if f := &b.Findings[i]; blocks(f) {
			errs = append(errs, f)
		} else {
			warns = append(warns, f)
		}
	}
	bw := bufio.NewWriter(w)
	for _, g := range []struct {
		level string
		fs    []*findings.Finding
	}{{"error", errs}, {"warning", warns}} {
		for i, f := range g.fs {
			if i == maxAnnotations {
				fmt.Fprintf(bw, "::notice title=diffpal::%d more %s findings are in findings.json\n", len(g.fs)-maxAnnotations, g.level)
				break
			}
			title := fmt.Sprintf("%s %s", strings.ToUpper(string(f.Severity)), cmp.Or(f.RuleID, f.Category))
			props := "file=" + escapeProperty(f.Path)
			if f.StartLine > 0 {
				props += fmt.Sprintf(",line=%d", f.StartLine)
				if f.EndLine > f.StartLine {
					props += fmt.Sprintf(",endLine=%d", f.EndLine)
				}
			}
			props += ",title=" + escapeProperty(title)
			fmt.Fprintf(bw, "::%s %s::%s\n", g.level, props, escapeData(textsafe.Visible(secrets.Redact(f.Title+": "+f.Message))))
		}
	}
	return bw.Flush()
}

func escapeData(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A").Replace(s)
}

func escapeProperty(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A", ":", "%3A", ",", "%2C").Replace(textsafe.Visible(s))
}

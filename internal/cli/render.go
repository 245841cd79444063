package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/diffpalhq/diffpal/findings"
	"github.com/diffpalhq/diffpal/internal/git"
	"github.com/diffpalhq/diffpal/internal/output"
	"github.com/diffpalhq/diffpal/internal/output/markdown"
	"github.com/diffpalhq/diffpal/internal/output/sarif"
	"github.com/diffpalhq/diffpal/internal/review"
	"github.com/diffpalhq/diffpal/internal/textsafe"
	"github.com/spf13/cobra"
)

// renderFormats are the formats render prints, with their printers' names.
var renderFormats = []string{output.HTML, output.Markdown, output.SARIF}

// RenderOptions are the inputs of `diffpal render`.
type RenderOptions struct {
	IO      *IOStreams
	Dir     string
	Format  string
	Input   string
	Out     string
	Session string
	// sessionSet is true when --session was given (a missing file is
	// then an error, not a silent bundle-only render).
	sessionSet bool
}

// maxSession bounds the qa-session.json read.
const maxSession = 256 << 20

// NewCmdRender builds `diffpal render`.
func NewCmdRender(ios *IOStreams, runF func(*RenderOptions) error) *cobra.Command {
	opts := &RenderOptions{IO: ios}
	cmd := &cobra.Command{
		Use:   "render --format html|markdown|sarif",
		Short: "Render a findings bundle as report.html, summary.md or SARIF",
		Long: `Render any valid findings bundle (v1 to v4) with the printers review
uses: html (report.html, one self-contained file), markdown (summary.md)
or sarif.

The review's qa-session.json, beside the bundle by default (--session),
adds what the bundle alone does not hold: the files skipped and why, the
dropped and suppressed candidates, the baseline, and the QA session's
audit trail. It is used only when it belongs to the bundle (same head
commit); otherwise the render says so and goes on with the bundle alone.
In a git repository (-C) that holds the bundle's head commit, report.html
shows each finding's lines from that commit, redacted.

--out - (the default) writes to standard output; a file is replaced
atomically and must be absent or a regular file.

` + dirHelp,
		Example: `  diffpal render --format html --out report.html
  diffpal render --format markdown --input old/findings.json
  diffpal render --format sarif --out - | jq '.runs[0].results | length'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkDir(opts.Dir); err != nil {
				return err
			}
			root := artifactsRoot(cmd.Context(), opts.Dir)
			if cmd.Flags().Changed("input") {
				opts.Input = inDir(opts.Dir, opts.Input)
			} else {
				opts.Input = filepath.Join(root, findings.DefaultPath)
			}
			opts.sessionSet = cmd.Flags().Changed("session")
			if opts.sessionSet {
				opts.Session = inDir(opts.Dir, opts.Session)
			} else if opts.Input != "-" {
				opts.Session = filepath.Join(filepath.Dir(opts.Input), "qa-session.json")
			}
			if opts.Out != "-" {
				opts.Out = inDir(opts.Dir, opts.Out)
			}
			if runF != nil {
				return runF(opts)
			}
			return renderRun(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.Format, "format", "", "what to render: "+strings.Join(renderFormats, ", ")+" (required)")
	fl.StringVar(&opts.Input, "input", findings.DefaultPath, "findings bundle (\"-\" for stdin)")
	fl.StringVar(&opts.Out, "out", "-", "file to write (\"-\" for stdout)")
	fl.StringVar(&opts.Session, "session", "", "the review's qa-session.json (default: beside --input, when present)")
	addDirFlag(cmd, &opts.Dir)
	_ = cmd.RegisterFlagCompletionFunc("format", fixedCompletion(renderFormats...))
	return cmd
}

func renderRun(ctx context.Context, opts *RenderOptions) error {
	switch opts.Format {
	case output.HTML, output.Markdown, output.SARIF:
	case "":
		return usageErr("--format is required: %s", strings.Join(renderFormats, ", "))
	default:
		return usageErr("--format %q: want %s", opts.Format, strings.Join(renderFormats, ", "))
	}
	name := displayName(opts.Input)
	// The bundle is read through a window (findings.ScanFile), then again
	// as the format needs it: memory is what the format keeps per finding
	// (html: its place in the page's order; sarif: nothing; markdown: the
	// first markdown.MaxFindings findings) and one finding.
	var each func(*findings.Finding)
	var rules sarif.Rules
	var summary markdown.Summary
	switch opts.Format {
	case output.SARIF:
		each = rules.Add
	case output.Markdown:
		each = summary.Add
	}
	bf, done, err := scanBundle(opts.IO, opts.Input, each)
	if err != nil {
		return err
	}
	defer done()
	b := bf.Header
	printWarnings(opts.IO.ErrOut, name, bf.Info.Warnings)
	res, err := opts.session(b)
	if err != nil {
		return err
	}
	var write func(io.Writer) error
	switch opts.Format {
	case output.SARIF:
		write = func(w io.Writer) error { return sarif.WriteFile(w, bf, &rules, output.SARIFTool()) }
	case output.Markdown:
		var audit *review.Audit
		if res != nil {
			audit = &res.Audit
		}
		in := output.SummaryInfoOf(b, audit)
		write = func(w io.Writer) error { return summary.Write(w, b, in) }
	case output.HTML:
		src, srcDone := headSource(ctx, opts.Dir, b.HeadSHA)
		defer srcDone()
		write = func(w io.Writer) error {
			if res != nil {
				return output.WriteReportFile(w, bf, &res.Audit, &res.Session, src, nil)
			}
			return output.WriteReportFile(w, bf, nil, nil, src, nil)
		}
	}
	if written, err := writeOutOrStdout(ctx, opts.IO, opts.Dir, opts.Out, write); err != nil || !written {
		return err
	}
	fmt.Fprintf(opts.IO.ErrOut, "render: %s %s findings=%d version=%s\n", opts.Format, textsafe.Terminal(opts.Out), bf.Len(), bf.Info.Effective)
	return nil
}

// session reads the review's qa-session.json when it belongs to b: nil
// when there is none (or it is another review's, which is said on
// stderr).
func (opts *RenderOptions) session(b *findings.Bundle) (*review.Result, error) {
	if opts.Session == "" {
		return nil, nil
	}
	if _, err := os.Lstat(opts.Session); err != nil && !opts.sessionSet {
		return nil, nil // no session beside the bundle: the bundle alone
	}
	data, err := findings.ReadBytesLimit(opts.Session, maxSession)
	if err != nil {
		return nil, usageErr("--session %s: %s", displayName(opts.Session), errorText(err, opts.Session))
	}
	var res review.Result
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&res); err != nil {
		if opts.sessionSet {
			return nil, usageErr("--session %s: not a qa-session.json: %v", displayName(opts.Session), err)
		}
		fmt.Fprintf(opts.IO.ErrOut, "render: %s is not a qa-session.json (%v); rendering the bundle alone\n", textsafe.Terminal(opts.Session), err)
		return nil, nil
	}
	if rc := res.Session.ReviewContext; rc != nil && b.HeadSHA != "" && rc.HeadSHA != b.HeadSHA {
		fmt.Fprintf(opts.IO.ErrOut, "render: %s is of head %s, the bundle of %s; rendering the bundle alone\n",
			textsafe.Terminal(opts.Session), output.ShortSHA(rc.HeadSHA), output.ShortSHA(b.HeadSHA))
		return nil, nil
	}
	return &res, nil
}

// maxSourceFile bounds a file read for snippets.
const maxSourceFile = 4 << 20

// headSource reads files at the bundle's head commit from the repository
// at dir, for snippets, through one cat-file batch that done closes;
// nil when dir is no repository or lacks the commit. A file over
// maxSourceFile, binary or missing gets no snippet. Lines are redacted
// by the report builder, snippet by snippet.
func headSource(ctx context.Context, dir, head string) (src output.Source, done func()) {
	done = func() {}
	if head == "" {
		return nil, done
	}
	g := &git.Runner{Dir: dir}
	sha, err := g.ResolveCommit(ctx, head)
	if err != nil {
		return nil, done
	}
	br, err := g.Blobs(ctx)
	if err != nil {
		return nil, done
	}
	// The last few files read are kept (the report reads findings in
	// path order, so one would do): at most maxCachedSources files of at
	// most maxSourceFile bytes each, whatever the number of files.
	type cached struct {
		path  string
		lines []string
	}
	var cache []cached
	return func(path string) []string {
		for i, c := range cache {
			if c.path == path {
				copy(cache[1:i+1], cache[:i])
				cache[0] = c
				return c.lines
			}
		}
		var lines []string
		out, ok, err := br.ReadLimit(sha+":"+path, maxSourceFile)
		if err == nil && ok && !bytes.ContainsRune(out, 0) {
			lines = strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
		}
		if len(cache) < maxCachedSources {
			cache = append(cache, cached{})
		}
		copy(cache[1:], cache[:len(cache)-1])
		cache[0] = cached{path, lines}
		return lines
	}, func() { br.Close() }
}

// maxCachedSources is how many files' lines headSource keeps.
const maxCachedSources = 4

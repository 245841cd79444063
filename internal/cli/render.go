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
	"github.com/diffpalhq/diffpal/internal/output/html"
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
	data, err := readBundleBytes(opts.IO, opts.Input)
	if err != nil {
		return usageErr("%s: %s", name, errorText(err, opts.Input))
	}
	b, info, err := findings.Parse(data)
	if err != nil {
		return usageErr("%s: %v (run `diffpal validate %s` for every problem)", name, err, opts.Input)
	}
	printWarnings(opts.IO.ErrOut, name, info.Warnings)
	res, err := opts.session(b)
	if err != nil {
		return err
	}
	var write func(io.Writer) error
	switch opts.Format {
	case output.SARIF:
		log := sarif.Convert(b, output.SARIFTool())
		write = func(w io.Writer) error { return sarif.Encode(w, log) }
	case output.Markdown:
		var audit *review.Audit
		if res != nil {
			audit = &res.Audit
		}
		in := output.SummaryInfoOf(b, audit)
		write = func(w io.Writer) error { return markdown.Write(w, b, in) }
	case output.HTML:
		var rep *html.Report
		src, done := headSource(ctx, opts.Dir, b.HeadSHA)
		defer done()
		if res != nil {
			rep = output.BuildReport(b, &res.Audit, &res.Session, src, nil)
		} else {
			rep = output.BuildReport(b, nil, nil, src, nil)
		}
		write = func(w io.Writer) error { return html.Write(w, rep) }
	}
	if written, err := writeOutOrStdout(ctx, opts.IO, opts.Dir, opts.Out, write); err != nil || !written {
		return err
	}
	fmt.Fprintf(opts.IO.ErrOut, "render: %s %s findings=%d version=%s\n", opts.Format, textsafe.Terminal(opts.Out), len(b.Findings), info.Effective)
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
	cache := map[string][]string{}
	return func(path string) []string {
		if l, ok := cache[path]; ok {
			return l
		}
		var lines []string
		out, ok, err := br.ReadLimit(sha+":"+path, maxSourceFile)
		if err == nil && ok && !bytes.ContainsRune(out, 0) {
			lines = strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
		}
		cache[path] = lines
		return lines
	}, func() { br.Close() }
}

package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"

	"github.com/diffpalhq/diffpal/findings"
	"github.com/diffpalhq/diffpal/internal/buildinfo"
	"github.com/diffpalhq/diffpal/internal/output/markdown"
	"github.com/diffpalhq/diffpal/internal/output/sarif"
	"github.com/diffpalhq/diffpal/internal/review"
	"github.com/diffpalhq/diffpal/internal/safefile"
)

// ManifestName is the file review writes last in its output directory,
// listing the artifacts of the run with their sizes and SHA-256.
const ManifestName = "manifest.json"

// ManifestVersion is the manifest's format version.
const ManifestVersion = 1

// Manifest is the content of manifest.json.
type Manifest struct {
	ManifestVersion int                `json:"manifest_version"`
	Generator       string             `json:"generator"`
	ReviewID        string             `json:"review_id"`
	BaseSHA         string             `json:"base_sha"`
	HeadSHA         string             `json:"head_sha"`
	Files           []safefile.Written `json:"files"`
}

// writeArtifactsContext writes findings.json, qa-session.json, summary.md
// and diffpal.sarif into dir as one set, with manifest.json last, and
// returns their paths (the manifest's is not among them).
//
// Safety (docs/output-safety.md): dir is walked from the repository root
// down and refused when any component inside the repository is a symlink
// or not a directory, and each artifact is refused when it is a symlink or
// not a regular file, so a hostile `.artifacts` link in a pull request
// cannot redirect the write. Atomicity: safefile.WriteSet stages the
// whole set in a fresh directory inside dir, then removes the old
// manifest, renames each artifact into place and renames the new manifest
// in last; an error, a cancelled ctx or a signal before that leaves the
// previous run's files untouched, and readers that need one run's set
// check the files against manifest.json. Nothing else in dir is touched:
// the model-answer cache (dir/cache) and any session store survive.
func writeArtifactsContext(ctx context.Context, dir string, res *review.Result) (map[string]string, error) {
	paths := map[string]string{
		"findings": filepath.Join(dir, "findings.json"),
		"session":  filepath.Join(dir, "qa-session.json"),
		"summary":  filepath.Join(dir, "summary.md"),
		"sarif":    filepath.Join(dir, "diffpal.sarif"),
	}
	bi := buildinfo.Get()
	log := sarif.Convert(res.Bundle, sarif.Tool{Name: "diffpal", Version: bi.Version, InformationURI: "https://github.com/diffpalhq/diffpal"})
	files := []safefile.File{
		{Name: "findings.json", Write: func(w io.Writer) error { return findings.Encode(w, res.Bundle) }},
		{Name: "qa-session.json", Write: func(w io.Writer) error { return encodeJSON(w, res) }},
		{Name: "summary.md", Write: func(w io.Writer) error { return markdown.Write(w, res.Bundle, summaryInfo(res)) }},
		{Name: "diffpal.sarif", Write: func(w io.Writer) error { return sarif.Encode(w, log) }},
	}
	root := ""
	if res.Change != nil {
		root = res.Change.Root
	}
	d, err := safefile.OpenDir(root, dir, safefile.Options{})
	if err != nil {
		return nil, writeError(dir, err)
	}
	defer d.Close()
	_, err = d.WriteSet(ctx, files, ManifestName, func(ws []safefile.Written) func(io.Writer) error {
		m := Manifest{ManifestVersion: ManifestVersion, Generator: "diffpal " + bi.Version, Files: ws}
		if b := res.Bundle; b != nil {
			m.ReviewID, m.BaseSHA, m.HeadSHA = b.ReviewID, b.BaseSHA, b.HeadSHA
		}
		return func(w io.Writer) error { return encodeJSON(w, m) }
	})
	if err != nil {
		return nil, writeError(dir, err)
	}
	return paths, nil
}

func encodeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// writeOutput writes one output file through internal/safefile, with base
// as the trusted directory (the repository root, or the working directory
// for commands that have no repository), and maps failures to exit 5.
func writeOutput(ctx context.Context, base, path string, opts safefile.Options, write func(io.Writer) error) error {
	if ctx == nil {
		ctx = context.Background()
	}
	if err := safefile.Write(ctx, base, path, opts, write); err != nil {
		return ioErr(writeError(path, err))
	}
	return nil
}

// stdoutHint adds, to the refusal of a target that is not a regular file
// (say /dev/stdout or a FIFO), how to write to standard output instead.
func stdoutHint(err error, flag string) error {
	var ee *ExitError
	var re *safefile.RefusedError
	if errors.As(err, &ee) && errors.As(err, &re) && re.Op == "replace" {
		ee.Err = fmt.Errorf("%w (%s - writes to standard output)", ee.Err, flag)
	}
	return err
}

// writeError names the path unless the error already does (refusals name
// the offending component).
func writeError(path string, err error) error {
	var re *safefile.RefusedError
	if errors.As(err, &re) || errors.Is(err, context.Canceled) {
		return err
	}
	return fmt.Errorf("write %s: %w", path, err)
}

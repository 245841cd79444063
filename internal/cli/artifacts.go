package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"

	"github.com/diffpalhq/diffpal/internal/buildinfo"
	"github.com/diffpalhq/diffpal/internal/output"
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

// artifact is one output of a review and where it goes.
type artifact struct {
	format output.Format
	key    string
	// path is where the file goes: dir/DefaultFile, or the path the user
	// gave, resolved.
	path string
	// inSet: path is directly in the output directory, so the file is
	// written with the set and listed in the manifest.
	inSet bool
}

// planArtifacts resolves the selected outputs' paths. An output without a
// path is its DefaultFile in dir. A path from --format is the user's, taken
// from -C like every path flag (resolve); one from review.formats is
// relative to the repository root (config.Validate kept it inside). An
// output whose file lands directly in dir joins the artifact set; any other
// is written on its own, after the set. Two outputs to one file, or one
// onto the manifest, are usage errors.
func planArtifacts(outs []output.Output, dir, from string, resolve func(string) string) ([]artifact, error) {
	dir = filepath.Clean(dir)
	var arts []artifact
	byPath := map[string]string{filepath.Join(dir, ManifestName): "the manifest"}
	for _, o := range outs {
		a := artifact{format: o.Format, key: output.Key(o.Format), path: filepath.Join(dir, o.Format.DefaultFile())}
		if o.Path != "" {
			if o.Path == "-" {
				return nil, usageErr("%s: %s=-: standard output carries the summary (or --json); give %s a file", from, o.Format.Name(), o.Format.Name())
			}
			a.path = filepath.Clean(resolve(o.Path))
		}
		a.inSet = filepath.Dir(a.path) == dir
		if other, ok := byPath[a.path]; ok {
			return nil, usageErr("%s: %s would write %s, as %s does", from, o.Format.Name(), a.path, other)
		}
		byPath[a.path] = o.Format.Name()
		arts = append(arts, a)
	}
	return arts, nil
}

// writeArtifactsContext writes a review's outputs: those in dir as one
// set, with manifest.json last, then each of the others on its own (with
// base, the repository root, as the trusted directory of the write), and
// returns every output's path by key (the manifest's is not among them).
// The canonical findings.json is always among the set (output.Select
// adds it), so the manifest always anchors on it.
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
// the model-answer cache (dir/cache) and any session store survive. An
// output outside dir is replaced atomically too, but only after the set
// is published, and is not in the manifest.
func writeArtifactsContext(ctx context.Context, dir string, res *review.Result, arts []artifact) (map[string]string, error) {
	paths := map[string]string{}
	var files []safefile.File
	for _, a := range arts {
		paths[a.key] = a.path
		if a.inSet {
			f := a.format
			files = append(files, safefile.File{Name: filepath.Base(a.path), Write: func(w io.Writer) error { return f.Write(w, res) }})
		}
	}
	bi := buildinfo.Get()
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
	base := root
	if base == "" {
		base = dir
	}
	for _, a := range arts {
		if a.inSet {
			continue
		}
		f := a.format
		if err := safefile.Write(ctx, base, a.path, safefile.Options{}, func(w io.Writer) error { return f.Write(w, res) }); err != nil {
			return nil, writeError(a.path, err)
		}
	}
	return paths, nil
}

func encodeJSON(w io.Writer, v any) error { return output.EncodeJSON(w, v) }

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

// writeOutOrStdout writes to standard output when out is "-", else to the
// file out through writeOutput under base (the trusted directory; "" is
// "."), with the hint for --out - on a refused target. written is false
// for standard output.
func writeOutOrStdout(ctx context.Context, ios *IOStreams, base, out string, write func(io.Writer) error) (written bool, err error) {
	if out == "-" {
		if err := write(ios.Out); err != nil {
			return false, ioErr(err)
		}
		return false, nil
	}
	if base == "" {
		base = "."
	}
	if err := writeOutput(ctx, base, out, safefile.Options{Perm: 0o644}, write); err != nil {
		return false, stdoutHint(err, "--out")
	}
	return true, nil
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

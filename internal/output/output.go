// Package output is the registry of the files a review writes. Each
// Format names itself, says which file it writes in the output directory
// by default and renders a review.Result; the review command writes the
// formats the user selects (--format, review.formats) without knowing any
// of them by name, so a new one — an HTML report, GitLab Code Quality, a
// host publisher's payload — is a Format in Builtin and a printer in
// internal/output/<name>, with no change to the command.
//
// The findings bundle (json, findings.json) is always written: it is the
// canonical result that gate, sarif and validate read, and the artifact
// set's manifest is anchored on it. Selecting formats chooses what is
// written beside it.
//
// This package renders; it does not write files, print, or read flags,
// the environment or the clock. Paths come in as the user's strings and
// are resolved and written by the caller (internal/cli through
// internal/safefile).
package output

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/diffpalhq/diffpal/internal/review"
)

// Format is one output a review can write.
type Format interface {
	// Name is how --format and review.formats spell it: "sarif".
	Name() string
	// DefaultFile is its file name in the output directory: "diffpal.sarif".
	DefaultFile() string
	// Write renders the review's result.
	Write(w io.Writer, res *review.Result) error
}

// Keyed is an optional capability of a Format: its key in review --json's
// "files" object and the terminal summary when that differs from its
// name. The four formats that predate the registry keep their old keys
// (findings, session, summary, sarif); new formats need not implement it.
type Keyed interface {
	Key() string
}

// Key is f's key: Key() when f is Keyed, else its Name.
func Key(f Format) string {
	if k, ok := f.(Keyed); ok {
		return k.Key()
	}
	return f.Name()
}

// Canonical is the name of the format that is always written.
const Canonical = "json"

// Registry is a set of formats with unique names, in a fixed order (the
// order outputs are written and listed in), and the default selection.
type Registry struct {
	formats  []Format
	defaults []string
}

// NewRegistry makes a registry of formats, in that order; defaults names
// the formats written when nothing is selected. It must hold Canonical.
func NewRegistry(formats []Format, defaults []string) (*Registry, error) {
	r := &Registry{}
	seen := map[string]bool{}
	keys := map[string]bool{}
	for _, f := range formats {
		n := f.Name()
		if n == "" || strings.ContainsAny(n, "=,") || seen[n] {
			return nil, fmt.Errorf("output: format name %q is empty, malformed or used twice", n)
		}
		k := Key(f)
		if keys[k] {
			return nil, fmt.Errorf("output: format key %q used twice", k)
		}
		seen[n], keys[k] = true, true
		r.formats = append(r.formats, f)
	}
	if !seen[Canonical] {
		return nil, fmt.Errorf("output: no %s format", Canonical)
	}
	for _, d := range defaults {
		if !seen[d] {
			return nil, fmt.Errorf("output: default %q is not a format", d)
		}
	}
	r.defaults = slices.Clone(defaults)
	return r, nil
}

// Names lists the formats' names in order.
func (r *Registry) Names() []string {
	out := make([]string, len(r.formats))
	for i, f := range r.formats {
		out[i] = f.Name()
	}
	return out
}

// Keys lists the formats' keys in order.
func (r *Registry) Keys() []string {
	out := make([]string, len(r.formats))
	for i, f := range r.formats {
		out[i] = Key(f)
	}
	return out
}

// Defaults lists the names written when nothing is selected.
func (r *Registry) Defaults() []string { return slices.Clone(r.defaults) }

// Lookup finds a format by name.
func (r *Registry) Lookup(name string) (Format, bool) {
	for _, f := range r.formats {
		if f.Name() == name {
			return f, true
		}
	}
	return nil, false
}

// Output is one selected format and the path the user gave for it ("" for
// DefaultFile in the output directory).
type Output struct {
	Format Format
	Path   string
}

// Select turns specs — each NAME or NAME=PATH, as --format and
// review.formats spell them — into the outputs to write, in the
// registry's order (so the same selection always writes the same set, in
// the same order, whatever order it was listed in). No specs is the
// default selection; the canonical format is added when missing. from
// names where the specs came from ("--format", "review.formats in FILE")
// and starts every error: an unknown name lists the valid ones.
func (r *Registry) Select(specs []string, from string) ([]Output, error) {
	if len(specs) == 0 {
		specs = r.defaults
	}
	chosen := map[string]Output{}
	for _, spec := range specs {
		name, path, hasPath := strings.Cut(strings.TrimSpace(spec), "=")
		name = strings.TrimSpace(name)
		switch {
		case name == "":
			return nil, fmt.Errorf("%s: empty format in %q: want NAME or NAME=PATH, NAME one of %s", from, spec, strings.Join(r.Names(), ", "))
		case hasPath && path == "":
			return nil, fmt.Errorf("%s: %s= names no path: want %s or %s=PATH", from, name, name, name)
		}
		f, ok := r.Lookup(name)
		if !ok {
			return nil, fmt.Errorf("%s: unknown format %q: want one of %s", from, name, strings.Join(r.Names(), ", "))
		}
		if _, dup := chosen[name]; dup {
			return nil, fmt.Errorf("%s: format %s is named twice", from, name)
		}
		if name == Canonical && hasPath {
			return nil, fmt.Errorf("%s: %s=%s: the findings bundle is always written to the output directory as %s, where gate, sarif and validate read it; choose that directory with --out-dir",
				from, name, path, f.DefaultFile())
		}
		chosen[name] = Output{Format: f, Path: path}
	}
	if _, ok := chosen[Canonical]; !ok {
		f, _ := r.Lookup(Canonical)
		chosen[Canonical] = Output{Format: f}
	}
	var out []Output
	for _, f := range r.formats {
		if o, ok := chosen[f.Name()]; ok {
			out = append(out, o)
		}
	}
	return out, nil
}

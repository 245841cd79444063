package publish

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/diffpalhq/diffpal/internal/clip"
)

// Diff is the pull request's diff as the host shows it: per file, the
// lines a comment may be placed on, on each side. GitHub and GitLab accept
// comments only on lines of a hunk (added, removed or context); a finding
// elsewhere goes into the summary rather than failing the run.
type Diff struct {
	files map[string]*DiffFile
}

// DiffFile is one file's commentable lines.
type DiffFile struct {
	Path, OldPath string
	// Right holds head-side lines in hunks (added and context), Left the
	// base-side lines (removed and context). Added and Removed are the
	// changed lines only.
	Right, Left    map[int]bool
	Added, Removed map[int]bool
	// Whole means any line of the file may carry a comment (Azure, a
	// binary or too-large diff the host does not show).
	Whole bool
}

// NewDiff returns an empty diff.
func NewDiff() *Diff { return &Diff{files: map[string]*DiffFile{}} }

// Add adds one file from its unified-diff patch (hunks only, as GitHub's
// files API and GitLab's diffs return them). An unparsable hunk header is
// an error naming the file.
func (d *Diff) Add(path, oldPath, patch string) error {
	f := &DiffFile{Path: path, OldPath: oldPath, Right: map[int]bool{}, Left: map[int]bool{}, Added: map[int]bool{}, Removed: map[int]bool{}}
	if err := parsePatch(patch, f); err != nil {
		return fmt.Errorf("diff of %q: %w", path, err)
	}
	d.files[path] = f
	return nil
}

// AddWhole adds a file on which every line may carry a comment.
func (d *Diff) AddWhole(path, oldPath string) {
	d.files[path] = &DiffFile{Path: path, OldPath: oldPath, Whole: true}
}

// File returns the file's lines, nil when the file is not in the diff.
func (d *Diff) File(path string) *DiffFile { return d.files[path] }

// OldPath returns the base-side path of a renamed file, "" otherwise.
func (d *Diff) OldPath(path string) string {
	if f := d.files[path]; f != nil && f.OldPath != path {
		return f.OldPath
	}
	return ""
}

// Commentable reports whether a comment may span start..end (start 0: a
// single line) on side; when not, it says why.
func (d *Diff) Commentable(path, side string, start, end int) (bool, string) {
	f := d.files[path]
	if f == nil {
		return false, "the file is not in the pull request's diff"
	}
	if f.Whole {
		return true, ""
	}
	lines := f.Right
	if side == "LEFT" {
		lines = f.Left
	}
	if start == 0 {
		start = end
	}
	for l := start; l <= end; l++ {
		if !lines[l] {
			return false, fmt.Sprintf("line %d (%s) is outside the pull request's diff", l, strings.ToLower(side))
		}
	}
	return true, ""
}

// parsePatch reads hunks: "@@ -a,b +c,d @@" headers, then " ", "+", "-"
// and "\ No newline" lines.
func parsePatch(patch string, f *DiffFile) error {
	oldLine, newLine, in := 0, 0, false
	for _, ln := range strings.Split(patch, "\n") {
		switch {
		case strings.HasPrefix(ln, "@@"):
			o, n, err := hunkHeader(ln)
			if err != nil {
				return err
			}
			oldLine, newLine, in = o, n, true
		case !in:
			// "diff --git", "---", "+++" and index lines before the first hunk.
		case strings.HasPrefix(ln, "+"):
			f.Right[newLine], f.Added[newLine] = true, true
			newLine++
		case strings.HasPrefix(ln, "-"):
			f.Left[oldLine], f.Removed[oldLine] = true, true
			oldLine++
		case strings.HasPrefix(ln, `\`):
		case ln == "" || strings.HasPrefix(ln, " "):
			// A trailing "" after the last newline is not a line; an empty
			// context line inside a hunk would be " ".
			if ln == "" {
				continue
			}
			f.Right[newLine], f.Left[oldLine] = true, true
			oldLine++
			newLine++
		}
	}
	return nil
}

// hunkHeader parses "@@ -12,3 +14,5 @@ ..." into the first old and new
// line numbers.
func hunkHeader(h string) (int, int, error) {
	fields := strings.Fields(h)
	if len(fields) < 3 || !strings.HasPrefix(fields[1], "-") || !strings.HasPrefix(fields[2], "+") {
		return 0, 0, fmt.Errorf("bad hunk header %q", clip.Text(h, 80))
	}
	start := func(s string) (int, error) {
		s, _, _ = strings.Cut(s[1:], ",")
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("bad hunk header %q", clip.Text(h, 80))
		}
		return n, nil
	}
	o, err := start(fields[1])
	if err != nil {
		return 0, 0, err
	}
	n, err := start(fields[2])
	if err != nil {
		return 0, 0, err
	}
	return o, n, nil
}

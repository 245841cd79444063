package diff

import "fmt"

// Filter modes decide which lines of a file a finding may sit on
// (reviewdog's four).
const (
	// FilterAdded: only added lines (default).
	FilterAdded = "added"
	// FilterDiffContext: any line shown in a hunk, added or context.
	FilterDiffContext = "diff_context"
	// FilterFile: any line of a changed file.
	FilterFile = "file"
	// FilterNone: anywhere.
	FilterNone = "nofilter"
)

// FilterModes lists the modes.
var FilterModes = []string{FilterAdded, FilterDiffContext, FilterFile, FilterNone}

// ValidFilter reports an error naming the valid modes.
func ValidFilter(mode string) error {
	for _, m := range FilterModes {
		if m == mode {
			return nil
		}
	}
	return fmt.Errorf("invalid filter mode %q: want one of added, diff_context, file, nofilter", mode)
}

// Span is an inclusive new-side line range.
type Span struct{ Start, End int }

// Spans returns the new-side line ranges of a file a finding may overlap in
// the given mode, merged and sorted. nil means "any line" (file/nofilter).
func (f *File) Spans(mode string) []Span {
	if mode == FilterFile || mode == FilterNone {
		return nil
	}
	out := []Span{} // empty, not nil: nil means "any line"

	add := func(n int) {
		if k := len(out); k > 0 && out[k-1].End+1 >= n {
			if n > out[k-1].End {
				out[k-1].End = n
			}
			return
		}
		out = append(out, Span{n, n})
	}
	for _, h := range f.Hunks {
		for _, l := range h.Lines {
			switch {
			case l.Kind == '+':
				add(l.NewNo)
			case l.Kind == ' ' && mode == FilterDiffContext:
				add(l.NewNo)
			}
		}
	}
	return out
}

// Clip intersects [start, end] with spans and returns the first overlap;
// ok is false when the range touches none of them. nil spans allow all.
func Clip(spans []Span, start, end int) (s, e int, ok bool) {
	if spans == nil {
		return start, end, true
	}
	for _, sp := range spans {
		if sp.End < start || sp.Start > end {
			continue
		}
		return max(start, sp.Start), min(end, sp.End), true
	}
	return 0, 0, false
}

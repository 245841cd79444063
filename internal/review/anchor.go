package review

import (
	"context"

	"github.com/diffpalhq/diffpal/internal/diff"
)

// anchor places every candidate on changed lines: the new side (RIGHT) by
// default, the old side (LEFT) for a removed line the provider did not
// place on a changed new-side line; a candidate without lines takes the
// file's first changed line. Its lines are clipped to the spans the filter
// mode allows; a candidate outside them is dropped.
type anchor struct{}

func (anchor) Name() string { return "anchor" }

func (anchor) Process(_ context.Context, e *engine) error {
	e.keepCands(func(k *candidate) bool { return e.anchor(k) })
	return nil
}

func (e *engine) anchor(k *candidate) bool {
	c := k.Candidate // as the provider placed it
	f := k.file
	k.side = "RIGHT"
	added, removed := f.Diff.Added(), f.Diff.Removed()
	spans := f.Diff.Spans(e.o.FilterMode)
	switch {
	case c.OldLine > 0:
		// About a removed line: keep it on the new side where the provider
		// placed it when that is a changed line, else on the old side.
		if c.StartLine > 0 {
			if _, _, ok := diff.Clip(spans, c.StartLine, max(c.EndLine, c.StartLine)); ok {
				break
			}
		}
		k.side = "LEFT"
		k.StartLine, k.EndLine = c.OldLine, c.OldLine
	case c.StartLine <= 0 && len(added) > 0:
		k.StartLine, k.EndLine = added[0].NewNo, added[0].NewNo
	case c.StartLine <= 0 && len(removed) > 0:
		k.side = "LEFT"
		k.StartLine, k.EndLine = removed[0].OldNo, removed[0].OldNo
	case c.StartLine <= 0:
		e.drop("no changed line to anchor to", k.where())
		return false
	}
	if k.EndLine < k.StartLine {
		k.EndLine = k.StartLine
	}
	if k.side == "LEFT" && spans != nil {
		spans = oldSpans(f.Diff)
	}
	s, en, ok := diff.Clip(spans, k.StartLine, k.EndLine)
	if !ok {
		e.drop("outside changed lines (filter "+e.o.FilterMode+")", k.where())
		return false
	}
	k.StartLine, k.EndLine = s, en
	return true
}

// oldSpans are the removed lines' old-side ranges (empty, not nil, when
// nothing was removed: nil would mean "any line").
func oldSpans(f *diff.File) []diff.Span {
	out := []diff.Span{}
	for _, l := range f.Removed() {
		if k := len(out); k > 0 && out[k-1].End+1 == l.OldNo {
			out[k-1].End = l.OldNo
			continue
		}
		out = append(out, diff.Span{Start: l.OldNo, End: l.OldNo})
	}
	return out
}

// newSideOf maps an old-side line to where its hunk sits on the new side.
func newSideOf(f *diff.File, old int) int {
	for _, h := range f.Hunks {
		if old >= h.OldStart && old < h.OldStart+max(h.OldLines, 1) {
			return max(h.NewStart, 1)
		}
	}
	return 1
}

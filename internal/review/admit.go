package review

import (
	"fmt"
	"slices"
	"strings"

	"github.com/diffpalhq/diffpal/findings"
	"github.com/diffpalhq/diffpal/internal/diff"
)

// Admission: a provider's candidate is anchored to the change's lines
// (per filter mode) and checked against suppressions before it counts.

func (e *engine) fileByPath(p string) *ChangedFile {
	i, ok := slices.BinarySearchFunc(e.ch.Files, p, func(f *ChangedFile, p string) int { return strings.Compare(f.Path(), p) })
	if !ok {
		return nil
	}
	return e.ch.Files[i]
}

// admit anchors a candidate to the change and applies suppressions; it
// returns nil (with the reason recorded) when the candidate does not make it.
func (e *engine) admit(c Candidate) *candidate { return e.admitWith(c, false) }

// admitWith is admit; noSuppress skips suppression (policy findings).
func (e *engine) admitWith(c Candidate, noSuppress bool) *candidate {
	where := fmt.Sprintf("%s:%d %s", c.Path, max(c.StartLine, c.OldLine), c.RuleID)
	if _, err := findings.ParseSeverity(c.Severity); err != nil || c.Path == "" || c.Category == "" || c.Title == "" {
		e.drop("malformed candidate (missing path, category, title or a valid severity)", where)
		return nil
	}
	c.Severity = strings.ToLower(strings.TrimSpace(c.Severity))
	f := e.fileByPath(c.Path)
	if f == nil {
		e.drop("file not in review scope", where)
		return nil
	}
	k := &candidate{Candidate: c, side: "RIGHT"}
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
		e.drop("no changed line to anchor to", where)
		return nil
	}
	if k.EndLine < k.StartLine {
		k.EndLine = k.StartLine
	}
	if k.side == "LEFT" && spans != nil {
		spans = oldSpans(f.Diff)
	}
	s, en, ok := diff.Clip(spans, k.StartLine, k.EndLine)
	if !ok {
		e.drop("outside changed lines (filter "+e.o.FilterMode+")", where)
		return nil
	}
	k.StartLine, k.EndLine = s, en
	if !noSuppress {
		if sup, ok := e.suppressed(f, k); ok {
			e.audit.Suppressed = append(e.audit.Suppressed, sup)
			return nil
		}
	}
	// The packet's items are addressed by new-side lines; an old-side
	// finding cites the hunk that removed its line.
	first, last := k.StartLine, k.EndLine
	if k.side == "LEFT" {
		first = newSideOf(f.Diff, k.StartLine)
		last = first
	}
	for _, r := range c.EvidenceRefs {
		if _, ok := e.ch.Packet.Item(r); ok && !slices.Contains(k.refs, r) {
			k.refs = append(k.refs, r)
		}
	}
	if len(k.refs) == 0 {
		k.refs = e.ch.Packet.RefsAt(f.Path(), first, last)
	}
	if len(k.refs) == 0 {
		for _, it := range e.ch.Packet.Items {
			if it.Path != nil && *it.Path == f.Path() {
				k.refs = append(k.refs, it.Ref)
			}
		}
	}
	if len(k.refs) > 32 {
		k.refs = k.refs[:32]
	}
	return k
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

// ---- synthesis ---------------------------------------------------------------

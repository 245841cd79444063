package review

import (
	"context"
	"slices"
)

// cite settles the evidence refs each candidate cites: the packet refs
// the provider gave, else the items covering its lines, else every item
// of its file; at most 32. The packet's items are addressed by new-side
// lines, so an old-side finding cites the hunk that removed its line.
type cite struct{}

func (cite) Name() string { return "cite" }

func (cite) Process(_ context.Context, e *engine) error {
	pk := e.ch.Packet
	for _, k := range e.cands {
		f := k.file
		first, last := k.StartLine, k.EndLine
		if k.side == "LEFT" {
			first = newSideOf(f.Diff, k.StartLine)
			last = first
		}
		for _, r := range k.EvidenceRefs {
			if _, ok := pk.Item(r); ok && !slices.Contains(k.refs, r) {
				k.refs = append(k.refs, r)
			}
		}
		if len(k.refs) == 0 {
			k.refs = pk.RefsAt(f.Path(), first, last)
		}
		if len(k.refs) == 0 {
			for _, it := range pk.Items {
				if it.Path != nil && *it.Path == f.Path() {
					k.refs = append(k.refs, it.Ref)
				}
			}
		}
		if len(k.refs) > 32 {
			k.refs = k.refs[:32]
		}
	}
	return nil
}

package reviewctx

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/diffpalhq/diffpal/internal/git"
	"github.com/diffpalhq/diffpal/internal/git/gittest"
	"github.com/diffpalhq/diffpal/internal/jcs"
)

func change(t *testing.T) *Result {
	t.Helper()
	repo := gittest.New(t)
	repo.Write("a.go", "package a\n")
	repo.Write(".diffpalignore", "ignored/\n")
	repo.Commit("base")
	repo.Git("checkout", "-q", "-b", "feature")
	repo.Write("a.go", "package a\n\nfunc A() int { return 1 }\n")
	repo.Write("big.go", "package a\n\n"+strings.Repeat("// a long comment line\n", 40))
	repo.Write("ignored/x.go", "package x\n")
	repo.Commit("feature")
	res, err := Build(context.Background(), Request{Dir: repo.Dir, Range: git.RangeOptions{Base: "main"}})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestBuildScopesAndBinds(t *testing.T) {
	res := change(t)
	if !slices.Equal(res.Context.ChangedFiles, []string{"a.go", "big.go"}) {
		t.Errorf("changed files %v: .diffpalignore not applied", res.Context.ChangedFiles)
	}
	pf := res.Packet()
	if len(pf.Items) != len(res.Context.EvidenceRefs) || pf.ReviewContext != res.Context {
		t.Errorf("packet %d items for %d refs", len(pf.Items), len(res.Context.EvidenceRefs))
	}
	var ue *UsageError
	_, err := Build(context.Background(), Request{Dir: res.Root, Range: git.RangeOptions{Base: "feature", Head: "feature"}})
	if !errors.As(err, &ue) || !ue.Unbindable {
		t.Errorf("empty change: %v", err)
	}
	_, err = Build(context.Background(), Request{Dir: res.Root, Range: git.RangeOptions{Base: "nope"}})
	if !errors.As(err, &ue) || ue.Unbindable {
		t.Errorf("unknown base: %v", err)
	}
	_, err = Build(context.Background(), Request{Dir: res.Root, ConfigSource: "sideways"})
	if !errors.As(err, &ue) {
		t.Errorf("bad config source: %v", err)
	}
}

// TestSelect: items are kept in packet order while they fit; one that
// does not fit is skipped and smaller later ones are still kept; the hash
// is that of the kept registry entries.
func TestSelect(t *testing.T) {
	res := change(t)
	items := res.Change.Packet.Items
	sizes := map[string]int{}
	total := 0
	for _, it := range items {
		sizes[it.Ref] = len(it.Content())
		total += len(it.Content())
	}
	for _, budget := range []int{1, sizes[items[0].Ref], total - 1, total, 10 * total} {
		sel, err := res.Select(budget)
		if err != nil {
			t.Fatal(err)
		}
		used, kept := 0, []string{}
		var want []string
		for _, it := range items {
			if used+sizes[it.Ref] <= budget {
				used += sizes[it.Ref]
				want = append(want, it.Ref)
			}
		}
		for _, it := range sel.Items {
			kept = append(kept, it.Ref)
		}
		if !slices.Equal(kept, want) && !(len(want) == 0 && len(kept) == 0) {
			t.Errorf("budget %d: kept %v, want %v", budget, kept, want)
		}
		if sel.SelectedBytes != used || sel.SelectedBytes > budget || len(sel.IncludedRefs)+len(sel.BudgetOmittedRefs) != len(items) {
			t.Errorf("budget %d: %+v", budget, sel)
		}
		var reg []any
		for _, it := range sel.Items {
			reg = append(reg, it.Item)
		}
		if reg == nil {
			reg = []any{}
		}
		if h, _ := jcs.SHA256Hex(reg); h != sel.SelectedPacketSHA256 {
			t.Errorf("budget %d: selected hash %s, want %s", budget, sel.SelectedPacketSHA256, h)
		}
		// The whole packet selected hashes to the packet's own hash.
		if budget >= total && (len(sel.BudgetOmittedRefs) != 0 || sel.SelectedPacketSHA256 != res.Context.EvidencePacketSHA256) {
			t.Errorf("budget %d: omits %v, hash %s (packet %s)", budget, sel.BudgetOmittedRefs, sel.SelectedPacketSHA256, res.Context.EvidencePacketSHA256)
		}
	}
}

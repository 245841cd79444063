package store

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// TestPosTreeModel checks the treap against a sorted slice over random
// inserts and removes, with ascending and descending walks from random
// positions (present or not) after every step.
func TestPosTreeModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	base := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	pos := func() Position {
		return Position{ExpiresAt: base.Add(time.Duration(rng.IntN(50)) * time.Second), RunID: fmt.Sprintf("r%03d", rng.IntN(200))}
	}
	var tree posTree
	var model []Position
	cmp := func(a, b Position) int { return a.Compare(b) }
	for step := range 5000 {
		p := pos()
		i, found := slices.BinarySearchFunc(model, p, cmp)
		if found {
			if !tree.remove(p) {
				t.Fatalf("step %d: remove(%v) = false", step, p)
			}
			model = slices.Delete(model, i, i+1)
		} else {
			if tree.remove(p) {
				t.Fatalf("step %d: remove(%v) of an absent key = true", step, p)
			}
			tree.insert(p)
			model = slices.Insert(model, i, p)
		}
		if tree.len() != len(model) {
			t.Fatalf("step %d: len %d, want %d", step, tree.len(), len(model))
		}
		from := pos()
		n := rng.IntN(20)
		var got []Position
		tree.ascend(&from, func(p Position) bool { got = append(got, p); return len(got) < n })
		j, _ := slices.BinarySearchFunc(model, from, cmp)
		want := model[j:min(j+n, len(model))]
		if n == 0 && j < len(model) {
			want = model[j : j+1] // fn runs once before it can say stop
		}
		if !slices.Equal(got, want) {
			t.Fatalf("step %d: ascend(%v) = %v, want %v", step, from, got, want)
		}
		got = got[:0]
		tree.descend(&from, func(p Position) bool { got = append(got, p); return len(got) < max(n, 1) })
		var wantD []Position
		for k := j - 1; k >= 0 && len(wantD) < max(n, 1); k-- {
			wantD = append(wantD, model[k])
		}
		if !slices.Equal(got, wantD) {
			t.Fatalf("step %d: descend(%v) = %v, want %v", step, from, got, wantD)
		}
	}
	var all []Position
	tree.ascend(nil, func(p Position) bool { all = append(all, p); return true })
	if !slices.Equal(all, model) {
		t.Fatal("full ascend differs from the model")
	}
	all = all[:0]
	tree.descend(nil, func(p Position) bool { all = append(all, p); return true })
	slices.Reverse(all)
	if !slices.Equal(all, model) {
		t.Fatal("full descend differs from the model")
	}
}

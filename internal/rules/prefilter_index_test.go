package rules

import (
	"reflect"
	"testing"
)

// refIndex is the automaton of refLiteralIndex: a 256-column table
// indexed by the lower-cased byte.
type refIndex struct {
	words int
	next  []int32 // state*256 + lower(byte) -> state
	out   []uint64
	emits []bool
}

// refLiteralIndex is the first implementation of newLiteralIndex (a trie
// of maps, then a 256-column table), kept to check that the one built
// over byte classes makes exactly the same automaton.
func refLiteralIndex(lits []string) *refIndex {
	x := &refIndex{words: (len(lits) + 63) / 64}
	if x.words == 0 {
		x.words = 1
	}
	type node struct {
		child map[byte]int32
		fail  int32
		out   []int
	}
	nodes := []node{{child: map[byte]int32{}}}
	for id, l := range lits {
		s := int32(0)
		for i := 0; i < len(l); i++ {
			c := lower(l[i])
			nx, ok := nodes[s].child[c]
			if !ok {
				nx = int32(len(nodes))
				nodes = append(nodes, node{child: map[byte]int32{}})
				nodes[s].child[c] = nx
			}
			s = nx
		}
		nodes[s].out = append(nodes[s].out, id)
	}
	x.next = make([]int32, len(nodes)*256)
	x.out = make([]uint64, len(nodes)*x.words)
	queue := []int32{}
	for c := 0; c < 256; c++ {
		if nx, ok := nodes[0].child[byte(c)]; ok {
			x.next[c] = nx
			queue = append(queue, nx)
		}
	}
	for _, id := range nodes[0].out {
		x.out[id/64] |= 1 << (id % 64)
	}
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		f := nodes[s].fail
		for _, id := range nodes[s].out {
			x.out[int(s)*x.words+id/64] |= 1 << (id % 64)
		}
		for w := 0; w < x.words; w++ {
			x.out[int(s)*x.words+w] |= x.out[int(f)*x.words+w]
		}
		for c := 0; c < 256; c++ {
			if nx, ok := nodes[s].child[byte(c)]; ok {
				nodes[nx].fail = x.next[int(f)*256+c]
				x.next[int(s)*256+c] = nx
				queue = append(queue, nx)
			} else {
				x.next[int(s)*256+c] = x.next[int(f)*256+c]
			}
		}
	}
	x.emits = make([]bool, len(nodes))
	for st := range nodes {
		for _, v := range x.out[st*x.words : (st+1)*x.words] {
			x.emits[st] = x.emits[st] || v != 0
		}
	}
	return x
}

func TestLiteralIndexSameAutomaton(t *testing.T) {
	s, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	var lineLits, synLits []string
	seen := map[string]bool{}
	for _, r := range s.rules {
		for _, l := range r.c.prefilter {
			if !seen[l] {
				seen[l] = true
				lineLits = append(lineLits, l)
			}
		}
		synLits = append(synLits, r.c.synLits...)
		synLits = append(synLits, r.c.valLits...)
	}
	for _, lits := range [][]string{nil, {""}, {"a"}, {"ab", "AB", "b", "abc", "bc"}, {"he", "she", "his", "hers"}, lineLits, synLits} {
		got, want := newLiteralIndex(lits), refLiteralIndex(lits)
		if got.words != want.words || !reflect.DeepEqual(denseOut(got), want.out) || !reflect.DeepEqual(emitsOf(got), want.emits) {
			t.Errorf("%d literals: the automaton's outputs differ from the reference", len(lits))
			continue
		}
		if len(got.table()) != len(want.emits)*got.nc {
			t.Errorf("%d literals: %d transitions for %d states of %d classes", len(lits), len(got.table()), len(want.emits), got.nc)
			continue
		}
	states:
		for s := range want.emits {
			for c := 0; c < 256; c++ {
				if g, w := got.step(int32(s), byte(c)), want.next[s*256+int(lower(byte(c)))]; g != w {
					t.Errorf("%d literals: state %d on byte %#x goes to %d, want %d", len(lits), s, c, g, w)
					break states
				}
			}
		}
	}
}

// denseOut is x's outputs as one bitset row per state (the reference's
// form).
func denseOut(x *literalIndex) []uint64 {
	n := len(x.pairAt) - 1
	out := make([]uint64, n*x.words)
	for st := 0; st < n; st++ {
		for _, p := range x.pairs[x.pairAt[st]:x.pairAt[st+1]] {
			out[st*x.words+int(p.w)] |= p.bits
		}
	}
	return out
}

// emitsOf reports, per state of x, whether it emits a literal.
func emitsOf(x *literalIndex) []bool {
	out := make([]bool, len(x.pairAt)-1)
	for st := range out {
		out[st] = x.pairAt[st] != x.pairAt[st+1]
	}
	return out
}

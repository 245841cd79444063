package store

import (
	"context"
	"strings"
	"time"
)

// Position is a record's place in the expiry order: expiry first (the zero
// time is the oldest), then run id. It is the key of the SQL stores'
// (expires_at_unix_ns, run_id) index and of the memory store's trees.
type Position struct {
	ExpiresAt time.Time
	RunID     string
}

// PositionOf returns r's position.
func PositionOf(r Record) Position { return Position{ExpiresAt: r.ExpiresAt, RunID: r.RunID} }

// Compare orders positions ascending: -1 when p sorts before q.
func (p Position) Compare(q Position) int {
	if c := p.ExpiresAt.Compare(q.ExpiresAt); c != 0 {
		return c
	}
	return strings.Compare(p.RunID, q.RunID)
}

// Indexed is implemented by stores that answer the orchestrator's
// bookkeeping from an index on (expiry, run id) instead of a listing of
// every record, so that starting, purging and listing a page cost the same
// however many sessions are retained. The answers are the store's own at
// the time of the call; on a store shared by several processes they may be
// stale by the time the caller acts on them, which is why Put with Absent
// on a shared store enforces capacity itself (Limited).
type Indexed interface {
	Store
	// PurgeExpired deletes every record whose expiry is at or before now
	// (the zero time included) except keep ("" keeps none) and returns
	// the run ids it deleted.
	PurgeExpired(ctx context.Context, now time.Time, keep string) ([]string, error)
	// Occupancy returns how many records the store holds and how many of
	// them have an active status (ActiveStatuses), expired or not.
	Occupancy(ctx context.Context) (total, active int, err error)
	// Evictable returns the metadata (Payload nil) of at most n records
	// whose status is not active, oldest Position first.
	Evictable(ctx context.Context, n int) ([]Record, error)
	// Page returns the metadata (Payload nil) of at most limit records
	// that expire after now, newest Position first, beginning with the
	// first one that sorts before after (nil: with the newest).
	Page(ctx context.Context, now time.Time, after *Position, limit int) ([]Record, error)
}

// Limited is implemented by stores that can enforce a capacity limit on
// create themselves, atomically and across every process sharing them:
// with MaxSessions() > 0, Put with Absent evicts records that hold no
// active slot (expired or not in an active status), oldest Position first,
// until the new record fits, or fails with ErrCapacity.
type Limited interface {
	MaxSessions() int
}

// activeStatus reports whether status is one of ActiveStatuses.
func activeStatus(status string) bool {
	for _, s := range ActiveStatuses {
		if s == status {
			return true
		}
	}
	return false
}

// posTree is an ordered set of positions: a treap (a binary search tree
// whose nodes are also heap-ordered by a random priority, so its depth is
// O(log n) with high probability). Not safe for concurrent use.
type posTree struct {
	root *posNode
	n    int
	seed uint64
}

type posNode struct {
	key         Position
	prio        uint64
	left, right *posNode
}

// random is splitmix64: priorities need only be well spread.
func (t *posTree) random() uint64 {
	t.seed += 0x9e3779b97f4a7c15
	z := t.seed
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

func (t *posTree) len() int { return t.n }

// insert adds k; k must not be in the tree.
func (t *posTree) insert(k Position) {
	t.root = treapInsert(t.root, &posNode{key: k, prio: t.random()})
	t.n++
}

// remove deletes k and reports whether it was there.
func (t *posTree) remove(k Position) bool {
	var ok bool
	t.root, ok = treapRemove(t.root, k)
	if ok {
		t.n--
	}
	return ok
}

// ascend calls fn on every key at or after from (nil: every key), in
// ascending order, until fn returns false.
func (t *posTree) ascend(from *Position, fn func(Position) bool) { treapAscend(t.root, from, fn) }

// descend calls fn on every key before before (nil: every key), in
// descending order, until fn returns false.
func (t *posTree) descend(before *Position, fn func(Position) bool) { treapDescend(t.root, before, fn) }

func treapInsert(n, x *posNode) *posNode {
	if n == nil {
		return x
	}
	if x.prio > n.prio {
		x.left, x.right = treapSplit(n, x.key)
		return x
	}
	if x.key.Compare(n.key) < 0 {
		n.left = treapInsert(n.left, x)
	} else {
		n.right = treapInsert(n.right, x)
	}
	return n
}

// treapSplit splits n into the keys before k and the keys after it (k is
// not in n).
func treapSplit(n *posNode, k Position) (before, after *posNode) {
	if n == nil {
		return nil, nil
	}
	if n.key.Compare(k) < 0 {
		n.right, after = treapSplit(n.right, k)
		return n, after
	}
	before, n.left = treapSplit(n.left, k)
	return before, n
}

// treapMerge joins a and b, every key of a sorting before every key of b.
func treapMerge(a, b *posNode) *posNode {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	case a.prio > b.prio:
		a.right = treapMerge(a.right, b)
		return a
	default:
		b.left = treapMerge(a, b.left)
		return b
	}
}

func treapRemove(n *posNode, k Position) (*posNode, bool) {
	if n == nil {
		return nil, false
	}
	var ok bool
	switch c := k.Compare(n.key); {
	case c < 0:
		n.left, ok = treapRemove(n.left, k)
	case c > 0:
		n.right, ok = treapRemove(n.right, k)
	default:
		return treapMerge(n.left, n.right), true
	}
	return n, ok
}

func treapAscend(n *posNode, from *Position, fn func(Position) bool) bool {
	if n == nil {
		return true
	}
	if from == nil || n.key.Compare(*from) >= 0 {
		if !treapAscend(n.left, from, fn) || !fn(n.key) {
			return false
		}
		return treapAscend(n.right, nil, fn)
	}
	return treapAscend(n.right, from, fn)
}

func treapDescend(n *posNode, before *Position, fn func(Position) bool) bool {
	if n == nil {
		return true
	}
	if before == nil || n.key.Compare(*before) < 0 {
		if !treapDescend(n.right, before, fn) || !fn(n.key) {
			return false
		}
		return treapDescend(n.left, nil, fn)
	}
	return treapDescend(n.left, before, fn)
}

package store

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"
)

// Memory is a Store held in process memory. It is the default store: nothing
// touches the disk, and everything is gone when the process exits.
//
// It is Indexed: beside the records it keeps every record's Position in
// one ordered tree and the positions of records not in an active status in
// another, plus the number of active ones, all updated by every Put and
// Delete under the store's lock. So the index is exact however many
// orchestrators share the store.
type Memory struct {
	mu   sync.Mutex
	recs map[string]Record
	// all holds the Position of every record; terminal those whose status
	// is not active; active counts the others.
	all, terminal posTree
	active        int
}

var _ Indexed = (*Memory)(nil)

// NewMemory returns an empty in-memory store.
func NewMemory() *Memory { return &Memory{recs: map[string]Record{}} }

// index adds r to the index; unindex removes it. Callers hold mu.
func (m *Memory) index(r Record) {
	m.all.insert(PositionOf(r))
	if activeStatus(r.Status) {
		m.active++
	} else {
		m.terminal.insert(PositionOf(r))
	}
}

func (m *Memory) unindex(r Record) {
	m.all.remove(PositionOf(r))
	if activeStatus(r.Status) {
		m.active--
	} else {
		m.terminal.remove(PositionOf(r))
	}
}

// drop deletes r, which is stored. Callers hold mu.
func (m *Memory) drop(r Record) {
	m.unindex(r)
	delete(m.recs, r.RunID)
}

// Get implements Store.
func (m *Memory) Get(ctx context.Context, runID string) (Record, error) {
	if err := ctx.Err(); err != nil {
		return Record{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.recs[runID]
	if !ok {
		return Record{}, ErrNotFound
	}
	return r.Clone(), nil
}

// Put implements Store.
func (m *Memory) Put(ctx context.Context, rec Record, expected int64) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	cur, ok := m.recs[rec.RunID]
	switch {
	case expected == Absent && ok:
		return ErrConflict
	case expected != Absent && !ok:
		return ErrNotFound
	case ok && cur.Revision != expected:
		return ErrConflict
	}
	if ok {
		m.unindex(cur)
	}
	m.recs[rec.RunID] = rec.Clone()
	m.index(rec)
	return nil
}

// Delete implements Store.
func (m *Memory) Delete(ctx context.Context, runID string, expected int64) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	cur, ok := m.recs[runID]
	switch {
	case !ok && expected == AnyRevision:
		return nil
	case !ok:
		return ErrNotFound
	case expected != AnyRevision && cur.Revision != expected:
		return ErrConflict
	}
	m.drop(cur)
	return nil
}

// List implements Store.
func (m *Memory) List(ctx context.Context) ([]Record, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]Record, 0, len(m.recs))
	for _, r := range m.recs {
		out = append(out, r.Clone())
	}
	slices.SortFunc(out, func(a, b Record) int { return strings.Compare(a.RunID, b.RunID) })
	return out, nil
}

// ListMeta implements Store.
func (m *Memory) ListMeta(ctx context.Context) ([]Record, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]Record, 0, len(m.recs))
	for _, r := range m.recs {
		r.Payload = nil
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b Record) int { return strings.Compare(a.RunID, b.RunID) })
	return out, nil
}

// PurgeExpired implements Indexed.
func (m *Memory) PurgeExpired(ctx context.Context, now time.Time, keep string) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var gone []Position
	m.all.ascend(nil, func(p Position) bool {
		if p.ExpiresAt.After(now) {
			return false
		}
		if p.RunID != keep {
			gone = append(gone, p)
		}
		return true
	})
	ids := make([]string, 0, len(gone))
	for _, p := range gone {
		m.drop(m.recs[p.RunID])
		ids = append(ids, p.RunID)
	}
	return ids, nil
}

// Occupancy implements Indexed.
func (m *Memory) Occupancy(ctx context.Context) (total, active int, err error) {
	if err := ctx.Err(); err != nil {
		return 0, 0, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.recs), m.active, nil
}

// Evictable implements Indexed.
func (m *Memory) Evictable(ctx context.Context, n int) ([]Record, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]Record, 0, min(max(n, 0), m.terminal.len()))
	if n <= 0 {
		return out, nil
	}
	m.terminal.ascend(nil, func(p Position) bool {
		out = append(out, m.meta(p.RunID))
		return len(out) < n
	})
	return out, nil
}

// Page implements Indexed.
func (m *Memory) Page(ctx context.Context, now time.Time, after *Position, limit int) ([]Record, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	out := []Record{}
	if limit <= 0 {
		return out, nil
	}
	m.all.descend(after, func(p Position) bool {
		if !p.ExpiresAt.After(now) {
			return false
		}
		out = append(out, m.meta(p.RunID))
		return len(out) < limit
	})
	return out, nil
}

// meta returns the stored record without its payload. Callers hold mu.
func (m *Memory) meta(runID string) Record {
	r := m.recs[runID]
	r.Payload = nil
	return r
}

package store

import (
	"context"
	"slices"
	"strings"
	"sync"
)

// Memory is a Store held in process memory. It is the default store: nothing
// touches the disk, and everything is gone when the process exits.
type Memory struct {
	mu   sync.Mutex
	recs map[string]Record
}

// NewMemory returns an empty in-memory store.
func NewMemory() *Memory { return &Memory{recs: map[string]Record{}} }

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
	m.recs[rec.RunID] = rec.Clone()
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
	delete(m.recs, runID)
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

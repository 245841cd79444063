// Package pool is the failover provider: it asks its member providers in
// order and, when one fails, the next. A member's failure is terminal
// for it (its own machinery has already retried what could be retried),
// so a failed member is not asked again during the review. Every attempt
// is recorded in ProfileResult.Notes, which the engine writes to the
// review's audit (qa-session.json).
//
// It composes providers through the seam's interfaces only and imports
// none of them.
package pool

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/diffpalhq/diffpal/internal/provider"
)

// Member is one provider of a pool and the name the config gives it.
type Member struct {
	Name     string
	Provider provider.Provider
}

// Pool tries its members in order. It implements provider.Provider,
// provider.Verifier (over the members that verify) and provider.Preparer
// (every member that prepares is prepared). It is safe for concurrent use.
type Pool struct {
	name    string
	members []Member

	mu     sync.Mutex
	failed map[int]error
}

var (
	_ provider.Provider = (*Pool)(nil)
	_ provider.Verifier = (*Pool)(nil)
	_ provider.Preparer = (*Pool)(nil)
)

// New returns a pool named name over members (at least one).
func New(name string, members []Member) (*Pool, error) {
	if len(members) == 0 {
		return nil, fmt.Errorf("pool %s: no members", name)
	}
	return &Pool{name: name, members: append([]Member(nil), members...), failed: map[int]error{}}, nil
}

// Name is the pool's name.
func (p *Pool) Name() string { return p.name }

// Prepare prepares every member that needs it (the builtin rule packs).
func (p *Pool) Prepare(ctx context.Context, files []*provider.ChangedFile) {
	for _, m := range p.members {
		if pr, ok := m.Provider.(provider.Preparer); ok {
			pr.Prepare(ctx, files)
		}
	}
}

// live returns the members not yet failed, in order, with their indexes.
func (p *Pool) live() []int {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []int
	for i := range p.members {
		if _, bad := p.failed[i]; !bad {
			out = append(out, i)
		}
	}
	return out
}

func (p *Pool) fail(i int, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.failed[i] = err
}

// ErrAllFailed wraps the last member's error when every member failed.
var ErrAllFailed = errors.New("every pool member failed")

// ReviewProfile asks the members in order until one answers.
func (p *Pool) ReviewProfile(ctx context.Context, req provider.ProfileRequest) (provider.ProfileResult, error) {
	var notes []string
	var last error
	for _, i := range p.live() {
		m := p.members[i]
		res, err := m.Provider.ReviewProfile(ctx, req)
		if err == nil {
			res.Notes = append(append(notes, fmt.Sprintf("pool %s: profile %s answered by member %s", p.name, req.Profile, m.Name)), res.Notes...)
			return res, nil
		}
		if ctx.Err() != nil {
			return res, err
		}
		p.fail(i, err)
		last = err
		notes = append(notes, fmt.Sprintf("pool %s: member %s failed on profile %s: %s", p.name, m.Name, req.Profile, oneLine(err)))
	}
	return provider.ProfileResult{Notes: notes}, p.allFailed(last)
}

// Verify asks the members that verify, in order, until one answers.
func (p *Pool) Verify(ctx context.Context, ch *provider.Change, cands []provider.Candidate, reasons []string) ([]provider.Verdict, error) {
	var last error
	for _, i := range p.live() {
		v, ok := p.members[i].Provider.(provider.Verifier)
		if !ok {
			continue
		}
		out, err := v.Verify(ctx, ch, cands, reasons)
		if err == nil || ctx.Err() != nil {
			return out, err
		}
		p.fail(i, err)
		last = err
	}
	if last == nil {
		return nil, fmt.Errorf("pool %s: no member can verify candidates", p.name)
	}
	return nil, p.allFailed(last)
}

func (p *Pool) allFailed(last error) error {
	if last == nil {
		// Every member failed on an earlier profile: report the last.
		p.mu.Lock()
		for i := len(p.members) - 1; i >= 0 && last == nil; i-- {
			last = p.failed[i]
		}
		p.mu.Unlock()
	}
	if last == nil {
		return fmt.Errorf("pool %s: %w", p.name, ErrAllFailed)
	}
	// The last error stays reachable: it carries the exit code's class.
	return fmt.Errorf("pool %s: %w; the last: %w", p.name, ErrAllFailed, last)
}

func oneLine(err error) string {
	s := strings.Join(strings.Fields(err.Error()), " ")
	if len(s) > 500 {
		s = s[:500] + "…"
	}
	return s
}

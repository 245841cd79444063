// Package builtin is diffpal's offline, deterministic provider: the rule
// packs of internal/rules (embedded, plus the user's) matched over the
// changed files, comments and strings masked, and gitleaks' secret rules
// over every added line (secrets.go). It runs every rule once per change
// and hands each profile the hits of the checklists it answers for.
// Nothing leaves the process, so nothing is redacted here; the engine
// redacts what it writes.
package builtin

import (
	"context"
	"sync"
	"time"

	"github.com/diffpalhq/diffpal/internal/par"
	"github.com/diffpalhq/diffpal/internal/provider"
	"github.com/diffpalhq/diffpal/internal/rules"
)

// Builtin is the rule-pack provider. It matches one change: the first
// Prepare or ReviewProfile call fixes the files it reviews.
type Builtin struct {
	Rules *rules.Set
	Now   func() time.Time

	once sync.Once
	hits []rules.Hit

	// early matches the files handed to PrepareFile, one at a time on
	// one goroutine, while the change is still being read.
	earlyOnce sync.Once
	early     *par.Ahead[*provider.ChangedFile, []rules.Hit]
}

var (
	_ provider.Provider     = (*Builtin)(nil)
	_ provider.Preparer     = (*Builtin)(nil)
	_ provider.FilePreparer = (*Builtin)(nil)
)

// New loads the embedded packs plus any user packs.
func New(extraPacks ...[]byte) (*Builtin, error) { return NewNamed(nil, extraPacks) }

// NewNamed is New with names for the user packs' errors.
func NewNamed(names []string, extraPacks [][]byte) (*Builtin, error) {
	set, err := rules.LoadNamed(names, extraPacks)
	if err != nil {
		return nil, err
	}
	return &Builtin{Rules: set, Now: time.Now}, nil
}

// Fresh is a provider with the same rules and clock that has matched
// nothing yet, for the next change.
func (b *Builtin) Fresh() *Builtin { return &Builtin{Rules: b.Rules, Now: b.Now} }

// Name implements provider.Provider.
func (b *Builtin) Name() string { return "builtin" }

// EvidenceBlind implements provider.EvidenceBlind: the rules read the
// files, not the evidence items' text.
func (b *Builtin) EvidenceBlind() {}

// ReviewProfile runs every rule once per change (the first call) and then
// hands each profile the hits of the checklists it answers for.
func (b *Builtin) ReviewProfile(ctx context.Context, req provider.ProfileRequest) (provider.ProfileResult, error) {
	start := b.Now()
	if req.Change != nil {
		b.Prepare(ctx, req.Change.Files)
	}
	if err := ctx.Err(); err != nil {
		return provider.ProfileResult{}, err
	}
	want := map[string]bool{}
	for _, p := range req.RuleProfiles {
		want[p] = true
	}
	res := provider.ProfileResult{Attempts: 1, Started: start}
	for _, h := range b.hits {
		if !want[h.Profile] {
			continue
		}
		res.Candidates = append(res.Candidates, fromHit(h))
	}
	res.Completed = b.Now()
	return res, nil
}

// Prepare runs every rule once over the change (provider.Preparer).
func (b *Builtin) Prepare(ctx context.Context, changed []*provider.ChangedFile) {
	b.once.Do(func() {
		early := b.stopEarly()
		files := provider.RuleFiles(changed)
		// Files are independent: match them on every core (those
		// PrepareFile has not matched yet), then keep the results in file
		// order so output does not depend on scheduling.
		per := make([][]rules.Hit, len(files))
		var todo []int
		for i, f := range changed {
			if h, ok := early[f]; ok {
				per[i] = h
			} else {
				todo = append(todo, i)
			}
		}
		par.For(len(todo), 1, func(k int) { per[todo[k]] = b.matchFile(files[todo[k]]) })
		for _, h := range per {
			b.hits = append(b.hits, h...)
		}
		b.hits = append(b.hits, b.Rules.MatchChange(files, nil)...)
	})
}

// matchFile is one file's hits: its rules, then its secrets.
func (b *Builtin) matchFile(f *rules.File) []rules.Hit {
	return append(b.Rules.MatchFile(f, nil), secretHits(b.Rules, f)...)
}

// PrepareFile implements provider.FilePreparer: the file is matched by
// one goroutine while the engine reads the rest of the change (git's diff
// keeps the other core busy); Prepare matches what is left on every core.
func (b *Builtin) PrepareFile(ctx context.Context, f *provider.ChangedFile) {
	b.earlyMatcher(ctx).Add(f) // after Prepare has started, a no-op: it matches f itself
}

func (b *Builtin) earlyMatcher(ctx context.Context) *par.Ahead[*provider.ChangedFile, []rules.Hit] {
	b.earlyOnce.Do(func() {
		b.early = par.NewAhead(ctx, func(f *provider.ChangedFile) []rules.Hit { return b.matchFile(f.Rules()) })
	})
	return b.early
}

// stopEarly stops PrepareFile's goroutine, waits for the file it is on
// and returns the files it matched.
func (b *Builtin) stopEarly() map[*provider.ChangedFile][]rules.Hit {
	return b.earlyMatcher(context.Background()).Stop()
}

func fromHit(h rules.Hit) provider.Candidate {
	return provider.Candidate{
		RuleID: h.RuleID, Category: h.Category, Severity: h.Severity, Confidence: h.Confidence,
		Title: h.Title, Message: h.Message, Impact: h.Impact, Scope: h.ImpactScope, Suggestion: h.Suggestion,
		Path: h.Path, StartLine: h.StartLine, EndLine: h.EndLine, OldLine: h.OldLine,
		SupportStart: h.SupportStart, SupportEnd: h.SupportEnd,
		Source: h.Source, Snippet: h.Snippet, Anchor: h.Anchor, RuleProfile: h.Profile,
	}
}

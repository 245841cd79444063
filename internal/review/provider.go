package review

import (
	"context"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/diffpalhq/diffpal/internal/qa"
	"github.com/diffpalhq/diffpal/internal/rules"
)

// Candidate is one possible finding a provider reports for a profile.
type Candidate struct {
	RuleID     string  `json:"rule_id,omitempty"`
	Category   string  `json:"category"`
	Severity   string  `json:"severity"`
	Confidence float64 `json:"confidence"`
	Title      string  `json:"title"`
	Message    string  `json:"message"`
	Impact     string  `json:"impact"`
	Scope      string  `json:"impact_scope"`
	Suggestion string  `json:"suggestion,omitempty"`
	Path       string  `json:"path"`
	StartLine  int     `json:"start_line"`
	EndLine    int     `json:"end_line"`
	// Side is LEFT for findings about removed lines (OldLine), else RIGHT.
	OldLine int    `json:"old_line,omitempty"`
	Source  string `json:"source"`
	Snippet string `json:"snippet"`
	Anchor  string `json:"anchor"`
	// RuleProfile is the profile whose checklist produced the candidate.
	RuleProfile string `json:"rule_profile"`
	// EvidenceRefs are the packet refs the provider cites; refs not in the
	// packet are dropped, and when none remain the engine cites the items
	// covering the anchored lines.
	EvidenceRefs []string `json:"evidence_refs,omitempty"`
}

// ProfileRequest asks a provider to review the change as one profile.
type ProfileRequest struct {
	Profile qa.Profile
	Route   qa.ReviewRoute
	Change  *Change
	Files   []*rules.File
	// RuleProfiles are the checklists this session profile answers for:
	// its own plus those of profiles the selected bundle does not contain.
	RuleProfiles []string
	// Deep is set for the deep-review pass.
	Deep bool
}

// ProfileResult is a provider's answer.
type ProfileResult struct {
	Candidates []Candidate
	Gaps       []string
	// Unverified are points the provider could not verify.
	Unverified []string
	// Selection describes the evidence subset the provider was given,
	// when it was not the whole packet (budgets).
	Selection *qa.ContextSelection
	// Dropped counts candidates the provider discarded, by reason.
	Dropped  map[string]int
	Attempts int
	// AttemptLog is the per-attempt record for execution_metrics.
	AttemptLog []qa.ExecutionAttempt
	// CachedInputTokens counts prompt tokens served from a cache.
	CachedInputTokens *int64
	// InputTokens/OutputTokens are nil for providers without tokens.
	InputTokens, OutputTokens *int64
	Started, Completed        time.Time
}

// Provider reviews a change one profile at a time.
type Provider interface {
	Name() string
	ReviewProfile(ctx context.Context, req ProfileRequest) (ProfileResult, error)
}

// Preparer is an optional Provider capability: work that depends only on
// the files, which the engine runs while it builds the evidence packet.
type Preparer interface {
	Prepare(ctx context.Context, files []*rules.File)
}

// Builtin is the offline, deterministic rule-pack provider.
type Builtin struct {
	Rules *rules.Set
	Now   func() time.Time

	once sync.Once
	hits []rules.Hit
}

// NewBuiltin loads the embedded packs plus any user packs.
func NewBuiltin(extraPacks ...[]byte) (*Builtin, error) { return NewBuiltinNamed(nil, extraPacks) }

// NewBuiltinNamed is NewBuiltin with names for the user packs' errors.
func NewBuiltinNamed(names []string, extraPacks [][]byte) (*Builtin, error) {
	set, err := rules.LoadNamed(names, extraPacks)
	if err != nil {
		return nil, err
	}
	return &Builtin{Rules: set, Now: time.Now}, nil
}

// Name implements Provider.
func (b *Builtin) Name() string { return "builtin" }

// ReviewProfile runs every rule once per change (the first call) and then
// hands each profile the hits of the checklists it answers for.
func (b *Builtin) ReviewProfile(ctx context.Context, req ProfileRequest) (ProfileResult, error) {
	start := b.Now()
	b.Prepare(ctx, req.Files)
	if err := ctx.Err(); err != nil {
		return ProfileResult{}, err
	}
	want := map[string]bool{}
	for _, p := range req.RuleProfiles {
		want[p] = true
	}
	res := ProfileResult{Attempts: 1, Started: start}
	for _, h := range b.hits {
		if !want[h.Profile] {
			continue
		}
		res.Candidates = append(res.Candidates, fromHit(h))
	}
	res.Completed = b.Now()
	return res, nil
}

// Prepare runs every rule once over the change (Preparer).
func (b *Builtin) Prepare(ctx context.Context, files []*rules.File) {
	b.once.Do(func() {
		// Files are independent: match them on every core, then keep the
		// results in file order so output does not depend on scheduling.
		per := make([][]rules.Hit, len(files))
		var wg sync.WaitGroup
		next := make(chan int)
		for w := 0; w < runtime.GOMAXPROCS(0); w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range next {
					per[i] = b.Rules.MatchFile(files[i], nil)
				}
			}()
		}
		for i := range files {
			next <- i
		}
		close(next)
		wg.Wait()
		for _, h := range per {
			b.hits = append(b.hits, h...)
		}
		b.hits = append(b.hits, b.Rules.MatchChange(files, nil)...)
	})
}

func fromHit(h rules.Hit) Candidate {
	return Candidate{
		RuleID: h.RuleID, Category: h.Category, Severity: h.Severity, Confidence: h.Confidence,
		Title: h.Title, Message: h.Message, Impact: h.Impact, Scope: h.ImpactScope, Suggestion: h.Suggestion,
		Path: h.Path, StartLine: h.StartLine, EndLine: h.EndLine, OldLine: h.OldLine,
		Source: h.Source, Snippet: h.Snippet, Anchor: h.Anchor, RuleProfile: h.Profile,
	}
}

// Verdict is a verifier's decision on one candidate.
type Verdict struct {
	Index        int      // into the candidates passed in
	Verdict      string   // confirmed, rejected or unverified
	Rationale    string   //
	EvidenceRefs []string // packet refs the verdict rests on
}

// Verifier checks candidates against wider evidence: the deep-review pass
// (severe candidates) and model-backed synthesis (every candidate) use it.
type Verifier interface {
	Name() string
	Verify(ctx context.Context, ch *Change, cands []Candidate, reasons []string) ([]Verdict, error)
}

// Router sends each profile to its provider (config stages) and the rest
// to Default.
type Router struct {
	Default  Provider
	Profiles map[qa.Profile]Provider
}

// Name lists the distinct providers, default first.
func (r *Router) Name() string {
	names := []string{r.Default.Name()}
	for _, p := range r.Profiles {
		n := p.Name()
		found := false
		for _, x := range names {
			found = found || x == n
		}
		if !found {
			names = append(names, n)
		}
	}
	if len(names) > 1 {
		slices.Sort(names[1:])
	}
	return strings.Join(names, "+")
}

func (r *Router) pick(p qa.Profile) Provider {
	if x, ok := r.Profiles[p]; ok {
		return x
	}
	return r.Default
}

// ReviewProfile implements Provider.
func (r *Router) ReviewProfile(ctx context.Context, req ProfileRequest) (ProfileResult, error) {
	return r.pick(req.Profile).ReviewProfile(ctx, req)
}

// Prepare implements Preparer for every routed provider that has it.
func (r *Router) Prepare(ctx context.Context, files []*rules.File) {
	seen := map[Provider]bool{}
	for _, p := range append([]Provider{r.Default}, mapValues(r.Profiles)...) {
		if seen[p] {
			continue
		}
		seen[p] = true
		if pp, ok := p.(Preparer); ok {
			pp.Prepare(ctx, files)
		}
	}
}

func mapValues(m map[qa.Profile]Provider) []Provider {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, string(k))
	}
	slices.Sort(keys)
	out := make([]Provider, 0, len(m))
	for _, k := range keys {
		out = append(out, m[qa.Profile(k)])
	}
	return out
}

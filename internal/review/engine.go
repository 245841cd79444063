package review

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/diffpalhq/diffpal/findings"
	"github.com/diffpalhq/diffpal/internal/diff"
	"github.com/diffpalhq/diffpal/internal/qa"
	"github.com/diffpalhq/diffpal/internal/rules"
	"github.com/diffpalhq/diffpal/internal/scope"
)

// Options configure one review.
type Options struct {
	Change ChangeOptions
	// FilterMode decides which lines findings may sit on (default added).
	FilterMode string
	// Bundle or Profile force the triage choice (at most one).
	Bundle  string
	Profile string
	// Provider reviews each profile; default the builtin rule packs.
	Provider Provider
	// Policy computes blocking.
	Policy findings.Policy
	// ReviewID enters every finding id (default "local").
	ReviewID string
	// Baseline drops findings whose stable_id it already has.
	Baseline *findings.Bundle
	// Ignores are configured suppressions (each needs a reason).
	Ignores []Ignore
	// DeepVerifier, when set, is the deep-review pass: it checks severe
	// candidates against wider evidence. Without it the builtin heuristics
	// run.
	DeepVerifier Verifier
	// SynthesisVerifier, when set, checks every candidate bound to the
	// session at synthesis; rejected ones are refuted and left out.
	SynthesisVerifier Verifier
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Progress, when set, hears about each step.
	Progress func(step string)
	// ReviewPolicy, when set, is where the config, ignore file and rule
	// packs came from and the edits the change makes to them (package
	// policy); each edit, and each diffpal:ignore the change adds, becomes
	// a policy.self-edit finding.
	ReviewPolicy *Policy
}

// Result is a finished review.
type Result struct {
	Change  *Change          `json:"-"`
	Bundle  *findings.Bundle `json:"-"`
	Session qa.Session       `json:"session"`
	Audit   Audit            `json:"audit"`
}

// Audit is everything the review decided, for qa-session.json and the
// summary: nothing is dropped or suppressed without a record here.
type Audit struct {
	Provider     string            `json:"provider"`
	Range        any               `json:"range"`
	FilterMode   string            `json:"filter_mode"`
	Triage       string            `json:"triage"`
	Folded       map[string]string `json:"folded_profiles,omitempty"`
	Skips        []scope.Skip      `json:"skipped_files"`
	Drops        []Drop            `json:"dropped"`
	Suppressed   []Suppressed      `json:"suppressed"`
	Invalid      []Suppressed      `json:"invalid_suppressions,omitempty"`
	Baseline     *BaselineSummary  `json:"baseline,omitempty"`
	Deep         *DeepPass         `json:"deep_review,omitempty"`
	Notes        []string          `json:"notes,omitempty"`
	Policy       *Policy           `json:"policy,omitempty"`
	Files        int               `json:"files_reviewed"`
	AddedLines   int               `json:"added_lines"`
	RemovedLines int               `json:"removed_lines"`
	Candidates   int               `json:"candidates"`
	Findings     int               `json:"findings"`
	Seconds      float64           `json:"seconds"`
}

// Policy records where the review's own policy (config, .diffpalignore,
// rule packs) was read from, and every edit the reviewed change makes to
// that policy, so a reviewer sees a change that tries to silence the gate.
type Policy struct {
	// Source is base, head or worktree (see docs/security.md).
	Source string `json:"source"`
	// Why says how Source was chosen ("CI is set", "--config-source").
	Why     string         `json:"why,omitempty"`
	Changes []PolicyChange `json:"changes,omitempty"`
}

// PolicyChange is one edit the change makes to its own review policy.
type PolicyChange struct {
	// Kind is config, ignore_file, rule_pack or inline_ignore.
	Kind   string `json:"kind"`
	Path   string `json:"path"`
	Line   int    `json:"line,omitempty"`
	Detail string `json:"detail"`
}

// Drop counts candidates removed by anchoring or scope, per reason.
type Drop struct {
	Reason  string   `json:"reason"`
	Count   int      `json:"count"`
	Samples []string `json:"samples,omitempty"`
}

// DeepPass records what the deep-review pass did.
type DeepPass struct {
	By        string   `json:"by"`
	Reasons   []string `json:"reasons"`
	Examined  int      `json:"examined"`
	Lowered   int      `json:"confidence_lowered"`
	Raised    int      `json:"confidence_raised"`
	Rejected  int      `json:"rejected"`
	Rationale []string `json:"notes,omitempty"`
}

// Run reviews a change end to end.
func Run(ctx context.Context, o Options) (*Result, error) {
	now := o.Now
	if now == nil {
		now = time.Now
	}
	started := now()
	if o.FilterMode == "" {
		o.FilterMode = diff.FilterAdded
	}
	if err := diff.ValidFilter(o.FilterMode); err != nil {
		return nil, inputErr(err)
	}
	if o.Bundle != "" && o.Profile != "" {
		return nil, inputErr(errors.New("--bundle and --profile are mutually exclusive"))
	}
	for i, ig := range o.Ignores {
		if err := ig.validate(); err != nil {
			return nil, inputErr(fmt.Errorf("ignores[%d]: %w", i, err))
		}
	}
	progress := func(s string) {
		if o.Progress != nil {
			o.Progress(s)
		}
	}
	progress("reading the change")
	co := o.Change
	co.NoPacket = true
	ch, err := LoadChange(ctx, co)
	if err != nil {
		return nil, err
	}
	if o.Provider == nil {
		b, err := NewBuiltin()
		if err != nil {
			return nil, err
		}
		o.Provider = b
	}
	files := ruleFiles(ch)
	// The evidence packet and the provider's file-only work are
	// independent: do them at the same time.
	var packetErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		ch.Packet, packetErr = ch.BuildPacket(o.Change.MaxItems)
	}()
	if p, ok := o.Provider.(Preparer); ok {
		progress("matching rules")
		p.Prepare(ctx, files)
	}
	<-done
	if packetErr != nil {
		return nil, packetErr
	}
	e := &engine{o: o, ch: ch, now: now}
	e.audit = Audit{Provider: o.Provider.Name(), Range: ch.Range, FilterMode: o.FilterMode, Skips: ch.Skips}
	if e.audit.Skips == nil {
		e.audit.Skips = []scope.Skip{}
	}
	e.files = files
	for _, f := range ch.Files {
		a, r := f.Diff.Stats()
		e.audit.AddedLines += a
		e.audit.RemovedLines += r
	}
	e.audit.Files = len(ch.Files)
	if err := e.run(ctx, progress); err != nil {
		return nil, err
	}
	e.audit.Seconds = now().Sub(started).Seconds()
	res := &Result{Change: ch, Bundle: e.bundle, Session: e.session, Audit: e.audit}
	redactResult(res)
	return res, nil
}

type engine struct {
	o       Options
	ch      *Change
	now     func() time.Time
	files   []*rules.File
	audit   Audit
	session qa.Session
	bundle  *findings.Bundle
	drops   map[string]*Drop
	syms    []rules.Symbol
	symsOK  bool
}

// symbols are the explorer's changed symbols, computed once per review.
func (e *engine) symbols() []rules.Symbol {
	if !e.symsOK {
		e.syms, e.symsOK = rules.ChangedSymbols(e.files), true
	}
	return e.syms
}

// ruleFiles converts the change into the rule engine's view.
func ruleFiles(ch *Change) []*rules.File {
	out := make([]*rules.File, 0, len(ch.Files))
	for _, f := range ch.Files {
		first := ""
		if len(f.Content) > 0 {
			first = f.Content[0]
		}
		rf := &rules.File{Path: f.Path(), Language: rules.DetectLanguage(f.Path(), first), Status: f.Diff.Status, Content: f.Content}
		for _, l := range f.Diff.Added() {
			rf.Added = append(rf.Added, rules.Line{No: l.NewNo, Text: l.Text})
		}
		for _, l := range f.Diff.Removed() {
			rf.Removed = append(rf.Removed, rules.Line{No: l.OldNo, Text: l.Text})
		}
		out = append(out, rf)
	}
	return out
}

func (e *engine) drop(reason, sample string) { e.dropN(reason, sample, 1) }

func (e *engine) dropN(reason, sample string, n int) {
	if n <= 0 {
		return
	}
	if e.drops == nil {
		e.drops = map[string]*Drop{}
	}
	d := e.drops[reason]
	if d == nil {
		d = &Drop{Reason: reason}
		e.drops[reason] = d
	}
	d.Count += n
	if len(d.Samples) < 5 {
		d.Samples = append(d.Samples, sample)
	}
}

func (e *engine) run(ctx context.Context, progress func(string)) error {
	orch, err := qa.New(qa.Config{Clock: e.now})
	if err != nil {
		return err
	}
	start := qa.StartInput{TaskType: qa.TaskOrdinaryReview}
	rc, rcErr := e.ch.Packet.ReviewContext()
	if rcErr == nil {
		start.ReviewContext = toQAContext(rc)
	} else {
		e.audit.Notes = append(e.audit.Notes, "session not bound to the evidence packet: "+rcErr.Error())
	}
	s, err := orch.Start(ctx, start)
	if err != nil {
		return fmt.Errorf("start orchestration: %w", err)
	}

	// Triage.
	rec := s.RecommendedProfiles
	if s.ReviewContext == nil {
		// An unbound session (a change too large to bind) has no hints of
		// its own; the same file-type rules still apply.
		paths := make([]string, len(e.ch.Files))
		for i, f := range e.ch.Files {
			paths[i] = f.Path()
		}
		rec = qa.RecommendProfiles(paths)
	}
	tri := triage(e.ch, rec, e.o.Bundle, e.o.Profile)
	e.audit.Triage = tri.why
	adv := qa.AdvanceInput{RunID: s.RunID, CompletedStep: qa.StepTriage, Status: qa.OutcomeCompleted}
	if tri.bundle != "" {
		b := qa.Bundle(tri.bundle)
		adv.SelectedBundle = &b
	} else {
		p := qa.Profile(tri.profile)
		adv.SelectedProfile = &p
	}
	if s, err = orch.Advance(ctx, adv); err != nil {
		return fmt.Errorf("triage: %w", err)
	}
	profiles := s.ReviewProfiles
	fold := foldProfiles(profiles)
	e.audit.Folded = map[string]string{}
	for rp, sp := range fold {
		if rp != string(sp) {
			e.audit.Folded[rp] = string(sp)
		}
	}

	// Primary review: every profile's provider call, then anchoring,
	// suppression and baseline filtering of its candidates.
	perProfile := map[qa.Profile][]*candidate{}
	results := map[qa.Profile]ProfileResult{}
	for _, p := range profiles {
		progress("reviewing as " + string(p))
		var owned []string
		for rp, sp := range fold {
			if sp == p {
				owned = append(owned, rp)
			}
		}
		slices.Sort(owned)
		route, _ := qa.Prepare(qa.PrepareInput{AgentProfile: p})
		res, err := e.o.Provider.ReviewProfile(ctx, ProfileRequest{Profile: p, Route: route, Change: e.ch, Files: e.files, RuleProfiles: owned})
		if err != nil {
			return fmt.Errorf("provider %s, profile %s: %w", e.o.Provider.Name(), p, err)
		}
		results[p] = res
		for reason, n := range res.Dropped {
			e.dropN(reason, string(p), n)
		}
		for _, c := range res.Candidates {
			if k := e.admit(c); k != nil {
				k.profile = p
				perProfile[p] = append(perProfile[p], k)
			}
		}
	}
	if e.o.ReviewPolicy != nil {
		rec := *e.o.ReviewPolicy
		rec.Changes = e.policyChanges()
		e.audit.Policy = &rec
		owner, cands := e.policyCandidates(rec.Changes, profiles)
		for _, c := range cands {
			if k := e.admitWith(c, true); k != nil {
				k.profile = owner
				perProfile[owner] = append(perProfile[owner], k)
			}
		}
	}
	for _, p := range profiles {
		e.audit.Candidates += len(perProfile[p])
	}
	groups := synthesize(perProfile, profiles)
	e.identify(groups)
	bound := groupsForSession(groups)

	// Drive the session through the primary profiles.
	for i, p := range profiles {
		if s.CurrentStep != qa.StepPrimaryReview || s.CurrentProfile == nil || *s.CurrentProfile != p {
			return fmt.Errorf("internal: session expected profile %v at step %s", s.CurrentProfile, s.CurrentStep)
		}
		report := e.profileReport(p, perProfile[p], bound, results[p], groups)
		adv := qa.AdvanceInput{RunID: s.RunID, CompletedStep: qa.StepPrimaryReview, Status: qa.OutcomeCompleted,
			CompletedProfile: &p, ProfileReport: report}
		if i == len(profiles)-1 {
			adv.RiskSignals = e.riskSignals(groups)
		}
		if s, err = orch.Advance(ctx, adv); err != nil {
			return fmt.Errorf("record %s report: %w", p, err)
		}
	}
	if s.CurrentStep == qa.StepDeepReview {
		progress("deep review")
		if e.audit.Deep, err = e.deepPass(ctx, groups, s.DeepAssessment); err != nil {
			return fmt.Errorf("deep review: %w", err)
		}
		if s, err = orch.Advance(ctx, qa.AdvanceInput{RunID: s.RunID, CompletedStep: qa.StepDeepReview, Status: qa.OutcomeCompleted}); err != nil {
			return fmt.Errorf("deep review: %w", err)
		}
	}
	progress("synthesis")
	if err := e.verifyAtSynthesis(ctx, groups, bound); err != nil {
		return fmt.Errorf("synthesis: %w", err)
	}
	final, err := e.finalReport(s, groups, bound, perProfile)
	if err != nil {
		return err
	}
	if s, err = orch.Advance(ctx, qa.AdvanceInput{RunID: s.RunID, CompletedStep: qa.StepSynthesis, Status: qa.OutcomeCompleted, FinalReviewReport: final}); err != nil {
		return fmt.Errorf("synthesis: %w", err)
	}
	if s, err = orch.Finish(ctx, qa.FinishInput{RunID: s.RunID, Outcome: qa.OutcomeCompleted}); err != nil {
		return fmt.Errorf("finish: %w", err)
	}
	e.session = s
	if err := e.buildBundle(groups); err != nil {
		return err
	}
	e.audit.Drops = append([]Drop{}, sortedDrops(e.drops)...)
	if e.audit.Suppressed == nil {
		e.audit.Suppressed = []Suppressed{}
	}
	return nil
}

func sortedDrops(m map[string]*Drop) []Drop {
	var out []Drop
	for _, d := range m {
		out = append(out, *d)
	}
	slices.SortFunc(out, func(a, b Drop) int { return strings.Compare(a.Reason, b.Reason) })
	return out
}

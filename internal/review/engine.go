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
	"github.com/diffpalhq/diffpal/internal/provider"
	"github.com/diffpalhq/diffpal/internal/provider/builtin"
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
	Provider provider.Provider
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
	DeepVerifier provider.Verifier
	// SynthesisVerifier, when set, checks every candidate bound to the
	// session at synthesis; rejected ones are refuted and left out.
	SynthesisVerifier provider.Verifier
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Progress, when set, hears about each step.
	Progress func(step string)
	// ReviewPolicy, when set, is where the config, ignore file and rule
	// packs came from and the edits the change makes to them (package
	// policy); each edit, and each diffpal:ignore the change adds, becomes
	// a policy.self-edit finding.
	ReviewPolicy *Policy
	// Language is the bundle's language ("" leaves it out).
	Language string
	// InspectionRequired fails the review with provider.ErrNotInspected
	// when the provider showed no inspection of the diff.
	InspectionRequired bool
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
	Provider   string            `json:"provider"`
	Range      any               `json:"range"`
	FilterMode string            `json:"filter_mode"`
	Triage     string            `json:"triage"`
	Folded     map[string]string `json:"folded_profiles,omitempty"`
	Skips      []scope.Skip      `json:"skipped_files"`
	Drops      []Drop            `json:"dropped"`
	Suppressed []Suppressed      `json:"suppressed"`
	Invalid    []Suppressed      `json:"invalid_suppressions,omitempty"`
	Baseline   *BaselineSummary  `json:"baseline,omitempty"`
	Deep       *DeepPass         `json:"deep_review,omitempty"`
	Notes      []string          `json:"notes,omitempty"`
	Policy     *Policy           `json:"policy,omitempty"`
	// Inspection is what the agent was observed doing, over every profile
	// (tool calls, files read, requests refused); nil when the provider
	// cannot observe.
	Inspection   *provider.Inspection `json:"inspection,omitempty"`
	Files        int                  `json:"files_reviewed"`
	AddedLines   int                  `json:"added_lines"`
	RemovedLines int                  `json:"removed_lines"`
	Candidates   int                  `json:"candidates"`
	Findings     int                  `json:"findings"`
	Seconds      float64              `json:"seconds"`
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

// Drop counts candidates removed by a provider or a stage of the
// pipeline, per reason.
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

// Run reviews a change end to end: it loads the change, drives an
// orchestration session in-process (triage, one report per profile, the
// deep review when the session asks for it, synthesis, finish), runs every
// profile on its provider and puts what they report through the findings
// pipeline (pipeline.go), which ends in the bundle.
func Run(ctx context.Context, o Options) (*Result, error) {
	now := o.Now
	if now == nil {
		now = time.Now
	}
	started := now()
	ReviewStarted()
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
	clock := newPhaseClock()
	clock.mark("startup")
	progress("reading the change")
	if o.Provider == nil {
		b, err := builtin.New()
		if err != nil {
			return nil, err
		}
		o.Provider = b
		clock.mark("load rule packs")
	}
	co := o.Change
	co.NoPacket = true
	// A provider that can start on each file as it is read does, while
	// git diffs the rest.
	fp, _ := o.Provider.(provider.FilePreparer)
	// The packet's secret detection, too, runs on each file as it is read.
	pf := newPrefinder(ctx)
	co.OnFile = func(f *ChangedFile) {
		if fp != nil {
			fp.PrepareFile(ctx, f)
		}
		if prefindable(f) {
			pf.Add(f)
		}
	}
	ch, err := loadChange(ctx, co, clock)
	prefound := pf.Stop()
	if err != nil {
		if fp != nil {
			fp.Prepare(ctx, nil) // ends the work PrepareFile started
		}
		return nil, err
	}
	ChangeLoaded(ch.DiffSize)
	// The evidence packet and the provider's file-only work are
	// independent: do them at the same time.
	var packetErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.Now()
		hashOnly := !provider.ReadsEvidence(o.Provider) && !provider.ReadsEvidence(o.DeepVerifier) && !provider.ReadsEvidence(o.SynthesisVerifier)
		ch.Packet, packetErr = ch.buildPacket(o.Change.MaxItems, hashOnly, prefound)
		clock.record("evidence packet", time.Since(t))
	}()
	if p, ok := o.Provider.(provider.Preparer); ok {
		progress("matching rules")
		t := time.Now()
		p.Prepare(ctx, ch.Files)
		clock.record("match rules", time.Since(t))
	}
	// The changed symbols are read while the packet is still being built
	// (their definitions need only the files; which of them have evidence
	// waits for the packet): the packet's serial parts leave a core idle.
	syms, symsDone := startSymbols(ch, done)
	// The change's line counts, while the packet is still being built
	// (a loop over every line of the patch).
	var added, removed int
	for _, f := range ch.Files {
		a, r := f.Diff.Stats()
		added, removed = added+a, removed+r
	}
	<-done
	clock.mark("match rules + evidence packet")
	if packetErr != nil {
		<-symsDone
		return nil, packetErr
	}
	e := &engine{o: o, ch: ch, pc: ch.ForProviders(), now: now, progress: progress, clock: clock}
	e.audit = Audit{Provider: o.Provider.Name(), Range: ch.Range, FilterMode: o.FilterMode, Skips: ch.Skips}
	if e.audit.Skips == nil {
		e.audit.Skips = []scope.Skip{}
	}
	e.audit.AddedLines, e.audit.RemovedLines = added, removed
	e.audit.Files = len(ch.Files)
	e.syms, e.symsDone = syms, symsDone
	if err := e.run(ctx); err != nil {
		<-e.symsDone
		return nil, err
	}
	e.audit.Seconds = now().Sub(started).Seconds()
	res := &Result{Change: ch, Bundle: e.bundle, Session: e.session, Audit: e.audit}
	redactResult(res)
	return res, nil
}

// engine is one review in progress: the change, the session it drives and
// what the pipeline's stages hand each other.
type engine struct {
	o        Options
	ch       *Change
	pc       *provider.Change // what providers are given of ch
	now      func() time.Time
	progress func(string)
	audit    Audit
	clock    *phaseClock // nil unless EnvPhases

	// The session, driven through its steps.
	orch     *qa.Orchestrator
	session  qa.Session
	profiles []qa.Profile                          // the session's review profiles, in order
	results  map[qa.Profile]provider.ProfileResult // each profile's provider answer

	// The pipeline's items: candidates, then the groups synthesis makes
	// of them, then the bundle.
	cands  []*candidate
	per    map[qa.Profile][]*candidate // cands by profile, in order
	groups []*group                    // ranked
	bound  map[*group]bool             // bound to the session (at most 100)
	bundle *findings.Bundle
	drops  map[string]*Drop

	syms     *rules.Symbols
	symsDone chan struct{} // closed when startSymbols' read is done
}

// symbols reads the explorer's changed symbols until more refuses one
// (rules.Symbols.Read; nil reads no more) and returns those read so far,
// the evidence map's first (startSymbols) always among them: one reader
// per review, over the rule view the builtin provider shares (its masks
// are reused).
func (e *engine) symbols(more func(rules.Symbol) bool) []rules.Symbol {
	<-e.symsDone
	return e.syms.Read(more)
}

// startSymbols reads the symbols the evidence map needs, up to the
// maxEvidenceMap-th that has evidence (or all of them), on another
// goroutine, from when the provider's matching is done (the masks it
// shares are written no more). Their definitions need only the files;
// which of them have evidence waits for the packet (packetDone, after
// which ch.Packet is set, nil if it failed). So the first files'
// definitions are read while the packet is built, whose serial parts
// left a core idle, and the rest while the session starts, triage runs
// and the providers answer.
func startSymbols(ch *Change, packetDone <-chan struct{}) (*rules.Symbols, chan struct{}) {
	syms := rules.NewSymbols(provider.RuleFiles(ch.Files))
	done := make(chan struct{})
	go func() {
		defer close(done)
		n, waited := 0, false
		syms.Read(func(s rules.Symbol) bool {
			if !waited {
				<-packetDone
				waited = true
			}
			if ch.Packet == nil {
				return false
			}
			if len(ch.Packet.RefsAt(s.Path, s.Line, s.Line)) > 0 {
				n++
			}
			return n < maxEvidenceMap
		})
	}()
	return syms, done
}

func (e *engine) fileByPath(p string) *ChangedFile {
	i, ok := slices.BinarySearchFunc(e.ch.Files, p, func(f *ChangedFile, p string) int { return strings.Compare(f.Path(), p) })
	if !ok {
		return nil
	}
	return e.ch.Files[i]
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

// run drives the session: it starts it and completes triage, asks every
// profile's provider for candidates, and hands them to the pipeline,
// whose session stages (below) record the profile reports, the deep
// review and the final report, and finish the session.
func (e *engine) run(ctx context.Context) error {
	var err error
	if e.orch, err = qa.New(qa.Config{Clock: e.now}); err != nil {
		return err
	}
	start := qa.StartInput{TaskType: qa.TaskOrdinaryReview}
	rc, rcErr := e.ch.Packet.ReviewContext()
	if rcErr == nil {
		start.ReviewContext = toQAContext(rc)
	} else {
		e.audit.Notes = append(e.audit.Notes, "session not bound to the evidence packet: "+rcErr.Error())
	}
	s, err := e.orch.Start(ctx, start)
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
	if e.session, err = e.orch.Advance(ctx, adv); err != nil {
		return fmt.Errorf("triage: %w", err)
	}
	e.clock.mark("session start + triage")
	e.profiles = e.session.ReviewProfiles
	fold := foldProfiles(e.profiles)
	e.audit.Folded = map[string]string{}
	for rp, sp := range fold {
		if rp != string(sp) {
			e.audit.Folded[rp] = string(sp)
		}
	}

	// Primary review: every profile's provider call. What a provider
	// discarded itself is counted with its reason. The commit subjects
	// are given to providers from here on (they were read meanwhile).
	e.pc.Subjects = e.ch.Subjects()
	e.results = map[qa.Profile]provider.ProfileResult{}
	for _, p := range e.profiles {
		e.progress("reviewing as " + string(p))
		var owned []string
		for rp, sp := range fold {
			if sp == p {
				owned = append(owned, rp)
			}
		}
		slices.Sort(owned)
		route, _ := qa.Prepare(qa.PrepareInput{AgentProfile: p})
		res, err := e.o.Provider.ReviewProfile(ctx, provider.ProfileRequest{Profile: p, Route: route, Change: e.pc, RuleProfiles: owned})
		if err != nil {
			return fmt.Errorf("provider %s, profile %s: %w", e.o.Provider.Name(), p, err)
		}
		e.results[p] = res
		e.audit.Inspection = e.audit.Inspection.Merge(res.Inspection)
		e.audit.Notes = append(e.audit.Notes, res.Notes...)
		for reason, n := range res.Dropped {
			e.dropN(reason, string(p), n)
		}
		for _, c := range res.Candidates {
			e.cands = append(e.cands, newCandidate(c, p, false))
		}
	}
	if err := e.checkInspection(); err != nil {
		return err
	}
	// The change's edits to its own review policy are candidates too,
	// flagged so that suppression cannot silence them.
	if e.o.ReviewPolicy != nil {
		rec := *e.o.ReviewPolicy
		rec.Changes = e.policyChanges()
		e.audit.Policy = &rec
		owner, cands := e.policyCandidates(rec.Changes, e.profiles)
		for _, c := range cands {
			e.cands = append(e.cands, newCandidate(c, owner, true))
		}
	}

	e.clock.mark("provider answers")
	if err := e.runPipeline(ctx); err != nil {
		return err
	}
	e.audit.Drops = append([]Drop{}, sortedDrops(e.drops)...)
	if e.audit.Suppressed == nil {
		e.audit.Suppressed = []Suppressed{}
	}
	return nil
}

// ---- the session's steps, as stages of the pipeline --------------------

// profileReports records every profile's report, in the session's order;
// the last one carries the risk signals, which decide the deep review.
type profileReports struct{}

func (profileReports) Name() string { return "profile reports" }

func (profileReports) Process(ctx context.Context, e *engine) error {
	for i, p := range e.profiles {
		s := e.session
		if s.CurrentStep != qa.StepPrimaryReview || s.CurrentProfile == nil || *s.CurrentProfile != p {
			return fmt.Errorf("internal: session expected profile %v at step %s", s.CurrentProfile, s.CurrentStep)
		}
		report := e.profileReport(p, e.per[p], e.bound, e.results[p], e.groups)
		adv := qa.AdvanceInput{RunID: s.RunID, CompletedStep: qa.StepPrimaryReview, Status: qa.OutcomeCompleted,
			CompletedProfile: &p, ProfileReport: report}
		if i == len(e.profiles)-1 {
			adv.RiskSignals = e.riskSignals(e.groups)
		}
		var err error
		if e.session, err = e.orch.Advance(ctx, adv); err != nil {
			return fmt.Errorf("record %s report: %w", p, err)
		}
	}
	return nil
}

// deepReview runs the deep-review pass when the session asks for it.
type deepReview struct{}

func (deepReview) Name() string { return "deep review" }

func (deepReview) Process(ctx context.Context, e *engine) error {
	if e.session.CurrentStep != qa.StepDeepReview {
		return nil
	}
	e.progress("deep review")
	var err error
	if e.audit.Deep, err = e.deepPass(ctx, e.groups, e.session.DeepAssessment); err != nil {
		return fmt.Errorf("deep review: %w", err)
	}
	if e.session, err = e.orch.Advance(ctx, qa.AdvanceInput{RunID: e.session.RunID, CompletedStep: qa.StepDeepReview, Status: qa.OutcomeCompleted}); err != nil {
		return fmt.Errorf("deep review: %w", err)
	}
	return nil
}

// finalReport records synthesis (a decision for every candidate) and
// finishes the session.
type finalReport struct{}

func (finalReport) Name() string { return "final report" }

func (finalReport) Process(ctx context.Context, e *engine) error {
	final, err := e.finalReport(e.session, e.groups, e.bound)
	if err != nil {
		return err
	}
	s := e.session
	if s, err = e.orch.Advance(ctx, qa.AdvanceInput{RunID: s.RunID, CompletedStep: qa.StepSynthesis, Status: qa.OutcomeCompleted, FinalReviewReport: final}); err != nil {
		return fmt.Errorf("synthesis: %w", err)
	}
	if s, err = e.orch.Finish(ctx, qa.FinishInput{RunID: s.RunID, Outcome: qa.OutcomeCompleted}); err != nil {
		return fmt.Errorf("finish: %w", err)
	}
	e.session = s
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

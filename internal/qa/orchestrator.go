package qa

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	segjson "github.com/segmentio/encoding/json"

	"github.com/diffpalhq/diffpal/internal/jcs"
	"github.com/diffpalhq/diffpal/internal/qa/store"
)

// Store is where sessions live; see package store.
type Store = store.Store

// Defaults from the anchor (reference §8.1).
const (
	DefaultTTL         = 1800 * time.Second
	DefaultMaxSessions = 100
	// MaxReceipts bounds transition_receipts per session (seed maxItems).
	MaxReceipts = 128
)

// next_action constants, asserted verbatim by hosts (reference §5.3).
const (
	NextTriage          = "Host performs triage and submits the selected review bundle or profile."
	NextPrimaryReview   = "Host performs primary review with the selected ordered profiles."
	NextDeepReview      = "Host performs optional read-only deep analysis for the fixed escalation reason."
	NextSynthesis       = "Host performs final synthesis and validates the QA result."
	NextAwaitingOutcome = "Host submits the final QA outcome with finish_qa_orchestration."
	NextFinalizePartial = "Host must finalize the partial QA outcome."
	NextFinalizeBlocked = "Host must finalize the blocked QA outcome."
	NextRecordedDone    = "Host recorded the final QA outcome."
	NextRecordedPartial = "Host recorded the partial QA outcome."
	NextRecordedBlocked = "Host recorded the blocked QA outcome."
)

// Tool names, used in request hashes and by adapters.
const (
	ToolPrepare     = "prepare_qa_orchestration"
	ToolCatalog     = "get_qa_orchestration_catalog"
	ToolModelPolicy = "get_qa_orchestration_model_policy"
	ToolStart       = "start_qa_orchestration"
	ToolAdvance     = "advance_qa_orchestration"
	ToolGet         = "get_qa_orchestration"
	ToolList        = "list_qa_orchestrations"
	ToolFinish      = "finish_qa_orchestration"
	ToolDelete      = "delete_qa_orchestration"
	ToolExport      = "export_qa_findings"
)

// conflictRetries bounds how often an operation is re-run after another
// writer (another replica on a shared store) changed the session between
// our read and our conditional write.
const conflictRetries = 4

// Config configures an Orchestrator. Zero values select the defaults.
type Config struct {
	Store            Store            // default: store.NewMemory()
	Clock            func() time.Time // default: time.Now
	TTL              time.Duration    // default: DefaultTTL; negative is an error
	MaxSessions      int              // default: DefaultMaxSessions; negative is an error
	ModelSelection   *ModelSelection  // default: DefaultModelSelection(); validated
	HostDefaultModel bool             // hand out {mode: host_default} policies
	Random           io.Reader        // run-id entropy; default: crypto/rand
	// RemoveFinished deletes a session from the store as soon as finish
	// records its outcome (the anchor's behaviour; QA-CONTRACT §8 "an option
	// removes them at finish"); the finish call still returns the finished
	// session. Off by default: finished sessions are retained until they
	// expire or are evicted, because export_qa_findings and a repeated
	// finish read them; with it, both answer "unknown run_id" afterwards.
	RemoveFinished bool
}

// Orchestrator runs QA sessions. It is safe for concurrent use; operations
// are serialised per Orchestrator, and conditional writes keep several
// Orchestrators sharing one Store from overwriting each other's transitions.
type Orchestrator struct {
	mu          sync.Mutex
	store       Store
	now         func() time.Time
	ttl         time.Duration
	max         int
	models      ModelSelection
	hostDefault bool
	random      io.Reader
	lastPurge   time.Time
	// removeFinished: see Config.RemoveFinished.
	removeFinished bool
	// summaries caches each session's list summary by run id, valid only
	// for the store columns (revision, status, expiry) it was taken at: a
	// record with other columns was rewritten and is decoded again. It
	// lets List answer from the store's ListMeta (no payloads) instead of
	// decoding every session. Guarded by mu.
	summaries map[string]cachedSummary
	// indexed is the store when it answers purge, occupancy, eviction and
	// pages from an index (store.Indexed); nil selects the listing path,
	// which reads every record's metadata.
	indexed store.Indexed
	// storeLimits: the store enforces this orchestrator's MaxSessions on
	// every create itself, atomically across the processes sharing it
	// (store.Limited), so Start leaves counting and evicting to it.
	storeLimits bool
	// lastSweep is when cached summaries of expired sessions were last
	// dropped (indexed stores; see sweepSummaries).
	lastSweep time.Time
	// memoryStore: the store is the in-process memory store, whose
	// records nothing outside this process can rewrite, so Get may answer
	// a record this orchestrator wrote from its payload (ownJSON). A
	// database row could be edited behind the server's back; those are
	// always decoded.
	memoryStore bool
}

type cachedSummary struct {
	revision  int64
	status    string
	expiresAt time.Time
	sum       Summary
	// ours: this orchestrator wrote the record at these columns (save),
	// so its payload is encodePersisted's bytes (see ownJSON).
	ours bool
}

// remember caches the summary of a session as stored at revision.
func (o *Orchestrator) remember(s *Session, revision int64) {
	if o.summaries == nil {
		o.summaries = map[string]cachedSummary{}
	}
	o.summaries[s.RunID] = cachedSummary{revision: revision, status: string(s.Status), expiresAt: s.ExpiresAt, sum: summaryOf(s)}
}

// cachedSummaryFor returns the cached summary for a metadata record when
// it was taken at the record's columns.
func (o *Orchestrator) cachedSummaryFor(r store.Record) (Summary, bool) {
	c, ok := o.summaries[r.RunID]
	if !ok || c.revision != r.Revision || c.status != r.Status || !c.expiresAt.Equal(r.ExpiresAt) {
		return Summary{}, false
	}
	return c.sum, true
}

// pruneSummaries forgets cached summaries of sessions missing from recs
// (every record in the store, as ListMeta returned them), so the cache never
// outgrows the store for long.
func (o *Orchestrator) pruneSummaries(recs []store.Record) {
	if len(o.summaries) <= len(recs) {
		return
	}
	have := make(map[string]bool, len(recs))
	for _, r := range recs {
		have[r.RunID] = true
	}
	for id := range o.summaries {
		if !have[id] {
			delete(o.summaries, id)
		}
	}
}

func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

func summaryOf(s *Session) Summary {
	return Summary{RunID: s.RunID, TaskType: s.TaskType, Status: s.Status,
		CurrentStep: s.CurrentStep, SelectedBundle: clonePtr(s.SelectedBundle), SelectedProfile: clonePtr(s.SelectedProfile),
		CurrentProfile: clonePtr(s.CurrentProfile), ExpiresAt: s.ExpiresAt}
}

// purgeEvery bounds how often lookups sweep the store for expired
// sessions; Start always sweeps, because capacity depends on it.
const purgeEvery = time.Second

// New returns an Orchestrator for cfg.
func New(cfg Config) (*Orchestrator, error) {
	if cfg.TTL < 0 || cfg.MaxSessions < 0 {
		return nil, errCode(CodeLimitsNotPositive)
	}
	o := &Orchestrator{store: cfg.Store, now: cfg.Clock, ttl: cfg.TTL, max: cfg.MaxSessions,
		hostDefault: cfg.HostDefaultModel, random: cfg.Random, removeFinished: cfg.RemoveFinished}
	if o.store == nil {
		o.store = store.NewMemory()
	}
	if o.now == nil {
		o.now = time.Now
	}
	if o.ttl == 0 {
		o.ttl = DefaultTTL
	}
	if o.max == 0 {
		o.max = DefaultMaxSessions
	}
	if o.random == nil {
		o.random = rand.Reader
	}
	o.indexed, _ = o.store.(store.Indexed)
	_, o.memoryStore = o.store.(*store.Memory)
	if l, ok := o.store.(store.Limited); ok && l.MaxSessions() == o.max {
		o.storeLimits = true
	}
	o.models = DefaultModelSelection()
	if cfg.ModelSelection != nil {
		if err := cfg.ModelSelection.Validate(); err != nil {
			return nil, err
		}
		o.models = *cfg.ModelSelection
	}
	return o, nil
}

// ModelPolicy returns the loaded model policy snapshot.
func (o *Orchestrator) ModelPolicy() ModelPolicyInfo {
	mode := PolicyModeConfigured
	if o.hostDefault {
		mode = PolicyModeHostDefault
	}
	return ModelPolicyInfo{Mode: mode, ModelSelection: o.models}
}

func (o *Orchestrator) clock() time.Time { return o.now().UTC() }

func (o *Orchestrator) policy(step Step) *ModelPolicy { return o.models.policyFor(step, o.hostDefault) }

// persisted is the store payload. finalized is kept beside the session
// because an early stop and its finalization share a status; the anchor
// told them apart by next_action, which is too brittle to persist on.
type persisted struct {
	Format    int     `json:"format"`
	Finalized bool    `json:"finalized"`
	Session   Session `json:"session"`
}

type loaded struct {
	sess      Session
	finalized bool
	revision  int64
	// remove asks mutate to delete the record (conditionally on revision)
	// instead of writing sess back: Config.RemoveFinished at finish.
	remove bool
}

// ValidateRecord checks that a stored row holds a session this version can
// load and that the row's columns agree with its payload; persistent stores
// call it for every row at start-up (sqlite.WithValidate).
func ValidateRecord(rec store.Record) error {
	l, err := decodeRecord(rec)
	if err != nil {
		return err
	}
	s := l.sess
	switch {
	case s.Revision != rec.Revision:
		return newError(CodeInvalidSessionData, "", fmt.Sprintf("run %s: revision column %d, payload %d", rec.RunID, rec.Revision, s.Revision))
	case string(s.Status) != rec.Status:
		return newError(CodeInvalidSessionData, "", fmt.Sprintf("run %s: status column %q, payload %q", rec.RunID, rec.Status, s.Status))
	case l.finalized != rec.Finalized:
		return newError(CodeInvalidSessionData, "", "run "+rec.RunID+": finalized flag disagrees with payload")
	case !s.ExpiresAt.Equal(rec.ExpiresAt):
		return newError(CodeInvalidSessionData, "", "run "+rec.RunID+": expiry disagrees with payload")
	case !slices.Contains([]Status{StatusActive, StatusAwaitingHostOutcome, StatusCompleted, StatusPartial, StatusBlocked}, s.Status):
		return newError(CodeInvalidSessionData, "", "run "+rec.RunID+": unknown status")
	}
	return nil
}

// decodeRecord decodes a stored payload with segmentio's decoder, several
// times faster than encoding/json's on a session (every read and
// transition decodes one); TestDecodeRecordMatchesStd checks it yields
// what encoding/json does.
func decodeRecord(rec store.Record) (loaded, error) {
	var p persisted
	if err := segjson.Unmarshal(rec.Payload, &p); err != nil || p.Session.RunID != rec.RunID || p.Format != 1 {
		return loaded{}, newError(CodeInvalidSessionData, "", "run "+rec.RunID)
	}
	return loaded{sess: p.Session, finalized: p.Finalized, revision: rec.Revision}, nil
}

// encodePersisted is json.Marshal(persisted{1, finalized, s}) written
// directly: the session's own MarshalJSON output is already compact JSON
// with json.Marshal's escaping, which json.Marshal would only re-compact
// (TestDecodeRecordMatchesStd compares the bytes).
func encodePersisted(s Session, finalized bool) ([]byte, error) {
	sess, err := s.MarshalJSON()
	if err != nil {
		return nil, err
	}
	head := persistedHead(finalized)
	b := make([]byte, 0, len(head)+len(sess)+1)
	b = append(append(append(b, head...), sess...), '}')
	return b, nil
}

// persistedHead is what encodePersisted writes before the session.
func persistedHead(finalized bool) string {
	if finalized {
		return `{"format":1,"finalized":true,"session":`
	}
	return `{"format":1,"finalized":false,"session":`
}

type sessionJSONKey struct{}

// WithSessionJSON asks the orchestrator to set *dst to the JSON of the
// session a call returns, exactly json.Marshal of it, when it has those
// bytes at hand without marshalling: the payload Start, Advance or Finish
// just stored, or, for Get on the memory store, a payload this orchestrator
// wrote itself, which Get then does not decode at all: it returns a zero Session and *dst is
// the answer. *dst stays nil otherwise (marshal the Session). Adapters that
// answer with the session's JSON (mcpserver) use it to skip a decode and
// an encode per call.
func WithSessionJSON(ctx context.Context, dst *[]byte) context.Context {
	return context.WithValue(ctx, sessionJSONKey{}, dst)
}

func sessionJSONSink(ctx context.Context) *[]byte {
	dst, _ := ctx.Value(sessionJSONKey{}).(*[]byte)
	return dst
}

// withoutSessionJSON hides a caller's sink from internal reads.
func withoutSessionJSON(ctx context.Context) context.Context {
	if sessionJSONSink(ctx) == nil {
		return ctx
	}
	return context.WithValue(ctx, sessionJSONKey{}, (*[]byte)(nil))
}

// ownJSON returns the session JSON inside rec's payload when this
// orchestrator wrote rec at its current columns in the memory store, so
// the payload is encodePersisted's output for a session of this version.
func (o *Orchestrator) ownJSON(rec store.Record) ([]byte, bool) {
	if !o.memoryStore {
		return nil, false
	}
	c, ok := o.summaries[rec.RunID]
	if !ok || !c.ours || c.revision != rec.Revision || c.status != rec.Status || !c.expiresAt.Equal(rec.ExpiresAt) {
		return nil, false
	}
	head := persistedHead(rec.Finalized)
	p := rec.Payload
	if len(p) < len(head)+2 || string(p[:len(head)]) != head || p[len(p)-1] != '}' {
		return nil, false
	}
	return p[len(head) : len(p)-1], true
}

// save persists the session conditionally and returns it. The store
// keeps its own copy of the payload, and s was built by the caller from a
// freshly decoded (or newly made) session, so the returned value shares no
// memory with the store or the orchestrator; it is the value the payload
// encodes (a decode of the payload marshals to the same JSON).
func (o *Orchestrator) save(ctx context.Context, s Session, finalized bool, expected int64) (Session, error) {
	payload, err := encodePersisted(s, finalized)
	if err != nil {
		return Session{}, storeError(CodeStoreWrite, err)
	}
	rec := store.Record{RunID: s.RunID, Revision: s.Revision, Status: string(s.Status), Finalized: finalized,
		ExpiresAt: s.ExpiresAt, Payload: payload}
	if err := o.store.Put(ctx, rec, expected); err != nil {
		if errors.Is(err, store.ErrConflict) || errors.Is(err, store.ErrNotFound) {
			return Session{}, err
		}
		return Session{}, storeError(CodeStoreWrite, err)
	}
	o.remember(&s, rec.Revision)
	c := o.summaries[s.RunID]
	c.ours = true
	o.summaries[s.RunID] = c
	if dst := sessionJSONSink(ctx); dst != nil {
		*dst = payload[len(persistedHead(finalized)) : len(payload)-1]
	}
	return s, nil
}

// purge removes expired sessions except keep, which the caller is about to
// address and should see as "expired session" rather than "unknown run_id".
func (o *Orchestrator) purge(ctx context.Context, now time.Time, keep string) ([]store.Record, error) {
	if o.indexed != nil {
		return nil, o.purgeIndexed(ctx, now, keep)
	}
	recs, err := o.store.ListMeta(ctx)
	if err != nil {
		return nil, storeError(CodeStoreRead, err)
	}
	o.pruneSummaries(recs)
	live := recs[:0]
	for _, r := range recs {
		if r.RunID == keep || r.ExpiresAt.After(now) {
			live = append(live, r)
			continue
		}
		if err := o.store.Delete(ctx, r.RunID, r.Revision); err != nil &&
			!errors.Is(err, store.ErrNotFound) && !errors.Is(err, store.ErrConflict) {
			return nil, storeError(CodeStoreUpdate, err)
		}
	}
	return live, nil
}

// purgeIndexed is purge on an Indexed store: one indexed delete of the
// expired records, whose cached summaries are dropped with them.
func (o *Orchestrator) purgeIndexed(ctx context.Context, now time.Time, keep string) error {
	gone, err := o.indexed.PurgeExpired(ctx, now, keep)
	if err != nil {
		return storeError(CodeStoreUpdate, err)
	}
	for _, id := range gone {
		delete(o.summaries, id)
	}
	o.sweepSummaries(now)
	return nil
}

// summarySweepEvery bounds how often sweepSummaries walks the cache.
const summarySweepEvery = time.Minute

// sweepSummaries drops cached summaries of sessions that have expired, at
// most once per summarySweepEvery. On a store this process owns, every
// delete already dropped its summary; on a shared one, sessions deleted or
// rewritten by another process leave theirs behind until they expire (a
// summary is only used while the store's columns still match it).
func (o *Orchestrator) sweepSummaries(now time.Time) {
	if !o.lastSweep.IsZero() && now.Sub(o.lastSweep) < summarySweepEvery && !now.Before(o.lastSweep) {
		return
	}
	o.lastSweep = now
	for id, c := range o.summaries {
		if !c.expiresAt.After(now) {
			delete(o.summaries, id)
		}
	}
}

// makeRoom applies the capacity rule before a create: fail with session
// limit when active sessions fill it, else evict the oldest retained
// terminal sessions (expiry, then run id) until the new one fits. Expired
// sessions are purged first. Start skips it for a store that enforces the
// same limit itself (store.Limited), inside the create, atomically across
// the processes sharing it.
func (o *Orchestrator) makeRoom(ctx context.Context, now time.Time) error {
	if o.indexed == nil {
		live, err := o.purge(ctx, now, "")
		if err != nil {
			return err
		}
		return o.makeRoomListed(ctx, live)
	}
	if err := o.purgeIndexed(ctx, now, ""); err != nil {
		return err
	}
	total, active, err := o.indexed.Occupancy(ctx)
	if err != nil {
		return storeError(CodeStoreRead, err)
	}
	if active >= o.max {
		return errCode(CodeSessionLimit)
	}
	if need := total + 1 - o.max; need > 0 {
		victims, err := o.indexed.Evictable(ctx, need)
		if err != nil {
			return storeError(CodeStoreRead, err)
		}
		for _, r := range victims {
			if err := o.evict(ctx, r); err != nil {
				return err
			}
			total--
		}
	}
	if total+1 > o.max {
		return errCode(CodeSessionLimit)
	}
	return nil
}

// evict deletes a retained terminal session at the revision it was seen
// at; one that changed or went away meanwhile counts as evicted, as it did
// when Start listed the store.
func (o *Orchestrator) evict(ctx context.Context, r store.Record) error {
	if err := o.store.Delete(ctx, r.RunID, r.Revision); err != nil &&
		!errors.Is(err, store.ErrNotFound) && !errors.Is(err, store.ErrConflict) {
		return storeError(CodeStoreUpdate, err)
	}
	delete(o.summaries, r.RunID)
	return nil
}

// makeRoomListed is makeRoom over the live records of a listing.
func (o *Orchestrator) makeRoomListed(ctx context.Context, live []store.Record) error {
	var terminal []store.Record
	active := 0
	for _, r := range live {
		if Status(r.Status).countsAsActive() {
			active++
		} else {
			terminal = append(terminal, r)
		}
	}
	if active >= o.max {
		return errCode(CodeSessionLimit)
	}
	// Retained terminal sessions are a cache: evict the oldest first.
	slices.SortFunc(terminal, func(a, b store.Record) int { return store.PositionOf(a).Compare(store.PositionOf(b)) })
	total := len(live)
	for total+1 > o.max && len(terminal) > 0 {
		if err := o.evict(ctx, terminal[0]); err != nil {
			return err
		}
		terminal = terminal[1:]
		total--
	}
	if total+1 > o.max {
		return errCode(CodeSessionLimit)
	}
	return nil
}

// lookup purges, then loads runID and applies the expiry rule.
func (o *Orchestrator) lookup(ctx context.Context, runID string, now time.Time) (loaded, error) {
	rec, err := o.lookupRecord(ctx, runID, now)
	if err != nil {
		return loaded{}, err
	}
	return o.load(rec, now)
}

// lookupRecord purges (at most once per purgeEvery) and reads runID's
// record.
func (o *Orchestrator) lookupRecord(ctx context.Context, runID string, now time.Time) (store.Record, error) {
	// Reads and transitions purge expired sessions at most once per
	// purgeEvery: the looked-up session's own expiry is checked
	// regardless, so skipping a purge only delays removing others.
	if o.lastPurge.IsZero() || now.Sub(o.lastPurge) >= purgeEvery || now.Before(o.lastPurge) {
		if _, err := o.purge(ctx, now, runID); err != nil {
			return store.Record{}, err
		}
		o.lastPurge = now
	}
	rec, err := o.store.Get(ctx, runID)
	if errors.Is(err, store.ErrNotFound) {
		return store.Record{}, errCode(CodeUnknownRunID)
	}
	if err != nil {
		return store.Record{}, storeError(CodeStoreRead, err)
	}
	return rec, nil
}

// load decodes rec and applies the expiry rule.
func (o *Orchestrator) load(rec store.Record, now time.Time) (loaded, error) {
	l, err := decodeRecord(rec)
	if err != nil {
		return loaded{}, err
	}
	if c, ok := o.summaries[rec.RunID]; !ok || !c.ours || c.revision != rec.Revision {
		o.remember(&l.sess, rec.Revision)
	}
	if !l.sess.ExpiresAt.After(now) {
		return loaded{}, errCode(CodeExpiredSession)
	}
	return l, nil
}

func (o *Orchestrator) newRunID() (string, error) {
	var b [16]byte
	if _, err := io.ReadFull(o.random, b[:]); err != nil {
		return "", fmt.Errorf("qa: run id entropy: %w", err)
	}
	b[6] = b[6]&0x0f | 0x40 // UUIDv4 layout, as the anchor renders uuid4().hex
	b[8] = b[8]&0x3f | 0x80
	return "qar-" + hex.EncodeToString(b[:]), nil
}

// Start creates a session at triage.
func (o *Orchestrator) Start(ctx context.Context, in StartInput) (Session, error) {
	if !in.TaskType.Valid() {
		return Session{}, errCode(CodeInvalidTaskType)
	}
	var rc *ReviewContext
	if in.ReviewContext != nil {
		var err error
		if rc, err = normalizeReviewContext(in.ReviewContext); err != nil {
			return Session{}, err
		}
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	now := o.clock()
	if o.storeLimits {
		// The store makes room itself; expired sessions are still purged
		// here (through its index), as on every start.
		if _, err := o.purge(ctx, now, ""); err != nil {
			return Session{}, err
		}
	} else if err := o.makeRoom(ctx, now); err != nil {
		return Session{}, err
	}
	var err error
	recommended := []Profile{}
	if rc != nil {
		recommended = RecommendProfiles(rc.ChangedFiles)
	}
	s := Session{
		Status: StatusActive, ReadOnly: true, TaskType: in.TaskType, ExpiresAt: now.Add(o.ttl),
		NextAction: NextTriage, CurrentStep: StepTriage, ModelPolicy: o.policy(StepTriage),
		ReviewContext: rc, AllowedBundles: Bundles(), ProfileReports: []ProfileReport{},
		ReviewProfiles: []Profile{}, AllowedProfiles: Profiles(), CompletedProfiles: []Profile{},
		HostOwnsDecisions: true, RecommendedBundles: RecommendedBundles(in.TaskType),
		TransitionReceipts: []TransitionReceipt{}, RecommendedProfiles: recommended,
	}
	for range conflictRetries {
		if s.RunID, err = o.newRunID(); err != nil {
			return Session{}, err
		}
		out, err := o.save(ctx, s, false, store.Absent)
		if errors.Is(err, store.ErrConflict) {
			continue // run id collision: draw another
		}
		if errors.Is(err, store.ErrCapacity) {
			// Another process sharing the store took the last slot
			// between our count and the insert.
			return Session{}, errCode(CodeSessionLimit)
		}
		return out, err
	}
	return Session{}, newError(CodeStoreWrite, "", "could not allocate a unique run_id")
}

// Get returns one session. Reading never extends its TTL.
func (o *Orchestrator) Get(ctx context.Context, in GetInput) (Session, error) {
	if err := checkArgs(in); err != nil {
		return Session{}, err
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	now := o.clock()
	rec, err := o.lookupRecord(ctx, in.RunID, now)
	if err != nil {
		return Session{}, err
	}
	if dst := sessionJSONSink(ctx); dst != nil {
		if raw, ok := o.ownJSON(rec); ok {
			// A payload this orchestrator wrote: its session bytes are
			// the answer (see WithSessionJSON); the columns it was
			// written with carry its expiry.
			if !rec.ExpiresAt.After(now) {
				return Session{}, errCode(CodeExpiredSession)
			}
			*dst = raw
			return Session{}, nil
		}
	}
	l, err := o.load(rec, now)
	return l.sess, err
}

// checkArgs applies the rules of a tool input's own fields (run_id,
// request_id, expected_revision, enums; see FieldRules) as invalid
// argument errors. Nested reports are checked by their validators, under
// their own codes.
func checkArgs(in any) error {
	c := &checker{code: CodeInvalidArgument}
	c.checkRules("", in, false)
	return c.result()
}

// requestHash is sha256(JCS({tool, arguments})) over the typed arguments
// with request_id removed; hashing the typed value makes absent, null and
// default-valued optional arguments hash alike.
func requestHash(tool string, args any) (string, error) {
	return jcs.SHA256Hex(struct {
		Tool      string `json:"tool"`
		Arguments any    `json:"arguments"`
	}{tool, args})
}

type rawArgsKey struct{}

// WithArguments attaches the JSON arguments exactly as a host sent them,
// so that request_sha256 is computed over what the host can compute too
// (QA-CONTRACT §6: JCS of {tool, arguments without request_id}). Without
// them the typed input is hashed, which adds the keys a host left out.
func WithArguments(ctx context.Context, raw json.RawMessage) context.Context {
	return context.WithValue(ctx, rawArgsKey{}, raw)
}

// hashRequest prefers the arguments as sent (WithArguments).
func hashRequest(ctx context.Context, tool string, typed any) (string, error) {
	raw, _ := ctx.Value(rawArgsKey{}).(json.RawMessage)
	if len(raw) == 0 {
		return requestHash(tool, typed)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return "", err
	}
	delete(m, "request_id")
	return requestHash(tool, m)
}

// requestHashOf is the request_sha256 of a call that carries a request_id
// ("" without one: there is nothing to replay). args has request_id cleared.
func requestHashOf(ctx context.Context, tool string, requestID *string, args any) (string, error) {
	if requestID == nil {
		return "", nil
	}
	hash, err := hashRequest(ctx, tool, args)
	if err != nil {
		return "", newError(CodeInvalidArgument, "", err.Error())
	}
	return hash, nil
}

// admit decides whether a mutating call may apply to s. A replay of a
// request already applied is answered first (true, nil), so a retry still
// succeeds after the revision it expected has moved on; a request_id reused
// with other arguments, or a stale expected_revision, is an error.
func admit(s *Session, requestID *string, hash string, expected *int64) (bool, error) {
	if ok, err := replay(s, requestID, hash); ok || err != nil {
		return ok, err
	}
	if expected != nil && *expected != s.Revision {
		return false, revisionConflict(s.Revision)
	}
	return false, nil
}

// replay reports whether requestID already has a receipt on s: true with a
// nil error for a replay of the same request, an error for a different one.
func replay(s *Session, requestID *string, hash string) (bool, error) {
	if requestID == nil {
		return false, nil
	}
	for _, r := range s.TransitionReceipts {
		if r.RequestID == *requestID {
			if r.RequestSHA256 == hash {
				return true, nil
			}
			return false, newError(CodeRequestIDConflict, "request_id",
				fmt.Sprintf("%q was already applied with different arguments at revision %d", r.RequestID, r.AppliedRevision))
		}
	}
	return false, nil
}

func revisionConflict(current int64) error {
	return newError(CodeRevisionConflict, "expected_revision", fmt.Sprintf("current revision is %d", current))
}

// commit bumps the revision, records the receipt and refreshes the TTL; it
// is called exactly once per applied state change.
func (o *Orchestrator) commit(s *Session, now time.Time, requestID *string, hash string) {
	s.Revision++
	s.ExpiresAt = now.Add(o.ttl)
	if requestID != nil {
		s.TransitionReceipts = append(s.TransitionReceipts,
			TransitionReceipt{RequestID: *requestID, RequestSHA256: hash, AppliedRevision: s.Revision})
		if n := len(s.TransitionReceipts); n > MaxReceipts {
			s.TransitionReceipts = slices.Clone(s.TransitionReceipts[n-MaxReceipts:])
		}
	}
}

// mutate runs op under the lock against a freshly loaded session and
// persists the result conditionally, re-running op when another writer got
// there first. op returns changed == false to return the session untouched.
func (o *Orchestrator) mutate(ctx context.Context, runID string, op func(now time.Time, l *loaded) (changed bool, err error)) (Session, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for range conflictRetries {
		now := o.clock()
		l, err := o.lookup(ctx, runID, now)
		if err != nil {
			return Session{}, err
		}
		prev := l.revision
		changed, err := op(now, &l)
		if err != nil {
			return Session{}, err
		}
		if !changed {
			return l.sess, nil
		}
		if l.remove {
			err := o.store.Delete(ctx, runID, prev)
			switch {
			case errors.Is(err, store.ErrConflict):
				continue
			case errors.Is(err, store.ErrNotFound):
				return Session{}, errCode(CodeUnknownRunID)
			case err != nil:
				return Session{}, storeError(CodeStoreUpdate, err)
			}
			delete(o.summaries, runID)
			return l.sess, nil
		}
		out, err := o.save(ctx, l.sess, l.finalized, prev)
		if errors.Is(err, store.ErrConflict) {
			continue
		}
		if errors.Is(err, store.ErrNotFound) {
			return Session{}, errCode(CodeUnknownRunID)
		}
		return out, err
	}
	return Session{}, newError(CodeRevisionConflict, "", "the session kept changing concurrently; retry")
}

func checkAdvanceShape(in AdvanceInput) error {
	if err := checkArgs(in); err != nil {
		return err
	}
	completed := in.Status == OutcomeCompleted
	primaryDone := in.CompletedStep == StepPrimaryReview && completed
	switch {
	case in.CompletedStep == StepTriage && completed:
		if (in.SelectedBundle != nil) == (in.SelectedProfile != nil) {
			return errCode(CodeSelectionRequired)
		}
	case in.SelectedBundle != nil || in.SelectedProfile != nil:
		return errCode(CodeSelectionNotAllowed)
	}
	if in.CompletedStep == StepPrimaryReview {
		if completed && in.CompletedProfile == nil {
			return errCode(CodeCompletedProfileReq)
		}
		if !completed && in.CompletedProfile != nil {
			return errCode(CodeCompletedProfileState)
		}
	} else if in.CompletedProfile != nil {
		return errCode(CodeCompletedProfileStep)
	}
	if in.RiskSignals != nil && !primaryDone {
		return errCode(CodeRiskSignalsPlacement)
	}
	if in.ProfileReport != nil && !primaryDone {
		return errCode(CodeProfileReportPlacement)
	}
	if in.FinalReviewReport != nil && !(in.CompletedStep == StepSynthesis && completed) {
		return errCode(CodeFinalReportPlacement)
	}
	return nil
}

// Advance records the result of the current step.
func (o *Orchestrator) Advance(ctx context.Context, in AdvanceInput) (Session, error) {
	if err := checkAdvanceShape(in); err != nil {
		return Session{}, err
	}
	args := in
	args.RequestID = nil
	hash, err := requestHashOf(ctx, ToolAdvance, in.RequestID, args)
	if err != nil {
		return Session{}, err
	}
	return o.mutate(ctx, in.RunID, func(now time.Time, l *loaded) (bool, error) {
		s := &l.sess
		if ok, err := admit(s, in.RequestID, hash, in.ExpectedRevision); ok || err != nil {
			return false, err
		}
		if s.Status != StatusActive {
			return false, errCode(CodeTerminalSession)
		}
		if in.CompletedStep != s.CurrentStep {
			return false, errCode(CodeIllegalTransition)
		}
		if in.Status != OutcomeCompleted {
			s.Status = Status(in.Status)
			s.ModelPolicy = nil
			s.NextAction = NextFinalizePartial
			if in.Status == OutcomeBlocked {
				s.NextAction = NextFinalizeBlocked
			}
		} else if err := o.applyCompleted(s, in); err != nil {
			return false, err
		}
		o.commit(s, now, in.RequestID, hash)
		return true, nil
	})
}

func (o *Orchestrator) applyCompleted(s *Session, in AdvanceInput) error {
	switch s.CurrentStep {
	case StepTriage:
		if in.SelectedBundle != nil {
			b := *in.SelectedBundle
			s.SelectedBundle = &b
			s.ReviewProfiles = BundleProfiles(b)
		} else {
			s.SelectedBundle = nil
			s.ReviewProfiles = []Profile{*in.SelectedProfile}
		}
		first := s.ReviewProfiles[0]
		s.SelectedProfile = ptr(first)
		s.CurrentProfile = ptr(first)
		s.CompletedProfiles = []Profile{}
		s.DeepAssessment = nil
		s.DeepReasonCode = nil
		s.CurrentStep = StepPrimaryReview
		s.NextAction = NextPrimaryReview
		s.ModelPolicy = o.policy(StepPrimaryReview)
	case StepPrimaryReview:
		return o.applyPrimary(s, in)
	case StepDeepReview:
		s.CurrentStep = StepSynthesis
		s.NextAction = NextSynthesis
		s.ModelPolicy = o.policy(StepSynthesis)
	case StepSynthesis:
		if in.FinalReviewReport != nil {
			fr, err := normalizeFinalReport(s, *in.FinalReviewReport)
			if err != nil {
				return err
			}
			s.FinalReviewReport = &fr
		}
		s.Status = StatusAwaitingHostOutcome
		s.CurrentStep = StepAwaitingHostOutcome
		s.NextAction = NextAwaitingOutcome
		s.ModelPolicy = nil
	default:
		return errCode(CodeIllegalTransition)
	}
	return nil
}

func (o *Orchestrator) applyPrimary(s *Session, in AdvanceInput) error {
	if s.CurrentProfile == nil {
		return errCode(CodeMissingCurrent)
	}
	idx := len(s.CompletedProfiles)
	if idx >= len(s.ReviewProfiles) {
		return errCode(CodeAllProfilesDone)
	}
	if s.ReviewProfiles[idx] != *s.CurrentProfile {
		return errCode(CodeInconsistentProfile)
	}
	if *in.CompletedProfile != *s.CurrentProfile {
		return errCode(CodeProfileMismatch)
	}
	last := idx == len(s.ReviewProfiles)-1
	if !last && in.RiskSignals != nil {
		return errCode(CodeRiskSignalsPlacement)
	}
	if last && in.RiskSignals == nil {
		return errCode(CodeRiskSignalsRequired)
	}
	if s.ReviewContext != nil && in.ProfileReport == nil {
		return errCode(CodeProfileReportRequired)
	}
	if in.ProfileReport != nil {
		rep, err := normalizeProfileReport(s, *in.ProfileReport, *in.CompletedProfile)
		if err != nil {
			return err
		}
		s.ProfileReports = append(s.ProfileReports, rep)
	}
	s.CompletedProfiles = append(s.CompletedProfiles, *in.CompletedProfile)
	if !last {
		s.CurrentProfile = ptr(s.ReviewProfiles[idx+1])
		s.ModelPolicy = o.policy(StepPrimaryReview)
		return nil
	}
	rs, err := normalizeRiskSignals(s, *in.RiskSignals)
	if err != nil {
		return err
	}
	a := Assess(rs)
	s.RiskSignals = &rs
	s.DeepAssessment = &a
	s.CurrentProfile = nil
	if a.ShouldEscalate {
		s.CurrentStep = StepDeepReview
		s.DeepReasonCode = ptr(a.ReasonCodes[0])
		s.NextAction = NextDeepReview
		s.ModelPolicy = o.policy(StepDeepReview)
	} else {
		s.CurrentStep = StepSynthesis
		s.DeepReasonCode = nil
		s.NextAction = NextSynthesis
		s.ModelPolicy = o.policy(StepSynthesis)
	}
	return nil
}

func recordedAction(out Outcome) string {
	switch out {
	case OutcomePartial:
		return NextRecordedPartial
	case OutcomeBlocked:
		return NextRecordedBlocked
	}
	return NextRecordedDone
}

func sameCanonical(a, b any) bool {
	x, err1 := jcs.Marshal(a)
	y, err2 := jcs.Marshal(b)
	return err1 == nil && err2 == nil && string(x) == string(y)
}

// attachFinalReport validates a report supplied to finish; a report that is
// already recorded may only be resent unchanged, so retries stay harmless.
func attachFinalReport(s *Session, fr *FinalReviewReport) error {
	if fr == nil {
		return nil
	}
	norm, err := normalizeFinalReport(s, *fr)
	if err != nil {
		return err
	}
	if s.FinalReviewReport != nil {
		if !sameCanonical(norm, *s.FinalReviewReport) {
			return newError(CodeFinalReportConflict, "final_review_report", "a different final report is already recorded")
		}
		return nil
	}
	s.FinalReviewReport = &norm
	return nil
}

// checkResentReport allows a finish retry on a finalized session to carry
// the report again, but never to change or add one after the fact.
func checkResentReport(s *Session, fr *FinalReviewReport) error {
	if fr == nil {
		return nil
	}
	if s.FinalReviewReport == nil {
		return newError(CodeFinalReportConflict, "final_review_report", "the session was finalized without a final report")
	}
	norm, err := normalizeFinalReport(s, *fr)
	if err != nil {
		return err
	}
	if !sameCanonical(norm, *s.FinalReviewReport) {
		return newError(CodeFinalReportConflict, "final_review_report", "a different final report is already recorded")
	}
	return nil
}

// Finish records the final outcome. Repeating the same outcome on a
// finalized session returns it unchanged without refreshing its TTL. The
// finished session stays in the store until it expires or is evicted
// (QA-CONTRACT §8; every store alike), unless Config.RemoveFinished
// deletes it here.
func (o *Orchestrator) Finish(ctx context.Context, in FinishInput) (Session, error) {
	if !in.Outcome.Valid() {
		return Session{}, errCode(CodeInvalidFinalOutcome)
	}
	if err := checkArgs(in); err != nil {
		return Session{}, err
	}
	args := in
	args.RequestID = nil
	hash, err := requestHashOf(ctx, ToolFinish, in.RequestID, args)
	if err != nil {
		return Session{}, err
	}
	return o.mutate(ctx, in.RunID, func(now time.Time, l *loaded) (bool, error) {
		s := &l.sess
		if ok, err := admit(s, in.RequestID, hash, in.ExpectedRevision); ok || err != nil {
			return false, err
		}
		switch s.Status {
		case StatusCompleted, StatusPartial, StatusBlocked:
			if Status(in.Outcome) != s.Status {
				return false, errCode(CodeConflictingOutcome)
			}
			if l.finalized {
				return false, checkResentReport(s, in.FinalReviewReport)
			}
		case StatusAwaitingHostOutcome:
		default:
			return false, errCode(CodeOutcomeNotReady)
		}
		if err := attachFinalReport(s, in.FinalReviewReport); err != nil {
			return false, err
		}
		if in.Outcome == OutcomeCompleted && s.ReviewContext != nil && s.FinalReviewReport == nil {
			return false, errCode(CodeFinalReportRequired)
		}
		s.Status = Status(in.Outcome)
		s.ModelPolicy = nil
		s.NextAction = recordedAction(in.Outcome)
		l.finalized = true
		l.remove = o.removeFinished
		o.commit(s, now, in.RequestID, hash)
		return true, nil
	})
}

// Delete discards a session at any stage. Unknown and expired ids succeed:
// "deleted" means the session is now absent.
func (o *Orchestrator) Delete(ctx context.Context, in DeleteInput) (DeleteOutput, error) {
	if err := checkArgs(in); err != nil {
		return DeleteOutput{}, err
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	done := DeleteOutput{RunID: in.RunID, Deleted: true}
	for range conflictRetries {
		rec, err := o.store.Get(ctx, in.RunID)
		if errors.Is(err, store.ErrNotFound) {
			return done, nil
		}
		if err != nil {
			return DeleteOutput{}, storeError(CodeStoreRead, err)
		}
		expired := !rec.ExpiresAt.After(o.clock())
		if in.ExpectedRevision != nil && !expired && *in.ExpectedRevision != rec.Revision {
			return DeleteOutput{}, revisionConflict(rec.Revision)
		}
		err = o.store.Delete(ctx, in.RunID, rec.Revision)
		switch {
		case err == nil, errors.Is(err, store.ErrNotFound):
			delete(o.summaries, in.RunID)
			return done, nil
		case errors.Is(err, store.ErrConflict):
			continue
		default:
			return DeleteOutput{}, storeError(CodeStoreUpdate, err)
		}
	}
	return DeleteOutput{}, newError(CodeRevisionConflict, "", "the session kept changing concurrently; retry")
}

package qa

import "time"

// This file holds the wire types. Conventions:
//   - Input-only optional fields carry `omitzero` so that schema inference
//     (google/jsonschema-go, used by the MCP SDK) treats them as optional.
//   - Types that are also returned (reports, risk signals, context) marshal
//     through marshalAll, which ignores omitzero: every key is emitted, with
//     null or [] for absent values, exactly as stored. Hosts recompute
//     candidate hashes from that output, so stored and returned forms agree.
//   - Every property carries a jsonschema description because hosts see
//     these as tool input documentation.

// RegistryEntry binds one evidence ref to its source metadata; raw content
// stays with the host.
type RegistryEntry struct {
	EvidenceRef string       `json:"evidence_ref" jsonschema:"Evidence ref this entry describes; must be one of review_context.evidence_refs."`
	Kind        EvidenceKind `json:"kind" jsonschema:"Source kind: source, diff, requirement, runtime or other."`
	SHA256      string       `json:"sha256" jsonschema:"SHA-256 (64 hex) of the evidence item's content as the host holds it."`
	Path        *string      `json:"path,omitzero" jsonschema:"Repository path of the evidence item, 1-1024 characters, or null."`
	Revision    *string      `json:"revision,omitzero" jsonschema:"Git revision (40 or 64 hex) the item was read at, or null."`
	StartLine   *int         `json:"start_line,omitzero" jsonschema:"First line (>= 1) of the item, or null."`
	EndLine     *int         `json:"end_line,omitzero" jsonschema:"Last line (>= start_line) of the item, or null."`
	Locator     *string      `json:"locator,omitzero" jsonschema:"Other stable locator (URL, ticket, log id), 1-1024 characters, or null."`
}

// MarshalJSON emits every key.
func (r RegistryEntry) MarshalJSON() ([]byte, error) { return marshalAll(r) }
func (RegistryEntry) marshalsAllFields()             {}

// ReviewRule is one repository review rule bound to the session.
type ReviewRule struct {
	RuleID    string   `json:"rule_id" jsonschema:"Unique rule id matching ^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$."`
	Kind      RuleKind `json:"kind" jsonschema:"raise (report when the condition holds) or guard (do not report when it holds)."`
	Paths     []string `json:"paths" jsonschema:"1-32 path globs the rule applies to."`
	Condition string   `json:"condition" jsonschema:"When the rule applies, 1-2000 characters."`
	Text      string   `json:"text" jsonschema:"What the rule says, 1-2000 characters."`
	Rationale string   `json:"rationale" jsonschema:"Why the rule exists, 1-2000 characters."`
}

// ReviewRules is the versioned rule set whose JCS hash binds reports to it.
type ReviewRules struct {
	SchemaVersion *int         `json:"schema_version,omitzero" jsonschema:"Rule set schema version; must be 1 (default 1)."`
	Rules         []ReviewRule `json:"rules,omitzero" jsonschema:"Up to 100 rules with unique rule_id."`
}

// MarshalJSON emits every key.
func (r ReviewRules) MarshalJSON() ([]byte, error) { return marshalAll(r) }
func (ReviewRules) marshalsAllFields()             {}

// ReviewContextInput is the immutable review identity passed to start.
type ReviewContextInput struct {
	Repository           string          `json:"repository" jsonschema:"Repository identifier, 1-512 characters."`
	BaseSHA              string          `json:"base_sha" jsonschema:"Base commit, 40 or 64 hex characters (stored lower-case)."`
	HeadSHA              string          `json:"head_sha" jsonschema:"Head commit, 40 or 64 hex characters (stored lower-case)."`
	DiffSHA256           string          `json:"diff_sha256" jsonschema:"SHA-256 (64 hex) of the reviewed diff bytes."`
	EvidencePacketSHA256 string          `json:"evidence_packet_sha256" jsonschema:"SHA-256 (64 hex) of the Evidence Packet the reviewers received."`
	ChangedFiles         []string        `json:"changed_files" jsonschema:"1-500 distinct changed paths, each 1-1024 characters; drives recommended_profiles."`
	EvidenceRefs         []string        `json:"evidence_refs" jsonschema:"1-1000 distinct Evidence Packet refs matching ^[A-Za-z0-9][A-Za-z0-9._:/-]*$, at most 128 characters each."`
	EvidenceRegistry     []RegistryEntry `json:"evidence_registry,omitzero" jsonschema:"Optional registry (at most 1000 entries); when non-empty it must hold exactly one entry per evidence ref."`
	ReviewRules          *ReviewRules    `json:"review_rules,omitzero" jsonschema:"Optional repository review rules; the server returns their RFC 8785 SHA-256 as review_context.review_rules_sha256."`
}

// ReviewContext is the stored, normalized review identity.
type ReviewContext struct {
	Repository           string          `json:"repository"`
	BaseSHA              string          `json:"base_sha"`
	HeadSHA              string          `json:"head_sha"`
	DiffSHA256           string          `json:"diff_sha256"`
	EvidencePacketSHA256 string          `json:"evidence_packet_sha256"`
	ChangedFiles         []string        `json:"changed_files"`
	EvidenceRefs         []string        `json:"evidence_refs"`
	EvidenceRegistry     []RegistryEntry `json:"evidence_registry"`
	ReviewRules          *ReviewRules    `json:"review_rules"`
	ReviewRulesSHA256    *string         `json:"review_rules_sha256" jsonschema:"SHA-256 of the RFC 8785 canonical JSON of review_rules, or null when no rules are bound."`
}

// MarshalJSON emits every key.
func (r ReviewContext) MarshalJSON() ([]byte, error) { return marshalAll(r) }
func (ReviewContext) marshalsAllFields()             {}

// RefNote is a coverage gap or an unverified point.
type RefNote struct {
	Text         string   `json:"text" jsonschema:"The gap or open point, 1-2000 characters."`
	EvidenceRefs []string `json:"evidence_refs,omitzero" jsonschema:"Up to 32 Evidence Packet refs it relates to."`
}

// MarshalJSON emits every key.
func (r RefNote) MarshalJSON() ([]byte, error) { return marshalAll(r) }
func (RefNote) marshalsAllFields()             {}

// EvidenceMapEntry is one mapped evidence item of an explorer-style report.
type EvidenceMapEntry struct {
	EvidenceRef string `json:"evidence_ref" jsonschema:"Evidence Packet ref."`
	Description string `json:"description" jsonschema:"What the item shows, 1-2000 characters."`
}

// SourceLocation is a stable source locator for a candidate.
type SourceLocation struct {
	Path      string `json:"path" jsonschema:"Repository path, 1-1024 characters."`
	StartLine int    `json:"start_line" jsonschema:"First line, >= 1."`
	EndLine   *int   `json:"end_line,omitzero" jsonschema:"Last line (>= start_line), or null for a single line."`
}

// MarshalJSON emits every key.
func (s SourceLocation) MarshalJSON() ([]byte, error) { return marshalAll(s) }
func (SourceLocation) marshalsAllFields()             {}

// ProfileCandidate is a possible defect reported by one profile; the host
// still decides whether it is confirmed.
type ProfileCandidate struct {
	CandidateID      string           `json:"candidate_id" jsonschema:"Profile-local id matching ^F-[0-9]{2,}$, unique in the report."`
	Title            string           `json:"title" jsonschema:"Short title, 1-256 characters."`
	Description      string           `json:"description" jsonschema:"What may be wrong, 1-5000 characters."`
	Confidence       Confidence       `json:"confidence" jsonschema:"Evidence confidence: high, medium or low."`
	VerificationGap  string           `json:"verification_gap" jsonschema:"What is still unverified, 1-2000 characters."`
	EvidenceRefs     []string         `json:"evidence_refs" jsonschema:"1-32 supporting Evidence Packet refs."`
	AffectedArea     *string          `json:"affected_area,omitzero" jsonschema:"Affected user flow or system area, at most 256 characters, or null."`
	Impact           *string          `json:"impact,omitzero" jsonschema:"Concrete effect on users or contracts, at most 2000 characters, or null; severity remains host-owned."`
	FailureCondition *string          `json:"failure_condition,omitzero" jsonschema:"Specific preconditions that make the failure occur, 1-2000 characters, or null."`
	FlipCondition    *string          `json:"flip_condition,omitzero" jsonschema:"Concrete evidence that would refute the candidate, 1-2000 characters, or null."`
	SourceLocations  []SourceLocation `json:"source_locations,omitzero" jsonschema:"Up to 20 precise source locations."`
}

// MarshalJSON emits every key.
func (c ProfileCandidate) MarshalJSON() ([]byte, error) { return marshalAll(c) }
func (ProfileCandidate) marshalsAllFields()             {}

// ContextSelection is the host's assertion of the evidence subset it sent to
// a profile.
type ContextSelection struct {
	SourcePacketSHA256   string   `json:"source_packet_sha256" jsonschema:"Packet the subset was cut from; must equal review_context.evidence_packet_sha256."`
	SelectedPacketSHA256 string   `json:"selected_packet_sha256" jsonschema:"SHA-256 (64 hex) of the subset actually sent."`
	IncludedRefs         []string `json:"included_refs" jsonschema:"Up to 1000 refs that were sent."`
	OmittedRefs          []string `json:"omitted_refs,omitzero" jsonschema:"Up to 1000 refs deliberately left out."`
	BudgetOmittedRefs    []string `json:"budget_omitted_refs,omitzero" jsonschema:"Up to 1000 refs left out for the byte budget."`
	MaxBytes             int      `json:"max_bytes" jsonschema:"Byte budget, 1-2000000."`
	SelectedBytes        int      `json:"selected_bytes" jsonschema:"Bytes actually sent, 0-max_bytes."`
}

// MarshalJSON emits every key.
func (c ContextSelection) MarshalJSON() ([]byte, error) { return marshalAll(c) }
func (ContextSelection) marshalsAllFields()             {}

// ExecutionAttempt is one executor call; no exception bodies or content.
type ExecutionAttempt struct {
	Profile            Profile        `json:"profile" jsonschema:"Profile the attempt ran; must be the report's profile."`
	Attempt            int            `json:"attempt" jsonschema:"Attempt number, 1-4, in order."`
	Outcome            AttemptOutcome `json:"outcome" jsonschema:"completed, retryable_error, timeout, failed or cancelled."`
	StartedAt          string         `json:"started_at" jsonschema:"RFC 3339 start time."`
	CompletedAt        string         `json:"completed_at" jsonschema:"RFC 3339 end time, not before started_at."`
	QueueSeconds       float64        `json:"queue_seconds" jsonschema:"Seconds spent queued, >= 0."`
	ExecutorSeconds    float64        `json:"executor_seconds" jsonschema:"Seconds spent in the executor, >= 0."`
	PreparationSeconds *float64       `json:"preparation_seconds,omitzero" jsonschema:"Seconds spent preparing, >= 0, or null."`
	ModelSeconds       *float64       `json:"model_seconds,omitzero" jsonschema:"Seconds spent in the model, >= 0, or null."`
	ValidationSeconds  *float64       `json:"validation_seconds,omitzero" jsonschema:"Seconds spent validating output, >= 0, or null."`
	InputTokens        *int64         `json:"input_tokens,omitzero" jsonschema:"Input tokens, >= 0, or null."`
	OutputTokens       *int64         `json:"output_tokens,omitzero" jsonschema:"Output tokens, >= 0, or null."`
	CachedInputTokens  *int64         `json:"cached_input_tokens,omitzero" jsonschema:"Cached input tokens, >= 0, or null."`
}

// MarshalJSON emits every key.
func (a ExecutionAttempt) MarshalJSON() ([]byte, error) { return marshalAll(a) }
func (ExecutionAttempt) marshalsAllFields()             {}

// ExecutionMetrics is host-reported timing and token data; the orchestrator
// checks its consistency, not its truth.
type ExecutionMetrics struct {
	StartedAt    string             `json:"started_at" jsonschema:"RFC 3339 time the profile started."`
	CompletedAt  string             `json:"completed_at" jsonschema:"RFC 3339 time the profile completed, not before started_at."`
	AttemptCount *int               `json:"attempt_count,omitzero" jsonschema:"Number of attempts, 1-4 (default 1, or the number of attempts given)."`
	Attempts     []ExecutionAttempt `json:"attempts,omitzero" jsonschema:"Up to 4 attempts numbered 1..n; the last must be completed."`
	InputTokens  *int64             `json:"input_tokens,omitzero" jsonschema:"Total input tokens, >= 0, or null."`
	OutputTokens *int64             `json:"output_tokens,omitzero" jsonschema:"Total output tokens, >= 0, or null."`
}

// MarshalJSON emits every key.
func (m ExecutionMetrics) MarshalJSON() ([]byte, error) { return marshalAll(m) }
func (ExecutionMetrics) marshalsAllFields()             {}

// ProfileReport is the structured result of one completed profile.
type ProfileReport struct {
	Profile           Profile            `json:"profile" jsonschema:"Profile that produced the report; must equal completed_profile."`
	Scope             string             `json:"scope" jsonschema:"What the profile reviewed, 1-2000 characters."`
	EvidenceMap       []EvidenceMapEntry `json:"evidence_map,omitzero" jsonschema:"Up to 500 mapped evidence items."`
	FindingCandidates []ProfileCandidate `json:"finding_candidates,omitzero" jsonschema:"Up to 100 possible defects; not allowed for code_explorer and pr_test_analyzer."`
	CoverageGaps      []RefNote          `json:"coverage_gaps,omitzero" jsonschema:"Up to 100 coverage gaps."`
	Unverified        []RefNote          `json:"unverified,omitzero" jsonschema:"Up to 100 points that could not be verified."`
	ContextSelection  *ContextSelection  `json:"context_selection,omitzero" jsonschema:"Optional assertion of the evidence subset sent to the profile."`
	ExecutionMetrics  *ExecutionMetrics  `json:"execution_metrics,omitzero" jsonschema:"Optional host-reported execution data."`
	ReviewRulesSHA256 *string            `json:"review_rules_sha256,omitzero" jsonschema:"Must equal review_context.review_rules_sha256 when rules are bound and be null otherwise."`
}

// MarshalJSON emits every key.
func (r ProfileReport) MarshalJSON() ([]byte, error) { return marshalAll(r) }
func (ProfileReport) marshalsAllFields()             {}

// CandidateRef names one profile-local candidate.
type CandidateRef struct {
	Profile     Profile `json:"profile" jsonschema:"Profile whose report holds the candidate."`
	CandidateID string  `json:"candidate_id" jsonschema:"The candidate's id in that report."`
}

// FinalCandidate is one synthesized finding of the final report.
type FinalCandidate struct {
	CandidateID      string           `json:"candidate_id" jsonschema:"Final finding id matching ^F-[0-9]{2,}$, unique in the final report."`
	Title            string           `json:"title" jsonschema:"Short title, 1-256 characters."`
	Description      string           `json:"description" jsonschema:"The confirmed problem, 1-5000 characters."`
	Confidence       Confidence       `json:"confidence" jsonschema:"Evidence confidence: high, medium or low."`
	VerificationGap  string           `json:"verification_gap" jsonschema:"What is still unverified, 1-2000 characters."`
	EvidenceRefs     []string         `json:"evidence_refs" jsonschema:"1-32 supporting Evidence Packet refs."`
	AffectedArea     *string          `json:"affected_area,omitzero" jsonschema:"Affected user flow or system area, at most 256 characters, or null."`
	Impact           *string          `json:"impact,omitzero" jsonschema:"Concrete effect on users or contracts, at most 2000 characters, or null."`
	FailureCondition *string          `json:"failure_condition,omitzero" jsonschema:"Specific preconditions that make the failure occur, 1-2000 characters, or null."`
	FlipCondition    *string          `json:"flip_condition,omitzero" jsonschema:"Concrete evidence that would refute the finding, 1-2000 characters, or null."`
	SourceLocations  []SourceLocation `json:"source_locations,omitzero" jsonschema:"Up to 20 precise source locations."`
	Severity         *Severity        `json:"severity,omitzero" jsonschema:"Host-selected impact severity (high, medium, low) of the confirmed finding, or null."`
	SourceProfiles   []Profile        `json:"source_profiles" jsonschema:"At least one completed profile the finding came from."`
	SourceCandidates []CandidateRef   `json:"source_candidates" jsonschema:"At least one profile-report candidate merged into this finding."`
}

// MarshalJSON emits every key.
func (c FinalCandidate) MarshalJSON() ([]byte, error) { return marshalAll(c) }
func (FinalCandidate) marshalsAllFields()             {}

// Refutation is the host's evidence-backed attempt to refute one candidate.
type Refutation struct {
	Status          RefutationStatus `json:"status" jsonschema:"refuted, not_refuted or unverified; refuted only with verdict rejected."`
	CandidateSHA256 string           `json:"candidate_sha256" jsonschema:"SHA-256 of the RFC 8785 canonical JSON of the source candidate exactly as the session returns it."`
	ContextSHA256   string           `json:"context_sha256" jsonschema:"The session's evidence_packet_sha256 or the profile's context_selection.selected_packet_sha256."`
	Rationale       string           `json:"rationale" jsonschema:"Why, 1-2000 characters."`
	EvidenceRefs    []string         `json:"evidence_refs" jsonschema:"1-32 supporting Evidence Packet refs."`
}

// CandidateDecision is the host's disposition of one profile candidate.
type CandidateDecision struct {
	Source         CandidateRef `json:"source" jsonschema:"The profile-report candidate decided on."`
	Verdict        Verdict      `json:"verdict" jsonschema:"confirmed, rejected, duplicate or unverified."`
	FinalFindingID *string      `json:"final_finding_id,omitzero" jsonschema:"Surviving final finding for confirmed and duplicate verdicts; null for rejected and unverified."`
	Rationale      string       `json:"rationale" jsonschema:"Why, 1-2000 characters."`
	EvidenceRefs   []string     `json:"evidence_refs" jsonschema:"1-32 supporting Evidence Packet refs."`
	Refutation     *Refutation  `json:"refutation,omitzero" jsonschema:"Optional refutation attempt."`
}

// MarshalJSON emits every key.
func (d CandidateDecision) MarshalJSON() ([]byte, error) { return marshalAll(d) }
func (CandidateDecision) marshalsAllFields()             {}

// FinalReviewReport is the host's synthesis of a review-bound session.
type FinalReviewReport struct {
	Summary            string              `json:"summary" jsonschema:"Synthesis summary, 1-5000 characters."`
	ProfilesReviewed   []Profile           `json:"profiles_reviewed" jsonschema:"Exactly the session's completed profiles."`
	FindingCandidates  []FinalCandidate    `json:"finding_candidates,omitzero" jsonschema:"Up to 100 confirmed final findings."`
	CandidateDecisions []CandidateDecision `json:"candidate_decisions,omitzero" jsonschema:"Exactly one decision for every candidate of every profile report (at most 1000)."`
	CoverageGaps       []RefNote           `json:"coverage_gaps,omitzero" jsonschema:"Up to 100 coverage gaps."`
	Unverified         []RefNote           `json:"unverified,omitzero" jsonschema:"Up to 100 points that could not be verified."`
	ReviewRulesSHA256  *string             `json:"review_rules_sha256,omitzero" jsonschema:"Must equal review_context.review_rules_sha256 when rules are bound and be null otherwise."`
}

// MarshalJSON emits every key.
func (r FinalReviewReport) MarshalJSON() ([]byte, error) { return marshalAll(r) }
func (FinalReviewReport) marshalsAllFields()             {}

// RiskSignals are the host's deep-review signals, sent with the last
// primary-review profile.
type RiskSignals struct {
	HighRiskDomain          bool     `json:"high_risk_domain,omitzero" jsonschema:"The change affects a sensitive security, identity, payment, fraud, privacy, or access-control area."`
	EvidenceUncertain       bool     `json:"evidence_uncertain,omitzero" jsonschema:"A specific material conclusion remains uncertain and a scoped read-only review could plausibly resolve it; not solely because CI, Stage, or runtime checks were not run."`
	CrossSystemScope        bool     `json:"cross_system_scope,omitzero" jsonschema:"The relevant behavior crosses repository, service, or system boundaries."`
	MultiplePlausibleCauses bool     `json:"multiple_plausible_causes,omitzero" jsonschema:"More than one plausible cause remains after investigation."`
	EvidenceConflict        bool     `json:"evidence_conflict,omitzero" jsonschema:"Relevant authoritative evidence sources disagree."`
	NonReproducible         bool     `json:"non_reproducible,omitzero" jsonschema:"The reported behavior cannot be reproduced under expected conditions."`
	HighBlastRadius         bool     `json:"high_blast_radius,omitzero" jsonschema:"The change could affect many consumers, services, or data records."`
	EvidenceRefs            []string `json:"evidence_refs,omitzero" jsonschema:"Up to 32 Evidence Packet refs supporting the enabled signals."`
	Rationale               *string  `json:"rationale,omitzero" jsonschema:"Short explanation (at most 2000 characters); required when any signal is true."`
}

// MarshalJSON emits every key.
func (r RiskSignals) MarshalJSON() ([]byte, error) { return marshalAll(r) }
func (RiskSignals) marshalsAllFields()             {}

func (r RiskSignals) any() bool {
	return r.HighRiskDomain || r.EvidenceUncertain || r.CrossSystemScope || r.MultiplePlausibleCauses ||
		r.EvidenceConflict || r.NonReproducible || r.HighBlastRadius
}

// DeepAssessment is the computed deep-review escalation decision.
type DeepAssessment struct {
	ShouldEscalate        bool         `json:"should_escalate"`
	TriggeredRules        []DeepRule   `json:"triggered_rules"`
	ReasonCodes           []ReasonCode `json:"reason_codes"`
	ComplexitySignalCount int          `json:"complexity_signal_count"`
}

// MarshalJSON emits every key.
func (d DeepAssessment) MarshalJSON() ([]byte, error) { return marshalAll(d) }
func (DeepAssessment) marshalsAllFields()             {}

// TransitionReceipt records one applied mutating request, without payload.
type TransitionReceipt struct {
	RequestID       string `json:"request_id"`
	RequestSHA256   string `json:"request_sha256"`
	AppliedRevision int64  `json:"applied_revision"`
}

// Session is the orchestration session object returned by start, advance,
// get and finish. Every field is always present.
type Session struct {
	RunID               string              `json:"run_id"`
	Status              Status              `json:"status"`
	Revision            int64               `json:"revision" jsonschema:"Workflow revision for conditional writes."`
	ReadOnly            bool                `json:"read_only"`
	TaskType            TaskType            `json:"task_type"`
	ExpiresAt           time.Time           `json:"expires_at"`
	NextAction          string              `json:"next_action"`
	CurrentStep         Step                `json:"current_step"`
	ModelPolicy         *ModelPolicy        `json:"model_policy"`
	RiskSignals         *RiskSignals        `json:"risk_signals"`
	ReviewContext       *ReviewContext      `json:"review_context"`
	AllowedBundles      []Bundle            `json:"allowed_bundles"`
	CurrentProfile      *Profile            `json:"current_profile"`
	DeepAssessment      *DeepAssessment     `json:"deep_assessment"`
	ProfileReports      []ProfileReport     `json:"profile_reports"`
	ReviewProfiles      []Profile           `json:"review_profiles"`
	SelectedBundle      *Bundle             `json:"selected_bundle"`
	AllowedProfiles     []Profile           `json:"allowed_profiles"`
	DeepReasonCode      *ReasonCode         `json:"deep_reason_code"`
	SelectedProfile     *Profile            `json:"selected_profile"`
	CompletedProfiles   []Profile           `json:"completed_profiles"`
	FinalReviewReport   *FinalReviewReport  `json:"final_review_report"`
	HostOwnsDecisions   bool                `json:"host_owns_decisions"`
	RecommendedBundles  []Bundle            `json:"recommended_bundles"`
	TransitionReceipts  []TransitionReceipt `json:"transition_receipts" jsonschema:"Bounded request hashes for safe replay; no raw transition payloads are stored."`
	RecommendedProfiles []Profile           `json:"recommended_profiles" jsonschema:"File-type-based profile hints only; the host selects the route."`
}

// MarshalJSON emits every key, with [] for empty lists.
func (s Session) MarshalJSON() ([]byte, error) { return marshalAll(s) }
func (Session) marshalsAllFields()             {}

// Summary is one entry of list_qa_orchestrations.
type Summary struct {
	RunID           string    `json:"run_id"`
	TaskType        TaskType  `json:"task_type"`
	Status          Status    `json:"status"`
	CurrentStep     Step      `json:"current_step"`
	SelectedBundle  *Bundle   `json:"selected_bundle"`
	SelectedProfile *Profile  `json:"selected_profile"`
	CurrentProfile  *Profile  `json:"current_profile"`
	ExpiresAt       time.Time `json:"expires_at"`
}

// StartInput is the input of start_qa_orchestration.
type StartInput struct {
	TaskType      TaskType            `json:"task_type" jsonschema:"Broad request category: ordinary_review for implementation review, widget_review for widget changes, epic_analysis for broad exploration, requirements_analysis for requirement review, qa_planning for coverage planning, autotest_implementation for automation work, or other. This affects recommended_bundles only; the host chooses the route from changed files and evidence; it is not a risk level."`
	ReviewContext *ReviewContextInput `json:"review_context,omitzero" jsonschema:"Optional immutable repository, base/head, changed-file, diff, and Evidence Packet identity. When supplied, every completed profile must include a structured report whose evidence references belong to this packet; completed outcomes require a final report. The response may include file-type-based recommended_profiles as non-binding hints. Optional evidence_registry metadata binds each ref to a source kind, revision, coordinates and content hash. The host verifies actual content locally."`
}

// AdvanceInput is the input of advance_qa_orchestration.
type AdvanceInput struct {
	RunID             string             `json:"run_id" jsonschema:"Session id returned by start_qa_orchestration or list_qa_orchestrations (qar- followed by 32 lower-case hex)."`
	CompletedStep     Step               `json:"completed_step" jsonschema:"The step the host just finished; must equal the session's current_step (triage, primary_review, deep_review or synthesis)."`
	Status            Outcome            `json:"status" jsonschema:"completed advances; partial or blocked stops the session early and must then be finalized."`
	SelectedBundle    *Bundle            `json:"selected_bundle,omitzero" jsonschema:"Bundle chosen at triage (completed only); exactly one of selected_bundle and selected_profile."`
	SelectedProfile   *Profile           `json:"selected_profile,omitzero" jsonschema:"Single profile chosen at triage (completed only); exactly one of selected_bundle and selected_profile."`
	CompletedProfile  *Profile           `json:"completed_profile,omitzero" jsonschema:"Profile just completed in primary_review; must equal current_profile."`
	RiskSignals       *RiskSignals       `json:"risk_signals,omitzero" jsonschema:"Required with the last primary-review profile (send {} when no signal applies); forbidden elsewhere."`
	ProfileReport     *ProfileReport     `json:"profile_report,omitzero" jsonschema:"Structured report of completed_profile; required on review-bound sessions, optional otherwise."`
	FinalReviewReport *FinalReviewReport `json:"final_review_report,omitzero" jsonschema:"Final synthesis, accepted when completing synthesis."`
	ExpectedRevision  *int64             `json:"expected_revision,omitzero" jsonschema:"Apply only if the session is still at this revision; otherwise fail with revision conflict."`
	RequestID         *string            `json:"request_id,omitzero" jsonschema:"Idempotency key matching ^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$; a retry with the same arguments returns the current session without applying twice."`
}

// GetInput is the input of get_qa_orchestration.
type GetInput struct {
	RunID string `json:"run_id" jsonschema:"Session id returned by start_qa_orchestration or list_qa_orchestrations."`
}

// FinishInput is the input of finish_qa_orchestration.
type FinishInput struct {
	RunID             string             `json:"run_id" jsonschema:"Session id returned by start_qa_orchestration or list_qa_orchestrations."`
	Outcome           Outcome            `json:"outcome" jsonschema:"Final QA outcome: completed, partial or blocked; after an early stop it must equal the stop status."`
	FinalReviewReport *FinalReviewReport `json:"final_review_report,omitzero" jsonschema:"Final synthesis, if not already recorded when completing synthesis; required for a completed review-bound outcome."`
	ExpectedRevision  *int64             `json:"expected_revision,omitzero" jsonschema:"Apply only if the session is still at this revision; otherwise fail with revision conflict."`
	RequestID         *string            `json:"request_id,omitzero" jsonschema:"Idempotency key matching ^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$."`
}

// DeleteInput is the input of delete_qa_orchestration.
type DeleteInput struct {
	RunID            string  `json:"run_id" jsonschema:"Session id to discard; unknown and expired ids succeed as well."`
	ExpectedRevision *int64  `json:"expected_revision,omitzero" jsonschema:"Delete only if the session is still at this revision; otherwise fail with revision conflict."`
	RequestID        *string `json:"request_id,omitzero" jsonschema:"Idempotency key matching ^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$."`
}

// DeleteOutput is the output of delete_qa_orchestration; Deleted means
// "now absent".
type DeleteOutput struct {
	RunID   string `json:"run_id"`
	Deleted bool   `json:"deleted"`
}

// List page sizes (list_qa_orchestrations limit).
const (
	DefaultListLimit = 100
	MaxListLimit     = 1000
)

// ListInput is the input of list_qa_orchestrations.
type ListInput struct {
	Limit  *int    `json:"limit,omitzero" jsonschema:"Most sessions to return, 1 to 1000; 100 when omitted."`
	Cursor *string `json:"cursor,omitzero" jsonschema:"next_cursor of a previous answer, to continue after its last session; omit for the first page."`
}

// ListOutput is the output of list_qa_orchestrations.
type ListOutput struct {
	Sessions          []Summary `json:"sessions"`
	NextCursor        *string   `json:"next_cursor" jsonschema:"Pass as cursor to get the next page; null when this page is the last."`
	ReadOnly          bool      `json:"read_only"`
	HostOwnsDecisions bool      `json:"host_owns_decisions"`
}

package qa

import (
	"reflect"
	"slices"
)

// TaskType is the broad request category passed to start.
type TaskType string

// Task types in declaration order.
const (
	TaskOrdinaryReview         TaskType = "ordinary_review"
	TaskWidgetReview           TaskType = "widget_review"
	TaskEpicAnalysis           TaskType = "epic_analysis"
	TaskRequirementsAnalysis   TaskType = "requirements_analysis"
	TaskQAPlanning             TaskType = "qa_planning"
	TaskAutotestImplementation TaskType = "autotest_implementation"
	TaskOther                  TaskType = "other"
)

// TaskTypes returns every task type in declaration order.
func TaskTypes() []TaskType {
	return []TaskType{TaskOrdinaryReview, TaskWidgetReview, TaskEpicAnalysis, TaskRequirementsAnalysis,
		TaskQAPlanning, TaskAutotestImplementation, TaskOther}
}

// Valid reports whether t is a declared task type.
func (t TaskType) Valid() bool { return slices.Contains(TaskTypes(), t) }

// Outcome is a step result (advance) or a final outcome (finish).
type Outcome string

// Outcomes in declaration order.
const (
	OutcomeCompleted Outcome = "completed"
	OutcomePartial   Outcome = "partial"
	OutcomeBlocked   Outcome = "blocked"
)

// Outcomes returns every outcome in declaration order.
func Outcomes() []Outcome { return []Outcome{OutcomeCompleted, OutcomePartial, OutcomeBlocked} }

// Valid reports whether o is a declared outcome.
func (o Outcome) Valid() bool { return slices.Contains(Outcomes(), o) }

// Profile is a specialist review profile (the anchor's ReviewAgent).
type Profile string

// Profiles in declaration order; this order is the enum order used by
// allowed_profiles and by recommended_profiles.
const (
	ProfilePRTestAnalyzer      Profile = "pr_test_analyzer"
	ProfileCodeReviewer        Profile = "code_reviewer"
	ProfileSecurityReviewer    Profile = "security_reviewer"
	ProfileSilentFailureHunter Profile = "silent_failure_hunter"
	ProfileCodeExplorer        Profile = "code_explorer"
	ProfileTypeScriptReviewer  Profile = "typescript_reviewer"
	ProfileReactReviewer       Profile = "react_reviewer"
	ProfileRubyReviewer        Profile = "ruby_reviewer"
	ProfilePythonReviewer      Profile = "python_reviewer"
	ProfileMobileReviewer      Profile = "mobile_reviewer"
)

// Profiles returns every profile in declaration order.
func Profiles() []Profile {
	return []Profile{ProfilePRTestAnalyzer, ProfileCodeReviewer, ProfileSecurityReviewer,
		ProfileSilentFailureHunter, ProfileCodeExplorer, ProfileTypeScriptReviewer, ProfileReactReviewer,
		ProfileRubyReviewer, ProfilePythonReviewer, ProfileMobileReviewer}
}

// Valid reports whether p is a declared profile.
func (p Profile) Valid() bool { return slices.Contains(Profiles(), p) }

// Bundle is a fixed, ordered group of profiles.
type Bundle string

// Bundles in declaration order.
const (
	BundleOrdinaryMR    Bundle = "ordinary_mr"
	BundleWidget        Bundle = "widget"
	BundleWidgetJS      Bundle = "widget_js"
	BundleRubyBackend   Bundle = "ruby_backend"
	BundlePythonBackend Bundle = "python_backend"
	BundleMobile        Bundle = "mobile"
	BundleSecurity      Bundle = "security"
	BundleAutotest      Bundle = "autotest"
	BundleRequirements  Bundle = "requirements"
)

// Bundles returns every bundle in declaration order.
func Bundles() []Bundle {
	return []Bundle{BundleOrdinaryMR, BundleWidget, BundleWidgetJS, BundleRubyBackend, BundlePythonBackend,
		BundleMobile, BundleSecurity, BundleAutotest, BundleRequirements}
}

// Valid reports whether b is a declared bundle.
func (b Bundle) Valid() bool { return slices.Contains(Bundles(), b) }

// Step is a position in the orchestration.
type Step string

// Steps in declaration order.
const (
	StepTriage              Step = "triage"
	StepPrimaryReview       Step = "primary_review"
	StepDeepReview          Step = "deep_review"
	StepSynthesis           Step = "synthesis"
	StepAwaitingHostOutcome Step = "awaiting_host_outcome"
)

// CompletableSteps returns the steps a host may report as completed.
func CompletableSteps() []Step {
	return []Step{StepTriage, StepPrimaryReview, StepDeepReview, StepSynthesis}
}

// Steps returns every step in declaration order.
func Steps() []Step { return append(CompletableSteps(), StepAwaitingHostOutcome) }

// Status is a session's lifecycle status.
type Status string

// Statuses in declaration order. StatusExpired is declared for compatibility
// and never assigned: expiry is reported as an error instead.
const (
	StatusActive              Status = "active"
	StatusAwaitingHostOutcome Status = "awaiting_host_outcome"
	StatusCompleted           Status = "completed"
	StatusPartial             Status = "partial"
	StatusBlocked             Status = "blocked"
	StatusExpired             Status = "expired"
)

// Statuses returns every status in declaration order.
func Statuses() []Status {
	return []Status{StatusActive, StatusAwaitingHostOutcome, StatusCompleted, StatusPartial, StatusBlocked, StatusExpired}
}

// countsAsActive reports whether a session with status s holds one of the
// active slots; everything else is a retained terminal session that may be
// evicted under pressure.
func (s Status) countsAsActive() bool { return s == StatusActive || s == StatusAwaitingHostOutcome }

// ReasonCode is the deep-review reason code.
type ReasonCode string

// Reason codes in declaration order.
const (
	ReasonEvidenceGap      ReasonCode = "evidence_gap"
	ReasonCrossRepository  ReasonCode = "cross_repository"
	ReasonRootCause        ReasonCode = "root_cause"
	ReasonHighBlastRadius  ReasonCode = "high_blast_radius"
	ReasonHighRiskDomain   ReasonCode = "high_risk_domain"
	ReasonEvidenceConflict ReasonCode = "evidence_conflict"
	ReasonNonReproducible  ReasonCode = "non_reproducible"
)

// ReasonCodes returns every reason code in declaration order.
func ReasonCodes() []ReasonCode {
	return []ReasonCode{ReasonEvidenceGap, ReasonCrossRepository, ReasonRootCause, ReasonHighBlastRadius,
		ReasonHighRiskDomain, ReasonEvidenceConflict, ReasonNonReproducible}
}

// DeepRule names a deep-review escalation rule.
type DeepRule string

// Deep-review rules in evaluation order.
const (
	RuleHighRiskWithUncertainty  DeepRule = "high_risk_with_uncertainty"
	RuleMultipleComplexity       DeepRule = "multiple_complexity_signals"
	RuleCriticalEvidenceConflict DeepRule = "critical_evidence_conflict"
)

// DeepRules returns every deep-review rule in evaluation order.
func DeepRules() []DeepRule {
	return []DeepRule{RuleHighRiskWithUncertainty, RuleMultipleComplexity, RuleCriticalEvidenceConflict}
}

// Confidence is a candidate's evidence confidence.
type Confidence string

// Confidence levels.
const (
	ConfidenceHigh   Confidence = "high"
	ConfidenceMedium Confidence = "medium"
	ConfidenceLow    Confidence = "low"
)

// Confidences returns every confidence level.
func Confidences() []Confidence { return []Confidence{ConfidenceHigh, ConfidenceMedium, ConfidenceLow} }

// Severity is the host-owned impact severity of a confirmed final finding.
type Severity string

// Severities accepted on final findings.
const (
	SeverityHigh   Severity = "high"
	SeverityMedium Severity = "medium"
	SeverityLow    Severity = "low"
)

// Severities returns every severity a final finding may carry.
func Severities() []Severity { return []Severity{SeverityHigh, SeverityMedium, SeverityLow} }

// Verdict is the host's decision on one profile candidate.
type Verdict string

// Verdicts.
const (
	VerdictConfirmed  Verdict = "confirmed"
	VerdictRejected   Verdict = "rejected"
	VerdictDuplicate  Verdict = "duplicate"
	VerdictUnverified Verdict = "unverified"
)

// Verdicts returns every verdict.
func Verdicts() []Verdict {
	return []Verdict{VerdictConfirmed, VerdictRejected, VerdictDuplicate, VerdictUnverified}
}

// RefutationStatus is the outcome of the host's refutation attempt.
type RefutationStatus string

// Refutation statuses.
const (
	RefutationRefuted    RefutationStatus = "refuted"
	RefutationNotRefuted RefutationStatus = "not_refuted"
	RefutationUnverified RefutationStatus = "unverified"
)

// RefutationStatuses returns every refutation status.
func RefutationStatuses() []RefutationStatus {
	return []RefutationStatus{RefutationRefuted, RefutationNotRefuted, RefutationUnverified}
}

// EvidenceKind classifies an evidence registry entry.
type EvidenceKind string

// Evidence kinds.
const (
	EvidenceSource      EvidenceKind = "source"
	EvidenceDiff        EvidenceKind = "diff"
	EvidenceRequirement EvidenceKind = "requirement"
	EvidenceRuntime     EvidenceKind = "runtime"
	EvidenceOther       EvidenceKind = "other"
)

// EvidenceKinds returns every evidence kind.
func EvidenceKinds() []EvidenceKind {
	return []EvidenceKind{EvidenceSource, EvidenceDiff, EvidenceRequirement, EvidenceRuntime, EvidenceOther}
}

// RuleKind is a review rule's kind.
type RuleKind string

// Review rule kinds.
const (
	RuleKindRaise RuleKind = "raise"
	RuleKindGuard RuleKind = "guard"
)

// RuleKinds returns every review rule kind.
func RuleKinds() []RuleKind { return []RuleKind{RuleKindRaise, RuleKindGuard} }

// AttemptOutcome is the result of one executor call in execution_metrics.
type AttemptOutcome string

// Attempt outcomes.
const (
	AttemptCompleted      AttemptOutcome = "completed"
	AttemptRetryableError AttemptOutcome = "retryable_error"
	AttemptTimeout        AttemptOutcome = "timeout"
	AttemptFailed         AttemptOutcome = "failed"
	AttemptCancelled      AttemptOutcome = "cancelled"
)

// AttemptOutcomes returns every attempt outcome.
func AttemptOutcomes() []AttemptOutcome {
	return []AttemptOutcome{AttemptCompleted, AttemptRetryableError, AttemptTimeout, AttemptFailed, AttemptCancelled}
}

// EnumValues maps every fixed-value string type of the wire to its values,
// in declaration order. It is the one list both sides use: the MCP adapter
// publishes each as a JSON Schema enum, and the library's rule check
// (checkRules) rejects any other value of these types.
func EnumValues() map[reflect.Type][]string {
	return map[reflect.Type][]string{
		reflect.TypeFor[TaskType]():         strs(TaskTypes()),
		reflect.TypeFor[Outcome]():          strs(Outcomes()),
		reflect.TypeFor[Profile]():          strs(Profiles()),
		reflect.TypeFor[Bundle]():           strs(Bundles()),
		reflect.TypeFor[Step]():             strs(Steps()),
		reflect.TypeFor[Status]():           strs(Statuses()),
		reflect.TypeFor[ReasonCode]():       strs(ReasonCodes()),
		reflect.TypeFor[DeepRule]():         strs(DeepRules()),
		reflect.TypeFor[Confidence]():       strs(Confidences()),
		reflect.TypeFor[Severity]():         strs(Severities()),
		reflect.TypeFor[Verdict]():          strs(Verdicts()),
		reflect.TypeFor[RefutationStatus](): strs(RefutationStatuses()),
		reflect.TypeFor[EvidenceKind]():     strs(EvidenceKinds()),
		reflect.TypeFor[RuleKind]():         strs(RuleKinds()),
		reflect.TypeFor[AttemptOutcome]():   strs(AttemptOutcomes()),
		reflect.TypeFor[Provider]():         strs(Providers()),
		reflect.TypeFor[Reasoning]():        strs(ReasoningLevels()),
	}
}

func strs[T ~string](vs []T) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = string(v)
	}
	return out
}

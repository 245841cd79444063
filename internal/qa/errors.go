package qa

import (
	"errors"
	"strings"

	"github.com/diffpalhq/diffpal/internal/qa/store"
)

// Code is a fixed lower-case error phrase. Hosts and tests match on it, so the
// values are part of the wire contract and must never be reworded.
type Code string

// Error implements error so a Code can be used as an errors.Is target.
func (c Code) Error() string { return string(c) }

// Codes reproduced from the anchor (reference §5.4, §5.5, §8).
const (
	CodeUnknownRunID          Code = "unknown run_id"
	CodeExpiredSession        Code = "expired session"
	CodeTerminalSession       Code = "terminal session"
	CodeIllegalTransition     Code = "illegal transition"
	CodeSessionLimit          Code = "session limit"
	CodeInvalidTaskType       Code = "invalid task type"
	CodeInvalidFinalOutcome   Code = "invalid final outcome"
	CodeOutcomeNotReady       Code = "outcome is not ready"
	CodeConflictingOutcome    Code = "conflicting final outcome"
	CodeUnknownProfile        Code = "unknown review agent profile"
	CodeStoreWrite            Code = "unable to write session store"
	CodeStoreUpdate           Code = "unable to update session store"
	CodeStoreRead             Code = "unable to read session store"
	CodeInvalidSessionData    Code = "session store contains invalid session data"
	CodeLimitsNotPositive     Code = "ttl_seconds/max_sessions must be positive"
	CodeSelectionRequired     Code = "exactly one selection is required after triage"
	CodeSelectionNotAllowed   Code = "selection may only be supplied after triage"
	CodeCompletedProfileReq   Code = "completed_profile is required after primary review"
	CodeCompletedProfileState Code = "completed_profile requires a completed primary review"
	CodeCompletedProfileStep  Code = "completed_profile may only be supplied after primary review"
	CodeRiskSignalsPlacement  Code = "risk signals must be sent with the final primary-review profile"
	CodeRiskSignalsRequired   Code = "risk_signals are required for the final primary-review profile"
	CodeChangedProfile        Code = "changed profile after triage"
	CodeMissingCurrent        Code = "missing current profile"
	CodeAllProfilesDone       Code = "all review profiles are already completed"
	CodeInconsistentProfile   Code = "current profile state is inconsistent"
	CodeProfileMismatch       Code = "completed profile does not match current profile"
)

// Codes for the review-bound contract (QA-CONTRACT.md §§3–7).
const (
	CodeInvalidArgument        Code = "invalid argument"
	CodeInvalidReviewContext   Code = "invalid review_context"
	CodeInvalidProfileReport   Code = "invalid profile_report"
	CodeInvalidRiskSignals     Code = "invalid risk_signals"
	CodeInvalidFinalReport     Code = "invalid final_review_report"
	CodeProfileReportPlacement Code = "profile_report may only be supplied with a completed primary-review profile"
	CodeProfileReportRequired  Code = "profile_report is required for a review-bound session"
	CodeFinalReportPlacement   Code = "final_review_report may only be supplied when completing synthesis or on finish"
	CodeFinalReportRequired    Code = "final_review_report is required for a completed review-bound outcome"
	CodeFinalReportConflict    Code = "conflicting final review report"
	CodeRevisionConflict       Code = "revision conflict"
	CodeRequestIDConflict      Code = "request_id conflict"
	CodeExportNotBound         Code = "export requires a review-bound session"
	CodeExportNoReport         Code = "final review report is not recorded"
	CodeInvalidModelPolicy     Code = "invalid model policy"
)

// Error is a domain error. Its text always starts with Code so adapters can
// hand it to hosts unchanged; Field names the offending input as a JSON path
// (for example "profile_report.finding_candidates[0].evidence_refs[1]").
type Error struct {
	Code   Code
	Field  string
	Detail string
	// cause is kept for errors.Is/As and server logs but never enters the
	// text: store failures must not show hosts database paths or driver
	// messages.
	cause error
}

// Unwrap returns the underlying cause (store and context errors).
func (e *Error) Unwrap() error { return e.cause }

// storeError wraps a store failure without exposing its text.
// storeError hides the store's own error (driver text, paths) from
// clients; an outage says what to do about it: the call was not applied,
// or its receipt answers a retry with the same request_id.
func storeError(c Code, err error) *Error {
	e := &Error{Code: c, cause: err}
	if errors.Is(err, store.ErrUnavailable) {
		e.Detail = "the session store is unavailable; retry the call with the same request_id"
	}
	return e
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(string(e.Code))
	if e.Field != "" {
		b.WriteString(": ")
		b.WriteString(e.Field)
	}
	if e.Detail != "" {
		b.WriteString(": ")
		b.WriteString(e.Detail)
	}
	return b.String()
}

// Is makes errors.Is(err, CodeX) work for any *Error carrying CodeX.
func (e *Error) Is(target error) bool {
	c, ok := target.(Code)
	return ok && c == e.Code
}

func newError(c Code, field, detail string) *Error {
	return &Error{Code: c, Field: field, Detail: detail}
}

func errCode(c Code) *Error { return &Error{Code: c} }

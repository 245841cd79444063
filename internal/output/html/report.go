// Package html renders a review as report.html: one self-contained file
// (inline CSS and JS, no fonts, no network) that works from file://, as a
// CI artifact and as an e-mail attachment, with client-side filters and
// search over every finding.
//
// Report is the printer's whole input, built by internal/output from a
// review result or from a bundle alone (diffpal render); every string in
// it may come from the reviewed repository and is escaped when written.
package html

// Report is everything report.html shows.
type Report struct {
	Title      string `json:"title"`
	Repository string `json:"repository"`
	// Range is "abc123..def456" (or "abc123..worktree").
	Range string `json:"range"`
	// Why says how the range was chosen.
	Why      string `json:"why,omitempty"`
	Provider string `json:"provider,omitempty"`
	// Version is diffpal's version (no clock: the report of one bundle is
	// the same file every time).
	Version string `json:"version,omitempty"`
	// Decision is fail (a finding blocks), warn (findings, none blocking)
	// or pass.
	Decision string    `json:"decision"`
	Findings []Finding `json:"findings"`
	// Files are the files reviewed, Skips those skipped with the reason.
	Files      []File    `json:"files"`
	Skips      []Note    `json:"skips,omitempty"`
	Drops      []Note    `json:"drops,omitempty"`
	Suppressed []Note    `json:"suppressed,omitempty"`
	Baseline   *Baseline `json:"baseline,omitempty"`
	// Session is the QA session's audit trail; nil when not known (a
	// bundle rendered without its qa-session.json).
	Session *Session `json:"session,omitempty"`
	Notes   []string `json:"notes,omitempty"`
}

// Finding is one finding as the report shows it.
type Finding struct {
	StableID   string  `json:"stable_id"`
	RuleID     string  `json:"rule_id,omitempty"`
	Category   string  `json:"category"`
	Severity   string  `json:"severity"`
	Blocking   bool    `json:"blocking"`
	Confidence float64 `json:"confidence"`
	// Profile is the QA profile that reported it, when known.
	Profile   string `json:"profile,omitempty"`
	Path      string `json:"path"`
	StartLine int    `json:"start_line"`
	EndLine   int    `json:"end_line"`
	// Side is LEFT for a finding on removed lines.
	Side       string `json:"side,omitempty"`
	Title      string `json:"title"`
	Message    string `json:"message,omitempty"`
	Impact     string `json:"impact,omitempty"`
	Evidence   string `json:"evidence,omitempty"`
	Suggestion string `json:"suggestion,omitempty"`
	// Snippet is the changed lines with some context, from the head
	// revision (base for LEFT); nil when the file could not be read.
	Snippet *Snippet `json:"snippet,omitempty"`
	// Link points at the lines on the code host's web UI, when known.
	Link string `json:"link,omitempty"`
	// Baseline is "new" or "unchanged" with --baseline, else "".
	Baseline string `json:"baseline,omitempty"`
}

// Snippet is consecutive lines of a file, the first numbered Start.
// Lines Start+i with MarkStart <= Start+i <= MarkEnd are the finding's.
type Snippet struct {
	Start     int      `json:"start"`
	Lines     []string `json:"lines"`
	MarkStart int      `json:"mark_start"`
	MarkEnd   int      `json:"mark_end"`
}

// File is a reviewed file.
type File struct {
	Path     string `json:"path"`
	Status   string `json:"status,omitempty"`
	Findings int    `json:"findings"`
}

// Note is one line item: what, why, and a count where it counts.
type Note struct {
	What   string `json:"what,omitempty"`
	Reason string `json:"reason"`
	Count  int    `json:"count,omitempty"`
}

// Baseline counts findings against an earlier bundle; Fixed lists the
// earlier findings that are gone.
type Baseline struct {
	New       int    `json:"new"`
	Unchanged int    `json:"unchanged"`
	Fixed     int    `json:"fixed"`
	FixedList []Note `json:"fixed_list,omitempty"`
}

// Session is the QA session's audit trail.
type Session struct {
	ID string `json:"id"`
	// Bundle is the orchestration bundle and why it was chosen.
	Bundle   string    `json:"bundle,omitempty"`
	Profiles []Profile `json:"profiles"`
	// Decisions are every candidate's fate in the final report.
	Decisions []Decision `json:"decisions"`
	// Deep says whether and why the deep review ran.
	Deep string `json:"deep,omitempty"`
}

// Profile is one QA profile's run.
type Profile struct {
	Name       string `json:"name"`
	Status     string `json:"status"`
	Candidates int    `json:"candidates"`
	Summary    string `json:"summary,omitempty"`
}

// Decision is what the final report did with a candidate.
type Decision struct {
	CandidateID string `json:"candidate_id"`
	Profile     string `json:"profile,omitempty"`
	Title       string `json:"title"`
	Decision    string `json:"decision"` // accepted, rejected, merged, ...
	Rationale   string `json:"rationale,omitempty"`
}

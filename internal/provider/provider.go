package provider

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/diffpalhq/diffpal/internal/diff"
	"github.com/diffpalhq/diffpal/internal/evidence"
	"github.com/diffpalhq/diffpal/internal/qa"
	"github.com/diffpalhq/diffpal/internal/rules"
)

// Provider reviews a change one profile at a time.
type Provider interface {
	Name() string
	ReviewProfile(ctx context.Context, req ProfileRequest) (ProfileResult, error)
}

// FilePreparer is an optional Preparer capability: the file-only work of
// one file, started as soon as the engine has read the file (for a
// committed range, while git still diffs the files after it). The engine
// calls PrepareFile from one goroutine, in diff order, with files that
// will be in Prepare's list, and always calls Prepare afterwards — with
// no files when reading the change failed — which finishes the work.
type FilePreparer interface {
	Preparer
	PrepareFile(ctx context.Context, f *ChangedFile)
}

// EvidenceBlind is an optional capability of a Provider or Verifier that
// never reads the evidence items' contents (Item.Content), only their
// refs and coordinates: the engine then keeps only the items' hashes.
// Anything that does not implement it is assumed to read them.
type EvidenceBlind interface {
	EvidenceBlind()
}

// ReadsEvidence reports whether p (a Provider or Verifier, nil for none)
// may read the evidence items' contents.
func ReadsEvidence(p any) bool {
	if p == nil {
		return false
	}
	_, blind := p.(EvidenceBlind)
	return !blind
}

// Preparer is an optional Provider capability: work that depends only on
// the changed files, which the engine runs while it builds the evidence
// packet.
type Preparer interface {
	Prepare(ctx context.Context, files []*ChangedFile)
}

// Verifier checks candidates against wider evidence: the deep-review pass
// (severe candidates) and model-backed synthesis (every candidate) use it.
type Verifier interface {
	Name() string
	Verify(ctx context.Context, ch *Change, cands []Candidate, reasons []string) ([]Verdict, error)
}

// Change is what a provider is given of the change under review.
type Change struct {
	// Files are the changed files in review scope, sorted by path.
	Files []*ChangedFile
	// Packet is the evidence packet every candidate cites.
	Packet *evidence.Packet
	// RawDiff is the reviewed diff as git printed it, for work-tree
	// reviews; a committed range's diff is streamed file by file and not
	// kept whole (DiffSize is its size either way).
	RawDiff  []byte
	DiffSize int
	// Subjects are the commit subjects of the range (none for a work tree).
	Subjects []string
}

// ChangedFile is one changed file in review scope. The engine and every
// provider share the same values; none may change them.
type ChangedFile struct {
	Diff    *diff.File
	Content []string // new version, nil for deleted files
	// Text, when not empty, is Content joined by "\n" (the file as read,
	// without its final newline), which the rule engine would otherwise
	// build again; Content's lines are substrings of it.
	Text string

	ruleOnce sync.Once
	rule     *rules.File
}

// Path is the file's review path.
func (f *ChangedFile) Path() string { return f.Diff.Path() }

// Rules is the rule engine's view of the file (internal/rules), built once
// and shared by every reader (the builtin provider's matching, the
// engine's explorer), so that its masked views are computed once per
// review. It is safe for concurrent use.
func (f *ChangedFile) Rules() *rules.File {
	f.ruleOnce.Do(func() {
		first := ""
		if len(f.Content) > 0 {
			first = f.Content[0]
		}
		rf := &rules.File{Path: f.Path(), Language: rules.DetectLanguage(f.Path(), first), Status: f.Diff.Status, Content: f.Content, Text: f.Text}
		// One pass over the hunks into slices of the right size (Added and
		// Removed would each build a list of their own first).
		if added, removed := f.Diff.Stats(); added+removed > 0 {
			rf.Added, rf.Removed = make([]rules.Line, 0, added), make([]rules.Line, 0, removed)
		}
		for _, h := range f.Diff.Hunks {
			for _, l := range h.Lines {
				switch l.Kind {
				case '+':
					rf.Added = append(rf.Added, rules.Line{No: l.NewNo, Text: l.Text})
				case '-':
					rf.Removed = append(rf.Removed, rules.Line{No: l.OldNo, Text: l.Text})
				}
			}
		}
		if len(rf.Added) == 0 {
			rf.Added = nil
		}
		if len(rf.Removed) == 0 {
			rf.Removed = nil
		}
		f.rule = rf
	})
	return f.rule
}

// RuleFiles is Rules of every file, in order.
func RuleFiles(files []*ChangedFile) []*rules.File {
	out := make([]*rules.File, len(files))
	for i, f := range files {
		out[i] = f.Rules()
	}
	return out
}

// ProfileRequest asks a provider to review the change as one profile.
type ProfileRequest struct {
	Profile qa.Profile
	Route   qa.ReviewRoute
	Change  *Change
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
	// Dropped counts candidates the provider discarded, by reason (a
	// model answer's candidates that fail its schema, for example); the
	// engine records them with its own drops.
	Dropped  map[string]int
	Attempts int
	// AttemptLog is the per-attempt record for execution_metrics.
	AttemptLog []qa.ExecutionAttempt
	// CachedInputTokens counts prompt tokens served from a cache.
	CachedInputTokens *int64
	// InputTokens/OutputTokens are nil for providers without tokens.
	InputTokens, OutputTokens *int64
	Started, Completed        time.Time
	// Inspection is what the provider saw the reviewer do while it
	// answered (agent providers over ACP); nil when it cannot observe.
	Inspection *Inspection
	// Notes are facts about how the answer was obtained (a pool's failed
	// members, for example) for the review's audit.
	Notes []string
}

// ErrNotInspected is the failure of a review whose configuration requires
// observed inspection of the diff (inspection.required) when the provider
// showed none; the CLI maps it to exit 3, as a provider failure.
var ErrNotInspected = errors.New("the provider showed no inspection of the diff")

// Inspection is what an agent was observed doing while it reviewed: the
// tool calls it reported, the files it read through diffpal, and what
// diffpal refused it. Paths are repository-relative (slash-separated);
// anything outside the repository is named "(outside the repository)".
type Inspection struct {
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// Reads are the files served to the agent (fs/read_text_file).
	Reads []string `json:"reads,omitempty"`
	// Refused are the requests refused: writes, terminals, paths outside
	// the repository, permission requests (answered reject).
	Refused []string `json:"refused,omitempty"`
}

// ToolCall is one tool call an agent reported.
type ToolCall struct {
	ID     string   `json:"id,omitempty"`
	Kind   string   `json:"kind,omitempty"`
	Title  string   `json:"title"`
	Status string   `json:"status,omitempty"`
	Paths  []string `json:"paths,omitempty"`
	// Input is the call's raw input as text, clipped and redacted.
	Input string `json:"input,omitempty"`
}

// Label is how the bundle lists the call: "kind: title".
func (t ToolCall) Label() string {
	if t.Kind == "" {
		return t.Title
	}
	return t.Kind + ": " + t.Title
}

// MaxInspectionItems bounds each list of a merged Inspection.
const MaxInspectionItems = 500

// Merge adds o's observations to in (nil-safe on o) and returns in, or a
// new Inspection when in is nil and o is not.
func (in *Inspection) Merge(o *Inspection) *Inspection {
	if o == nil {
		return in
	}
	if in == nil {
		in = &Inspection{}
	}
	for _, t := range o.ToolCalls {
		if len(in.ToolCalls) < MaxInspectionItems {
			in.ToolCalls = append(in.ToolCalls, t)
		}
	}
	add := func(list *[]string, xs []string) {
		for _, x := range xs {
			if len(*list) < MaxInspectionItems && !slices.Contains(*list, x) {
				*list = append(*list, x)
			}
		}
	}
	add(&in.Reads, o.Reads)
	add(&in.Refused, o.Refused)
	return in
}

// Labels are the tool calls' labels, each once, in order.
func (in *Inspection) Labels() []string {
	if in == nil {
		return nil
	}
	var out []string
	for _, t := range in.ToolCalls {
		if l := t.Label(); !slices.Contains(out, l) {
			out = append(out, l)
		}
	}
	return out
}

// Inspected says what the observations show: diff is set when the agent
// read a changed file, a tool call touched or named one, or a tool call
// ran git diff/show/log; context when it read or touched any other file
// of the repository, or searched it.
func (in *Inspection) Inspected(changed []string) (diff, context bool) {
	if in == nil {
		return false, false
	}
	isChanged := func(p string) bool { return slices.Contains(changed, p) }
	for _, p := range in.Reads {
		if isChanged(p) {
			diff = true
		} else if p != OutsideRepo {
			context = true
		}
	}
	for _, t := range in.ToolCalls {
		for _, p := range t.Paths {
			if isChanged(p) {
				diff = true
			} else if p != OutsideRepo {
				context = true
			}
		}
		text := t.Title + "\n" + t.Input
		if gitDiffRe(text) {
			diff = true
		}
		for _, c := range changed {
			if strings.Contains(text, c) {
				diff = true
			}
		}
		if t.Kind == "search" {
			context = true
		}
	}
	return diff, context
}

// OutsideRepo stands for a path outside the repository in an Inspection.
const OutsideRepo = "(outside the repository)"

// gitDiffRe reports whether s runs a git command that shows the change.
func gitDiffRe(s string) bool {
	f := strings.Fields(s)
	for i := 0; i+1 < len(f); i++ {
		if strings.HasSuffix(f[i], "git") {
			switch f[i+1] {
			case "diff", "show", "log":
				return true
			}
		}
	}
	return false
}

// Candidate is one possible finding a provider reports for a profile.
// The engine decides what becomes of it (anchoring, suppression,
// baseline, synthesis, verification).
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
	// OldLine, when set, is the removed line the candidate is about (the
	// finding then sits on the LEFT side unless StartLine is a changed
	// line of the new side).
	OldLine int `json:"old_line,omitempty"`
	// SupportStart..SupportEnd, when set, are new-side lines that support
	// the finding: where the value reaching a sink was built (the
	// finding's supporting_span).
	SupportStart int    `json:"support_start,omitempty"`
	SupportEnd   int    `json:"support_end,omitempty"`
	Source       string `json:"source"`
	Snippet      string `json:"snippet"`
	Anchor       string `json:"anchor"`
	// RuleProfile is the profile whose checklist produced the candidate.
	RuleProfile string `json:"rule_profile"`
	// EvidenceRefs are the packet refs the provider cites; refs not in the
	// packet are dropped, and when none remain the engine cites the items
	// covering the anchored lines.
	EvidenceRefs []string `json:"evidence_refs,omitempty"`
}

// Verdict is a verifier's decision on one candidate.
type Verdict struct {
	Index        int      // into the candidates passed in
	Verdict      string   // confirmed, rejected or unverified
	Rationale    string   //
	EvidenceRefs []string // packet refs the verdict rests on
}

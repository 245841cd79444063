package qa

import "slices"

// Section names used in profile routes. A profile may submit finding
// candidates only when its required sections include SectionFindingCandidates.
const (
	SectionScope             = "Scope"
	SectionEvidenceMap       = "Evidence Map"
	SectionFindingCandidates = "Finding Candidates"
	SectionCoverageGaps      = "Coverage Gaps"
	SectionUnverified        = "Unverified"
)

type profileDef struct {
	display    string
	focus      string
	sections   []string
	escalation []string
}

func reviewerSections() []string {
	return []string{SectionScope, SectionFindingCandidates, SectionCoverageGaps, SectionUnverified}
}

// profileDefs is a function rather than a package variable so that no
// caller can mutate the catalog other callers see.
func profileDefs() map[Profile]profileDef {
	return map[Profile]profileDef{
		ProfileCodeExplorer: {
			display: "Faraday — Evidence Investigator",
			focus: "Trace the execution path, callers, dependencies, data flow and boundaries touched by the change. " +
				"Return evidence references and open links only; do not diagnose defects and do not restate the diff.",
			sections: []string{SectionScope, SectionEvidenceMap, SectionUnverified},
			escalation: []string{
				"A boundary the change relies on could not be traced to its implementation.",
				"The change reaches another repository, service or system whose behaviour is not in the packet.",
			},
		},
		ProfileCodeReviewer: {
			display: "Code Reviewer",
			focus: "Find concrete failure modes and contract breaks on the changed surface. " +
				"Build on the evidence map without repeating it.",
			sections: reviewerSections(),
			escalation: []string{
				"Several plausible causes remain for a suspected failure.",
				"A changed failure path has no observable check.",
			},
		},
		ProfilePRTestAnalyzer: {
			display: "Test Analyzer",
			focus: "Assess happy-path, negative, edge-case, integration and assertion coverage of the changed behaviour. " +
				"Report test gaps only, not defects.",
			sections: []string{SectionScope, SectionCoverageGaps, SectionUnverified},
			escalation: []string{
				"Changed behaviour on a sensitive path has no test that would fail if it broke.",
				"Tests exercise a mock where the real integration boundary changed.",
			},
		},
		ProfileSecurityReviewer: {
			display: "Security Reviewer",
			focus: "Check authentication and authorization, input validation, secrets handling, sensitive-data exposure, " +
				"dependencies, payments, webhooks, privacy and access control on the changed surface.",
			sections: reviewerSections(),
			escalation: []string{
				"A trust boundary or permission check changed and its enforcement point is outside the packet.",
				"Sensitive data may reach a log, response or third party.",
				"Authoritative sources disagree about who may perform an action.",
			},
		},
		ProfileSilentFailureHunter: {
			display: "Silent Failure Hunter",
			focus: "Hunt swallowed errors, risky fallbacks, lost error propagation, timeouts, incomplete rollback " +
				"and missing observability.",
			sections: reviewerSections(),
			escalation: []string{
				"An error is converted into success or an empty result on a path with many consumers.",
				"A failure could not be reproduced and leaves no log or metric.",
			},
		},
		ProfileTypeScriptReviewer: {
			display:  "TypeScript Reviewer",
			focus:    "Check types, async and error contracts, narrowing and unsafe casts.",
			sections: reviewerSections(),
			escalation: []string{
				"A public type or serialized shape changed and its consumers are outside the packet.",
				"An unsafe cast hides a runtime shape that the evidence does not confirm.",
			},
		},
		ProfileReactReviewer: {
			display:  "React Reviewer",
			focus:    "Check state, rendering branches, effects, accessibility and user-visible behaviour.",
			sections: reviewerSections(),
			escalation: []string{
				"Effect ordering or stale state depends on runtime timing the evidence cannot show.",
				"A shared component changed and its other call sites are not in the packet.",
			},
		},
		ProfileRubyReviewer: {
			display: "Ruby Reviewer",
			focus: "Check nil/false truthiness, block and enumerator return values, bang methods that return nil, " +
				"rescue/ensure and cleanup; pick ActiveRecord or Sequel semantics from repository evidence; check " +
				"Sidekiq retry, idempotency and concurrency when present; follow the repository's RSpec or Minitest style.",
			sections: reviewerSections(),
			escalation: []string{
				"A background job may run twice or concurrently with side effects.",
				"Query semantics depend on an ORM the evidence does not identify.",
			},
		},
		ProfilePythonReviewer: {
			display: "Python Reviewer",
			focus: "Check None/truthiness, exception boundaries, async cancellation and timeouts, cleanup, mutable " +
				"defaults, validation and serialization; check MCP tool schemas, error mapping and credentials when present.",
			sections: reviewerSections(),
			escalation: []string{
				"Cancellation or timeout handling crosses a process or service boundary.",
				"An exception is mapped to a success result on a tool or API surface.",
			},
		},
		ProfileMobileReviewer: {
			display: "Mobile Reviewer",
			focus: "Check lifecycle, navigation and deep links, permissions, bridge/WebView/native modules, " +
				"background and resume, storage, notifications and platform build configuration. Make no device " +
				"claims from JavaScript tests alone.",
			sections: reviewerSections(),
			escalation: []string{
				"A native change is backed only by JavaScript evidence.",
				"Permission or background state may be stale after resume.",
			},
		},
	}
}

// sharedConstraints is returned on every route.
func sharedConstraints() []string {
	return []string{
		"Use only evidence the host gathered.",
		"Cite stable Evidence Packet references for every finding candidate.",
		"Keep possible defects apart from coverage gaps; confirmation and final decisions belong to the host.",
		"Do not decide severity, priority, root cause, or release or merge readiness.",
		"Perform no external writes.",
	}
}

type bundleDef struct {
	profiles  []Profile
	whenToUse string
}

func bundleDefs() map[Bundle]bundleDef {
	return map[Bundle]bundleDef{
		BundleOrdinaryMR: {[]Profile{ProfileCodeExplorer, ProfileCodeReviewer, ProfilePRTestAnalyzer},
			"Broad non-TypeScript change, including broad non-TypeScript automation."},
		BundleWidget: {[]Profile{ProfileCodeExplorer, ProfileReactReviewer, ProfileTypeScriptReviewer, ProfilePRTestAnalyzer},
			"Broad TypeScript and React widget change."},
		BundleWidgetJS: {[]Profile{ProfileCodeExplorer, ProfileCodeReviewer, ProfileReactReviewer, ProfilePRTestAnalyzer},
			"Broad JavaScript React change."},
		BundleRubyBackend: {[]Profile{ProfileCodeExplorer, ProfileRubyReviewer, ProfilePRTestAnalyzer},
			"Broad Ruby backend change."},
		BundlePythonBackend: {[]Profile{ProfileCodeExplorer, ProfilePythonReviewer, ProfilePRTestAnalyzer},
			"Broad Python or MCP service change."},
		BundleMobile: {[]Profile{ProfileCodeExplorer, ProfileMobileReviewer, ProfilePRTestAnalyzer},
			"Broad React Native or native iOS/Android change."},
		BundleSecurity: {[]Profile{ProfileCodeExplorer, ProfileSecurityReviewer, ProfileSilentFailureHunter},
			"Change whose main risk is security or silent failure."},
		BundleAutotest: {[]Profile{ProfileCodeReviewer, ProfilePRTestAnalyzer, ProfileTypeScriptReviewer},
			"Broad TypeScript test automation."},
		BundleRequirements: {[]Profile{ProfileCodeExplorer, ProfileCodeReviewer},
			"Epics, requirements and QA planning."},
	}
}

// BundleProfiles returns the fixed, ordered profiles of b (nil if unknown).
func BundleProfiles(b Bundle) []Profile { return slices.Clone(bundleDefs()[b].profiles) }

// RecommendedBundles returns the task type's bundle shortlist. It is a hint,
// never a restriction: every bundle stays selectable.
func RecommendedBundles(t TaskType) []Bundle {
	switch t {
	case TaskOrdinaryReview:
		return []Bundle{BundleOrdinaryMR}
	case TaskWidgetReview:
		return []Bundle{BundleWidget, BundleWidgetJS}
	case TaskEpicAnalysis, TaskRequirementsAnalysis, TaskQAPlanning:
		return []Bundle{BundleRequirements}
	case TaskAutotestImplementation:
		return []Bundle{BundleAutotest, BundleOrdinaryMR}
	}
	return []Bundle{}
}

// allowsCandidates reports whether p's required sections include finding
// candidates; the explorer maps evidence and the test analyzer reports gaps.
func allowsCandidates(p Profile) bool {
	return slices.Contains(profileDefs()[p].sections, SectionFindingCandidates)
}

// PrepareInput is the input of prepare_qa_orchestration.
type PrepareInput struct {
	AgentProfile Profile `json:"agent_profile" jsonschema:"Specialist profile whose fixed checklist to return; during primary_review pass the session's current_profile."`
}

// ReviewRoute is one profile's fixed checklist (prepare output).
type ReviewRoute struct {
	Profile           Profile  `json:"profile" jsonschema:"Profile id."`
	DisplayName       string   `json:"display_name" jsonschema:"Fixed display name."`
	Focus             string   `json:"focus" jsonschema:"The profile's review boundary."`
	RequiredSections  []string `json:"required_sections" jsonschema:"Sections the profile's report must contain."`
	Constraints       []string `json:"constraints" jsonschema:"Constraints shared by every profile."`
	EscalationSignals []string `json:"escalation_signals" jsonschema:"Conditions for the host to assess; they are not deep-review triggers by themselves."`
	ReadOnly          bool     `json:"read_only" jsonschema:"Always true: the review is read-only."`
	HostOwnsDecisions bool     `json:"host_owns_decisions" jsonschema:"Always true: the host owns every decision."`
}

// Prepare returns the fixed route of one profile.
func Prepare(in PrepareInput) (ReviewRoute, error) {
	def, ok := profileDefs()[in.AgentProfile]
	if !ok {
		return ReviewRoute{}, errCode(CodeUnknownProfile)
	}
	return ReviewRoute{
		Profile:           in.AgentProfile,
		DisplayName:       def.display,
		Focus:             def.focus,
		RequiredSections:  slices.Clone(def.sections),
		Constraints:       sharedConstraints(),
		EscalationSignals: slices.Clone(def.escalation),
		ReadOnly:          true,
		HostOwnsDecisions: true,
	}, nil
}

// CatalogProfile is one profile entry of the catalog.
type CatalogProfile struct {
	Profile          Profile  `json:"profile"`
	DisplayName      string   `json:"display_name"`
	Focus            string   `json:"focus"`
	RequiredSections []string `json:"required_sections"`
	AllowsCandidates bool     `json:"allows_finding_candidates"`
}

// CatalogBundle is one bundle entry of the catalog.
type CatalogBundle struct {
	Bundle    Bundle    `json:"bundle"`
	WhenToUse string    `json:"when_to_use"`
	Profiles  []Profile `json:"profiles"`
}

// Catalog is the output of get_qa_orchestration_catalog. It is constant: it
// depends on no session and no model policy.
type Catalog struct {
	Profiles                     []CatalogProfile      `json:"profiles"`
	Bundles                      []CatalogBundle       `json:"bundles"`
	RecommendedBundlesByTaskType map[TaskType][]Bundle `json:"recommended_bundles_by_task_type"`
	ProfileHintRules             []HintRule            `json:"profile_hint_rules"`
	ReadOnly                     bool                  `json:"read_only"`
	HostOwnsDecisions            bool                  `json:"host_owns_decisions"`
}

// GetCatalog returns the catalog.
func GetCatalog() Catalog {
	defs := profileDefs()
	c := Catalog{
		RecommendedBundlesByTaskType: map[TaskType][]Bundle{},
		ProfileHintRules:             HintRules(),
		ReadOnly:                     true,
		HostOwnsDecisions:            true,
	}
	for _, p := range Profiles() {
		d := defs[p]
		c.Profiles = append(c.Profiles, CatalogProfile{Profile: p, DisplayName: d.display, Focus: d.focus,
			RequiredSections: slices.Clone(d.sections), AllowsCandidates: allowsCandidates(p)})
	}
	bdefs := bundleDefs()
	for _, b := range Bundles() {
		c.Bundles = append(c.Bundles, CatalogBundle{Bundle: b, WhenToUse: bdefs[b].whenToUse,
			Profiles: slices.Clone(bdefs[b].profiles)})
	}
	for _, t := range TaskTypes() {
		c.RecommendedBundlesByTaskType[t] = RecommendedBundles(t)
	}
	return c
}

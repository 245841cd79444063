package qa

// ToolSpec is the adapter-facing metadata of one tool: title, description
// and MCP annotation hints. It lives here so every adapter publishes the
// same text and hints; the adapter maps it onto its SDK's types.
type ToolSpec struct {
	Name            string
	Title           string
	Description     string
	ReadOnlyHint    bool
	DestructiveHint bool // meaningful only when ReadOnlyHint is false
	IdempotentHint  bool
	OpenWorldHint   bool
}

// Tools returns the ten tools in a fixed order, with the anchor's
// annotation presets: READ_ONLY (prepare, catalog, model policy, get, list,
// export), STATE (start, advance), FINALIZE (finish), DELETE (delete).
func Tools() []ToolSpec {
	readOnly := func(name, title, desc string) ToolSpec {
		return ToolSpec{Name: name, Title: title, Description: desc, ReadOnlyHint: true, IdempotentHint: true}
	}
	return []ToolSpec{
		readOnly(ToolPrepare, "Read specialist review checklist",
			"Return one profile's fixed checklist: focus, required report sections, shared constraints and escalation signals. Stateless; during primary_review pass the session's current_profile."),
		readOnly(ToolCatalog, "Discover QA profiles and bundles",
			"List every profile, every bundle with its fixed profile order and when to use it, the task type to recommended bundle table, and the file-type hint rules behind recommended_profiles. Constant output."),
		readOnly(ToolModelPolicy, "Inspect server model settings",
			"Return the model policy loaded at server start (provider, per-step model and reasoning, and whether sessions hand out configured or host_default policies). Creates no session and contacts no provider."),
		{Name: ToolStart, Title: "Start QA session",
			Description: "Create a QA session at triage; optionally bind it to one immutable review input (review_context). Every call creates a new session. Sessions expire after the configured TTL (1800 s by default); capacity is 100 by default. Expired sessions are purged and retained terminal sessions may be evicted; if only an active session could make room, the call fails with session limit."},
		{Name: ToolAdvance, Title: "Record QA step result",
			Description: "Record the result of the current step: triage selects exactly one bundle or profile; each primary-review profile is completed in order (with a profile report on review-bound sessions and risk_signals on the last); deep review and synthesis follow. partial or blocked stops early. Supports expected_revision and request_id for safe retries."},
		readOnly(ToolGet, "Inspect one QA session",
			"Return one session by run_id. Reading never extends its TTL."),
		readOnly(ToolList, "List retained QA sessions",
			"List unexpired sessions, newest expiry first (ties by run_id, descending), a page at a time: limit sessions (default 100, at most 1000), then next_cursor to pass as cursor for the next page (null on the last). Never purges or writes."),
		{Name: ToolFinish, Title: "Record final QA outcome", IdempotentHint: true,
			Description: "Record the final outcome (completed, partial or blocked) after synthesis or an early stop. A completed review-bound outcome requires a final review report. Repeating the same outcome returns the session unchanged. A finished session is retained until it expires or is evicted, so export_qa_findings and a repeated finish keep working, unless the server is configured to remove sessions at finish."},
		{Name: ToolDelete, Title: "Discard QA session", DestructiveHint: true, IdempotentHint: true,
			Description: "Discard a session at any stage and free its capacity. Unknown and expired ids succeed too. Use only when the user asks to discard a session; it records no outcome."},
		readOnly(ToolExport, "Export QA findings",
			"Build a findings bundle (v3) from a review-bound session's recorded final review report: one finding per confirmed final finding with a source location; findings without a location are counted, never given one."),
	}
}

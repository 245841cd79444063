package mcpserver

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/diffpalhq/diffpal/internal/qa"
	"github.com/diffpalhq/diffpal/internal/qa/store"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// fakeClock is a settable clock shared by the orchestrator and the test.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{t: time.Date(2026, 10, 14, 9, 0, 0, 0, time.UTC)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// env is one server with a connected SDK client over in-memory transports.
type env struct {
	t     *testing.T
	cs    *mcp.ClientSession
	clock *fakeClock
	store store.Store
	orch  *qa.Orchestrator
}

type envOptions struct {
	cfg     func(*qa.Config)
	server  Options
	storeFn func() store.Store
	// middleware, when set, is added to the server's receiving middleware.
	middleware mcp.Middleware
}

func newEnv(t *testing.T, eo envOptions) *env {
	t.Helper()
	clk := newFakeClock()
	st := store.Store(store.NewMemory())
	if eo.storeFn != nil {
		st = eo.storeFn()
	}
	cfg := qa.Config{Store: st, Clock: clk.Now, Random: rand.NewChaCha8([32]byte{7})}
	if eo.cfg != nil {
		eo.cfg(&cfg)
	}
	orch, err := qa.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := New(orch, eo.server)
	if err != nil {
		t.Fatal(err)
	}
	if eo.middleware != nil {
		srv.AddReceivingMiddleware(eo.middleware)
	}
	return &env{t: t, cs: connect(t, srv), clock: clk, store: st, orch: orch}
}

func connect(t testing.TB, srv *mcp.Server) *mcp.ClientSession {
	t.Helper()
	ctx := context.Background()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "diffpal-test", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cs.Close()
		ss.Wait()
	})
	return cs
}

// call runs a tool; protocol errors fail the test, tool errors do not.
func (e *env) call(name string, args any) *mcp.CallToolResult {
	e.t.Helper()
	return callTool(e.t, e.cs, name, args)
}

func callTool(t *testing.T, cs *mcp.ClientSession, name string, args any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: protocol error: %v", name, err)
	}
	return res
}

func resultText(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// ok calls a tool that must succeed and decodes its structured content into
// out (which may be nil). It also checks that the text content carries the
// same JSON, for hosts that read only text.
func (e *env) ok(name string, args, out any) json.RawMessage {
	e.t.Helper()
	return mustOK(e.t, e.call(name, args), name, out)
}

func mustOK(t *testing.T, res *mcp.CallToolResult, name string, out any) json.RawMessage {
	t.Helper()
	if res.IsError {
		t.Fatalf("%s: tool error: %s", name, resultText(res))
	}
	if res.StructuredContent == nil {
		t.Fatalf("%s: no structured content", name)
	}
	raw, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	if !jsonSame(t, raw, []byte(resultText(res))) {
		t.Fatalf("%s: text content differs from structured content", name)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("%s: decode: %v\n%s", name, err, raw)
		}
	}
	return raw
}

// fail calls a tool that must fail with a tool error starting with prefix.
func (e *env) fail(name string, args any, prefix string) string {
	e.t.Helper()
	res := e.call(name, args)
	txt := resultText(res)
	if !res.IsError {
		e.t.Fatalf("%s: succeeded, want tool error %q", name, prefix)
	}
	if !strings.HasPrefix(txt, prefix) {
		e.t.Fatalf("%s: error %q, want prefix %q", name, txt, prefix)
	}
	if res.StructuredContent != nil {
		e.t.Fatalf("%s: tool error carries structured content", name)
	}
	return txt
}

func jsonSame(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatalf("bad JSON %q: %v", a, err)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatalf("bad JSON %q: %v", b, err)
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return string(xa) == string(ya)
}

func ptr[T any](v T) *T { return &v }

const (
	headSHA   = "0123456789abcdef0123456789abcdef01234567"
	baseSHA   = "89abcdef0123456789abcdef0123456789abcdef"
	diffSHA   = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	packetSHA = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
	itemSHA   = "cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc"
)

// reviewContext is a review-bound start input: two changed files, three
// evidence refs with a complete registry, one review rule.
func reviewContext() *qa.ReviewContextInput {
	reg := func(ref string, kind qa.EvidenceKind, path string, start, end int) qa.RegistryEntry {
		return qa.RegistryEntry{EvidenceRef: ref, Kind: kind, SHA256: itemSHA, Path: ptr(path),
			Revision: ptr(headSHA), StartLine: ptr(start), EndLine: ptr(end)}
	}
	return &qa.ReviewContextInput{
		Repository: "github.com/acme/shop", BaseSHA: strings.ToUpper(baseSHA), HeadSHA: headSHA,
		DiffSHA256: diffSHA, EvidencePacketSHA256: packetSHA,
		ChangedFiles: []string{"src/auth/login.ts", "src/cart.tsx"},
		EvidenceRefs: []string{"E1", "E2", "diff:src/cart.tsx:h1"},
		EvidenceRegistry: []qa.RegistryEntry{
			reg("E1", qa.EvidenceSource, "src/auth/login.ts", 1, 40),
			reg("E2", qa.EvidenceSource, "src/cart.tsx", 1, 80),
			reg("diff:src/cart.tsx:h1", qa.EvidenceDiff, "src/cart.tsx", 10, 14),
		},
		ReviewRules: &qa.ReviewRules{SchemaVersion: ptr(1), Rules: []qa.ReviewRule{{
			RuleID: "auth-001", Kind: qa.RuleKindRaise, Paths: []string{"src/auth/**"},
			Condition: "a login path skips the rate limiter", Text: "every login path goes through the rate limiter",
			Rationale: "credential stuffing"}}},
	}
}

// profileReport is a valid report for p; profiles with a Finding
// Candidates section get the given candidates.
func profileReport(p qa.Profile, rulesHash *string, cands ...qa.ProfileCandidate) *qa.ProfileReport {
	return &qa.ProfileReport{Profile: p, Scope: "reviewed the login and cart changes as " + string(p),
		EvidenceMap:       []qa.EvidenceMapEntry{{EvidenceRef: "E1", Description: "login handler entry point"}},
		CoverageGaps:      []qa.RefNote{{Text: "no integration test for the cart", EvidenceRefs: []string{"E2"}}},
		FindingCandidates: cands, ReviewRulesSHA256: rulesHash}
}

func candidate(id, title string, loc bool) qa.ProfileCandidate {
	c := qa.ProfileCandidate{CandidateID: id, Title: title, Description: title + ": details",
		Confidence: qa.ConfidenceHigh, VerificationGap: "not executed", EvidenceRefs: []string{"E2", "diff:src/cart.tsx:h1"},
		Impact: ptr("checkout fails for an empty cart"), FailureCondition: ptr("the cart has no items")}
	if loc {
		c.SourceLocations = []qa.SourceLocation{{Path: "src/cart.tsx", StartLine: 10, EndLine: ptr(12)}}
	}
	return c
}

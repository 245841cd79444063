// Command mcp benchmarks `diffpal mcp` through the official MCP Go SDK
// client, the way a host drives it. It is run by bench/mcp.sh:
//
//	go run ./bench/mcp -bin bench/.out/diffpal [-flows 200] [-ratio-samples 1000] [-sessions 10000]
//
// It measures, against the real binary:
//
//   - stdio (the binary spawned as `diffpal mcp`) and HTTP (`diffpal mcp
//     --http 127.0.0.1:0 --token-env ...`, bearer token on every request):
//     -flows complete review-bound session flows, one after another on one
//     connection (start with review_context, triage, three profile reports,
//     risk signals, synthesis with a final report, finish, export), giving
//     calls per second and p50/p99 latency per tool;
//   - in the flows, right after each start, advance and get, bench_echo (a
//     tool only binaries built with -tags diffpal_bench_echo have;
//     bench/mcp.sh builds one) sent the call's own arguments and handing
//     back the call's own answer (kept on the server by an untimed call
//     first): the floor those tools are compared with (ratio of p50 and of
//     p99). Flat strings of the same sizes in and out are timed alongside,
//     for comparison;
//   - on the same connection, the round trip of a review-bound
//     start_qa_orchestration against an MCP ping (p50 and mean), once on
//     an empty store and once after the flows (the finished sessions stay
//     retained, as in a real server);
//   - memory: a stdio server with --max-sessions N holding N review-bound
//     sessions; growth of its VmRSS (/proc/PID/status) from before to after,
//     divided by N, after letting the garbage collector settle: the server
//     idles for -settle (default 125 s; the Go runtime forces a collection
//     after 2 minutes without one). The server runs with GODEBUG=gctrace=1
//     so the live heap after that last collection is reported too; it
//     excludes garbage and the collector's headroom, which RSS includes.
//     With the N sessions retained it also times start (p50 of the first
//     and of the last 1000) and list_qa_orchestrations: the default page
//     (100 sessions; p50 of 50 calls) and a walk of every session in
//     pages of 1000 following next_cursor (p50 of 10 walks). A server
//     without pages answers the whole list to the first call, so both
//     figures are then the full list.
//
// Everything is loopback-only and bounded: the loops have fixed counts, the
// whole run has a deadline, and the servers are stopped at the end. The
// result is Markdown on stdout; progress goes to stderr.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/diffpalhq/diffpal/internal/qa"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type config struct {
	bin          string
	flows        int
	ratioSamples int
	sessions     int
	files        int
	refs         int
	memGOGC      string
	settle       time.Duration
	deadline     time.Duration
	skip         map[string]bool
	cpuProfile   string
}

func main() {
	var cfg config
	var skip string
	flag.StringVar(&cfg.bin, "bin", "bench/.out/diffpal", "diffpal binary to benchmark")
	flag.IntVar(&cfg.flows, "flows", 200, "complete review-bound flows per transport")
	flag.IntVar(&cfg.ratioSamples, "ratio-samples", 1000, "start/ping pairs per ratio measurement")
	flag.IntVar(&cfg.sessions, "sessions", 10000, "retained sessions for the memory measurement (also --max-sessions)")
	flag.IntVar(&cfg.files, "files", 12, "changed files in the review_context")
	flag.IntVar(&cfg.refs, "refs", 36, "evidence refs (with a full registry) in the review_context")
	flag.StringVar(&cfg.memGOGC, "mem-gogc", "", "GOGC of the memory-phase server (empty: the Go default)")
	flag.DurationVar(&cfg.settle, "settle", 125*time.Second,
		"idle time before the final RSS reading; the Go runtime forces a GC after 2 minutes without one")
	flag.DurationVar(&cfg.deadline, "deadline", 30*time.Minute, "stop everything after this long")
	flag.StringVar(&protocolVersion, "protocol", protocolVersion, "MCP protocol version the client requests")
	flag.StringVar(&skip, "skip", "", "comma-separated phases to skip: stdio, http, memory")
	// The client's share of a round trip (encoding the arguments, decoding
	// the result) is in every figure; this profiles it. The server has
	// DIFFPAL_CPUPROFILE for its side.
	flag.StringVar(&cfg.cpuProfile, "cpuprofile", "", "write a CPU profile of this client process to the file")
	flag.Parse()
	cfg.skip = map[string]bool{}
	for _, s := range strings.Split(skip, ",") {
		if s = strings.TrimSpace(s); s != "" {
			cfg.skip[s] = true
		}
	}
	if cfg.flows < 1 || cfg.ratioSamples < 1 || cfg.sessions < 1 || cfg.files < 1 || cfg.refs < cfg.files || cfg.refs > 1000 || cfg.files > 500 {
		fail(errors.New("want -flows, -ratio-samples, -sessions >= 1 and 1 <= -files <= -refs <= 1000, -files <= 500"))
	}
	ctx, cancel := context.WithTimeout(context.Background(), cfg.deadline)
	defer cancel()
	if cfg.cpuProfile != "" {
		f, err := os.Create(cfg.cpuProfile)
		if err != nil {
			fail(err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			fail(err)
		}
	}
	err := run(ctx, cfg)
	if cfg.cpuProfile != "" {
		pprof.StopCPUProfile()
	}
	if err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "bench/mcp:", err)
	os.Exit(1)
}

func logf(format string, args ...any) { fmt.Fprintf(os.Stderr, format+"\n", args...) }

// ---- workload ---------------------------------------------------------------

func hex64(i int) string { return fmt.Sprintf("%064x", i) }

const (
	baseSHA = "1f0e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c"
	headSHA = "a1b2c3d4e5f60718293a4b5c6d7e8f9001122334"
)

// reviewContext builds a review_context shaped like `diffpal context`
// output: per changed file a diff hunk and a source window, each with a
// registry entry, plus two repository review rules.
func reviewContext(files, refs int) *qa.ReviewContextInput {
	rc := &qa.ReviewContextInput{Repository: "github.com/acme/shop", BaseSHA: baseSHA, HeadSHA: headSHA,
		DiffSHA256: hex64(0xd1ff), EvidencePacketSHA256: hex64(0xbacc)}
	for i := range files {
		rc.ChangedFiles = append(rc.ChangedFiles, fmt.Sprintf("services/checkout/internal/cart/handler_%02d.go", i))
	}
	for i := range refs {
		f := i % files
		n := i/files + 1
		kind, ref := qa.EvidenceDiff, fmt.Sprintf("f%d:h%d", f+1, n)
		if n%2 == 0 {
			kind, ref = qa.EvidenceSource, fmt.Sprintf("f%d:w%d", f+1, n)
		}
		path, rev := rc.ChangedFiles[f], headSHA
		start, end := 40*n+1, 40*n+28
		rc.EvidenceRefs = append(rc.EvidenceRefs, ref)
		rc.EvidenceRegistry = append(rc.EvidenceRegistry, qa.RegistryEntry{EvidenceRef: ref, Kind: kind,
			SHA256: hex64(0x1000 + i), Path: &path, Revision: &rev, StartLine: &start, EndLine: &end})
	}
	one := 1
	rc.ReviewRules = &qa.ReviewRules{SchemaVersion: &one, Rules: []qa.ReviewRule{
		{RuleID: "cart-001", Kind: qa.RuleKindRaise, Paths: []string{"services/checkout/**"},
			Condition: "a cart total is computed without the currency's rounding mode",
			Text:      "cart totals use the currency's rounding mode", Rationale: "off-by-one-cent disputes"},
		{RuleID: "cart-002", Kind: qa.RuleKindGuard, Paths: []string{"**/*_test.go"},
			Condition: "the code is a test helper", Text: "do not report style in test helpers",
			Rationale: "noise"},
	}}
	return rc
}

func ptr[T any](v T) *T { return &v }

func profileReport(p qa.Profile, rc *qa.ReviewContextInput, hash *string, cands []qa.ProfileCandidate) *qa.ProfileReport {
	return &qa.ProfileReport{Profile: p, Scope: "reviewed the cart handlers as " + string(p),
		EvidenceMap: []qa.EvidenceMapEntry{{EvidenceRef: rc.EvidenceRefs[0], Description: "cart total entry point"},
			{EvidenceRef: rc.EvidenceRefs[1], Description: "rounding helper"}},
		CoverageGaps:      []qa.RefNote{{Text: "no test for an empty cart", EvidenceRefs: []string{rc.EvidenceRefs[0]}}},
		FindingCandidates: cands, ReviewRulesSHA256: hash}
}

func candidate(id, title string, rc *qa.ReviewContextInput, line int) qa.ProfileCandidate {
	return qa.ProfileCandidate{CandidateID: id, Title: title, Description: title + ": the total is computed before the discount is rounded",
		Confidence: qa.ConfidenceHigh, VerificationGap: "not executed", EvidenceRefs: []string{rc.EvidenceRefs[0], rc.EvidenceRefs[1]},
		Impact: ptr("customers are charged one cent too much"), FailureCondition: ptr("a discount with a fractional cent"),
		SourceLocations: []qa.SourceLocation{{Path: rc.ChangedFiles[0], StartLine: line, EndLine: ptr(line + 2)}}}
}

// ---- measuring ------------------------------------------------------------

type recorder struct {
	mu  sync.Mutex
	lat map[string][]time.Duration
	// argBytes and resBytes: JSON size of each call's arguments and
	// structured result.
	argBytes, resBytes map[string][]int
	// same and flat: the paired echoes of each call of echoTools (pairedEcho).
	same, flat map[string][]time.Duration
}

func newRecorder() *recorder {
	return &recorder{lat: map[string][]time.Duration{}, argBytes: map[string][]int{}, resBytes: map[string][]int{},
		same: map[string][]time.Duration{}, flat: map[string][]time.Duration{}}
}

func (r *recorder) add(name string, d time.Duration) {
	r.mu.Lock()
	r.lat[name] = append(r.lat[name], d)
	r.mu.Unlock()
}

func (r *recorder) sizes(name string, arg, res int) {
	r.mu.Lock()
	r.argBytes[name] = append(r.argBytes[name], arg)
	r.resBytes[name] = append(r.resBytes[name], res)
	r.mu.Unlock()
}

func (r *recorder) echoes(name string, same, flat time.Duration) {
	r.mu.Lock()
	r.same[name] = append(r.same[name], same)
	r.flat[name] = append(r.flat[name], flat)
	r.mu.Unlock()
}

func medianInt(v []int) int {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	return s[(len(s)-1)/2]
}

func (r *recorder) total() int {
	n := 0
	for _, v := range r.lat {
		n += len(v)
	}
	return n
}

func quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(math.Ceil(q*float64(len(s)))) - 1
	return s[max(0, min(i, len(s)-1))]
}

func mean(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	var t time.Duration
	for _, d := range ds {
		t += d
	}
	return t / time.Duration(len(ds))
}

func ms(d time.Duration) string { return fmt.Sprintf("%.3f", float64(d)/float64(time.Millisecond)) }

// call runs one tool, records its round trip and decodes the structured
// content into out (nil to skip). Tool errors are benchmark failures.
func call(ctx context.Context, cs *mcp.ClientSession, rec *recorder, name string, args, out any) error {
	t0 := time.Now()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	d := time.Since(t0)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if res.IsError {
		var b strings.Builder
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				b.WriteString(tc.Text)
			}
		}
		return fmt.Errorf("%s: tool error: %s", name, b.String())
	}
	if rec != nil {
		rec.add(name, d)
	}
	if out != nil || rec != nil {
		raw, err := json.Marshal(res.StructuredContent)
		if err != nil {
			return err
		}
		if rec != nil {
			a, _ := json.Marshal(args)
			rec.sizes(name, len(a), len(raw))
			if slices.Contains(echoTools, name) {
				same, flat, err := pairedEcho(ctx, cs, name, args, len(a), res.StructuredContent, len(raw))
				if err != nil {
					return err
				}
				rec.echoes(name, same, flat)
			}
		}
		if out == nil {
			return nil
		}
		if err := json.Unmarshal(raw, out); err != nil {
			return fmt.Errorf("%s: decode: %w", name, err)
		}
	}
	return nil
}

// flow runs one complete review-bound session the way a careful host does:
// every write conditional on the last revision and carrying a request_id.
func flow(ctx context.Context, cs *mcp.ClientSession, rec *recorder, rc *qa.ReviewContextInput, n int) error {
	var s qa.Session
	if err := call(ctx, cs, rec, qa.ToolStart, qa.StartInput{TaskType: qa.TaskOrdinaryReview, ReviewContext: rc}, &s); err != nil {
		return err
	}
	hash := s.ReviewContext.ReviewRulesSHA256
	step := 0
	advance := func(in qa.AdvanceInput) error {
		step++
		in.RunID, in.ExpectedRevision, in.RequestID = s.RunID, ptr(s.Revision), ptr(fmt.Sprintf("flow-%d:%d", n, step))
		return call(ctx, cs, rec, qa.ToolAdvance, in, &s)
	}
	if err := advance(qa.AdvanceInput{CompletedStep: qa.StepTriage, Status: qa.OutcomeCompleted,
		SelectedBundle: ptr(qa.BundleOrdinaryMR)}); err != nil {
		return err
	}
	cands := map[qa.Profile][]qa.ProfileCandidate{qa.ProfileCodeReviewer: {
		candidate("F-01", "discount rounding charges an extra cent", rc, 41),
		candidate("F-02", "empty cart total is nil", rc, 88),
	}}
	for i, p := range s.ReviewProfiles {
		in := qa.AdvanceInput{CompletedStep: qa.StepPrimaryReview, Status: qa.OutcomeCompleted, CompletedProfile: ptr(p),
			ProfileReport: profileReport(p, rc, hash, cands[p])}
		if i == len(s.ReviewProfiles)-1 {
			in.RiskSignals = &qa.RiskSignals{}
		}
		if err := advance(in); err != nil {
			return err
		}
	}
	c := cands[qa.ProfileCodeReviewer][0]
	src := qa.CandidateRef{Profile: qa.ProfileCodeReviewer, CandidateID: "F-01"}
	fr := &qa.FinalReviewReport{Summary: "- Cart totals now apply discounts before rounding", ProfilesReviewed: slices.Clone(s.CompletedProfiles),
		FindingCandidates: []qa.FinalCandidate{{CandidateID: "F-01", Title: c.Title, Description: c.Description, Confidence: c.Confidence,
			VerificationGap: c.VerificationGap, EvidenceRefs: c.EvidenceRefs, Impact: c.Impact, FailureCondition: c.FailureCondition,
			SourceLocations: c.SourceLocations, Severity: ptr(qa.SeverityHigh), SourceProfiles: []qa.Profile{qa.ProfileCodeReviewer},
			SourceCandidates: []qa.CandidateRef{src}}},
		CandidateDecisions: []qa.CandidateDecision{
			{Source: src, Verdict: qa.VerdictConfirmed, FinalFindingID: ptr("F-01"), Rationale: "read the rounding helper", EvidenceRefs: []string{rc.EvidenceRefs[1]}},
			{Source: qa.CandidateRef{Profile: qa.ProfileCodeReviewer, CandidateID: "F-02"}, Verdict: qa.VerdictRejected,
				Rationale: "the caller guards the empty cart", EvidenceRefs: []string{rc.EvidenceRefs[0]}},
		},
		ReviewRulesSHA256: hash}
	if err := advance(qa.AdvanceInput{CompletedStep: qa.StepSynthesis, Status: qa.OutcomeCompleted, FinalReviewReport: fr}); err != nil {
		return err
	}
	if err := call(ctx, cs, rec, qa.ToolFinish, qa.FinishInput{RunID: s.RunID, Outcome: qa.OutcomeCompleted,
		ExpectedRevision: ptr(s.Revision), RequestID: ptr(fmt.Sprintf("flow-%d:finish", n))}, &s); err != nil {
		return err
	}
	if s.Status != qa.StatusCompleted || s.Revision != 6 {
		return fmt.Errorf("flow %d: finished with status %s revision %d", n, s.Status, s.Revision)
	}
	var got qa.Session
	if err := call(ctx, cs, rec, qa.ToolGet, qa.GetInput{RunID: s.RunID}, &got); err != nil {
		return err
	}
	if got.Revision != s.Revision {
		return fmt.Errorf("flow %d: get returned revision %d, want %d", n, got.Revision, s.Revision)
	}
	var exp struct {
		Findings []json.RawMessage `json:"findings"`
	}
	if err := call(ctx, cs, rec, qa.ToolExport, qa.ExportInput{RunID: s.RunID}, &exp); err != nil {
		return err
	}
	if len(exp.Findings) != 1 {
		return fmt.Errorf("flow %d: export has %d findings, want 1", n, len(exp.Findings))
	}
	return nil
}

type ratioResult struct {
	label            string
	samples          int
	ping, start      []time.Duration
	retainedSessions int
}

// ratio alternates an MCP ping and a review-bound start on one connection.
// Each started session is deleted again (untimed) so the store keeps the
// size it had when the measurement began.
func ratio(ctx context.Context, cs *mcp.ClientSession, rc *qa.ReviewContextInput, samples int, label string) (ratioResult, error) {
	r := ratioResult{label: label, samples: samples}
	n, _, err := listAll(ctx, cs)
	if err != nil {
		return r, err
	}
	r.retainedSessions = n
	warm := min(50, samples)
	for i := range samples + warm {
		t0 := time.Now()
		if err := cs.Ping(ctx, nil); err != nil {
			return r, fmt.Errorf("ping: %w", err)
		}
		dp := time.Since(t0)
		var s qa.Session
		t0 = time.Now()
		if err := call(ctx, cs, nil, qa.ToolStart, qa.StartInput{TaskType: qa.TaskOrdinaryReview, ReviewContext: rc}, &s); err != nil {
			return r, err
		}
		dst := time.Since(t0)
		if err := call(ctx, cs, nil, qa.ToolDelete, qa.DeleteInput{RunID: s.RunID}, nil); err != nil {
			return r, err
		}
		if i >= warm {
			r.ping = append(r.ping, dp)
			r.start = append(r.start, dst)
		}
	}
	return r, nil
}

// listAll walks list_qa_orchestrations to the end: the default page first
// (the whole list on servers without pages), then pages of 1000 following
// next_cursor. It returns the sessions seen and the calls made.
func listAll(ctx context.Context, cs *mcp.ClientSession) (sessions, calls int, err error) {
	var args any = struct{}{}
	for {
		var list qa.ListOutput
		if err := call(ctx, cs, nil, qa.ToolList, args, &list); err != nil {
			return 0, 0, err
		}
		sessions += len(list.Sessions)
		calls++
		if list.NextCursor == nil {
			return sessions, calls, nil
		}
		args = map[string]any{"limit": qa.MaxListLimit, "cursor": *list.NextCursor}
	}
}

// echoTool is the benchmark-only tool of bench builds (internal/mcpserver/echo_bench.go).
const echoTool = "bench_echo"

// echoTools are the tools compared with an echo of the same argument and
// answer sizes.
var echoTools = []string{qa.ToolStart, qa.ToolAdvance, qa.ToolGet}

// pairedEcho times the floor of one call of tool, right after it, under
// the same load: bench_echo sent the call's own arguments (args, taken
// by the echo as they are) and handing back the call's own answer, kept
// on the server beforehand by an untimed call (same: what the transport
// and the SDK cost that call's bytes), and bench_echo with a flat string
// of the arguments' size answering a flat string of the answer's size
// (flat).
func pairedEcho(ctx context.Context, cs *mcp.ClientSession, tool string, args any, argBytes int, answer any, answerBytes int) (same, flat time.Duration, err error) {
	keep := map[string]any{"slot": tool, "keep": answer}
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: echoTool, Arguments: keep}); err != nil {
		return 0, 0, fmt.Errorf("%s: %w (is the binary built with -tags diffpal_bench_echo?)", echoTool, err)
	}
	sameIn := map[string]any{"slot": tool, "args": args}
	// {"payload":"..."} is 14 bytes of framing; {"pad":"...","size":N} about 20.
	flatIn := map[string]any{"pad": strings.Repeat("p", max(0, argBytes-20)), "size": max(0, answerBytes-14)}
	var ds [2]time.Duration
	for i, in := range []any{sameIn, flatIn} {
		t0 := time.Now()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: echoTool, Arguments: in})
		ds[i] = time.Since(t0)
		if err != nil {
			return 0, 0, fmt.Errorf("%s: %w", echoTool, err)
		}
		if res.IsError {
			return 0, 0, fmt.Errorf("%s: tool error: %v", echoTool, res.Content)
		}
	}
	return ds[0], ds[1], nil
}

// ---- servers ----------------------------------------------------------------

type server struct {
	name string
	cmd  *exec.Cmd
	cs   *mcp.ClientSession
	stop func()
	// stderr collects the server's stderr (gctrace lines).
	stderrMu sync.Mutex
	stderr   []string
}

func (s *server) lines() []string {
	s.stderrMu.Lock()
	defer s.stderrMu.Unlock()
	return slices.Clone(s.stderr)
}

func (s *server) collect(r io.Reader, found chan<- string) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if m := servingRE.FindStringSubmatch(line); m != nil && found != nil {
			found <- m[1]
			found = nil
		}
		s.stderrMu.Lock()
		if len(s.stderr) < 100000 {
			s.stderr = append(s.stderr, line)
		}
		s.stderrMu.Unlock()
	}
}

var servingRE = regexp.MustCompile(`serving (http://\S+)`)

// protocolVersion is the MCP version the client asks for. go-sdk v1.8.0
// defaults to 2026-07-28, which has no ping method (the server answers
// "method not found"), so the benchmark pins the version current hosts
// speak, where ping exists.
var protocolVersion = "2025-11-25"

func sessionOptions() *mcp.ClientSessionOptions {
	return &mcp.ClientSessionOptions{ProtocolVersion: protocolVersion}
}

func client() *mcp.Client {
	return mcp.NewClient(&mcp.Implementation{Name: "diffpal-bench", Version: "1"}, nil)
}

// startStdio spawns `diffpal mcp args...` and connects over its stdio.
func startStdio(ctx context.Context, bin string, env []string, args ...string) (*server, error) {
	cmd := exec.CommandContext(ctx, bin, append([]string{"mcp"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	s := &server{name: "stdio", cmd: cmd}
	pr, pw := io.Pipe()
	cmd.Stderr = pw
	go s.collect(pr, nil)
	cs, err := client().Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: 5 * time.Second}, sessionOptions())
	if err != nil {
		pw.Close()
		return nil, fmt.Errorf("connect to %s mcp: %w\n%s", bin, err, strings.Join(s.lines(), "\n"))
	}
	s.cs = cs
	s.stop = func() { cs.Close(); pw.Close() }
	return s, nil
}

type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// startHTTP spawns `diffpal mcp --http 127.0.0.1:0 --token-env NAME` and
// connects with the bearer token.
func startHTTP(ctx context.Context, bin string, args ...string) (*server, error) {
	const tokenVar = "DIFFPAL_BENCH_TOKEN"
	token := fmt.Sprintf("bench-%d-%d", time.Now().UnixNano(), os.Getpid())
	cmd := exec.CommandContext(ctx, bin, append([]string{"mcp", "--http", "127.0.0.1:0", "--token-env", tokenVar}, args...)...)
	cmd.Env = append(os.Environ(), tokenVar+"="+token)
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 10 * time.Second
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &server{name: "http", cmd: cmd}
	found := make(chan string, 1)
	go s.collect(stderr, found)
	kill := func() { _ = cmd.Process.Signal(os.Interrupt); _ = cmd.Wait() }
	var url string
	select {
	case url = <-found:
	case <-time.After(30 * time.Second):
		kill()
		return nil, fmt.Errorf("diffpal mcp --http did not report its address:\n%s", strings.Join(s.lines(), "\n"))
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 16
	hc := &http.Client{Transport: bearer{token, tr}}
	cs, err := client().Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc}, sessionOptions())
	if err != nil {
		kill()
		return nil, fmt.Errorf("connect to %s: %w", url, err)
	}
	s.cs = cs
	s.stop = func() { cs.Close(); kill() }
	return s, nil
}

// ---- phases ---------------------------------------------------------------

type transportResult struct {
	name     string
	flows    int
	wall     time.Duration
	rec      *recorder
	ratios   []ratioResult
	maxSess  int
	retained int
}

func benchTransport(ctx context.Context, cfg config, name string, rc *qa.ReviewContextInput) (transportResult, error) {
	res := transportResult{name: name, flows: cfg.flows, rec: newRecorder(), maxSess: qa.DefaultMaxSessions}
	var (
		srv *server
		err error
	)
	switch name {
	case "stdio":
		srv, err = startStdio(ctx, cfg.bin, nil)
	case "http":
		srv, err = startHTTP(ctx, cfg.bin)
	}
	if err != nil {
		return res, err
	}
	defer srv.stop()
	cs := srv.cs

	logf("[%s] start vs ping on an empty store (%d samples)", name, cfg.ratioSamples)
	r, err := ratio(ctx, cs, rc, cfg.ratioSamples, "empty store")
	if err != nil {
		return res, err
	}
	res.ratios = append(res.ratios, r)

	logf("[%s] %d review-bound flows", name, cfg.flows)
	for i := range min(10, cfg.flows) { // warm-up, not recorded
		if err := flow(ctx, cs, nil, rc, -1-i); err != nil {
			return res, err
		}
	}
	t0 := time.Now()
	for i := range cfg.flows {
		if err := flow(ctx, cs, res.rec, rc, i); err != nil {
			return res, err
		}
	}
	res.wall = time.Since(t0)

	logf("[%s] start vs ping after the flows (%d samples)", name, cfg.ratioSamples)
	r, err = ratio(ctx, cs, rc, cfg.ratioSamples, "after flows")
	if err != nil {
		return res, err
	}
	res.retained = r.retainedSessions
	res.ratios = append(res.ratios, r)
	return res, nil
}

type memResult struct {
	sessions          int
	sessionJSON       int
	rssBefore         int64 // KiB
	rssAfter          int64
	liveBefore        float64 // MB, from gctrace
	liveAfter         float64
	gcs               int
	wall              time.Duration
	firstK, lastK     time.Duration // p50 start latency of the first and last 1000
	gogc              string
	settle            time.Duration
	peakRSS           int64
	startsPerSecFinal float64
	list              []time.Duration // list_qa_orchestrations round trips (default page) with every session retained
	listAll           []time.Duration // walking every page (of 1000) to the end
	listPage          int             // sessions on the default page
	listCalls         int             // calls of one walk
}

func vmRSS(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			return strconv.ParseInt(f[1], 10, 64)
		}
	}
	return 0, errors.New("no VmRSS in /proc status")
}

func vmHWM(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmHWM:" {
			n, _ := strconv.ParseInt(f[1], 10, 64)
			return n
		}
	}
	return 0
}

// gctrace "gc 12 @1.2s 3%: ... 40->41->20 MB, 42 MB goal, ..." : the third
// number is the live heap after marking.
var gcRE = regexp.MustCompile(`^gc (\d+) .*?(\d+)->(\d+)->(\d+) MB`)

func lastLiveHeap(lines []string) (float64, int) {
	live, n := 0.0, 0
	for _, l := range lines {
		if m := gcRE.FindStringSubmatch(l); m != nil {
			live, _ = strconv.ParseFloat(m[4], 64)
			n, _ = strconv.Atoi(m[1])
		}
	}
	return live, n
}

// settleRSS waits d, sampling VmRSS every 250 ms, and returns the last
// reading.
func settleRSS(ctx context.Context, pid int, d time.Duration) (int64, error) {
	deadline := time.Now().Add(d)
	var last int64
	for {
		v, err := vmRSS(pid)
		if err != nil {
			return 0, err
		}
		last = v
		if time.Now().After(deadline) {
			return last, nil
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

func benchMemory(ctx context.Context, cfg config, rc *qa.ReviewContextInput) (memResult, error) {
	res := memResult{sessions: cfg.sessions, gogc: cfg.memGOGC, settle: cfg.settle}
	env := []string{"GODEBUG=gctrace=1"}
	if cfg.memGOGC != "" {
		env = append(env, "GOGC="+cfg.memGOGC)
	}
	srv, err := startStdio(ctx, cfg.bin, env, "--max-sessions", strconv.Itoa(cfg.sessions))
	if err != nil {
		return res, err
	}
	defer srv.stop()
	cs := srv.cs
	pid := srv.cmd.Process.Pid
	// Warm every code path once (start, get, delete), then take the baseline.
	for range 20 {
		var s qa.Session
		if err := call(ctx, cs, nil, qa.ToolStart, qa.StartInput{TaskType: qa.TaskOrdinaryReview, ReviewContext: rc}, &s); err != nil {
			return res, err
		}
		if err := call(ctx, cs, nil, qa.ToolDelete, qa.DeleteInput{RunID: s.RunID}, nil); err != nil {
			return res, err
		}
	}
	if res.rssBefore, err = settleRSS(ctx, pid, min(cfg.settle, 3*time.Second)); err != nil {
		return res, err
	}
	res.liveBefore, _ = lastLiveHeap(srv.lines())
	logf("[memory] baseline VmRSS %d KiB; starting %d review-bound sessions (--max-sessions %d)", res.rssBefore, cfg.sessions, cfg.sessions)

	k := min(1000, cfg.sessions)
	var first, last []time.Duration
	t0 := time.Now()
	for i := range cfg.sessions {
		t := time.Now()
		res0, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: qa.ToolStart,
			Arguments: qa.StartInput{TaskType: qa.TaskOrdinaryReview, ReviewContext: rc}})
		d := time.Since(t)
		if err != nil {
			return res, fmt.Errorf("start %d: %w", i, err)
		}
		if res0.IsError {
			return res, fmt.Errorf("start %d: tool error: %v", i, res0.Content)
		}
		if i == 0 {
			raw, _ := json.Marshal(res0.StructuredContent)
			res.sessionJSON = len(raw)
		}
		if i < k {
			first = append(first, d)
		}
		if i >= cfg.sessions-k {
			last = append(last, d)
		}
		if (i+1)%1000 == 0 {
			logf("[memory] %d sessions, %.1fs, last start %s ms", i+1, time.Since(t0).Seconds(), ms(d))
		}
	}
	res.wall = time.Since(t0)
	res.firstK, res.lastK = quantile(first, 0.5), quantile(last, 0.5)
	res.startsPerSecFinal = float64(time.Second) / float64(mean(last))
	for i := range 51 {
		var list qa.ListOutput
		t := time.Now()
		if err := call(ctx, cs, nil, qa.ToolList, struct{}{}, &list); err != nil {
			return res, err
		}
		if i > 0 {
			res.list = append(res.list, time.Since(t))
		}
		res.listPage = len(list.Sessions)
	}
	for i := range 11 {
		t := time.Now()
		n, calls, err := listAll(ctx, cs)
		if err != nil {
			return res, err
		}
		if i > 0 {
			res.listAll = append(res.listAll, time.Since(t))
		}
		if n != cfg.sessions {
			return res, fmt.Errorf("list shows %d sessions, want %d", n, cfg.sessions)
		}
		res.listCalls = calls
	}
	if res.rssAfter, err = settleRSS(ctx, pid, cfg.settle); err != nil {
		return res, err
	}
	res.peakRSS = vmHWM(pid)
	res.liveAfter, res.gcs = lastLiveHeap(srv.lines())
	return res, nil
}

// ---- report -----------------------------------------------------------------

func report(cfg config, rc *qa.ReviewContextInput, trs []transportResult, mem *memResult) {
	ctxJSON, _ := json.Marshal(rc)
	cpu := "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "model name") {
				if _, v, ok := strings.Cut(l, ":"); ok {
					cpu = strings.TrimSpace(v)
				}
				break
			}
		}
	}
	fmt.Printf("<!-- go run ./bench/mcp %s -->\n", strings.Join(os.Args[1:], " "))
	fmt.Printf("%s, %d CPUs (%s), %s/%s, %s. Client: the MCP Go SDK, protocol %s, one connection, calls issued one at a time.\n",
		time.Now().UTC().Format("2006-01-02"), runtime.NumCPU(), cpu, runtime.GOOS, runtime.GOARCH, runtime.Version(), protocolVersion)
	fmt.Printf("review_context: %d changed files, %d evidence refs with a full registry, 2 review rules (%d bytes of JSON).\n\n",
		len(rc.ChangedFiles), len(rc.EvidenceRefs), len(ctxJSON))

	if len(trs) > 0 {
		fmt.Printf("**Review-bound flows** (start with review_context, triage `ordinary_mr`, three profile reports, risk signals, synthesis with a final report, finish, get, `export_qa_findings`: 9 calls per flow; default `--max-sessions 100`, so up to 100 finished sessions stay retained):\n\n")
		fmt.Println("| transport | flows | calls | wall s | calls/s |")
		fmt.Println("|---|---:|---:|---:|---:|")
		for _, tr := range trs {
			n := tr.rec.total()
			fmt.Printf("| %s | %d | %d | %.2f | %.0f |\n", tr.name, tr.flows, n, tr.wall.Seconds(), float64(n)/tr.wall.Seconds())
		}
		fmt.Println()
		fmt.Println("**Per-call latency** (client round trip, ms):")
		fmt.Println()
		fmt.Println("| transport | tool | calls | p50 ms | p99 ms |")
		fmt.Println("|---|---|---:|---:|---:|")
		for _, tr := range trs {
			for _, tool := range []string{qa.ToolStart, qa.ToolAdvance, qa.ToolFinish, qa.ToolGet, qa.ToolExport} {
				ds := tr.rec.lat[tool]
				fmt.Printf("| %s | `%s` | %d | %s | %s |\n", tr.name, tool, len(ds), ms(quantile(ds, 0.5)), ms(quantile(ds, 0.99)))
			}
		}
		fmt.Println()
		fmt.Println("**vs an echo tool** (`bench_echo`, registered like the qa tools in bench builds only: same SDK, same transport, same connection; each call in the flows is followed by two echoes, timed under the same load). The floor is the same-call echo: it is sent the call's own arguments (taken as they are, not decoded) and hands back the call's own answer (kept on the server beforehand by an untimed call), so it costs the transport and the SDK what that call's bytes cost them, and the difference is the server's work. The flat echo sends and answers flat strings of the same sizes, which the SDK encodes and decodes more cheaply than nested JSON; it is shown for comparison. Target ≤ 1.3× the same-call echo at p50 and p99:")
		fmt.Println()
		fmt.Println("| transport | tool | args B | answer B | p50 ms | p99 ms | same-call echo p50 / p99 ms | ratio p50 | ratio p99 | ≤ 1.3× | flat echo p50 / p99 ms | ratio p50 / p99 |")
		fmt.Println("|---|---|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|")
		for _, tr := range trs {
			for _, tool := range echoTools {
				ds, es, fs := tr.rec.lat[tool], tr.rec.same[tool], tr.rec.flat[tool]
				p50, p99 := quantile(ds, 0.5), quantile(ds, 0.99)
				e50, e99, f50, f99 := quantile(es, 0.5), quantile(es, 0.99), quantile(fs, 0.5), quantile(fs, 0.99)
				r50, r99 := float64(p50)/float64(e50), float64(p99)/float64(e99)
				ok := "yes"
				if r50 > 1.3 || r99 > 1.3 {
					ok = "no"
				}
				fmt.Printf("| %s | `%s` | %d | %d | %s | %s | %s / %s | %.2f× | %.2f× | %s | %s / %s | %.2f× / %.2f× |\n", tr.name, tool,
					medianInt(tr.rec.argBytes[tool]), medianInt(tr.rec.resBytes[tool]), ms(p50), ms(p99), ms(e50), ms(e99), r50, r99, ok,
					ms(f50), ms(f99), float64(p50)/float64(f50), float64(p99)/float64(f99))
			}
		}
		fmt.Println()
		fmt.Println("**start_qa_orchestration vs MCP ping** on the same connection (review-bound start; each started session is deleted again, untimed; target ≤ 2×):")
		fmt.Println()
		fmt.Println("| transport | store | samples | ping p50 ms | start p50 ms | ratio p50 | ping mean ms | start mean ms | ratio mean | ≤ 2× |")
		fmt.Println("|---|---|---:|---:|---:|---:|---:|---:|---:|---|")
		for _, tr := range trs {
			for _, r := range tr.ratios {
				pp, sp := quantile(r.ping, 0.5), quantile(r.start, 0.5)
				pm, sm := mean(r.ping), mean(r.start)
				rp, rm := float64(sp)/float64(pp), float64(sm)/float64(pm)
				ok := "yes"
				if rp > 2 || rm > 2 {
					ok = "no"
				}
				fmt.Printf("| %s | %s (%d retained) | %d | %s | %s | %.2f× | %s | %s | %.2f× | %s |\n",
					tr.name, r.label, r.retainedSessions, r.samples, ms(pp), ms(sp), rp, ms(pm), ms(sm), rm, ok)
			}
		}
		fmt.Println()
	}
	if mem != nil {
		gogc := "default"
		if mem.gogc != "" {
			gogc = mem.gogc
		}
		grow := float64(mem.rssAfter-mem.rssBefore) / float64(mem.sessions)
		ok := "yes"
		if grow > 20 {
			ok = "no"
		}
		fmt.Printf("**Memory per retained session** (stdio server, `--max-sessions %d`, memory store, GOGC %s; VmRSS read after %s idle; the store keeps each session as its JSON payload, %d bytes for a fresh review-bound session; target ≤ 20 KiB):\n\n",
			mem.sessions, gogc, mem.settle, mem.sessionJSON)
		k := min(1000, mem.sessions)
		fmt.Printf("| sessions | VmRSS before MiB | VmRSS after MiB | peak RSS MiB | RSS growth KiB/session | live heap after last GC KiB/session | ≤ 20 KiB | wall s | start p50 first %d ms | start p50 last %d ms | list p50 ms (default page: sessions) | list every session p50 ms (calls) |\n", k, k)
		fmt.Println("|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|")
		live := "n/a"
		if mem.liveAfter > 0 {
			live = fmt.Sprintf("%.1f", (mem.liveAfter-mem.liveBefore)*1e6/1024/float64(mem.sessions))
		}
		fmt.Printf("| %d | %.1f | %.1f | %.1f | %.1f | %s | %s | %.1f | %s | %s | %s (%d) | %s (%d) |\n", mem.sessions,
			float64(mem.rssBefore)/1024, float64(mem.rssAfter)/1024, float64(mem.peakRSS)/1024, grow, live, ok,
			mem.wall.Seconds(), ms(mem.firstK), ms(mem.lastK), ms(quantile(mem.list, 0.5)), mem.listPage,
			ms(quantile(mem.listAll, 0.5)), mem.listCalls)
		fmt.Println()
	}
}

func run(ctx context.Context, cfg config) error {
	if _, err := os.Stat(cfg.bin); err != nil {
		return fmt.Errorf("-bin: %w (build it with go build -o %s ./cmd/diffpal)", err, cfg.bin)
	}
	rc := reviewContext(cfg.files, cfg.refs)
	var trs []transportResult
	for _, name := range []string{"stdio", "http"} {
		if cfg.skip[name] {
			continue
		}
		tr, err := benchTransport(ctx, cfg, name, rc)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		trs = append(trs, tr)
	}
	var mem *memResult
	if !cfg.skip["memory"] {
		m, err := benchMemory(ctx, cfg, rc)
		if err != nil {
			return fmt.Errorf("memory: %w", err)
		}
		mem = &m
	}
	report(cfg, rc, trs, mem)
	return nil
}

// Command mcpload load-tests `diffpal mcp --http` replicas on a shared
// session store, through the official MCP Go SDK client. It is run by
// bench/mcpload.sh:
//
//	go run ./bench/mcpload -bin bench/.out/diffpal [-calls 20000] [-clients 8] [-configs sqlite-1,postgres-1,postgres-2]
//
// For each configuration — one replica on SQLite, one replica on
// PostgreSQL, two replicas on one PostgreSQL database — it:
//
//   - starts the replicas (`diffpal mcp --http 127.0.0.1:0 --token-env …
//     --store … --max-sessions -calls --ttl 2h`) on a fresh store;
//   - runs -clients concurrent clients per replica for a bounded run of
//     -calls tool calls in total: each client drives complete review-bound
//     flows (start with a review_context, triage, one report per profile,
//     synthesis with a final report, finish, get, export), every write
//     conditional on the last revision and carrying a request_id, and
//     every call balanced round robin over the replicas, so one session's
//     calls land on both; it reports calls/s and p50/p99 per tool and
//     overall. A client stops when the budget is spent, possibly mid-flow;
//   - verifies the run: every session any client started is read back at
//     the end (get_qa_orchestration) and its revision must equal the
//     number of mutating calls acknowledged for it — lower is a lost write,
//     higher a write applied twice — with one receipt per acknowledged
//     write; the store must hold exactly the sessions started;
//   - runs a capacity race on a second fresh store: the replicas restarted
//     with --max-sessions -race-limit, -race-starts start calls released at
//     once across the replicas; exactly -race-limit may succeed, the rest
//     must fail with "session limit", and a monitor sampling the store
//     while they race (list_qa_orchestrations, and a SQL count for
//     PostgreSQL) must never see more than the limit.
//
// PostgreSQL is a private throw-away cluster (pgtest.Launch: initdb into a
// temporary directory, a unix socket only, removed at the end), or the
// server of -postgres URL, where a fresh database is created per store.
// Everything is loopback-only and bounded: fixed call counts, a deadline
// for the whole run, the servers stopped at the end. The Markdown result
// goes to stdout and to -out; progress goes to stderr. The exit status is
// 1 when any check fails.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/diffpalhq/diffpal/internal/qa"
	"github.com/diffpalhq/diffpal/internal/qa/store/postgres/pgtest"
)

type config struct {
	bin        string
	calls      int
	clients    int
	raceStarts int
	raceLimit  int
	configs    []storeConfig
	postgres   string
	out        string
	deadline   time.Duration
	args       string
}

// storeConfig is one measured configuration.
type storeConfig struct {
	kind     string // sqlite or postgres
	replicas int
}

func (s storeConfig) String() string { return fmt.Sprintf("%s-%d", s.kind, s.replicas) }

func (s storeConfig) label() string {
	name := map[string]string{"sqlite": "SQLite", "postgres": "PostgreSQL"}[s.kind]
	return fmt.Sprintf("%s × %d", name, s.replicas)
}

func main() {
	var cfg config
	var configs string
	flag.StringVar(&cfg.bin, "bin", "bench/.out/diffpal", "diffpal binary to load")
	flag.IntVar(&cfg.calls, "calls", 20000, "tool calls per configuration (the bounded run)")
	flag.IntVar(&cfg.clients, "clients", 8, "concurrent clients per replica")
	flag.IntVar(&cfg.raceStarts, "race-starts", 1000, "start calls released at once in the capacity race")
	flag.IntVar(&cfg.raceLimit, "race-limit", 100, "--max-sessions of the capacity race")
	flag.StringVar(&configs, "configs", "sqlite-1,postgres-1,postgres-2",
		"comma-separated configurations STORE-REPLICAS (STORE: sqlite or postgres; sqlite only with 1 replica)")
	flag.StringVar(&cfg.postgres, "postgres", os.Getenv(pgtest.EnvURL),
		"PostgreSQL server URL to create the databases on (default "+pgtest.EnvURL+", else a private throw-away cluster)")
	flag.StringVar(&cfg.out, "out", "bench/.out/mcpload.md", "also write the Markdown result here (empty: stdout only)")
	flag.DurationVar(&cfg.deadline, "deadline", 45*time.Minute, "stop everything after this long")
	flag.Parse()
	cfg.args = strings.Join(os.Args[1:], " ")
	for _, c := range strings.Split(configs, ",") {
		c = strings.TrimSpace(c)
		kind, n, ok := strings.Cut(c, "-")
		r, err := strconv.Atoi(n)
		if !ok || err != nil || r < 1 || r > 8 || (kind != "sqlite" && kind != "postgres") || (kind == "sqlite" && r != 1) {
			fail(fmt.Errorf("-configs: bad configuration %q (want sqlite-1, postgres-N with 1 <= N <= 8)", c))
		}
		cfg.configs = append(cfg.configs, storeConfig{kind, r})
	}
	if cfg.calls < 1 || cfg.clients < 1 || cfg.raceStarts < 1 || cfg.raceLimit < 1 || len(cfg.configs) == 0 {
		fail(errors.New("want -calls, -clients, -race-starts, -race-limit >= 1 and at least one configuration"))
	}
	ctx, cancel := context.WithTimeout(context.Background(), cfg.deadline)
	defer cancel()
	md, ok, err := run(ctx, cfg)
	if err != nil {
		fail(err)
	}
	fmt.Print(md)
	if cfg.out != "" {
		if err := os.MkdirAll(filepath.Dir(cfg.out), 0o755); err != nil {
			fail(err)
		}
		if err := os.WriteFile(cfg.out, []byte(md), 0o644); err != nil {
			fail(err)
		}
		logf("wrote %s", cfg.out)
	}
	if !ok {
		fmt.Fprintln(os.Stderr, "bench/mcpload: a check failed (see the tables)")
		os.Exit(1)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "bench/mcpload:", err)
	os.Exit(1)
}

func logf(format string, args ...any) { fmt.Fprintf(os.Stderr, format+"\n", args...) }

// ---- stores -------------------------------------------------------------------

// stores hands out fresh session stores.
type stores struct {
	pgBase  string          // a server URL to create databases on, or ""
	cluster *pgtest.Cluster // the private cluster, started on first use
	tmp     string
	n       int
}

func (s *stores) fresh(ctx context.Context, kind string) (spec string, pgURL string, err error) {
	s.n++
	if kind == "sqlite" {
		return "sqlite:" + filepath.Join(s.tmp, fmt.Sprintf("qa-%d.db", s.n)), "", nil
	}
	if s.pgBase != "" {
		u, err := createDatabase(ctx, s.pgBase)
		return u, u, err
	}
	if s.cluster == nil {
		logf("starting a private PostgreSQL cluster")
		c, err := pgtest.Launch()
		if err != nil {
			return "", "", err
		}
		s.cluster = c
	}
	u, err := s.cluster.NewDatabase(ctx)
	return u, u, err
}

// createDatabase makes a fresh database on an existing server and returns
// its URL (base with the database replaced).
func createDatabase(ctx context.Context, base string) (string, error) {
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		return "", err
	}
	defer conn.Close(context.Background())
	name := fmt.Sprintf("diffpal_mcpload_%d_%d", os.Getpid(), time.Now().UnixNano())
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name+" TEMPLATE template0"); err != nil {
		return "", err
	}
	if !strings.HasPrefix(base, "postgres://") && !strings.HasPrefix(base, "postgresql://") {
		return base + " dbname=" + name, nil
	}
	u, err := url.Parse(base)
	if err != nil {
		return "", err
	}
	u.Path = "/" + name
	q := u.Query()
	q.Del("dbname")
	u.RawQuery = q.Encode()
	return u.String(), nil
}

func (s *stores) close() {
	if s.cluster != nil {
		s.cluster.Destroy()
	}
	if s.tmp != "" {
		os.RemoveAll(s.tmp)
	}
}

func (s *stores) serverVersion(ctx context.Context, pgURL string) string {
	conn, err := pgx.Connect(ctx, pgURL)
	if err != nil {
		return "?"
	}
	defer conn.Close(context.Background())
	var v string
	if err := conn.QueryRow(ctx, "SHOW server_version").Scan(&v); err != nil {
		return "?"
	}
	return v
}

// ---- replicas -----------------------------------------------------------------

var servingRE = regexp.MustCompile(`serving (http://[^\s"]+)`)

const tokenVar = "DIFFPAL_MCPLOAD_TOKEN"

type replica struct {
	cmd    *exec.Cmd
	url    string
	mu     sync.Mutex
	stderr []string
	done   chan struct{}
}

func (r *replica) tail() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.stderr[max(0, len(r.stderr)-20):], "\n")
}

func startReplica(ctx context.Context, bin, token, storeSpec string, maxSessions int) (*replica, error) {
	cmd := exec.Command(bin, "mcp", "--http", "127.0.0.1:0", "--token-env", tokenVar, "--store", storeSpec,
		"--max-sessions", strconv.Itoa(maxSessions), "--ttl", "2h", "--log-format", "json")
	cmd.Env = append(os.Environ(), tokenVar+"="+token)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	r := &replica{cmd: cmd, done: make(chan struct{})}
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			if m := servingRE.FindStringSubmatch(line); m != nil {
				select {
				case found <- m[1]:
				default:
				}
			}
			r.mu.Lock()
			if len(r.stderr) < 10000 {
				r.stderr = append(r.stderr, line)
			}
			r.mu.Unlock()
		}
	}()
	go func() { _ = cmd.Wait(); close(r.done) }()
	select {
	case r.url = <-found:
		return r, nil
	case <-r.done:
		return nil, fmt.Errorf("diffpal mcp exited before listening:\n%s", r.tail())
	case <-time.After(60 * time.Second):
	case <-ctx.Done():
	}
	r.stop()
	return nil, fmt.Errorf("diffpal mcp did not report its address:\n%s", r.tail())
}

// stop sends SIGINT (graceful shutdown) and waits; SIGKILL after 15 s.
func (r *replica) stop() {
	_ = r.cmd.Process.Signal(os.Interrupt)
	select {
	case <-r.done:
	case <-time.After(15 * time.Second):
		_ = r.cmd.Process.Kill()
		<-r.done
	}
}

func startReplicas(ctx context.Context, cfg config, token, storeSpec string, n, maxSessions int) ([]*replica, error) {
	reps := make([]*replica, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n { // at once: they migrate under the advisory lock
		wg.Add(1)
		go func() {
			defer wg.Done()
			reps[i], errs[i] = startReplica(ctx, cfg.bin, token, storeSpec, maxSessions)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		stopAll(reps)
		return nil, err
	}
	return reps, nil
}

func stopAll(reps []*replica) {
	var wg sync.WaitGroup
	for _, r := range reps {
		if r != nil {
			wg.Add(1)
			go func() { defer wg.Done(); r.stop() }()
		}
	}
	wg.Wait()
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

// connect opens one MCP client session to a replica over its own HTTP
// transport.
func connect(ctx context.Context, url, token string, conns int) (*mcp.ClientSession, error) {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = conns
	hc := &http.Client{Transport: bearer{token, tr}}
	return mcp.NewClient(&mcp.Implementation{Name: "diffpal-mcpload", Version: "1"}, nil).
		Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc}, nil)
}

// ---- workload -----------------------------------------------------------------

func ptr[T any](v T) *T { return &v }

func hex64(i int) string { return fmt.Sprintf("%064x", i) }

const (
	baseSHA = "1f0e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c"
	headSHA = "a1b2c3d4e5f60718293a4b5c6d7e8f9001122334"
)

// reviewContext is shaped like `diffpal context` output (bench/mcp's
// defaults): 12 changed files, 36 evidence refs with a full registry, two
// review rules.
func reviewContext() *qa.ReviewContextInput {
	const files, refs = 12, 36
	rc := &qa.ReviewContextInput{Repository: "github.com/acme/shop", BaseSHA: baseSHA, HeadSHA: headSHA,
		DiffSHA256: hex64(0xd1ff), EvidencePacketSHA256: hex64(0xbacc)}
	for i := range files {
		rc.ChangedFiles = append(rc.ChangedFiles, fmt.Sprintf("services/checkout/internal/cart/handler_%02d.go", i))
	}
	for i := range refs {
		f, n := i%files, i/files+1
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
	rc.ReviewRules = &qa.ReviewRules{SchemaVersion: ptr(1), Rules: []qa.ReviewRule{
		{RuleID: "cart-001", Kind: qa.RuleKindRaise, Paths: []string{"services/checkout/**"},
			Condition: "a cart total is computed without the currency's rounding mode",
			Text:      "cart totals use the currency's rounding mode", Rationale: "off-by-one-cent disputes"},
		{RuleID: "cart-002", Kind: qa.RuleKindGuard, Paths: []string{"**/*_test.go"},
			Condition: "the code is a test helper", Text: "do not report style in test helpers", Rationale: "noise"},
	}}
	return rc
}

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

func finalReport(s qa.Session, rc *qa.ReviewContextInput, c qa.ProfileCandidate) *qa.FinalReviewReport {
	src := qa.CandidateRef{Profile: qa.ProfileCodeReviewer, CandidateID: "F-01"}
	return &qa.FinalReviewReport{Summary: "- Cart totals now apply discounts before rounding", ProfilesReviewed: slices.Clone(s.CompletedProfiles),
		FindingCandidates: []qa.FinalCandidate{{CandidateID: "F-01", Title: c.Title, Description: c.Description, Confidence: c.Confidence,
			VerificationGap: c.VerificationGap, EvidenceRefs: c.EvidenceRefs, Impact: c.Impact, FailureCondition: c.FailureCondition,
			SourceLocations: c.SourceLocations, Severity: ptr(qa.SeverityHigh), SourceProfiles: []qa.Profile{qa.ProfileCodeReviewer},
			SourceCandidates: []qa.CandidateRef{src}}},
		CandidateDecisions: []qa.CandidateDecision{
			{Source: src, Verdict: qa.VerdictConfirmed, FinalFindingID: ptr("F-01"), Rationale: "read the rounding helper", EvidenceRefs: []string{rc.EvidenceRefs[1]}},
			{Source: qa.CandidateRef{Profile: qa.ProfileCodeReviewer, CandidateID: "F-02"}, Verdict: qa.VerdictRejected,
				Rationale: "the caller guards the empty cart", EvidenceRefs: []string{rc.EvidenceRefs[0]}},
		},
		ReviewRulesSHA256: s.ReviewContext.ReviewRulesSHA256}
}

// ---- measuring ----------------------------------------------------------------

type recorder struct {
	mu     sync.Mutex
	lat    map[string][]time.Duration
	errs   map[string]int
	sample []string
}

func newRecorder() *recorder {
	return &recorder{lat: map[string][]time.Duration{}, errs: map[string]int{}}
}

func (r *recorder) add(name string, d time.Duration) {
	r.mu.Lock()
	r.lat[name] = append(r.lat[name], d)
	r.mu.Unlock()
}

func (r *recorder) fail(name string, err error) {
	r.mu.Lock()
	r.errs[name]++
	if len(r.sample) < 5 {
		r.sample = append(r.sample, err.Error())
	}
	r.mu.Unlock()
}

func (r *recorder) all() []time.Duration {
	var out []time.Duration
	for _, v := range r.lat {
		out = append(out, v...)
	}
	return out
}

func (r *recorder) errors() int {
	n := 0
	for _, v := range r.errs {
		n += v
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

func ms(d time.Duration) string { return fmt.Sprintf("%.2f", float64(d)/float64(time.Millisecond)) }

func toolText(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// decode copies a result's structured content into out.
func decode(res *mcp.CallToolResult, out any) error {
	raw, err := json.Marshal(res.StructuredContent)
	if err != nil {
		return err
	}
	return json.Unmarshal(raw, out)
}

// listSessions walks list_qa_orchestrations to the end, in pages of 1000
// following next_cursor, and returns every unexpired session.
func listSessions(ctx context.Context, cs *mcp.ClientSession) ([]qa.Summary, error) {
	var all []qa.Summary
	args := map[string]any{"limit": qa.MaxListLimit}
	for {
		r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: qa.ToolList, Arguments: args})
		if err != nil {
			return nil, err
		}
		if r.IsError {
			return nil, errors.New(toolText(r))
		}
		var l qa.ListOutput
		if err := decode(r, &l); err != nil {
			return nil, err
		}
		all = append(all, l.Sessions...)
		if l.NextCursor == nil {
			return all, nil
		}
		args = map[string]any{"limit": qa.MaxListLimit, "cursor": *l.NextCursor}
	}
}

// ---- the load run -------------------------------------------------------------

// lb balances calls round robin over the replicas.
type lb struct{ next atomic.Uint64 }

func (l *lb) pick(n int) int { return int(l.next.Add(1) % uint64(n)) }

// loadClient is one host with a client session to every replica.
type loadClient struct {
	id     int
	cs     []*mcp.ClientSession
	lb     *lb
	rec    *recorder
	budget *atomic.Int64
	rc     *qa.ReviewContextInput
	// acked is, per session started, the mutating calls acknowledged.
	acked map[string]int
	order []string
}

var errBudget = errors.New("call budget spent")

// call spends one call of the budget on the next replica; it returns
// errBudget when none is left.
func (c *loadClient) call(ctx context.Context, name string, args, out any) error {
	if c.budget.Add(-1) < 0 {
		return errBudget
	}
	cs := c.cs[c.lb.pick(len(c.cs))]
	t0 := time.Now()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	d := time.Since(t0)
	if err == nil && res.IsError {
		err = fmt.Errorf("tool error: %s", toolText(res))
	}
	if err == nil && out != nil {
		err = decode(res, out)
	}
	if err != nil {
		err = fmt.Errorf("%s: %w", name, err)
		c.rec.fail(name, err)
		return err
	}
	c.rec.add(name, d)
	return nil
}

// flow runs one review-bound session until it finishes or the budget is
// spent. A failed call ends the flow (and is counted).
func (c *loadClient) flow(ctx context.Context, n int) error {
	var s qa.Session
	if err := c.call(ctx, qa.ToolStart, qa.StartInput{TaskType: qa.TaskOrdinaryReview, ReviewContext: c.rc}, &s); err != nil {
		return err
	}
	c.acked[s.RunID] = 0
	c.order = append(c.order, s.RunID)
	hash := s.ReviewContext.ReviewRulesSHA256
	step := 0
	mutate := func(name string, args any) error {
		var got qa.Session
		if err := c.call(ctx, name, args, &got); err != nil {
			return err
		}
		if got.Revision != s.Revision+1 {
			err := fmt.Errorf("%s: answered revision %d after %d", name, got.Revision, s.Revision)
			c.rec.fail(name, err)
			return err
		}
		c.acked[s.RunID]++
		s = got
		return nil
	}
	advance := func(in qa.AdvanceInput) error {
		step++
		in.RunID, in.ExpectedRevision, in.RequestID = s.RunID, ptr(s.Revision), ptr(fmt.Sprintf("c%d-f%d:%d", c.id, n, step))
		return mutate(qa.ToolAdvance, in)
	}
	if err := advance(qa.AdvanceInput{CompletedStep: qa.StepTriage, Status: qa.OutcomeCompleted,
		SelectedBundle: ptr(qa.BundleOrdinaryMR)}); err != nil {
		return err
	}
	cands := []qa.ProfileCandidate{
		candidate("F-01", "discount rounding charges an extra cent", c.rc, 41),
		candidate("F-02", "empty cart total is nil", c.rc, 88),
	}
	for i, p := range s.ReviewProfiles {
		var pc []qa.ProfileCandidate
		if p == qa.ProfileCodeReviewer {
			pc = cands
		}
		in := qa.AdvanceInput{CompletedStep: qa.StepPrimaryReview, Status: qa.OutcomeCompleted, CompletedProfile: ptr(p),
			ProfileReport: profileReport(p, c.rc, hash, pc)}
		if i == len(s.ReviewProfiles)-1 {
			in.RiskSignals = &qa.RiskSignals{}
		}
		if err := advance(in); err != nil {
			return err
		}
	}
	if err := advance(qa.AdvanceInput{CompletedStep: qa.StepSynthesis, Status: qa.OutcomeCompleted,
		FinalReviewReport: finalReport(s, c.rc, cands[0])}); err != nil {
		return err
	}
	if err := mutate(qa.ToolFinish, qa.FinishInput{RunID: s.RunID, Outcome: qa.OutcomeCompleted,
		ExpectedRevision: ptr(s.Revision), RequestID: ptr(fmt.Sprintf("c%d-f%d:finish", c.id, n))}); err != nil {
		return err
	}
	if err := c.call(ctx, qa.ToolGet, qa.GetInput{RunID: s.RunID}, nil); err != nil {
		return err
	}
	var exp struct {
		Findings []json.RawMessage `json:"findings"`
	}
	if err := c.call(ctx, qa.ToolExport, qa.ExportInput{RunID: s.RunID}, &exp); err != nil {
		return err
	}
	if len(exp.Findings) != 1 {
		err := fmt.Errorf("export: %d findings, want 1", len(exp.Findings))
		c.rec.fail(qa.ToolExport, err)
		return err
	}
	return nil
}

type loadResult struct {
	cfg        storeConfig
	clients    int
	calls      int
	wall       time.Duration
	rec        *recorder
	sessions   int
	finished   int
	lost       int
	double     int
	badReceipt int
	stored     int
	verifyErrs []string
}

func (r loadResult) ok() bool {
	return r.lost == 0 && r.double == 0 && r.badReceipt == 0 && r.rec.errors() == 0 && r.stored == r.sessions &&
		len(r.verifyErrs) == 0
}

func runLoad(ctx context.Context, cfg config, st *stores, sc storeConfig, token string) (loadResult, string, error) {
	res := loadResult{cfg: sc, clients: sc.replicas * cfg.clients, rec: newRecorder()}
	spec, pgURL, err := st.fresh(ctx, sc.kind)
	if err != nil {
		return res, "", err
	}
	version := ""
	if pgURL != "" {
		version = st.serverVersion(ctx, pgURL)
	}
	// Room for every session the run can start: nothing is evicted, so
	// every session can be read back at the end.
	reps, err := startReplicas(ctx, cfg, token, spec, sc.replicas, cfg.calls+res.clients)
	if err != nil {
		return res, version, err
	}
	defer stopAll(reps)

	var budget atomic.Int64
	budget.Store(int64(cfg.calls))
	balancer := &lb{}
	clients := make([]*loadClient, res.clients)
	for i := range clients {
		c := &loadClient{id: i, lb: balancer, rec: res.rec, budget: &budget, rc: reviewContext(), acked: map[string]int{}}
		for _, r := range reps {
			cs, err := connect(ctx, r.url, token, 2)
			if err != nil {
				return res, version, fmt.Errorf("connect to %s: %w", r.url, err)
			}
			defer cs.Close()
			c.cs = append(c.cs, cs)
		}
		clients[i] = c
	}
	logf("[%s] %d clients, %d calls", sc, res.clients, cfg.calls)
	t0 := time.Now()
	var wg sync.WaitGroup
	for _, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; ctx.Err() == nil; n++ {
				if err := c.flow(ctx, n); errors.Is(err, errBudget) {
					return
				}
			}
		}()
	}
	wg.Wait()
	res.wall = time.Since(t0)
	if err := ctx.Err(); err != nil {
		return res, version, err
	}
	res.calls = len(res.rec.all()) + res.rec.errors()
	logf("[%s] %d calls in %s; verifying", sc, res.calls, res.wall.Round(time.Millisecond))

	// Read every session back, spread over the replicas.
	type want struct {
		runID string
		acked int
	}
	var wants []want
	for _, c := range clients {
		for _, id := range c.order {
			wants = append(wants, want{id, c.acked[id]})
		}
	}
	res.sessions = len(wants)
	var mu sync.Mutex
	work := make(chan want)
	var vg sync.WaitGroup
	for i := range min(8, len(clients)) {
		vg.Add(1)
		go func() {
			defer vg.Done()
			c := clients[i]
			for w := range work {
				r, err := c.cs[balancer.pick(len(c.cs))].CallTool(ctx, &mcp.CallToolParams{Name: qa.ToolGet, Arguments: qa.GetInput{RunID: w.runID}})
				var s qa.Session
				if err == nil && r.IsError {
					err = errors.New(toolText(r))
				}
				if err == nil {
					err = decode(r, &s)
				}
				mu.Lock()
				switch {
				case err != nil && strings.HasPrefix(err.Error(), string(qa.CodeUnknownRunID)):
					res.lost++
				case err != nil:
					res.verifyErrs = append(res.verifyErrs, fmt.Sprintf("get %s: %v", w.runID, err))
				case s.Revision < int64(w.acked):
					res.lost++
				case s.Revision > int64(w.acked):
					res.double++
				case len(s.TransitionReceipts) != w.acked:
					res.badReceipt++
				}
				if err == nil && s.Status == qa.StatusCompleted {
					res.finished++
				}
				mu.Unlock()
			}
		}()
	}
	for _, w := range wants {
		work <- w
	}
	close(work)
	vg.Wait()
	stored, err := listSessions(ctx, clients[0].cs[0])
	if err != nil {
		res.verifyErrs = append(res.verifyErrs, "list: "+err.Error())
	}
	res.stored = len(stored)
	return res, version, nil
}

// ---- the capacity race --------------------------------------------------------

type raceResult struct {
	cfg        storeConfig
	starts     int
	limit      int
	succeeded  int
	refused    int
	other      int
	otherText  []string
	maxSeen    int // most sessions any monitor sample saw
	samples    int
	finalCount int
}

func (r raceResult) ok() bool {
	return r.succeeded == r.limit && r.refused == r.starts-r.limit && r.other == 0 && r.maxSeen <= r.limit &&
		r.finalCount == r.limit
}

func runRace(ctx context.Context, cfg config, st *stores, sc storeConfig, token string) (raceResult, error) {
	res := raceResult{cfg: sc, starts: cfg.raceStarts, limit: cfg.raceLimit}
	spec, pgURL, err := st.fresh(ctx, sc.kind)
	if err != nil {
		return res, err
	}
	reps, err := startReplicas(ctx, cfg, token, spec, sc.replicas, cfg.raceLimit)
	if err != nil {
		return res, err
	}
	defer stopAll(reps)
	const perReplica = 16
	var sessions []*mcp.ClientSession
	for range perReplica {
		for _, r := range reps {
			cs, err := connect(ctx, r.url, token, 8)
			if err != nil {
				return res, err
			}
			defer cs.Close()
			sessions = append(sessions, cs)
		}
	}
	monitorCS, err := connect(ctx, reps[0].url, token, 2)
	if err != nil {
		return res, err
	}
	defer monitorCS.Close()
	var pg *pgx.Conn
	if pgURL != "" {
		if pg, err = pgx.Connect(ctx, pgURL); err != nil {
			return res, err
		}
		defer pg.Close(context.Background())
	}
	count := func() (int, error) {
		if pg != nil {
			var n int
			err := pg.QueryRow(ctx, `SELECT count(*) FROM qa_sessions WHERE status IN ('active', 'awaiting_host_outcome')`).Scan(&n)
			return n, err
		}
		sessions, err := listSessions(ctx, monitorCS)
		if err != nil {
			return 0, err
		}
		n := 0
		for _, s := range sessions {
			if s.Status == qa.StatusActive || s.Status == qa.StatusAwaitingHostOutcome {
				n++
			}
		}
		return n, nil
	}

	logf("[%s] capacity race: %d starts against --max-sessions %d", sc, cfg.raceStarts, cfg.raceLimit)
	stopMon := make(chan struct{})
	monDone := make(chan error, 1)
	go func() {
		for {
			n, err := count()
			if err != nil {
				monDone <- err
				return
			}
			res.samples++
			res.maxSeen = max(res.maxSeen, n)
			select {
			case <-stopMon:
				monDone <- nil
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	}()
	gate := make(chan struct{})
	var mu sync.Mutex
	var wg sync.WaitGroup
	rc := reviewContext()
	for i := range cfg.raceStarts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-gate
			r, err := sessions[i%len(sessions)].CallTool(ctx, &mcp.CallToolParams{Name: qa.ToolStart,
				Arguments: qa.StartInput{TaskType: qa.TaskOrdinaryReview, ReviewContext: rc}})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				res.other++
				if len(res.otherText) < 3 {
					res.otherText = append(res.otherText, err.Error())
				}
			case !r.IsError:
				res.succeeded++
			case strings.HasPrefix(toolText(r), string(qa.CodeSessionLimit)):
				res.refused++
			default:
				res.other++
				if len(res.otherText) < 3 {
					res.otherText = append(res.otherText, toolText(r))
				}
			}
		}()
	}
	close(gate)
	wg.Wait()
	close(stopMon)
	if err := <-monDone; err != nil {
		return res, fmt.Errorf("capacity monitor: %w", err)
	}
	n, err := count()
	if err != nil {
		return res, err
	}
	res.finalCount = n
	res.maxSeen = max(res.maxSeen, n)
	return res, nil
}

// ---- report -------------------------------------------------------------------

func run(ctx context.Context, cfg config) (string, bool, error) {
	tmp, err := os.MkdirTemp("", "diffpal-mcpload-")
	if err != nil {
		return "", false, err
	}
	st := &stores{pgBase: cfg.postgres, tmp: tmp}
	defer st.close()
	token := fmt.Sprintf("mcpload-%d-%d", time.Now().UnixNano(), os.Getpid())

	var loads []loadResult
	var races []raceResult
	pgVersion := ""
	for _, sc := range cfg.configs {
		lr, v, err := runLoad(ctx, cfg, st, sc, token)
		if err != nil {
			return "", false, fmt.Errorf("%s load: %w", sc, err)
		}
		if v != "" {
			pgVersion = v
		}
		loads = append(loads, lr)
		rr, err := runRace(ctx, cfg, st, sc, token)
		if err != nil {
			return "", false, fmt.Errorf("%s capacity race: %w", sc, err)
		}
		races = append(races, rr)
	}

	var b strings.Builder
	ok := true
	fmt.Fprintf(&b, "<!-- go run ./bench/mcpload %s -->\n", cfg.args)
	fmt.Fprintf(&b, "`diffpal mcp --http` replicas under load: %d concurrent clients per replica, %d tool calls per configuration, every call balanced round robin over the replicas (review-bound flows: start, triage, %s, synthesis, finish, get, export; every write conditional and with a request_id). %d CPUs (GOMAXPROCS %d), %s/%s",
		cfg.clients, cfg.calls, "one report per profile of the ordinary bundle", runtime.NumCPU(), runtime.GOMAXPROCS(0), runtime.GOOS, runtime.GOARCH)
	if pgVersion != "" {
		fmt.Fprintf(&b, ", PostgreSQL %s (%s)", pgVersion, map[bool]string{true: "-postgres server", false: "private cluster, fsync off"}[cfg.postgres != ""])
	}
	b.WriteString(".\n\n")
	b.WriteString("| store × replicas | clients | calls | wall s | calls/s | p50 ms | p99 ms | sessions (finished) | lost | double-applied | errors |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range loads {
		all := r.rec.all()
		mark := ""
		if !r.ok() {
			ok, mark = false, " ✗"
		}
		fmt.Fprintf(&b, "| %s%s | %d | %d | %.1f | %.0f | %s | %s | %d (%d) | %d | %d | %d |\n", r.cfg.label(), mark, r.clients, r.calls,
			r.wall.Seconds(), float64(len(all))/r.wall.Seconds(), ms(quantile(all, 0.5)), ms(quantile(all, 0.99)),
			r.sessions, r.finished, r.lost, r.double, r.rec.errors())
	}
	b.WriteString("\nLost: a session whose revision read back is below its acknowledged mutating calls (or that is gone); double-applied: above them. Every session started is read back; the store held exactly those sessions")
	for _, r := range loads {
		if r.stored != r.sessions || r.badReceipt != 0 {
			fmt.Fprintf(&b, " — except %s: %d stored of %d, %d with a receipt count differing from the acknowledged writes", r.cfg.label(), r.stored, r.sessions, r.badReceipt)
		}
	}
	b.WriteString(".\n\nPer tool, p50 / p99 ms:\n\n| tool |")
	for _, r := range loads {
		fmt.Fprintf(&b, " %s |", r.cfg.label())
	}
	b.WriteString("\n|---|")
	for range loads {
		b.WriteString("---:|")
	}
	b.WriteString("\n")
	for _, tool := range []string{qa.ToolStart, qa.ToolAdvance, qa.ToolFinish, qa.ToolGet, qa.ToolExport} {
		fmt.Fprintf(&b, "| %s |", tool)
		for _, r := range loads {
			l := r.rec.lat[tool]
			fmt.Fprintf(&b, " %s / %s (%d) |", ms(quantile(l, 0.5)), ms(quantile(l, 0.99)), len(l))
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "\nCapacity race: %d start calls released at once, spread over the replicas, against --max-sessions %d on a fresh store; the monitor samples the active sessions while they race (a SQL count for PostgreSQL, list_qa_orchestrations for SQLite).\n\n",
		cfg.raceStarts, cfg.raceLimit)
	b.WriteString("| store × replicas | starts | limit | succeeded | refused (session limit) | other errors | most active seen (samples) | active after |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range races {
		mark := ""
		if !r.ok() {
			ok, mark = false, " ✗"
		}
		fmt.Fprintf(&b, "| %s%s | %d | %d | %d | %d | %d | %d (%d) | %d |\n", r.cfg.label(), mark, r.starts, r.limit, r.succeeded, r.refused,
			r.other, r.maxSeen, r.samples, r.finalCount)
	}
	var notes []string
	for _, r := range loads {
		notes = append(notes, r.rec.sample...)
		notes = append(notes, r.verifyErrs...)
	}
	for _, r := range races {
		notes = append(notes, r.otherText...)
	}
	if len(notes) > 0 {
		b.WriteString("\nFirst errors:\n\n")
		for _, n := range notes[:min(len(notes), 10)] {
			fmt.Fprintf(&b, "- `%s`\n", strings.ReplaceAll(n, "`", "'"))
		}
	}
	return b.String(), ok, nil
}

package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/diffpalhq/diffpal/internal/qa"
	"github.com/diffpalhq/diffpal/internal/qa/store/postgres/pgtest"
)

// Fault tests of `diffpal mcp --http` replicas sharing one PostgreSQL
// database (issue 14, item 4): a replica killed with SIGKILL mid-flow, and
// the database restarted mid-flow. Clients reach the replicas through
// fleet, a client-side load balancer: every call goes to the next replica
// that is up (round robin), so the calls of one session are spread over
// both; a replica whose /healthz stops answering is taken out, as a load
// balancer's health check would. Every mutating call is conditional on the
// revision the client last saw and carries a request_id, as a careful host
// sends them; a call that failed in transport (the answer never arrived) is
// retried with the same arguments, so a write that was applied before its
// answer was lost is answered from its replay receipt.
//
// Timeouts only bound hangs; nothing asserts how long anything takes.

// replicaFlowMutations is the number of mutating calls of fleetFlow: triage,
// three profiles, deep review, synthesis and finish. A finished session's
// revision must equal it (0 lost, 0 applied twice).
const replicaFlowMutations = 7

// fleet is the set of replicas the clients balance over.
type fleet struct {
	bases []string // http://HOST:PORT of each replica
	names []string
	mu    sync.Mutex
	down  []bool
	rr    atomic.Uint64
}

func newFleet(names []string, bins ...*httpBinary) *fleet {
	f := &fleet{names: names, down: make([]bool, len(bins))}
	for _, b := range bins {
		f.bases = append(f.bases, b.base)
	}
	return f
}

// pick returns the next replica that is up, round robin.
func (f *fleet) pick() (int, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := uint64(len(f.bases))
	start := f.rr.Add(1)
	for i := range n {
		r := int((start + i) % n)
		if !f.down[r] {
			return r, true
		}
	}
	return 0, false
}

func (f *fleet) isDown(r int) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.down[r]
}

// check is the balancer's health check after a transport failure on r: a
// replica whose /healthz does not answer 200 is taken out for good.
func (f *fleet) check(r int) {
	hc := &http.Client{Timeout: 5 * time.Second}
	resp, err := hc.Get(f.bases[r] + HealthPath)
	if err == nil {
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			return
		}
	}
	f.mu.Lock()
	f.down[r] = true
	f.mu.Unlock()
}

// loseAnswer, armed on a client's transport to one replica, lets the next
// tools/call through, reads the replica's whole answer (so the call was
// applied and answered), reports it on answered, waits for proceed and then
// fails the round trip: the answer was in transit when the replica died.
type loseAnswer struct {
	answered chan<- struct{}
	proceed  <-chan struct{}
}

// hookTransport is one client's HTTP transport to one replica.
type hookTransport struct {
	base http.RoundTripper
	mu   sync.Mutex
	lose *loseAnswer
}

func (h *hookTransport) arm(l *loseAnswer) {
	h.mu.Lock()
	h.lose = l
	h.mu.Unlock()
}

func (h *hookTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	var lose *loseAnswer
	if r.Method == http.MethodPost && r.Body != nil {
		h.mu.Lock()
		lose, h.lose = h.lose, nil
		h.mu.Unlock()
	}
	resp, err := h.base.RoundTrip(r)
	if lose == nil {
		return resp, err
	}
	if err == nil {
		_, err = io.ReadAll(resp.Body)
		resp.Body.Close()
	}
	if err != nil {
		return nil, fmt.Errorf("loseAnswer: the armed call failed before it was answered: %w", err)
	}
	lose.answered <- struct{}{}
	<-lose.proceed
	return nil, errors.New("connection reset: the replica died while answering")
}

// fleetClient is one host: an MCP client session to every replica, used
// call by call as the balancer picks.
type fleetClient struct {
	t     *testing.T
	id    int
	fleet *fleet
	mu    sync.Mutex
	cs    []*mcp.ClientSession // nil: not connected (yet, or since a failure)
	tr    []*hookTransport

	s        qa.Session // the state the client last acknowledged
	acked    int        // acknowledged mutating calls
	byRep    []int      // acknowledged calls per replica
	storeErr []string   // tool errors that said the store failed (retried)
	protoErr int        // transport failures (retried)
	// afterKill counts calls begun after killed was closed, and which
	// replica answered them.
	killed     <-chan struct{}
	afterKill  []int
	retryStore bool // retry tool errors with a session-store code
	background atomic.Bool
}

func newFleetClient(t *testing.T, id int, f *fleet) *fleetClient {
	c := &fleetClient{t: t, id: id, fleet: f, cs: make([]*mcp.ClientSession, len(f.bases)),
		byRep: make([]int, len(f.bases)), afterKill: make([]int, len(f.bases))}
	for range f.bases {
		c.tr = append(c.tr, &hookTransport{base: http.DefaultTransport.(*http.Transport).Clone()})
	}
	t.Cleanup(func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		for _, cs := range c.cs {
			if cs != nil {
				cs.Close()
			}
		}
	})
	return c
}

// fatalf fails the test and stops the client: with FailNow on the test
// goroutine, with Goexit on a client goroutine of inParallel / goClient
// (FailNow may only be called from the test goroutine).
func (c *fleetClient) fatalf(format string, args ...any) {
	c.t.Helper()
	c.t.Errorf(format, args...)
	if c.background.Load() {
		runtime.Goexit()
	}
	c.t.FailNow()
}

// decode checks a successful answer as mustOK does and decodes it.
func (c *fleetClient) decode(res *mcp.CallToolResult, name string, out any) {
	c.t.Helper()
	if res.StructuredContent == nil {
		c.fatalf("client %d: %s: no structured content", c.id, name)
	}
	raw, err := json.Marshal(res.StructuredContent)
	if err != nil {
		c.fatalf("client %d: %s: %v", c.id, name, err)
	}
	var x, y any
	if json.Unmarshal(raw, &x) != nil || json.Unmarshal([]byte(resultText(res)), &y) != nil || !reflect.DeepEqual(x, y) {
		c.fatalf("client %d: %s: text content differs from structured content", c.id, name)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			c.fatalf("client %d: %s: decode: %v\n%s", c.id, name, err, raw)
		}
	}
}

// session returns the client session to replica r, connecting if needed.
func (c *fleetClient) session(ctx context.Context, r int) (*mcp.ClientSession, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cs[r] != nil {
		return c.cs[r], nil
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: fmt.Sprintf("fleet-client-%d", c.id), Version: "1"}, nil).
		Connect(ctx, &mcp.StreamableClientTransport{Endpoint: c.fleet.bases[r] + HTTPPath,
			HTTPClient: &http.Client{Transport: c.tr[r]}, MaxRetries: 1}, nil)
	if err != nil {
		return nil, err
	}
	c.cs[r] = cs
	return cs, nil
}

func (c *fleetClient) drop(r int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cs[r] != nil {
		go c.cs[r].Close()
		c.cs[r] = nil
	}
}

// isStoreFailure reports whether a tool error's text carries one of the
// codes the orchestrator gives an unreachable session store.
func isStoreFailure(txt string) bool {
	for _, code := range []qa.Code{qa.CodeStoreRead, qa.CodeStoreUpdate, qa.CodeStoreWrite} {
		if strings.HasPrefix(txt, string(code)) {
			return true
		}
	}
	return false
}

// errTransport marks a call whose answer did not arrive.
var errTransport = errors.New("transport failure")

// callOnce sends one call to replica r (or to the balancer's pick when
// r < 0). A transport failure is returned wrapping errTransport (after the
// balancer's health check); a tool error is returned as text.
func (c *fleetClient) callOnce(ctx context.Context, r int, name string, args any) (int, *mcp.CallToolResult, error) {
	if r < 0 {
		var ok bool
		if r, ok = c.fleet.pick(); !ok {
			return r, nil, errors.New("no replica is up")
		}
	}
	cs, err := c.session(ctx, r)
	if err == nil {
		cctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		var res *mcp.CallToolResult
		res, err = cs.CallTool(cctx, &mcp.CallToolParams{Name: name, Arguments: args})
		cancel()
		if err == nil {
			return r, res, nil
		}
	}
	if ctx.Err() != nil {
		return r, nil, ctx.Err()
	}
	c.drop(r)
	c.fleet.check(r)
	return r, nil, fmt.Errorf("%w on %s: %v", errTransport, c.fleet.names[r], err)
}

// call runs one step until it is answered: transport failures (and, with
// retryStore, session-store tool errors) are retried with the same
// arguments on whichever replica the balancer picks next. Any other tool
// error fails the test. The answer is decoded into out.
func (c *fleetClient) call(ctx context.Context, name string, args, out any) (replica int) {
	c.t.Helper()
	after := false
	select {
	case <-c.killed:
		after = c.killed != nil
	default:
	}
	for attempt := 0; ; attempt++ {
		if ctx.Err() != nil {
			c.fatalf("client %d: %s never succeeded: %v", c.id, name, ctx.Err())
		}
		r, res, err := c.callOnce(ctx, -1, name, args)
		if errors.Is(err, errTransport) {
			c.protoErr++
			time.Sleep(time.Duration(min(attempt, 20)) * 10 * time.Millisecond)
			continue
		}
		if err != nil {
			c.fatalf("client %d: %s: %v", c.id, name, err)
		}
		if res.IsError {
			txt := resultText(res)
			if c.retryStore && isStoreFailure(txt) {
				c.storeErr = append(c.storeErr, txt)
				time.Sleep(time.Duration(min(attempt, 20)) * 10 * time.Millisecond)
				continue
			}
			c.fatalf("client %d: %s on %s: tool error: %s", c.id, name, c.fleet.names[r], txt)
		}
		c.decode(res, name, out)
		c.byRep[r]++
		if after {
			c.afterKill[r]++
		}
		return r
	}
}

// step is the n-th call of a review-bound flow (0: start … 7: finish) for
// the client's current session.
func (c *fleetClient) step(n int) (string, any) {
	s := c.s
	hash := (*string)(nil)
	if s.ReviewContext != nil {
		hash = s.ReviewContext.ReviewRulesSHA256
	}
	adv := func(in qa.AdvanceInput) (string, any) {
		in.RunID, in.ExpectedRevision, in.RequestID = s.RunID, ptr(s.Revision), ptr(fmt.Sprintf("c%d:%d", c.id, n))
		return qa.ToolAdvance, in
	}
	switch n {
	case 0:
		return qa.ToolStart, qa.StartInput{TaskType: qa.TaskOrdinaryReview, ReviewContext: reviewContext()}
	case 1:
		return adv(qa.AdvanceInput{CompletedStep: qa.StepTriage, Status: qa.OutcomeCompleted, SelectedBundle: ptr(qa.BundleSecurity)})
	case 2:
		return adv(qa.AdvanceInput{CompletedStep: qa.StepPrimaryReview, Status: qa.OutcomeCompleted,
			CompletedProfile: ptr(qa.ProfileCodeExplorer), ProfileReport: profileReport(qa.ProfileCodeExplorer, hash)})
	case 3:
		return adv(qa.AdvanceInput{CompletedStep: qa.StepPrimaryReview, Status: qa.OutcomeCompleted,
			CompletedProfile: ptr(qa.ProfileSecurityReviewer),
			ProfileReport:    profileReport(qa.ProfileSecurityReviewer, hash, candidate("F-01", "login skips the rate limiter", true))})
	case 4:
		return adv(qa.AdvanceInput{CompletedStep: qa.StepPrimaryReview, Status: qa.OutcomeCompleted,
			CompletedProfile: ptr(qa.ProfileSilentFailureHunter),
			ProfileReport: profileReport(qa.ProfileSilentFailureHunter, hash,
				candidate("F-01", "empty cart total swallowed", true),
				candidate("F-02", "retry loop hides the error", false),
				candidate("F-03", "fallback price used silently", true)),
			RiskSignals: &qa.RiskSignals{HighRiskDomain: true, EvidenceUncertain: true, EvidenceRefs: []string{"E1"},
				Rationale: ptr("auth change; the limiter's enforcement point is outside the packet")}})
	case 5:
		return adv(qa.AdvanceInput{CompletedStep: qa.StepDeepReview, Status: qa.OutcomeCompleted})
	case 6:
		return adv(qa.AdvanceInput{CompletedStep: qa.StepSynthesis, Status: qa.OutcomeCompleted,
			FinalReviewReport: finalReport(c.t, s)})
	case 7:
		return qa.ToolFinish, qa.FinishInput{RunID: s.RunID, Outcome: qa.OutcomeCompleted, ExpectedRevision: ptr(s.Revision),
			RequestID: ptr(fmt.Sprintf("c%d:%d", c.id, n))}
	}
	panic("no such step")
}

// ack records the answer to step n: every acknowledged write moves the
// revision by exactly one.
func (c *fleetClient) ack(n int, got qa.Session) {
	c.t.Helper()
	if n == 0 {
		if got.Revision != 0 || got.RunID == "" {
			c.fatalf("client %d: start answered revision %d", c.id, got.Revision)
		}
	} else {
		if got.RunID != c.s.RunID || got.Revision != c.s.Revision+1 {
			c.fatalf("client %d: step %d answered %s revision %d after revision %d", c.id, n, got.RunID, got.Revision, c.s.Revision)
		}
		c.acked++
	}
	c.s = got
}

// run drives steps [from, to) through the balancer.
func (c *fleetClient) run(ctx context.Context, from, to int) {
	c.t.Helper()
	for n := from; n < to; n++ {
		name, args := c.step(n)
		var got qa.Session
		c.call(ctx, name, args, &got)
		c.ack(n, got)
	}
}

// finishFlow runs the rest of the flow and reads the result back: export
// (the final report the session holds) and get.
func (c *fleetClient) finishFlow(ctx context.Context, from int) {
	c.t.Helper()
	c.run(ctx, from, replicaFlowMutations+1)
	var exp struct {
		Findings []json.RawMessage `json:"findings"`
	}
	c.call(ctx, qa.ToolExport, qa.ExportInput{RunID: c.s.RunID}, &exp)
	if len(exp.Findings) != 2 {
		c.t.Errorf("client %d: export has %d findings, want 2", c.id, len(exp.Findings))
	}
}

// verifyFinal reads every client's session through replica r and checks
// that every acknowledged call is reflected in it exactly once: the
// revision equals the acknowledged mutating calls, and the receipts are
// the client's request ids in order with continuous applied revisions. The
// database holds exactly the clients' sessions, at those revisions.
func verifyFinal(ctx context.Context, t *testing.T, dbURL string, reader *fleetClient, r int, clients []*fleetClient) {
	t.Helper()
	for _, c := range clients {
		if c.acked != replicaFlowMutations {
			t.Errorf("client %d: %d acknowledged mutating calls, want %d", c.id, c.acked, replicaFlowMutations)
		}
		_, res, err := reader.callOnce(ctx, r, qa.ToolGet, qa.GetInput{RunID: c.s.RunID})
		if err != nil {
			t.Fatalf("get %s: %v", c.s.RunID, err)
		}
		var s qa.Session
		mustOK(t, res, qa.ToolGet, &s)
		if s.Revision != int64(c.acked) || s.Status != qa.StatusCompleted || s.FinalReviewReport == nil {
			t.Errorf("client %d: stored revision %d status %s, want revision %d (acknowledged) completed",
				c.id, s.Revision, s.Status, c.acked)
		}
		var ids []string
		for i, rc := range s.TransitionReceipts {
			ids = append(ids, rc.RequestID)
			if rc.AppliedRevision != int64(i+1) {
				t.Errorf("client %d: receipt %d (%s) applied at revision %d", c.id, i, rc.RequestID, rc.AppliedRevision)
			}
		}
		var want []string
		for n := 1; n <= replicaFlowMutations; n++ {
			want = append(want, fmt.Sprintf("c%d:%d", c.id, n))
		}
		if !slices.Equal(ids, want) {
			t.Errorf("client %d: receipts %v, want %v (each acknowledged write once, in order)", c.id, ids, want)
		}
	}
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	rows, err := conn.Query(ctx, `SELECT run_id, revision FROM qa_sessions`)
	if err != nil {
		t.Fatal(err)
	}
	stored := map[string]int64{}
	for rows.Next() {
		var id string
		var rev int64
		if err := rows.Scan(&id, &rev); err != nil {
			t.Fatal(err)
		}
		stored[id] = rev
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(stored) != len(clients) {
		t.Errorf("the database holds %d sessions, want the %d the clients started", len(stored), len(clients))
	}
	for _, c := range clients {
		if rev, ok := stored[c.s.RunID]; !ok || rev != int64(c.acked) {
			t.Errorf("client %d: row revision %d (present %v), want %d", c.id, rev, ok, c.acked)
		}
	}
}

func rowRevision(ctx context.Context, t *testing.T, conn *pgx.Conn, runID string) int64 {
	t.Helper()
	var rev int64
	if err := conn.QueryRow(ctx, `SELECT revision FROM qa_sessions WHERE run_id = $1`, runID).Scan(&rev); err != nil {
		t.Fatalf("read %s: %v", runID, err)
	}
	return rev
}

// goClient runs fn for c on a goroutine of its own, where a failure ends
// only that goroutine (the test is marked failed); wg is done after it.
func goClient(wg *sync.WaitGroup, c *fleetClient, fn func(c *fleetClient)) {
	wg.Add(1)
	go func() {
		defer wg.Done()
		c.background.Store(true)
		defer c.background.Store(false)
		fn(c)
	}()
}

// inParallel runs fn for every client at once and waits.
func inParallel(clients []*fleetClient, fn func(c *fleetClient)) {
	var wg sync.WaitGroup
	for _, c := range clients {
		goClient(&wg, c, fn)
	}
	wg.Wait()
}

func startReplica(t *testing.T, dbURL string) *httpBinary {
	t.Helper()
	return runHTTPBinary(t, nil, "--http", "127.0.0.1:0", "--store", dbURL, "--max-sessions", "1000",
		"--ttl", "2h", "--log-format", "json")
}

// TestBinaryReplicaKilledMidFlow: two replicas on one database; eight
// clients run review-bound flows with every call balanced over both. With
// every session mid-flow, replica A is killed with SIGKILL while two calls
// are in flight on it:
//   - client 0's write was applied and answered by A, but the answer is
//     lost as A dies; its retry with the same request_id goes to B and is
//     answered by the replay receipt (the row stays at the revision A
//     wrote: nothing applied twice);
//   - client 1's write is blocked in PostgreSQL on a row lock the test
//     holds when A dies; its retry on B applies it once, whether or not
//     A's orphaned statement committed after the lock was released;
//   - the other clients continue meanwhile, their calls to A failing over
//     to B.
//
// Every session then runs to completion on B (every call begun after the
// kill is answered by B), and the final state reflects every acknowledged
// call exactly once.
func TestBinaryReplicaKilledMidFlow(t *testing.T) {
	c := pgtest.NewCluster(t)
	dbURL := c.URL(t)
	a, b := startReplica(t, dbURL), startReplica(t, dbURL)
	f := newFleet([]string{"replica A", "replica B"}, a, b)
	const A, B = 0, 1
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	killed := make(chan struct{})
	clients := make([]*fleetClient, 8)
	for i := range clients {
		clients[i] = newFleetClient(t, i, f)
		clients[i].killed = killed
	}
	// Phase 1: start, triage and the first profile, spread over A and B.
	inParallel(clients, func(c *fleetClient) { c.run(ctx, 0, 3) })
	if t.Failed() {
		t.FailNow()
	}
	var onA, onB int
	for _, c := range clients {
		onA += c.byRep[A]
		onB += c.byRep[B]
	}
	if onA == 0 || onB == 0 {
		t.Fatalf("calls before the kill: %d on A, %d on B; want both replicas used", onA, onB)
	}

	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())

	// Client 0's next write is applied and answered by A; the answer is
	// lost when A dies. (First: A's orchestrator serialises its calls, so
	// it must be done with this one before client 1's blocks it.)
	c0 := clients[0]
	rev0 := c0.s.Revision
	answered, proceed := make(chan struct{}, 1), make(chan struct{})
	if _, err := c0.session(ctx, A); err != nil { // connect first: only the call is intercepted
		t.Fatal(err)
	}
	c0.tr[A].arm(&loseAnswer{answered: answered, proceed: proceed})
	name0, args0 := c0.step(3)
	lost := make(chan error, 1)
	go func() {
		_, res, err := c0.callOnce(ctx, A, name0, args0)
		if err == nil {
			err = fmt.Errorf("answered (error %v): %s", res.IsError, resultText(res))
		}
		lost <- err
	}()
	select {
	case <-answered:
	case err := <-lost:
		t.Fatalf("client 0's write on A: %v", err)
	case <-ctx.Done():
		t.Fatal("client 0's write on A was never answered")
	}
	if got := rowRevision(ctx, t, conn, c0.s.RunID); got != rev0+1 {
		t.Fatalf("client 0's write answered by A but the row is at revision %d, want %d", got, rev0+1)
	}

	// Client 1's next write, sent to A, waits on a row lock the test holds.
	c1 := clients[1]
	lockConn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer lockConn.Close(context.Background())
	tx, err := lockConn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background())
	if _, err := tx.Exec(ctx, `SELECT 1 FROM qa_sessions WHERE run_id = $1 FOR UPDATE`, c1.s.RunID); err != nil {
		t.Fatal(err)
	}
	name1, args1 := c1.step(3)
	blocked := make(chan error, 1)
	go func() {
		_, res, err := c1.callOnce(ctx, A, name1, args1)
		if err == nil {
			err = fmt.Errorf("answered (error %v): %s", res.IsError, resultText(res))
		}
		blocked <- err
	}()
	var waitingPID int32
	for waitingPID == 0 {
		err := conn.QueryRow(ctx, `SELECT coalesce(max(pid), 0) FROM pg_stat_activity
			WHERE application_name = 'diffpal-mcp' AND wait_event_type = 'Lock'`).Scan(&waitingPID)
		if err != nil {
			t.Fatal(err)
		}
		if waitingPID == 0 {
			select {
			case <-ctx.Done():
				t.Fatal("client 1's write never reached the database")
			case err := <-blocked:
				t.Fatalf("client 1's write on A returned before blocking: %v", err)
			case <-time.After(10 * time.Millisecond):
			}
		}
	}

	// The other clients carry on while A dies.
	var rest sync.WaitGroup
	for _, c := range clients[2:] {
		goClient(&rest, c, func(c *fleetClient) { c.finishFlow(ctx, 3) })
	}
	if err := a.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-a.exited
	close(killed)
	close(proceed)

	for name, ch := range map[string]chan error{"client 0 (answer lost)": lost, "client 1 (blocked on a lock)": blocked} {
		select {
		case err := <-ch:
			if !errors.Is(err, errTransport) {
				t.Errorf("%s: the call in flight on A ended with %v, want a transport failure", name, err)
			}
		case <-ctx.Done():
			t.Fatalf("%s: the call in flight on A never returned", name)
		}
	}
	if !f.isDown(A) {
		t.Error("the balancer did not take A out after its calls failed")
	}

	// Let A's orphaned statement run: release the lock and wait for its
	// backend to go.
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	for {
		var n int
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE pid = $1`, waitingPID).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("A's backend never went away")
		case <-time.After(10 * time.Millisecond):
		}
	}
	rev1 := c1.s.Revision
	appliedByA := rowRevision(ctx, t, conn, c1.s.RunID) == rev1+1
	t.Logf("client 1's write blocked when A died: applied by A's orphaned statement: %v", appliedByA)

	// The retries, with the same request_id, go to B.
	var got0, got1 qa.Session
	if r := c0.call(ctx, name0, args0, &got0); r != B {
		t.Errorf("client 0's retry answered by %s", f.names[r])
	}
	c0.ack(3, got0)
	if got := rowRevision(ctx, t, conn, c0.s.RunID); got != rev0+1 {
		t.Errorf("client 0's retry moved the row to revision %d, want %d (the replay receipt answers it)", got, rev0+1)
	}
	if r := c1.call(ctx, name1, args1, &got1); r != B {
		t.Errorf("client 1's retry answered by %s", f.names[r])
	}
	c1.ack(3, got1)
	if got := rowRevision(ctx, t, conn, c1.s.RunID); got != rev1+1 {
		t.Errorf("client 1's retry left the row at revision %d, want %d", got, rev1+1)
	}
	inParallel(clients[:2], func(c *fleetClient) { c.finishFlow(ctx, 4) })
	rest.Wait()
	if t.Failed() {
		t.FailNow()
	}

	var afterA, afterB, retried int
	for _, c := range clients {
		afterA += c.afterKill[A]
		afterB += c.afterKill[B]
		retried += c.protoErr
	}
	if afterA != 0 || afterB == 0 {
		t.Errorf("calls begun after the kill: %d answered by A, %d by B", afterA, afterB)
	}
	t.Logf("calls before the kill: %d on A, %d on B; after: %d on B; transport failures retried: %d", onA, onB, afterB, retried)
	verifyFinal(ctx, t, dbURL, clients[0], B, clients)
}

// TestBinaryPostgresRestartMidFlow: two replicas on one database, six
// clients mid-flow.
//   - PostgreSQL is stopped (fast shutdown) with every session mid-flow
//     and one client's write answered just before, its answer lost: while
//     the server is down every client's next call fails with a tool error
//     naming the session store (unable to read/update session store), not
//     a protocol error, not a revision conflict; /readyz says 503 on both
//     replicas; the server is started again and every call, retried with
//     the same request_id, succeeds once. The lost-answer retry is
//     answered by its replay receipt.
//   - Then PostgreSQL is restarted (pgtest Restart) while the clients run
//     the rest of their flows freely, retrying store errors and transport
//     failures with the same arguments.
//
// Every session finishes with every acknowledged call applied exactly
// once.
func TestBinaryPostgresRestartMidFlow(t *testing.T) {
	c := pgtest.NewCluster(t)
	dbURL := c.URL(t)
	a, b := startReplica(t, dbURL), startReplica(t, dbURL)
	f := newFleet([]string{"replica A", "replica B"}, a, b)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	clients := make([]*fleetClient, 6)
	for i := range clients {
		clients[i] = newFleetClient(t, i, f)
		clients[i].retryStore = true
	}
	inParallel(clients, func(c *fleetClient) { c.run(ctx, 0, 2) })
	if t.Failed() {
		t.FailNow()
	}
	// Client 0's step 2 is applied, but the client never sees the answer.
	c0 := clients[0]
	rev0 := c0.s.Revision
	name0, args0 := c0.step(2)
	c0.call(ctx, name0, args0, nil)

	c.Stop(t)
	for i, base := range f.bases {
		if code, _ := get(t, base+ReadyPath, nil); code != http.StatusServiceUnavailable {
			t.Errorf("%s: /readyz %d with the database down, want 503", f.names[i], code)
		}
	}
	// During the outage: each next call fails with a store error, on
	// either replica.
	for _, cl := range clients {
		name, args := cl.step(2)
		for r := range f.bases {
			_, res, err := cl.callOnce(ctx, r, name, args)
			if err != nil {
				t.Fatalf("client %d on %s during the outage: %v, want a tool error", cl.id, f.names[r], err)
			}
			txt := resultText(res)
			if !res.IsError || !isStoreFailure(txt) || res.StructuredContent != nil {
				t.Fatalf("client %d on %s during the outage: error %v %q, want a session-store tool error",
					cl.id, f.names[r], res.IsError, txt)
			}
		}
	}
	_, res, err := clients[1].callOnce(ctx, 0, qa.ToolStart, qa.StartInput{TaskType: qa.TaskOther})
	if err != nil {
		t.Fatalf("start during the outage: %v", err)
	}
	if !res.IsError || !isStoreFailure(resultText(res)) {
		t.Fatalf("start during the outage: error %v %q, want a session-store tool error", res.IsError, resultText(res))
	}
	t.Logf("during the outage, e.g.: %q", resultText(res))

	c.Start(t)
	// After it: the same calls succeed, once; client 0's is a replay.
	inParallel(clients, func(cl *fleetClient) {
		name, args := cl.step(2)
		var got qa.Session
		cl.call(ctx, name, args, &got)
		cl.ack(2, got)
	})
	if t.Failed() {
		t.FailNow()
	}
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	if got := rowRevision(ctx, t, conn, c0.s.RunID); got != rev0+1 {
		t.Errorf("client 0's retry after the outage: row revision %d, want %d (answered by the replay receipt)", got, rev0+1)
	}
	conn.Close(ctx)

	// A restart while the flows run freely: every client is one step on,
	// then the clients carry on at once and the server is restarted under
	// them.
	inParallel(clients, func(cl *fleetClient) { cl.run(ctx, 3, 4) })
	if t.Failed() {
		t.FailNow()
	}
	var flows sync.WaitGroup
	for _, cl := range clients {
		goClient(&flows, cl, func(cl *fleetClient) { cl.finishFlow(ctx, 4) })
	}
	c.Restart(t)
	flows.Wait()
	if t.Failed() {
		t.FailNow()
	}
	var storeErrs, protoErrs int
	for _, cl := range clients {
		storeErrs += len(cl.storeErr)
		protoErrs += cl.protoErr
		for _, txt := range cl.storeErr {
			if strings.Contains(txt, "postgres") || strings.Contains(txt, "/") {
				t.Errorf("client %d: a store error shows driver detail: %q", cl.id, txt)
			}
		}
	}
	t.Logf("store errors retried: %d; transport failures retried: %d", storeErrs, protoErrs)
	verifyFinal(ctx, t, dbURL, clients[0], 1, clients)
	for i, base := range f.bases {
		if code, _ := get(t, base+ReadyPath, nil); code != http.StatusOK {
			t.Errorf("%s: /readyz %d after the restart", f.names[i], code)
		}
	}
}

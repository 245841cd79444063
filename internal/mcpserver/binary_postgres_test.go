package mcpserver

import (
	"bufio"
	"context"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/diffpalhq/diffpal/internal/qa"
	"github.com/diffpalhq/diffpal/internal/qa/store/postgres/pgtest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// httpBinary is a `diffpal mcp --http` process the test controls.
type httpBinary struct {
	cmd    *exec.Cmd
	base   string // http://HOST:PORT
	mu     sync.Mutex
	stderr []string
	exited chan struct{}
}

func (b *httpBinary) log() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.Join(b.stderr, "\n")
}

// runHTTPBinary starts `diffpal mcp args...` and waits for its address.
// Cleanup kills it if the test did not stop it.
func runHTTPBinary(t *testing.T, env []string, args ...string) *httpBinary {
	t.Helper()
	bin := diffpalBinary(t)
	cmd := exec.Command(bin, append([]string{"mcp"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	b := &httpBinary{cmd: cmd, exited: make(chan struct{})}
	found := make(chan string, 1)
	scanned := make(chan struct{})
	go func() {
		defer close(scanned)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			b.mu.Lock()
			b.stderr = append(b.stderr, line)
			b.mu.Unlock()
			if m := servingRE.FindStringSubmatch(line); m != nil {
				select {
				case found <- m[1]:
				default:
				}
			}
		}
		close(found)
	}()
	// Wait closes the pipe, so it runs only after the scanner has read
	// everything the process wrote (the last lines are the shutdown log).
	go func() { <-scanned; _ = cmd.Wait(); close(b.exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-b.exited
	})
	select {
	case u, ok := <-found:
		if !ok {
			<-b.exited
			t.Fatalf("diffpal mcp exited before listening:\n%s", b.log())
		}
		b.base = strings.TrimSuffix(u, HTTPPath)
	case <-time.After(60 * time.Second):
		t.Fatalf("diffpal mcp did not report its address:\n%s", b.log())
	}
	return b
}

func pgURL(t *testing.T, c *pgtest.Cluster) string {
	t.Helper()
	return c.URL(t)
}

// TestBinaryReadyzFollowsPostgres: with --store postgres://…, /readyz is
// 200 while the database answers, 503 while it is stopped and 200 again
// once it is back; /healthz stays 200 throughout; neither needs the token.
// Logs are JSON with --log-format json.
func TestBinaryReadyzFollowsPostgres(t *testing.T) {
	c := pgtest.NewCluster(t)
	b := runHTTPBinary(t, []string{"DIFFPAL_TEST_TOKEN=" + testToken},
		"--http", "127.0.0.1:0", "--token-env", "DIFFPAL_TEST_TOKEN", "--store", pgURL(t, c), "--log-format", "json")
	cs := httpClient(t, b.base, testToken)
	var s qa.Session
	mustOK(t, callTool(t, cs, qa.ToolStart, qa.StartInput{TaskType: qa.TaskQAPlanning}), "start", &s)
	if code, body := get(t, b.base+ReadyPath, nil); code != http.StatusOK || body != "ok\n" {
		t.Fatalf("readyz with the database up: %d %q", code, body)
	}
	c.Stop(t)
	if code, body := get(t, b.base+ReadyPath, nil); code != http.StatusServiceUnavailable || strings.TrimSpace(body) != "unavailable" {
		t.Fatalf("readyz with the database stopped: %d %q", code, body)
	}
	if code, _ := get(t, b.base+HealthPath, nil); code != http.StatusOK {
		t.Fatalf("healthz with the database stopped: %d", code)
	}
	res := callTool(t, cs, qa.ToolGet, qa.GetInput{RunID: s.RunID})
	if !res.IsError {
		t.Fatal("get succeeded with the database stopped")
	}
	c.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for {
		code, _ := get(t, b.base+ReadyPath, nil)
		if code == http.StatusOK {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("readyz never recovered: %d", code)
		case <-time.After(50 * time.Millisecond):
		}
	}
	mustOK(t, callTool(t, cs, qa.ToolGet, qa.GetInput{RunID: s.RunID}), "get after the outage", &s)
	log := b.log()
	for _, want := range []string{`"level":"INFO","msg":"serving http://`, `"msg":"not ready: the session store does not answer"`,
		`"msg":"ready: the session store answers again"`} {
		if !strings.Contains(log, want) {
			t.Errorf("stderr lacks %s:\n%s", want, log)
		}
	}
}

// TestBinarySIGTERMFinishesInFlight: a call in flight when SIGTERM arrives
// (an advance blocked on a row lock the test holds in PostgreSQL) is
// answered before the process exits, while new connections are already
// refused; the store is closed and the write is committed.
func TestBinarySIGTERMFinishesInFlight(t *testing.T) {
	c := pgtest.NewCluster(t)
	dbURL := pgURL(t, c)
	b := runHTTPBinary(t, nil, "--http", "127.0.0.1:0", "--store", dbURL, "--log-format", "text")
	cs := httpClient(t, b.base, "")
	var s qa.Session
	mustOK(t, callTool(t, cs, qa.ToolStart, qa.StartInput{TaskType: qa.TaskOther}), "start", &s)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background())
	if _, err := tx.Exec(ctx, `SELECT 1 FROM qa_sessions WHERE run_id = $1 FOR UPDATE`, s.RunID); err != nil {
		t.Fatal(err)
	}
	answered := make(chan *qa.Session, 1)
	go func() {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: qa.ToolAdvance, Arguments: map[string]any{
			"run_id": s.RunID, "completed_step": "triage", "status": "blocked"}})
		if err != nil || res.IsError {
			t.Errorf("in-flight advance: %v %+v", err, res)
			answered <- nil
			return
		}
		var out qa.Session
		mustOK(t, res, "advance", &out)
		answered <- &out
	}()
	// In flight: the server's UPDATE waits on our lock.
	for {
		var n int64
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE application_name = 'diffpal-mcp' AND wait_event_type = 'Lock'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("the advance never reached the database")
		case <-time.After(10 * time.Millisecond):
		}
	}
	if err := b.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	// Shutdown has begun once the listener is closed.
	host := strings.TrimPrefix(b.base, "http://")
	for {
		nc, err := net.Dial("tcp", host)
		if err != nil {
			break
		}
		nc.Close()
		select {
		case <-ctx.Done():
			t.Fatal("the server kept accepting connections after SIGTERM")
		case <-time.After(5 * time.Millisecond):
		}
	}
	select {
	case <-b.exited:
		t.Fatalf("the process exited with a call in flight:\n%s", b.log())
	default:
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	out := <-answered
	if out == nil || out.Status != qa.StatusBlocked {
		t.Fatalf("in-flight advance answered %+v", out)
	}
	select {
	case <-b.exited:
	case <-ctx.Done():
		t.Fatal("the process did not exit after SIGTERM")
	}
	if st := b.cmd.ProcessState; st == nil || st.ExitCode() != 130 {
		t.Fatalf("exit state %v, want 130 (interrupted)\n%s", st, b.log())
	}
	var status string
	if err := conn.QueryRow(ctx, `SELECT status FROM qa_sessions WHERE run_id = $1`, s.RunID).Scan(&status); err != nil ||
		status != string(qa.StatusBlocked) {
		t.Fatalf("stored status %q, %v; want the in-flight write committed", status, err)
	}
	log := b.log()
	for _, want := range []string{"every in-flight call answered", `msg=stopped`} {
		if !strings.Contains(log, want) {
			t.Errorf("stderr lacks %q:\n%s", want, log)
		}
	}
}

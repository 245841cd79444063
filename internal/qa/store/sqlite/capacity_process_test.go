package sqlite_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/diffpalhq/diffpal/internal/qa"
	"github.com/diffpalhq/diffpal/internal/qa/store"
	"github.com/diffpalhq/diffpal/internal/qa/store/sqlite"
)

// capacityHelperEnv selects TestCapacityRaceHelper's mode in a child
// process: "start" (qa.Orchestrator.Start, what start_qa_orchestration
// does) or "put" (a bare store create).
const capacityHelperEnv = "DIFFPAL_SQLITE_CAPACITY_HELPER"

// raceTrials is how many times each cross-process race is run.
const raceTrials = 30

// Child outcomes, one line on stdout after the "go".
const (
	outcomeCreated  = "created"  // the create succeeded
	outcomeLimit    = "limit"    // qa's own pre-check refused: session limit
	outcomeCapacity = "capacity" // the store refused the create: ErrCapacity
	outcomeOther    = "error"    // anything else (SQLITE_BUSY would land here)
)

// TestCapacityRaceHelper is not a test: it is the child process of
// TestProcessesRaceForLastSlot. It opens the store with a limit of one,
// says "ready", waits for a line on stdin (the barrier), creates one
// session and prints its outcome.
func TestCapacityRaceHelper(t *testing.T) {
	mode := os.Getenv(capacityHelperEnv)
	if mode == "" {
		t.Skip("helper process only")
	}
	ctx := context.Background()
	fail := func(err error) {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	opts := []sqlite.Option{sqlite.WithMaxSessions(1)}
	if mode == "start" {
		opts = append(opts, sqlite.WithValidate(qa.ValidateRecord)) // as `diffpal mcp` opens it
	}
	st, err := sqlite.Open(ctx, os.Getenv(capacityHelperEnv+"_PATH"), opts...)
	if err != nil {
		fail(err)
	}
	o, err := qa.New(qa.Config{Store: st, MaxSessions: 1})
	if err != nil {
		fail(err)
	}
	fmt.Println("ready")
	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
		fail(err)
	}
	switch mode {
	case "start":
		_, err = o.Start(ctx, qa.StartInput{TaskType: qa.TaskOrdinaryReview})
	case "put":
		id := fmt.Sprintf("qar-%032x", os.Getpid())
		err = st.Put(ctx, store.Record{RunID: id, Status: "active", ExpiresAt: time.Now().Add(time.Hour),
			Payload: []byte("{}")}, store.Absent)
	default:
		fail(fmt.Errorf("unknown mode %q", mode))
	}
	var qerr *qa.Error
	switch {
	case err == nil:
		fmt.Println(outcomeCreated)
	case errors.Is(err, sqlite.ErrCapacity):
		fmt.Println(outcomeCapacity)
	case errors.As(err, &qerr) && qerr.Code == qa.CodeSessionLimit:
		fmt.Println(outcomeLimit)
	default:
		fmt.Println(outcomeOther, strings.ReplaceAll(err.Error(), "\n", " "))
	}
	_ = st.Close()
	os.Exit(0)
}

// raceOnce runs two helper processes in mode against a fresh store file,
// releases them together once both have opened it, and returns their
// outcomes and the number of active rows left in the file.
func raceOnce(t *testing.T, path, mode string) (outcomes []string, active int) {
	t.Helper()
	// Guards against a hung child only; nothing is asserted about time.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	st, err := sqlite.Open(ctx, path) // create the file before the race
	if err != nil {
		t.Fatal(err)
	}
	_ = st.Close()

	type child struct {
		cmd    *exec.Cmd
		stdin  io.WriteCloser
		stdout *bufio.Reader
		stderr *strings.Builder
	}
	var kids []child
	for range 2 {
		cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestCapacityRaceHelper$", "-test.count=1")
		cmd.Env = append(os.Environ(), capacityHelperEnv+"="+mode, capacityHelperEnv+"_PATH="+path,
			"GORACE=atexit_sleep_ms=0") // under -race, skip the detector's 1 s pause at exit
		in, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		errBuf := new(strings.Builder)
		cmd.Stderr = errBuf
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		kids = append(kids, child{cmd, in, bufio.NewReader(out), errBuf})
	}
	readLine := func(k child) string {
		line, err := k.stdout.ReadString('\n')
		if err != nil {
			_ = k.cmd.Wait()
			t.Fatalf("helper: %v; stderr: %s", err, k.stderr)
		}
		return strings.TrimSpace(line)
	}
	// Barrier: both have opened the store (each Open is a write
	// transaction of its own), then both are released at once.
	for _, k := range kids {
		if got := readLine(k); got != "ready" {
			t.Fatalf("helper said %q, want ready; stderr: %s", got, k.stderr)
		}
	}
	for _, k := range kids {
		if _, err := io.WriteString(k.stdin, "go\n"); err != nil {
			t.Fatal(err)
		}
	}
	for _, k := range kids {
		outcomes = append(outcomes, readLine(k))
		_ = k.stdin.Close()
		if err := k.cmd.Wait(); err != nil {
			t.Fatalf("helper: %v; stderr: %s", err, k.stderr)
		}
	}

	st, err = sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	recs, err := st.ListMeta(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if r.Status == string(qa.StatusActive) {
			active++
		}
	}
	return outcomes, active
}

// Two real processes sharing one SQLite file, each with --max-sessions 1,
// create a session at the same moment: in every trial exactly one wins and
// the other gets the capacity error, never a second active session and
// never SQLITE_BUSY. "start" goes through the orchestrator, as
// start_qa_orchestration does; "put" is the bare store create, with no
// pre-check in front of it.
func TestProcessesRaceForLastSlot(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	for _, mode := range []string{"start", "put"} {
		t.Run(mode, func(t *testing.T) {
			dir := t.TempDir()
			doubled, bad := 0, 0
			tally := map[string]int{}
			for i := range raceTrials {
				outcomes, active := raceOnce(t, filepath.Join(dir, fmt.Sprintf("trial-%02d.db", i)), mode)
				created, refused := 0, 0
				for _, o := range outcomes {
					tally[strings.Fields(o)[0]]++
					switch strings.Fields(o)[0] {
					case outcomeCreated:
						created++
					case outcomeCapacity:
						// Through the orchestrator a store refusal must reach
						// the client as session limit, not a storage error.
						if mode == "start" {
							continue
						}
						refused++
					case outcomeLimit:
						refused++
					}
				}
				if active > 1 {
					doubled++
				}
				if created != 1 || refused != 1 || active != 1 {
					bad++
					t.Errorf("trial %d: outcomes %q, %d active sessions; want one created, one refused for capacity, 1 active",
						i, outcomes, active)
				}
			}
			t.Logf("%s: %d of %d trials ended with two active sessions, %d of %d not exactly one winner and one capacity refusal; outcomes %v",
				mode, doubled, raceTrials, bad, raceTrials, tally)
		})
	}
}

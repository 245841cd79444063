package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/diffpalhq/diffpal/internal/qa/store"
)

// holdWriteLock takes the database's write lock from a connection outside
// any Store and returns the function that releases it.
func holdWriteLock(t *testing.T, path string) (release func()) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?mode=rw")
	if err != nil {
		t.Fatal(err)
	}
	conn, err := db.Conn(bg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(bg, "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	release = func() {
		once.Do(func() {
			_, _ = conn.ExecContext(bg, "ROLLBACK")
			conn.Close()
			db.Close()
		})
	}
	t.Cleanup(release)
	return release
}

// Two Stores on one file are two independent connections, as two replicas
// would be: racing conditional writes on one record have exactly one winner
// in every round.
func TestTwoStoresRaceOneWinner(t *testing.T) {
	path := dbPath(t)
	a, b := mustOpen(t, path), mustOpen(t, path)
	exp := t0.Add(time.Hour)
	put(t, a, record("qar-a", 0, "active", false, exp), store.Absent)
	for round := range int64(10) {
		const writers = 6
		errs := make([]error, writers)
		var wg sync.WaitGroup
		for i := range writers {
			s := []*Store{a, b}[i%2]
			wg.Go(func() {
				r := record("qar-a", round+1, fmt.Sprintf("writer-%d", i), false, exp)
				errs[i] = s.Put(bg, r, round)
			})
		}
		wg.Wait()
		wins := 0
		for _, err := range errs {
			switch {
			case err == nil:
				wins++
			case !errors.Is(err, store.ErrConflict):
				t.Fatalf("round %d: unexpected error (writers must queue, not fail): %v", round, err)
			}
		}
		if wins != 1 {
			t.Fatalf("round %d: %d winners, want 1", round, wins)
		}
		for _, s := range []*Store{a, b} {
			if got, err := s.Get(bg, "qar-a"); err != nil || got.Revision != round+1 {
				t.Fatalf("round %d: Get = %+v, %v", round, got, err)
			}
		}
	}

	// Racing creates across the two Stores: one winner.
	errs := make([]error, 4)
	var wg sync.WaitGroup
	for i := range errs {
		s := []*Store{a, b}[i%2]
		wg.Go(func() { errs[i] = s.Put(bg, record("qar-new", 0, "active", false, exp), store.Absent) })
	}
	wg.Wait()
	wins := 0
	for _, err := range errs {
		if err == nil {
			wins++
		} else if !errors.Is(err, store.ErrConflict) {
			t.Fatalf("create: %v", err)
		}
	}
	if wins != 1 {
		t.Fatalf("%d creators won", wins)
	}
}

// increment bumps the record's revision once, retrying on conflicts the
// way the orchestrator does.
func increment(ctx context.Context, s store.Store, id string) error {
	for {
		cur, err := s.Get(ctx, id)
		if err != nil {
			return err
		}
		next := cur
		next.Revision++
		next.Payload = fmt.Appendf(nil, `{"run_id":%q,"n":%d}`, id, next.Revision)
		err = s.Put(ctx, next, cur.Revision)
		if errors.Is(err, store.ErrConflict) {
			continue
		}
		return err
	}
}

// No increment is lost or doubled when writers on two Stores interleave.
func TestTwoStoresSerialize(t *testing.T) {
	path := dbPath(t)
	stores := []*Store{mustOpen(t, path), mustOpen(t, path)}
	put(t, stores[0], record("qar-n", 0, "active", false, t0.Add(time.Hour)), store.Absent)
	const workers, each = 4, 15
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for i := range workers {
		wg.Go(func() {
			for range each {
				if err := increment(bg, stores[i%2], "qar-n"); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if got, _ := stores[1].Get(bg, "qar-n"); got.Revision != workers*each {
		t.Fatalf("revision %d, want %d", got.Revision, workers*each)
	}
}

// A writer that finds the lock held waits for it (busy timeout) instead of
// failing.
func TestWriterWaitsForLock(t *testing.T) {
	path := dbPath(t)
	s := mustOpen(t, path)
	release := holdWriteLock(t, path)
	go func() {
		time.Sleep(300 * time.Millisecond)
		release()
	}()
	start := time.Now()
	put(t, s, record("qar-a", 0, "active", false, t0.Add(time.Hour)), store.Absent)
	if waited := time.Since(start); waited < 200*time.Millisecond {
		t.Fatalf("Put returned after %v while the lock was held", waited)
	}
}

const helperEnv = "DIFFPAL_SQLITE_STORE_HELPER"

// TestHelperProcess is not a test: it is the child process of the
// cross-process tests, selected by helperEnv.
func TestHelperProcess(t *testing.T) {
	mode := os.Getenv(helperEnv)
	if mode == "" {
		t.Skip("helper process only")
	}
	path := os.Getenv(helperEnv + "_PATH")
	s, err := Open(bg, path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	switch mode {
	case "increment":
		n, _ := strconv.Atoi(os.Getenv(helperEnv + "_N"))
		for range n {
			if err := increment(bg, s, "qar-n"); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(4)
			}
		}
		s.Close()
		os.Exit(0)
	case "write-and-die":
		if err := s.Put(bg, record("qar-d", 0, "active", false, time.Now().Add(time.Hour)), store.Absent); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(4)
		}
		os.Exit(0) // no Close: the acknowledged write must already be on disk
	}
	os.Exit(5)
}

func helper(t *testing.T, path, mode string, extra ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), helperEnv+"="+mode, helperEnv+"_PATH="+path)
	cmd.Env = append(cmd.Env, extra...)
	return cmd
}

// Separate processes on one file serialise through SQLite's locks and the
// busy timeout: no increment is lost and none fails.
func TestProcessesSerialize(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	path := dbPath(t)
	s := mustOpen(t, path)
	put(t, s, record("qar-n", 0, "active", false, time.Now().Add(time.Hour)), store.Absent)
	const procs, each = 2, 25
	var cmds []*exec.Cmd
	var outs []*bytes.Buffer
	for range procs {
		cmd := helper(t, path, "increment", helperEnv+"_N="+strconv.Itoa(each))
		out := new(bytes.Buffer)
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds, outs = append(cmds, cmd), append(outs, out)
	}
	// This process writes too, so three processes contend.
	for range each {
		if err := increment(bg, s, "qar-n"); err != nil {
			t.Fatal(err)
		}
	}
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("helper %d: %v: %s", i, err, outs[i])
		}
	}
	got, err := s.Get(bg, "qar-n")
	if err != nil || got.Revision != (procs+1)*each {
		t.Fatalf("revision %d (%v), want %d", got.Revision, err, (procs+1)*each)
	}
}

// A write acknowledged by a process that then exits without Close is there
// on the next start.
func TestAcknowledgedWriteSurvivesExit(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	path := dbPath(t)
	seedAt(t, path)
	if out, err := helper(t, path, "write-and-die").CombinedOutput(); err != nil {
		t.Fatalf("helper: %v: %s", err, out)
	}
	s := mustOpen(t, path, WithClock(time.Now))
	if _, err := s.Get(bg, "qar-d"); err != nil {
		t.Fatalf("acknowledged write lost: %v", err)
	}
}

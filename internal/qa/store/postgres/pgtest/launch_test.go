package pgtest

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestLaunch: the helpers for programs that are not tests (bench/mcpload)
// start a private cluster, hand out distinct empty databases that accept
// writes, and Destroy stops the server and removes its directory.
func TestLaunch(t *testing.T) {
	c, err := Launch()
	if errors.Is(err, ErrNoBinaries) && os.Getenv(EnvRequire) != "1" {
		t.Skip("pgtest: " + err.Error())
	}
	if err != nil {
		t.Fatal(err)
	}
	destroyed := false
	defer func() {
		if !destroyed {
			c.Destroy()
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	u1, err := c.NewDatabase(ctx)
	if err != nil {
		t.Fatal(err)
	}
	u2, err := c.NewDatabase(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if u1 == u2 {
		t.Fatalf("two databases share the URL %s", u1)
	}
	for _, u := range []string{u1, u2} {
		conn, err := pgx.Connect(ctx, u)
		if err != nil {
			t.Fatal(err)
		}
		var n int
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_tables WHERE schemaname = 'public'`).Scan(&n); err != nil || n != 0 {
			t.Fatalf("fresh database %s: %d tables, %v", u, n, err)
		}
		if _, err := conn.Exec(ctx, `CREATE TABLE t (x int)`); err != nil {
			t.Fatal(err)
		}
		conn.Close(ctx)
	}
	if !c.Running() {
		t.Fatal("Running() false on a launched cluster")
	}
	dir := c.SocketDir()
	c.Destroy()
	destroyed = true
	if c.Running() {
		t.Error("Running() true after Destroy")
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("cluster directory %s after Destroy: %v", dir, err)
	}
	sctx, scancel := context.WithTimeout(ctx, 10*time.Second)
	defer scancel()
	if conn, err := pgx.Connect(sctx, u1); err == nil {
		conn.Close(ctx)
		t.Error("the server still answers after Destroy")
	}
}

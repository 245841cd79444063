// Package pgtest gives tests a real PostgreSQL server without Docker or
// downloads.
//
//   - DIFFPAL_TEST_POSTGRES=URL: Start creates a fresh database on that
//     server for every caller (dropped in Cleanup).
//   - Otherwise Start uses a private throw-away cluster: initdb into a
//     temporary directory, the server listening only on a unix socket in
//     that directory, stopped and removed when the test binary ends. The
//     binaries are found under /usr/lib/postgresql/*/bin (Debian's
//     postgresql package; scripts/deps.sh installs it) or on PATH. As root
//     — CI — initdb and postgres refuse to run, so they run as the
//     `postgres` user (or nobody) in a directory chowned to it.
//   - Without the binaries the test is skipped with a message, or fails
//     when DIFFPAL_REQUIRE_POSTGRES=1 (scripts/test sets it where deps.sh
//     installed them).
//
// One cluster is shared by the whole test binary when its TestMain calls
// Main (or calls Shutdown after m.Run); without that, every Start gets a
// cluster of its own, stopped in the test's Cleanup, so nothing outlives
// the binary either way. The server is a direct child of the test binary
// with a parent-death signal, so even a test binary killed by a timeout
// takes it down.
//
// Fault tests that stop or restart the server use NewCluster, a private
// cluster of their own, with its Stop, Start, Restart and Kill methods.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Environment variables.
const (
	EnvURL     = "DIFFPAL_TEST_POSTGRES"
	EnvRequire = "DIFFPAL_REQUIRE_POSTGRES"
)

// port is the port number in the socket name; the socket lives in the
// cluster's private directory, so it never collides with another server.
const port = 5432

var (
	sharedMu     sync.Mutex
	shared       *Cluster
	mainRegister bool
)

// Main runs the tests and then stops and removes the shared cluster:
//
//	func TestMain(m *testing.M) { pgtest.Main(m) }
func Main(m *testing.M) {
	sharedMu.Lock()
	mainRegister = true
	sharedMu.Unlock()
	code := m.Run()
	Shutdown()
	os.Exit(code)
}

// Register declares that the caller's TestMain calls Shutdown after
// m.Run, so Start may share one cluster across the binary.
func Register() {
	sharedMu.Lock()
	mainRegister = true
	sharedMu.Unlock()
}

// Shutdown stops and removes the shared cluster, if one was started.
func Shutdown() {
	sharedMu.Lock()
	c := shared
	shared = nil
	sharedMu.Unlock()
	if c != nil {
		c.destroy()
	}
}

// Start returns the URL of a fresh, empty database for tb: on
// DIFFPAL_TEST_POSTGRES's server if set, else on the shared private
// cluster (see the package documentation).
func Start(tb testing.TB) string {
	tb.Helper()
	if base := os.Getenv(EnvURL); base != "" {
		return createDatabase(tb, base)
	}
	sharedMu.Lock()
	registered := mainRegister
	sharedMu.Unlock()
	if !registered {
		return NewCluster(tb).URL(tb)
	}
	sharedMu.Lock()
	defer sharedMu.Unlock()
	if shared == nil {
		c, err := newCluster()
		if err != nil {
			unavailable(tb, err)
		}
		shared = c
	}
	return shared.URL(tb)
}

// Cluster is a private PostgreSQL cluster.
type Cluster struct {
	bin     string // directory of initdb and postgres
	dir     string // owned by the server's user; holds data/ and the socket
	cred    *syscall.Credential
	mu      sync.Mutex
	cmd     *exec.Cmd
	exited  chan struct{}
	logPath string
}

// NewCluster initialises and starts a cluster of tb's own, stopped and
// removed in tb's Cleanup. It ignores DIFFPAL_TEST_POSTGRES: fault tests
// need a server they may stop.
func NewCluster(tb testing.TB) *Cluster {
	tb.Helper()
	c, err := newCluster()
	if err != nil {
		unavailable(tb, err)
	}
	tb.Cleanup(c.destroy)
	return c
}

// errNoBinaries marks a machine without PostgreSQL.
var errNoBinaries = errors.New("PostgreSQL server binaries (initdb, postgres) not found under /usr/lib/postgresql/*/bin or on PATH; install Debian's postgresql package (scripts/deps.sh does) or set " + EnvURL + "=postgres://…")

func unavailable(tb testing.TB, err error) {
	tb.Helper()
	if errors.Is(err, errNoBinaries) && os.Getenv(EnvRequire) != "1" {
		tb.Skip("pgtest: " + err.Error())
	}
	if errors.Is(err, errNoBinaries) {
		tb.Fatalf("pgtest: %v (and %s=1)", err, EnvRequire)
	}
	tb.Fatalf("pgtest: %v", err)
}

// findBinaries returns the directory holding initdb and postgres: the
// newest /usr/lib/postgresql/N/bin, else PATH.
func findBinaries() (string, error) {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool {
		vi, _ := strconv.ParseFloat(filepath.Base(filepath.Dir(dirs[i])), 64)
		vj, _ := strconv.ParseFloat(filepath.Base(filepath.Dir(dirs[j])), 64)
		return vi > vj
	})
	for _, d := range dirs {
		if isExec(filepath.Join(d, "initdb")) && isExec(filepath.Join(d, "postgres")) {
			return d, nil
		}
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		d := filepath.Dir(p)
		if isExec(filepath.Join(d, "postgres")) {
			return d, nil
		}
	}
	return "", errNoBinaries
}

func isExec(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}

// serverUser is who runs initdb and postgres: ourselves, or as root the
// postgres user (nobody failing that), which they insist on.
func serverUser() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	for _, name := range []string{"postgres", "nobody"} {
		u, err := user.Lookup(name)
		if err != nil {
			continue
		}
		uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
		gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
		if err1 == nil && err2 == nil && uid != 0 {
			return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), NoSetGroups: true}, nil
		}
	}
	return nil, errors.New("running as root and neither a postgres nor a nobody user exists to run the server as")
}

func newCluster() (_ *Cluster, err error) {
	bin, err := findBinaries()
	if err != nil {
		return nil, err
	}
	cred, err := serverUser()
	if err != nil {
		return nil, err
	}
	// A short base keeps the socket path under the 107-byte limit.
	base := os.TempDir()
	if len(base) > 40 {
		base = "/tmp"
	}
	dir, err := os.MkdirTemp(base, "diffpal-pg-")
	if err != nil {
		return nil, err
	}
	c := &Cluster{bin: bin, dir: dir, cred: cred, logPath: filepath.Join(dir, "postgres.log")}
	defer func() {
		if err != nil {
			c.destroy()
		}
	}()
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			return nil, fmt.Errorf("chown %s to the server user: %w", dir, err)
		}
	}
	cmd := c.command(filepath.Join(bin, "initdb"), "-D", c.data(), "-U", "postgres", "--auth=trust",
		"-E", "UTF8", "--locale=C", "--no-sync", "--no-instructions")
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("initdb: %v\n%s", err, out)
	}
	if err := c.start(); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *Cluster) data() string { return filepath.Join(c.dir, "data") }

func (c *Cluster) command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.Dir = c.dir
	cmd.Env = append(os.Environ(), "LC_ALL=C", "TZ=UTC")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred}
	return cmd
}

// start runs the server as a direct child (not daemonized by pg_ctl), so
// the parent-death signal takes it down with the test binary, and waits
// until it accepts connections.
func (c *Cluster) start() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cmd != nil {
		select {
		case <-c.exited: // it died on its own: start it again
			c.cmd = nil
		default:
			return nil
		}
	}
	logf, err := os.OpenFile(c.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd := c.command(filepath.Join(c.bin, "postgres"), "-D", c.data(), "-k", c.dir, "-p", strconv.Itoa(port),
		"-c", "listen_addresses=", "-c", "fsync=off", "-c", "full_page_writes=off",
		"-c", "max_connections=300", "-c", "shared_buffers=32MB", "-c", "log_min_messages=warning")
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr.Pdeathsig = syscall.SIGQUIT
	cmd.SysProcAttr.Setpgid = true
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start postgres: %w", err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	c.cmd, c.exited = cmd, exited
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	for {
		conn, err := pgx.Connect(ctx, c.urlFor("postgres"))
		if err == nil {
			conn.Close(ctx)
			return nil
		}
		select {
		case <-exited:
			log, _ := os.ReadFile(c.logPath)
			c.cmd = nil
			return fmt.Errorf("postgres exited during start-up: %v\n%s", err, tail(log))
		case <-ctx.Done():
			log, _ := os.ReadFile(c.logPath)
			return fmt.Errorf("postgres did not accept connections: %v\n%s", err, tail(log))
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func tail(b []byte) string {
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// stop signals the server (SIGINT: fast shutdown, SIGQUIT: immediate, as
// after a crash) and waits for it to exit.
func (c *Cluster) stop(sig syscall.Signal) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cmd == nil {
		return nil
	}
	_ = c.cmd.Process.Signal(sig)
	select {
	case <-c.exited:
	case <-time.After(60 * time.Second):
		_ = syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
		<-c.exited
	}
	c.cmd = nil
	return nil
}

// Stop shuts the server down (fast shutdown: connections are cut,
// committed data is kept) and waits for it to exit.
func (c *Cluster) Stop(tb testing.TB) {
	tb.Helper()
	if err := c.stop(syscall.SIGINT); err != nil {
		tb.Fatal(err)
	}
}

// Kill stops the server as a crash would (immediate shutdown: no
// checkpoint; the next Start recovers from the WAL).
func (c *Cluster) Kill(tb testing.TB) {
	tb.Helper()
	if err := c.stop(syscall.SIGQUIT); err != nil {
		tb.Fatal(err)
	}
}

// Start starts a stopped server on the same data and socket.
func (c *Cluster) Start(tb testing.TB) {
	tb.Helper()
	if err := c.start(); err != nil {
		tb.Fatal(err)
	}
}

// Restart is Stop then Start.
func (c *Cluster) Restart(tb testing.TB) {
	tb.Helper()
	c.Stop(tb)
	c.Start(tb)
}

// Running reports whether the server process is up.
func (c *Cluster) Running() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cmd != nil
}

// SocketDir is the directory of the server's unix socket.
func (c *Cluster) SocketDir() string { return c.dir }

func (c *Cluster) urlFor(db string) string {
	q := url.Values{"host": {c.dir}, "port": {strconv.Itoa(port)}, "sslmode": {"disable"}}
	return (&url.URL{Scheme: "postgres", User: url.User("postgres"), Path: "/" + db, RawQuery: q.Encode()}).String()
}

// URL creates a fresh database on the cluster and returns its URL.
func (c *Cluster) URL(tb testing.TB) string {
	tb.Helper()
	return createDatabase(tb, c.urlFor("postgres"))
}

// AdminURL is the URL of the cluster's postgres database (for tests that
// inspect pg_stat_activity or hold locks).
func (c *Cluster) AdminURL() string { return c.urlFor("postgres") }

func (c *Cluster) destroy() {
	_ = c.stop(syscall.SIGINT)
	_ = os.RemoveAll(c.dir)
}

// Launch initialises and starts a private cluster for a program that is
// not a test (bench/mcpload): the same binaries, server user, socket and
// settings as NewCluster, but failures are returned (a machine without
// PostgreSQL gets ErrNoBinaries) and nothing is cleaned up by itself — the
// caller must call Destroy. The server still dies with the caller's
// process (parent-death signal), but its directory is left behind then.
func Launch() (*Cluster, error) { return newCluster() }

// ErrNoBinaries is returned by Launch on a machine without the PostgreSQL
// server binaries.
var ErrNoBinaries = errNoBinaries

// Destroy stops the server (fast shutdown) and removes its directory.
func (c *Cluster) Destroy() { c.destroy() }

// NewDatabase creates a fresh, uniquely named database on the cluster and
// returns its URL. It is not dropped: Destroy removes the whole cluster.
func (c *Cluster) NewDatabase(ctx context.Context) (string, error) {
	u, _, err := newDatabase(ctx, c.urlFor("postgres"))
	return u, err
}

// newDatabase makes a uniquely named database on base's server and
// returns base with that database, and the name.
func newDatabase(ctx context.Context, base string) (string, string, error) {
	admin, err := pgx.Connect(ctx, base)
	if err != nil {
		return "", "", fmt.Errorf("pgtest: connect: %w", err)
	}
	defer admin.Close(context.Background())
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "diffpal_test_" + hex.EncodeToString(b[:])
	if _, err := admin.Exec(ctx, `CREATE DATABASE `+name+` TEMPLATE template0`); err != nil {
		return "", "", fmt.Errorf("pgtest: create database: %w", err)
	}
	u, err := withDatabase(base, name)
	if err != nil {
		return "", "", fmt.Errorf("pgtest: %w", err)
	}
	return u, name, nil
}

// createDatabase makes a uniquely named database on base's server and
// returns base with that database; it is dropped in tb's Cleanup.
func createDatabase(tb testing.TB, base string) string {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	u, name, err := newDatabase(ctx, base)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if conn, err := pgx.Connect(ctx, base); err == nil {
			_, _ = conn.Exec(ctx, `DROP DATABASE IF EXISTS `+name+` WITH (FORCE)`)
			conn.Close(ctx)
		}
	})
	return u
}

// withDatabase replaces the database of a URL or key=value connection
// string.
func withDatabase(base, db string) (string, error) {
	if strings.HasPrefix(base, "postgres://") || strings.HasPrefix(base, "postgresql://") {
		u, err := url.Parse(base)
		if err != nil {
			return "", errors.New("unparsable " + EnvURL)
		}
		u.Path = "/" + db
		q := u.Query()
		q.Del("dbname")
		u.RawQuery = q.Encode()
		return u.String(), nil
	}
	return base + " dbname=" + db, nil
}

// Package git runs the git CLI for diffpal with flags and environment that
// make its output independent of the user's configuration: no external diff
// or textconv drivers, no colour, fixed prefixes, unquoted UTF-8 paths, C
// locale, no pager, no optional locks. It owns revision resolution, range
// selection (merge-base, default branch, shallow clones) and reading
// diffs and blobs; it does not parse diffs (package diff does).
//
// The repository under review may be hostile, and so may its .git/config
// (a CI step that ran a pull request's code can write it) and the global
// config: git never runs a command named by configuration, in any mode.
// See baseArgs, driverOverrides and env for how.
package git

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode"

	"github.com/diffpalhq/diffpal/internal/clip"
)

// Runner runs git in one repository. Use it through a pointer and do not
// copy it after first use.
type Runner struct {
	// Dir is the work tree (or any directory inside it).
	Dir string
	// Git is the git executable; default "git".
	Git string

	// mu guards drivers: the environment that neutralizes the filter and
	// diff drivers configured for the repository at drivers.dir, computed
	// once (one `git config` call) and reused while Dir and Git stay put,
	// or by the Runners At made, which share it.
	mu      sync.Mutex
	drivers *driverEnv
	shared  bool     // made by At: drivers hold whatever Dir is
	commits *commits // what Locate resolved, shared with At's Runners
}

// driverEnv is a repository's driver environment, computed at most once
// (a failed attempt is tried again by the next command).
type driverEnv struct {
	dir, git string

	mu     sync.Mutex
	done   bool
	env    []string
	origin string // remote.origin.url ("" when unset), read by the same git config
}

// At returns a Runner for dir, another directory of the same work tree
// (its top level, or the directory the user stands in), that shares r's
// driver environment: the filter and diff drivers are the repository's,
// not the directory's, so one `git config` call serves both (whichever
// Runner asks first makes it).
func (r *Runner) At(dir string) *Runner {
	return &Runner{Dir: dir, Git: r.Git, drivers: r.driverState(), shared: true, commits: r.commitMemo()}
}

// Warm starts working out the driver environment in the background, so
// that the first command that needs it (a diff) does not wait for the
// `git config` call; commands that never convert content (noDrivers) run
// meanwhile.
//
// The git config process is started here, by the caller, and waited for
// on another goroutine: a review calls Warm before it starts its
// CPU-bound start-up goroutines, which would otherwise keep a goroutine
// that was only to start a process from running for milliseconds.
func (r *Runner) Warm(ctx context.Context) {
	d := r.driverState()
	d.mu.Lock()
	if d.done {
		d.mu.Unlock()
		return
	}
	c, err := r.startDrivers(ctx)
	if err != nil {
		d.mu.Unlock() // reported by the command that needs the drivers
		return
	}
	go func() {
		defer d.mu.Unlock()
		if env, origin, err := c.finish(); err == nil {
			d.env, d.origin, d.done = env, origin, true
		}
	}()
}

// driverState is r's driver environment, a new one when there is none
// for r's Dir and Git yet.
func (r *Runner) driverState() *driverEnv {
	r.mu.Lock()
	defer r.mu.Unlock()
	if d := r.drivers; d != nil && (r.shared || d.dir == r.Dir) && d.git == r.gitPath() {
		return d
	}
	r.drivers = &driverEnv{dir: r.Dir, git: r.gitPath()}
	return r.drivers
}

func (r *Runner) gitPath() string {
	if r.Git == "" {
		return "git"
	}
	return r.Git
}

// Error is a failed git command with its stderr. Its message names only
// the subcommand and the gist of stderr (one line, clipped), never the
// whole command line with diffpal's -c flags.
type Error struct {
	// Args are the arguments after git's global options; Args[0] is the
	// subcommand.
	Args []string
	// Stderr is what git wrote to stderr (at most maxStderr bytes).
	Stderr string
	Err    error
}

// maxErrLine bounds the stderr excerpt in an error message.
const maxErrLine = 300

// maxStderr bounds the stderr kept from one git command.
const maxStderr = 64 << 10

// Subcommand is the git subcommand that failed ("diff", "rev-parse").
func (e *Error) Subcommand() string {
	if len(e.Args) == 0 {
		return "(no subcommand)"
	}
	return e.Args[0]
}

func (e *Error) Error() string {
	msg := stderrGist(e.Stderr)
	if msg == "" && e.Err != nil {
		msg = clip.Text(printable(e.Err.Error()), maxErrLine)
	}
	if msg == "" {
		msg = "failed"
	}
	return "git " + e.Subcommand() + ": " + msg
}

func (e *Error) Unwrap() error { return e.Err }

// stderrGist picks the line of git's stderr that says what went wrong:
// the first "fatal:" or "error:" line (warnings often come first), else
// the first non-empty one; control characters are replaced (paths in a
// hostile repository may carry terminal escapes) and it is clipped.
func stderrGist(stderr string) string {
	first := ""
	for _, l := range strings.Split(stderr, "\n") {
		l = strings.TrimSpace(l)
		if l == "" {
			continue
		}
		if strings.HasPrefix(l, "fatal:") || strings.HasPrefix(l, "error:") {
			first = l
			break
		}
		if first == "" {
			first = l
		}
	}
	return clip.Text(printable(first), maxErrLine)
}

// printable replaces invalid UTF-8 and control characters with U+FFFD.
func printable(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return '\uFFFD'
		}
		return r
	}, s)
}

// ErrNotRepository is what errors.Is reports for a directory that is not
// inside a git repository (or does not exist): *NotRepositoryError.
var ErrNotRepository = errors.New("not a git repository")

// NotRepositoryError says that Dir is not inside a git repository, or is
// not a directory at all. errors.Is(err, ErrNotRepository) holds.
type NotRepositoryError struct {
	Dir string
	// Err is the underlying failure: the *Error from git, or the
	// *fs.PathError from changing into Dir.
	Err error
}

func (e *NotRepositoryError) Error() string {
	var pe *fs.PathError
	if errors.As(e.Err, &pe) {
		return fmt.Sprintf("%s: %v (pass -C/--dir a directory inside a git repository)", e.Dir, pe.Err)
	}
	return fmt.Sprintf("%s is not inside a git repository (run diffpal in one, or pass -C/--dir DIR)", e.Dir)
}

func (e *NotRepositoryError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrNotRepository) hold.
func (e *NotRepositoryError) Is(target error) bool { return target == ErrNotRepository }

func (r *Runner) notRepository(err error) error {
	dir := r.Dir
	if dir == "" {
		dir = "."
	}
	if abs, aerr := filepath.Abs(dir); aerr == nil {
		dir = abs
	}
	return &NotRepositoryError{Dir: dir, Err: err}
}

// baseArgs go before every subcommand. Some make the output independent of
// configuration; the rest neutralize every key that makes git execute
// something, whatever scope sets it (command-line configuration is read
// last, so it wins over the repository's and the global config):
//
//   - core.fsmonitor: a hook command (or daemon) run on every index read;
//   - core.hooksPath: no hook runs (read-only commands run none, but
//     post-index-change or reference-transaction would on an index or ref
//     write, and the lazy fetch below is a child git);
//   - core.pager, and --no-pager: never a pager (stdout is no terminal
//     either);
//   - credential.helper (an empty value resets the list, URL-specific
//     helpers included), core.askPass, core.sshCommand and
//     protocol.allow=never: no transport ever runs. Reading a missing
//     object in a repository with a promisor remote (remote.<name>.promisor,
//     any scope) starts a lazy fetch, and the ext:: transport runs its URL
//     as a command; the environment's GIT_ALLOW_PROTOCOL (see env) is what
//     actually forbids every transport, since it overrides
//     protocol.<name>.allow, which this flag does not, and
//     GIT_NO_LAZY_FETCH stops the fetch before it starts. diffpal reviews
//     offline: in a partial clone, objects that are not local are missing.
//   - diff.external (and --no-ext-diff, --no-textconv on every diff):
//     no external diff, no textconv;
//   - submodule.recurse=false, diff.ignoreSubmodules=dirty (and the flag in
//     DiffArgs): git never looks into a submodule's work tree, which it
//     does by running `git status` there, with the submodule's own config
//     and driver names that driverOverrides never saw;
//   - core.untrackedCache=false: the untracked-file listing does not trust
//     a cache stored in the index.
//
// Filter (clean, smudge, process) and diff (textconv, command) drivers
// have names chosen by configuration; driverOverrides neutralizes each
// one configured. System configuration is ignored altogether
// (GIT_CONFIG_NOSYSTEM); the global config stays readable, because
// harmless keys there matter (safe.directory, honoured only in protected
// config, is how CI containers trust a checkout owned by another user).
var baseArgs = []string{
	"-c", "core.quotePath=false",
	"-c", "core.autocrlf=false",
	"-c", "core.safecrlf=false",
	"-c", "color.ui=false",
	"-c", "diff.external=",
	"-c", "diff.noprefix=false",
	"-c", "diff.mnemonicPrefix=false",
	"-c", "diff.relative=false",
	"-c", "diff.renames=true",
	"-c", "diff.ignoreSubmodules=dirty",
	"-c", "log.showSignature=false",
	"-c", "core.fsmonitor=false",
	"-c", "core.untrackedCache=false",
	"-c", "core.hooksPath=/dev/null",
	"-c", "core.pager=cat",
	"-c", "credential.helper=",
	"-c", "core.askPass=",
	"-c", "core.sshCommand=",
	"-c", "protocol.allow=never",
	"-c", "submodule.recurse=false",
	"--no-pager",
}

// droppedEnv are variables that would redirect or reshape git's work, add
// configuration, or name a command for git to run.
var droppedEnv = map[string]bool{
	"GIT_DIR": true, "GIT_WORK_TREE": true, "GIT_INDEX_FILE": true, "GIT_OBJECT_DIRECTORY": true,
	"GIT_ALTERNATE_OBJECT_DIRECTORIES": true, "GIT_COMMON_DIR": true, "GIT_NAMESPACE": true,
	"GIT_EXTERNAL_DIFF": true, "GIT_DIFF_OPTS": true, "GIT_PAGER": true, "PAGER": true,
	"GIT_EDITOR": true, "GIT_SEQUENCE_EDITOR": true,
	"GIT_SSH": true, "GIT_SSH_COMMAND": true, "GIT_SSH_VARIANT": true, "GIT_PROXY_COMMAND": true,
	"GIT_ASKPASS": true, "SSH_ASKPASS": true, "GIT_ALLOW_PROTOCOL": true,
	"LC_ALL": true, "LANG": true, "LANGUAGE": true,
	// Configuration from the environment: GIT_CONFIG_PARAMETERS and
	// GIT_CONFIG_COUNT (with its KEY_n/VALUE_n, see keepEnv) would add
	// keys; GIT_CONFIG is the only file `git config` reads, which would
	// hide the configured drivers from driverOverrides.
	"GIT_CONFIG_PARAMETERS": true, "GIT_CONFIG_COUNT": true, "GIT_CONFIG": true, "GIT_CONFIG_SYSTEM": true,
	// GIT_CONFIG_GLOBAL stays: it is the operator's global config.
}

func keepEnv(kv string) bool {
	k, _, _ := strings.Cut(kv, "=")
	return !droppedEnv[k] && !strings.HasPrefix(k, "GIT_CONFIG_KEY_") && !strings.HasPrefix(k, "GIT_CONFIG_VALUE_")
}

// baseEnv is the environment of every git command, without the driver
// overrides.
func baseEnv() []string {
	var out []string
	for _, kv := range os.Environ() {
		if keepEnv(kv) {
			out = append(out, kv)
		}
	}
	return append(out, "LC_ALL=C", "GIT_TERMINAL_PROMPT=0", "GIT_OPTIONAL_LOCKS=0",
		"GIT_CONFIG_NOSYSTEM=1", "GIT_ATTR_NOSYSTEM=1",
		// No transport is allowed: "_" cannot be a URL scheme or remote
		// helper name, and a list, unlike protocol.allow, overrides every
		// protocol.<name>.allow.
		"GIT_ALLOW_PROTOCOL=_",
		// Missing objects are never fetched at all (git 2.45.1, and the
		// 2.39.4+ security releases; older versions ignore it and rely on
		// GIT_ALLOW_PROTOCOL).
		"GIT_NO_LAZY_FETCH=1")
}

// driverKeys are the keys of a filter or diff driver that name a command,
// with the value that disables each. An empty clean, smudge or process
// command means "no filter" to git (convert.c skips empty commands), and
// required=false keeps git from failing on the file; an empty textconv or
// command is never run (--no-textconv, --no-ext-diff) and would only make
// git fail if it were.
var driverKeys = map[string][][2]string{
	"filter": {{"clean", ""}, {"smudge", ""}, {"process", ""}, {"required", "false"}},
	"diff":   {{"textconv", ""}, {"command", ""}},
}

// maxDrivers bounds the drivers a configuration may define before diffpal
// refuses to run git (the overrides travel in the environment).
const maxDrivers = 512

// driverOverrides returns GIT_CONFIG_COUNT/KEY_n/VALUE_n entries that
// neutralize every filter and diff driver defined in any configuration
// scope git reads here (includes followed). Driver names are arbitrary
// (they may contain '=' and '.', so -c name=value cannot carry them; the
// KEY/VALUE pairs can). `git config` itself runs nothing. The result is
// cached for the Runner's Dir and Git.
func (r *Runner) driverOverrides(ctx context.Context) ([]string, error) {
	d := r.driverState()
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.done {
		return d.env, nil
	}
	env, origin, err := r.findDrivers(ctx)
	if err != nil {
		return nil, err
	}
	d.env, d.origin, d.done = env, origin, true
	return env, nil
}

// OriginURL is the repository's remote.origin.url ("" when unset), from
// the `git config` call that finds the driver overrides: a review needs
// both, and one git process fewer is a few milliseconds of a small one.
func (r *Runner) OriginURL(ctx context.Context) (string, error) {
	if _, err := r.driverOverrides(ctx); err != nil {
		return "", err
	}
	d := r.driverState()
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.origin, nil
}

// findDrivers runs `git config` for the driver overrides and the origin
// URL.
func (r *Runner) findDrivers(ctx context.Context) (env []string, origin string, err error) {
	c, err := r.startDrivers(ctx)
	if err != nil {
		return nil, "", err
	}
	return c.finish()
}

// driversCall is a started `git config` call of findDrivers.
type driversCall struct {
	r      *Runner
	ctx    context.Context
	args   []string
	cmd    *exec.Cmd
	stdout bytes.Buffer
	stderr capped
}

func (r *Runner) startDrivers(ctx context.Context) (*driversCall, error) {
	// --null: each entry is "key\nvalue\x00" ("key\x00" without a value).
	c := &driversCall{r: r, ctx: ctx, args: []string{"config", "--null", "--get-regexp", `^(filter|diff)\.|^remote\.origin\.url$`}}
	c.stderr.max = maxStderr
	c.cmd = r.command(ctx, baseEnv(), c.args...)
	c.cmd.Stdout, c.cmd.Stderr = &c.stdout, &c.stderr
	if err := c.cmd.Start(); err != nil {
		return nil, r.failure(ctx, c.args, "", err)
	}
	return c, nil
}

// finish waits for the call and reads its answer.
func (c *driversCall) finish() (env []string, origin string, err error) {
	var out []byte
	if err = c.cmd.Wait(); err != nil {
		err = c.r.failure(c.ctx, c.args, c.stderr.String(), err)
	} else {
		out = c.stdout.Bytes()
	}
	var ee *exec.ExitError
	var ge *Error
	if errors.As(err, &ge) && errors.As(err, &ee) && ee.ExitCode() == 1 && strings.TrimSpace(ge.Stderr) == "" {
		out, err = nil, nil // no key matches
	}
	if err != nil {
		return nil, "", err
	}
	type driver struct{ section, name string }
	seen := map[driver]bool{}
	n := 0
	for _, entry := range strings.Split(string(out), "\x00") {
		key, value, _ := strings.Cut(entry, "\n")
		if key == "remote.origin.url" {
			origin = value // the last one, as git config --get answers
			continue
		}
		section, rest, ok := strings.Cut(key, ".")
		dot := strings.LastIndex(rest, ".")
		if !ok || dot < 0 || driverKeys[section] == nil {
			continue // no subsection: diff.external and the like
		}
		d := driver{section, rest[:dot]}
		if seen[d] {
			continue
		}
		seen[d] = true
		if len(seen) > maxDrivers {
			return nil, "", fmt.Errorf("git config: more than %d filter and diff drivers are configured; refusing to run git with them", maxDrivers)
		}
		for _, kv := range driverKeys[section] {
			env = append(env,
				fmt.Sprintf("GIT_CONFIG_KEY_%d=%s.%s.%s", n, d.section, d.name, kv[0]),
				fmt.Sprintf("GIT_CONFIG_VALUE_%d=%s", n, kv[1]))
			n++
		}
	}
	if n > 0 {
		env = append(env, "GIT_CONFIG_COUNT="+strconv.Itoa(n))
	}
	return env, origin, nil
}

// noDrivers are the subcommands that never convert content between the
// work tree and the object store and never diff contents, so no filter
// or diff driver can run in them: they run without waiting for the
// driver environment (baseArgs and baseEnv still apply).
var noDrivers = map[string]bool{"rev-parse": true, "merge-base": true, "ls-tree": true}

// env is the environment of a git command: baseEnv and the driver
// overrides.
func (r *Runner) env(ctx context.Context) ([]string, error) {
	over, err := r.driverOverrides(ctx)
	if err != nil {
		return nil, err
	}
	return append(baseEnv(), over...), nil
}

func (r *Runner) command(ctx context.Context, env []string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, r.gitPath(), append(append([]string(nil), baseArgs...), args...)...)
	cmd.Dir = r.Dir
	cmd.Env = env
	return cmd
}

// Run runs git and returns its stdout.
func (r *Runner) Run(ctx context.Context, args ...string) ([]byte, error) {
	if len(args) > 0 && noDrivers[args[0]] {
		return r.run(ctx, baseEnv(), args...)
	}
	env, err := r.env(ctx)
	if err != nil {
		return nil, err
	}
	return r.run(ctx, env, args...)
}

func (r *Runner) run(ctx context.Context, env []string, args ...string) ([]byte, error) {
	cmd := r.command(ctx, env, args...)
	var stdout bytes.Buffer
	stderr := &capped{max: maxStderr}
	cmd.Stdout, cmd.Stderr = &stdout, stderr
	if err := cmd.Run(); err != nil {
		return nil, r.failure(ctx, args, stderr.String(), err)
	}
	return stdout.Bytes(), nil
}

// failure turns a failed command into the error to report.
func (r *Runner) failure(ctx context.Context, args []string, stderr string, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if errors.Is(err, exec.ErrNotFound) {
		return fmt.Errorf("git is not installed or not on PATH: %w", err)
	}
	ge := &Error{Args: args, Stderr: stderr, Err: err}
	var pe *fs.PathError
	if errors.As(err, &pe) && pe.Op == "chdir" {
		return r.notRepository(pe)
	}
	if strings.Contains(stderr, "not a git repository") {
		return r.notRepository(ge)
	}
	return ge
}

// capped keeps the first max bytes written to it.
type capped struct {
	buf bytes.Buffer
	max int
}

func (c *capped) Write(p []byte) (int, error) {
	if room := c.max - c.buf.Len(); room > 0 {
		c.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func (c *capped) String() string { return c.buf.String() }

func (r *Runner) line(ctx context.Context, args ...string) (string, error) {
	out, err := r.Run(ctx, args...)
	return strings.TrimSpace(string(out)), err
}

// TopLevel returns the work tree root, or a *NotRepositoryError
// (errors.Is(err, ErrNotRepository)) when Dir is not inside a git
// repository.
func (r *Runner) TopLevel(ctx context.Context) (string, error) {
	return r.line(ctx, "rev-parse", "--show-toplevel")
}

// Locate is TopLevel that also resolves revs to commits in the same git
// process (a review knows its --base and --head before it knows its
// repository's root): what resolves is remembered for ResolveCommit, by
// r and the Runners At makes from it. When any rev does not resolve to
// exactly one commit, it is TopLevel alone and ResolveCommit asks git
// (and reports the error) as usual.
func (r *Runner) Locate(ctx context.Context, revs ...string) (string, error) {
	return r.LocateRange(ctx, "", "", revs...)
}

// LocateRange is Locate that also works out the merge base of base and
// head (when both are given) in the same process: rev-parse's
// "base...head" lists every merge base, and when there is exactly one it
// is what MergeBase answers, which then answers from memory.
func (r *Runner) LocateRange(ctx context.Context, base, head string, revs ...string) (string, error) {
	if base == "" || head == "" || strings.HasPrefix(base, "-") || strings.HasPrefix(head, "-") {
		base, head = "", ""
	}
	var ask []string
	for _, rev := range revs {
		if rev != "" && !strings.HasPrefix(rev, "-") && !slices.Contains(ask, rev) {
			ask = append(ask, rev)
		}
	}
	if len(ask) == 0 {
		return r.TopLevel(ctx)
	}
	// No --end-of-options: rev-parse (git 2.39) prints it back outside
	// --verify; no rev starts with "-" (filtered above).
	args := []string{"rev-parse", "--show-toplevel"}
	for _, rev := range ask {
		args = append(args, rev+"^{commit}")
	}
	if base != "" {
		args = append(args, base+"^{commit}..."+head+"^{commit}")
	}
	out, err := r.Run(ctx, args...)
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if err != nil || len(lines) < 1+len(ask) || lines[0] == "" {
		return r.TopLevel(ctx)
	}
	for _, sha := range lines[1 : 1+len(ask)] {
		if !isObjectID(sha) {
			return lines[0], nil // not one commit each (a range, a path): ask again one by one
		}
	}
	rest := lines[1+len(ask):]
	var mergeKey, mergeBase string
	if base != "" {
		// head, base, then ^ and each merge base: only one is an answer.
		if len(rest) == 3 && isObjectID(rest[0]) && isObjectID(rest[1]) && isObjectID(strings.TrimPrefix(rest[2], "^")) && strings.HasPrefix(rest[2], "^") {
			mergeKey, mergeBase = rest[1]+".."+rest[0], rest[2][1:]
		}
	} else if len(rest) != 0 {
		return lines[0], nil
	}
	m := r.commitMemo()
	m.mu.Lock()
	for i, rev := range ask {
		m.sha[rev] = lines[1+i]
	}
	if mergeKey != "" {
		m.merge[mergeKey] = mergeBase
	}
	m.mu.Unlock()
	return lines[0], nil
}

// isObjectID reports a full SHA-1 or SHA-256 object id.
func isObjectID(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// commits remembers what Locate resolved, for ResolveCommit.
type commits struct {
	mu    sync.Mutex
	sha   map[string]string
	merge map[string]string // "base..head" (commit ids) -> their one merge base
}

func (r *Runner) commitMemo() *commits {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.commits == nil {
		r.commits = &commits{sha: map[string]string{}, merge: map[string]string{}}
	}
	return r.commits
}

// ResolveCommit turns any revision into a full commit id.
func (r *Runner) ResolveCommit(ctx context.Context, rev string) (string, error) {
	if strings.HasPrefix(rev, "-") {
		return "", fmt.Errorf("invalid revision %q: must not start with '-'", rev)
	}
	if sha, ok := r.knownCommit(rev); ok {
		return sha, nil
	}
	sha, err := r.line(ctx, "rev-parse", "--verify", "--quiet", "--end-of-options", rev+"^{commit}")
	if err != nil || sha == "" {
		return "", fmt.Errorf("unknown revision %q (not a commit in this repository)", rev)
	}
	return sha, nil
}

// knownCommit is ResolveCommit's answer for rev when the runner has it
// already (LocateRange), without asking git.
func (r *Runner) knownCommit(rev string) (string, bool) {
	if strings.HasPrefix(rev, "-") {
		return "", false
	}
	m := r.commitMemo()
	m.mu.Lock()
	defer m.mu.Unlock()
	sha, ok := m.sha[rev]
	return sha, ok
}

// HasCommits reports whether HEAD points at a commit.
func (r *Runner) HasCommits(ctx context.Context) bool {
	_, err := r.ResolveCommit(ctx, "HEAD")
	return err == nil
}

// IsShallow reports whether the repository is a shallow clone.
func (r *Runner) IsShallow(ctx context.Context) (bool, error) {
	s, err := r.line(ctx, "rev-parse", "--is-shallow-repository")
	return s == "true", err
}

// MergeBase returns the best common ancestor of a and b.
func (r *Runner) MergeBase(ctx context.Context, a, b string) (string, error) {
	m := r.commitMemo()
	m.mu.Lock()
	mb, ok := m.merge[a+".."+b]
	m.mu.Unlock()
	if ok {
		return mb, nil
	}
	out, err := r.line(ctx, "merge-base", "--end-of-options", a, b)
	if err != nil {
		var ge *Error
		if errors.As(err, &ge) && ge.Stderr == "" {
			return "", &NoMergeBaseError{A: a, B: b}
		}
		return "", err
	}
	return out, nil
}

// NoMergeBaseError says two revisions share no history here.
type NoMergeBaseError struct{ A, B string }

func (e *NoMergeBaseError) Error() string {
	return fmt.Sprintf("%s and %s have no common ancestor", short(e.A), short(e.B))
}

func short(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	return s
}

// DefaultBranch finds the branch a feature branch is reviewed against:
// origin/HEAD, then main, then master (local or origin/).
func (r *Runner) DefaultBranch(ctx context.Context) (string, error) {
	if ref, err := r.line(ctx, "symbolic-ref", "--quiet", "refs/remotes/origin/HEAD"); err == nil && ref != "" {
		return strings.TrimPrefix(ref, "refs/remotes/"), nil
	}
	for _, cand := range []string{"main", "master", "origin/main", "origin/master"} {
		if _, err := r.ResolveCommit(ctx, cand); err == nil {
			return cand, nil
		}
	}
	return "", errors.New("no default branch found (no origin/HEAD, main or master); pass --base")
}

// CurrentBranch returns the checked-out branch name, "" when detached.
func (r *Runner) CurrentBranch(ctx context.Context) string {
	b, err := r.line(ctx, "symbolic-ref", "--quiet", "--short", "HEAD")
	if err != nil {
		return ""
	}
	return b
}

// DiffArgs are the flags every diff is read with.
var DiffArgs = []string{
	"--no-color", "--no-ext-diff", "--no-textconv", "--full-index", "--find-renames",
	"--src-prefix=a/", "--dst-prefix=b/", "--submodule=short", "--unified=3", "--no-relative",
	"--diff-algorithm=myers",
	// Submodule commits are compared, their work trees never looked into
	// (see baseArgs): diffpal skips submodules anyway.
	"--ignore-submodules=dirty",
	"-O/dev/null", // overrides a configured diff.orderFile (we sort by path anyway)
}

// Diff returns the patch from base to head; an empty head diffs against the
// work tree (staged and unstaged changes to tracked files).
func (r *Runner) Diff(ctx context.Context, base, head string, paths ...string) ([]byte, error) {
	args := append([]string{"diff"}, DiffArgs...)
	args = append(args, "--end-of-options", base)
	if head != "" {
		args = append(args, head)
	}
	if len(paths) > 0 {
		args = append(append(args, "--"), paths...)
	} else {
		args = append(args, "--")
	}
	return r.Run(ctx, args...)
}

// UntrackedFiles lists untracked, not ignored files (for working-tree
// reviews, where new files are not in the index yet), repository-relative,
// limited to pathspecs (interpreted from r.Dir, as git does).
func (r *Runner) UntrackedFiles(ctx context.Context, paths ...string) ([]string, error) {
	args := []string{"ls-files", "-z", "--others", "--exclude-standard", "--full-name", "--"}
	out, err := r.Run(ctx, append(args, paths...)...)
	if err != nil {
		return nil, err
	}
	var files []string
	for _, p := range bytes.Split(out, []byte{0}) {
		if len(p) > 0 {
			files = append(files, string(p))
		}
	}
	return files, nil
}

// Log returns the subjects of commits in base..head, oldest first.
func (r *Runner) Subjects(ctx context.Context, base, head string) ([]string, error) {
	out, err := r.Run(ctx, "log", "--reverse", "--format=%s", "--end-of-options", base+".."+head)
	if err != nil {
		return nil, err
	}
	s := strings.TrimSpace(string(out))
	if s == "" {
		return nil, nil
	}
	return strings.Split(s, "\n"), nil
}

// BlobReader reads many blobs through one `git cat-file --batch`, which is
// what makes reading thousands of changed files cheap. Without --filters
// or --textconv, cat-file prints objects as stored: no driver runs.
type BlobReader struct {
	r      *Runner
	ctx    context.Context
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Reader
	stderr *capped
}

// Blobs starts a batch reader. Close it when done. `cat-file --batch`
// (without --filters or --textconv) runs no filter or diff driver, so it
// starts without waiting for the driver environment, like the noDrivers
// subcommands: the policy's reads start while git config still runs.
func (r *Runner) Blobs(ctx context.Context) (*BlobReader, error) {
	env := baseEnv()
	args := []string{"cat-file", "--batch"}
	cmd := r.command(ctx, env, args...)
	stderr := &capped{max: maxStderr}
	cmd.Stderr = stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	widenPipe(out, 1<<20) // as for the diff (stream.go): cat-file writes on
	if err := cmd.Start(); err != nil {
		return nil, r.failure(ctx, args, "", err)
	}
	return &BlobReader{r: r, ctx: ctx, cmd: cmd, in: in, out: bufio.NewReaderSize(out, 1<<20), stderr: stderr}, nil
}

// Read returns the content of an object (a blob id, or "rev:path").
// Missing objects return ok == false.
func (b *BlobReader) Read(object string) (data []byte, ok bool, err error) {
	return b.ReadLimit(object, -1)
}

// ErrBlobTooLarge is returned by ReadLimit for an object over its limit.
var ErrBlobTooLarge = errors.New("object larger than the limit")

// ReadLimit is Read for objects of at most max bytes (max < 0: any size).
// A larger object is skipped unread — its bytes are discarded, so the
// batch stays in step — and ErrBlobTooLarge is returned.
func (b *BlobReader) ReadLimit(object string, max int) (data []byte, ok bool, err error) {
	objs, err := b.ReadObjects([]string{object}, max)
	if err != nil {
		return nil, false, err
	}
	return objs[0].Data, objs[0].Found, objs[0].Err
}

// Object is one answer of ReadObjects.
type Object struct {
	Type  string // blob, tree, commit, tag; "" when not found
	Size  int
	Data  []byte // nil when not found or over the limit
	Found bool
	Err   error // ErrBlobTooLarge (wrapped) for an object over the limit
}

// ReadObjects is ReadLimit for several objects in one round trip, with
// each object's type and size (set for one over max too): the requests
// are written at once, then the answers read in order, so git answers
// them without waiting for the caller between each. An error
// (other than an object over max) leaves the batch out of step: close it.
func (b *BlobReader) ReadObjects(objects []string, max int) ([]Object, error) {
	var req strings.Builder
	for _, o := range objects {
		if strings.ContainsAny(o, "\n") {
			return nil, fmt.Errorf("invalid object name %q", o)
		}
		req.WriteString(o + "\n")
	}
	if _, err := io.WriteString(b.in, req.String()); err != nil {
		return nil, err
	}
	out := make([]Object, len(objects))
	for i, object := range objects {
		header, err := b.out.ReadString('\n')
		if err != nil {
			return nil, err
		}
		header = strings.TrimSuffix(header, "\n")
		if strings.HasSuffix(header, " missing") || strings.HasSuffix(header, " ambiguous") {
			continue
		}
		fields := strings.Fields(header)
		if len(fields) != 3 {
			return nil, fmt.Errorf("git cat-file: unexpected header %q", header)
		}
		size, err := strconv.Atoi(fields[2])
		if err != nil || size < 0 {
			return nil, fmt.Errorf("git cat-file: bad size in %q", header)
		}
		o := &out[i]
		o.Type, o.Size = fields[1], size
		if max >= 0 && size > max {
			if _, err := io.CopyN(io.Discard, b.out, int64(size)+1); err != nil {
				return nil, err
			}
			o.Err = fmt.Errorf("%s: %d bytes: %w", object, size, ErrBlobTooLarge)
			continue
		}
		data := make([]byte, size+1) // content and its trailing newline
		if _, err := io.ReadFull(b.out, data); err != nil {
			return nil, err
		}
		o.Data, o.Found = data[:size], true
	}
	return out, nil
}

// TreeEntry is one entry of a tree object: its mode as git writes it in
// trees (octal, no leading zero: "100644", "100755", "120000" for a
// symlink, "40000" for a tree, "160000" for a submodule), its name and
// its object id in hex.
type TreeEntry struct {
	Mode, Name, ID string
}

// ParseTree parses a tree object's content as cat-file --batch prints it:
// entries of "MODE NAME\0" followed by the id's hashLen raw bytes (20 for
// SHA-1 repositories, 32 for SHA-256).
func ParseTree(data []byte, hashLen int) ([]TreeEntry, error) {
	var out []TreeEntry
	for len(data) > 0 {
		sp := bytes.IndexByte(data, ' ')
		nul := bytes.IndexByte(data, 0)
		if sp <= 0 || nul < sp+2 || len(data) < nul+1+hashLen {
			return nil, errors.New("git: malformed tree object")
		}
		out = append(out, TreeEntry{Mode: string(data[:sp]), Name: string(data[sp+1 : nul]), ID: hex.EncodeToString(data[nul+1 : nul+1+hashLen])})
		data = data[nul+1+hashLen:]
	}
	return out, nil
}

// kill stops the batch process unasked (a stream given up) and waits for
// it.
func (b *BlobReader) kill() {
	b.in.Close()
	if b.cmd.Process != nil {
		b.cmd.Process.Kill()
	}
	b.cmd.Wait()
}

// Close stops the batch process.
func (b *BlobReader) Close() error {
	b.in.Close()
	if err := b.cmd.Wait(); err != nil {
		return b.r.failure(b.ctx, []string{"cat-file", "--batch"}, b.stderr.String(), err)
	}
	return nil
}

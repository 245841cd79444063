// Package git runs the git CLI for diffpal with flags and environment that
// make its output independent of the user's configuration: no external diff
// or textconv drivers, no colour, fixed prefixes, unquoted UTF-8 paths, C
// locale, no pager, no optional locks. It owns revision resolution, range
// selection (merge-base, default branch, shallow clones) and reading
// diffs and blobs; it does not parse diffs (package diff does).
package git

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
)

// Runner runs git in one repository.
type Runner struct {
	// Dir is the work tree (or any directory inside it).
	Dir string
	// Git is the git executable; default "git".
	Git string
}

// Error is a failed git command with its stderr.
type Error struct {
	Args   []string
	Stderr string
	Err    error
}

func (e *Error) Error() string {
	msg := strings.TrimSpace(e.Stderr)
	if msg == "" {
		msg = e.Err.Error()
	}
	return fmt.Sprintf("git %s: %s", strings.Join(e.Args, " "), msg)
}

func (e *Error) Unwrap() error { return e.Err }

// baseArgs neutralize configuration that would change what we read.
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
	"-c", "diff.ignoreSubmodules=none",
	"-c", "log.showSignature=false",
	"--no-pager",
}

func (r *Runner) env() []string {
	env := os.Environ()
	out := env[:0:0]
	for _, kv := range env {
		// Variables that would redirect or reshape git's work.
		switch k, _, _ := strings.Cut(kv, "="); k {
		case "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_EXTERNAL_DIFF", "GIT_DIFF_OPTS",
			"GIT_PAGER", "PAGER", "LC_ALL", "LANG", "LANGUAGE", "GIT_CONFIG_PARAMETERS", "GIT_CONFIG_COUNT":
			continue
		}
		out = append(out, kv)
	}
	return append(out, "LC_ALL=C", "GIT_TERMINAL_PROMPT=0", "GIT_OPTIONAL_LOCKS=0", "GIT_CONFIG_NOSYSTEM=1")
}

func (r *Runner) command(ctx context.Context, args ...string) *exec.Cmd {
	git := r.Git
	if git == "" {
		git = "git"
	}
	cmd := exec.CommandContext(ctx, git, append(append([]string(nil), baseArgs...), args...)...)
	cmd.Dir = r.Dir
	cmd.Env = r.env()
	return cmd
}

// Run runs git and returns its stdout.
func (r *Runner) Run(ctx context.Context, args ...string) ([]byte, error) {
	cmd := r.command(ctx, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if errors.Is(err, exec.ErrNotFound) {
			return nil, fmt.Errorf("git is not installed or not on PATH: %w", err)
		}
		return nil, &Error{Args: args, Stderr: stderr.String(), Err: err}
	}
	return stdout.Bytes(), nil
}

func (r *Runner) line(ctx context.Context, args ...string) (string, error) {
	out, err := r.Run(ctx, args...)
	return strings.TrimSpace(string(out)), err
}

// TopLevel returns the work tree root, or an error saying this is not a
// git repository.
func (r *Runner) TopLevel(ctx context.Context) (string, error) {
	top, err := r.line(ctx, "rev-parse", "--show-toplevel")
	if err != nil {
		var ge *Error
		if errors.As(err, &ge) && strings.Contains(ge.Stderr, "not a git repository") {
			return "", fmt.Errorf("%s is not inside a git repository (run diffpal in a repository, or pass --repo-dir)", r.Dir)
		}
		return "", err
	}
	return top, nil
}

// ResolveCommit turns any revision into a full commit id.
func (r *Runner) ResolveCommit(ctx context.Context, rev string) (string, error) {
	if strings.HasPrefix(rev, "-") {
		return "", fmt.Errorf("invalid revision %q: must not start with '-'", rev)
	}
	sha, err := r.line(ctx, "rev-parse", "--verify", "--quiet", "--end-of-options", rev+"^{commit}")
	if err != nil || sha == "" {
		return "", fmt.Errorf("unknown revision %q (not a commit in this repository)", rev)
	}
	return sha, nil
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
	"--diff-algorithm=myers", "--ignore-submodules=none",
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
// what makes reading thousands of changed files cheap.
type BlobReader struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
}

// Blobs starts a batch reader. Close it when done.
func (r *Runner) Blobs(ctx context.Context) (*BlobReader, error) {
	cmd := r.command(ctx, "cat-file", "--batch")
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return &BlobReader{cmd: cmd, in: in, out: bufio.NewReaderSize(out, 1<<20)}, nil
}

// Read returns the content of an object (a blob id, or "rev:path").
// Missing objects return ok == false.
func (b *BlobReader) Read(object string) (data []byte, ok bool, err error) {
	if strings.ContainsAny(object, "\n") {
		return nil, false, fmt.Errorf("invalid object name %q", object)
	}
	if _, err := io.WriteString(b.in, object+"\n"); err != nil {
		return nil, false, err
	}
	header, err := b.out.ReadString('\n')
	if err != nil {
		return nil, false, err
	}
	header = strings.TrimSuffix(header, "\n")
	if strings.HasSuffix(header, " missing") || strings.HasSuffix(header, " ambiguous") {
		return nil, false, nil
	}
	fields := strings.Fields(header)
	if len(fields) != 3 {
		return nil, false, fmt.Errorf("git cat-file: unexpected header %q", header)
	}
	size, err := strconv.Atoi(fields[2])
	if err != nil {
		return nil, false, fmt.Errorf("git cat-file: bad size in %q", header)
	}
	data = make([]byte, size+1) // content and its trailing newline
	if _, err := io.ReadFull(b.out, data); err != nil {
		return nil, false, err
	}
	return data[:size], true, nil
}

// Close stops the batch process.
func (b *BlobReader) Close() error {
	b.in.Close()
	return b.cmd.Wait()
}

// ReadMany reads objects in one pipelined batch: every name is written
// while responses are read, so thousands of blobs cost one round of
// process I/O instead of one per blob. Missing objects yield nil.
func (b *BlobReader) ReadMany(objects []string) ([][]byte, error) {
	for _, o := range objects {
		if strings.ContainsAny(o, "\n") {
			return nil, fmt.Errorf("invalid object name %q", o)
		}
	}
	werr := make(chan error, 1)
	go func() {
		w := bufio.NewWriterSize(b.in, 64<<10)
		for _, o := range objects {
			if _, err := w.WriteString(o + "\n"); err != nil {
				werr <- err
				return
			}
		}
		werr <- w.Flush()
	}()
	out := make([][]byte, len(objects))
	for i := range objects {
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
		if err != nil {
			return nil, fmt.Errorf("git cat-file: bad size in %q", header)
		}
		data := make([]byte, size+1)
		if _, err := io.ReadFull(b.out, data); err != nil {
			return nil, err
		}
		out[i] = data[:size]
	}
	if err := <-werr; err != nil {
		return nil, err
	}
	return out, nil
}

// ChangedBlobs lists the new-side blob ids of base..head from `git diff
// --raw` (no content diffing, so it is quick): regular files that exist on
// the head side, submodules excluded.
func (r *Runner) ChangedBlobs(ctx context.Context, base, head string) ([]string, error) {
	out, err := r.Run(ctx, "diff", "--raw", "-z", "--no-abbrev", "--find-renames", "--no-ext-diff", "--no-relative", "--end-of-options", base, head, "--")
	if err != nil {
		return nil, err
	}
	var ids []string
	fields := bytes.Split(out, []byte{0})
	for i := 0; i < len(fields); i++ {
		meta := string(fields[i])
		if !strings.HasPrefix(meta, ":") {
			continue
		}
		parts := strings.Fields(meta[1:])
		if len(parts) < 5 {
			return nil, fmt.Errorf("git diff --raw: unexpected entry %q", meta)
		}
		newMode, newID, status := parts[1], parts[3], parts[4]
		i++ // path
		if status[0] == 'R' || status[0] == 'C' {
			i++ // second path
		}
		if newMode == "160000" || newMode == "000000" || strings.Trim(newID, "0") == "" {
			continue
		}
		ids = append(ids, newID)
	}
	return ids, nil
}

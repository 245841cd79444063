// Package safefile is the one place diffpal writes files. diffpal runs in
// CI on pull requests from strangers, so the repository it writes into may
// hold hostile symlinks; every writer in the CLI goes through here.
//
// The rules (docs/output-safety.md):
//
//   - Confinement. A path inside a trusted base directory (the repository
//     root for review and init, the working directory for sarif and
//     upgrade) is walked from the base down with Lstat: every component
//     must be a real directory, never a symlink, or the write is refused
//     with a *RefusedError naming the component. Missing directories are
//     created one at a time, without following links. The walk and the
//     writes go through an os.Root, so even a link swapped in during the
//     walk cannot lead outside the base. Components of a path outside the
//     base (an explicit absolute --out elsewhere) are the caller's choice
//     and are not checked.
//   - Targets. The file written must be absent or a regular file: a
//     symlink, directory, device, FIFO or socket is refused, whatever
//     the directory. Temporary files are created with O_EXCL (which never
//     follows a link) and renamed over the target, which replaces a name
//     rather than writing through it.
//   - Modes. New files get Options.Perm exactly (the umask does not
//     apply, as before); Options.Keep replaces a file keeping its mode and
//     owner (upgrade --in-place) and refuses when the owner cannot be kept.
//   - Cleanup. Every temporary file and staging directory is registered
//     while it exists; Cleanup, which cmd/diffpal calls before every exit
//     including the one after SIGINT/SIGTERM, removes what is left and
//     makes later writes fail with ErrInterrupted. A cancelled context
//     abandons a write before its rename.
//   - Sets. WriteSet writes several files so that a reader never takes a
//     mix of two runs for one: see its documentation.
package safefile

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/diffpalhq/diffpal/internal/repofs"
)

// ErrRefused is wrapped by every *RefusedError.
var ErrRefused = errors.New("refused")

// RefusedError is a write refused because of what is on disk: a symlink
// or non-directory on the way, or a target that is not a regular file.
// Nothing was written.
type RefusedError struct {
	Op     string // "write through", "replace", "write"
	Path   string // the offending path, as the caller spelled its base
	Reason string
}

func (e *RefusedError) Error() string {
	return "refusing to " + e.Op + " " + e.Path + ": " + e.Reason
}

// Is makes errors.Is(err, ErrRefused) true.
func (e *RefusedError) Is(target error) bool { return target == ErrRefused }

// Options tune a write.
type Options struct {
	// Perm is the mode of the file written (default 0644). The umask does
	// not apply.
	Perm os.FileMode
	// DirPerm is the mode of directories created on the way (default
	// 0755, subject to the umask).
	DirPerm os.FileMode
	// Keep, when the target exists, gives the new file the old one's
	// permission bits and owner instead of Perm; the write fails (and
	// nothing changes) when the owner cannot be kept.
	Keep bool
}

func (o Options) perm() os.FileMode {
	if o.Perm == 0 {
		return 0o644
	}
	return o.Perm.Perm()
}

func (o Options) dirPerm() os.FileMode {
	if o.DirPerm == 0 {
		return 0o755
	}
	return o.DirPerm.Perm()
}

// Write creates or replaces path with what write produces, atomically,
// under the package's rules, with base as the trusted directory ("" for
// none: then only the target itself is checked).
func Write(ctx context.Context, base, path string, opts Options, write func(io.Writer) error) error {
	name := filepath.Base(path)
	if path == "" || strings.HasSuffix(path, string(filepath.Separator)) || name == "." || name == ".." || name == string(filepath.Separator) {
		return fmt.Errorf("%s: not a file name", path)
	}
	d, err := OpenDir(base, filepath.Dir(path), opts)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.WriteFile(ctx, name, opts, write)
}

// Dir is an output directory that passed the confinement checks, opened
// as an os.Root: names written in it cannot lead out of it.
type Dir struct {
	root *os.Root
	path string // as the caller spelled it, for messages
	abs  string
}

// OpenDir creates (as needed) and opens dir for writing. When dir lies
// inside base, every component below base must be a real directory;
// opts.DirPerm is the mode of the ones created.
func OpenDir(base, dir string, opts Options) (*Dir, error) {
	absDir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	rel, absBase, inside := within(base, absDir)
	if !inside {
		if err := os.MkdirAll(absDir, opts.dirPerm()); err != nil {
			return nil, err
		}
		r, err := os.OpenRoot(absDir)
		if err != nil {
			return nil, err
		}
		return &Dir{root: r, path: dir, abs: absDir}, nil
	}
	br, err := os.OpenRoot(absBase)
	if err != nil {
		return nil, err
	}
	defer br.Close()
	last, err := walk(br, base, rel, opts.dirPerm(), true)
	if err != nil {
		return nil, err
	}
	r, err := br.OpenRoot(rel)
	if err != nil {
		return nil, err
	}
	// The directory opened must be the one the walk checked.
	if fi, err := r.Stat("."); err != nil || !os.SameFile(fi, last) {
		r.Close()
		return nil, &RefusedError{Op: "write", Path: dir, Reason: "the directory changed while it was being checked"}
	}
	return &Dir{root: r, path: dir, abs: absDir}, nil
}

// CheckDir reports whether dir could be written under the confinement
// rules without creating anything: the components of dir below base that
// exist must all be real directories. Missing components are fine.
func CheckDir(base, dir string) error {
	absDir, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	rel, absBase, inside := within(base, absDir)
	if !inside {
		return nil
	}
	br, err := os.OpenRoot(absBase)
	if err != nil {
		return err
	}
	defer br.Close()
	_, err = walk(br, base, rel, 0, false)
	return err
}

// walk Lstats each component of rel from the base down, refusing symlinks
// and non-directories, creating missing ones when create is set, and
// returns the last one's info. A missing component ends a non-creating
// walk without error.
func walk(br *os.Root, base, rel string, perm os.FileMode, create bool) (fs.FileInfo, error) {
	last, err := br.Lstat(".")
	if err != nil || rel == "." {
		return last, err
	}
	cur := ""
	for _, part := range strings.Split(rel, string(filepath.Separator)) {
		cur = filepath.Join(cur, part)
		fi, err := br.Lstat(cur)
		if errors.Is(err, fs.ErrNotExist) {
			if !create {
				return nil, nil
			}
			if err := br.Mkdir(cur, perm); err != nil && !errors.Is(err, fs.ErrExist) {
				return nil, err
			}
			fi, err = br.Lstat(cur)
		}
		if err != nil {
			return nil, err
		}
		shown := filepath.Join(base, cur)
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			to, _ := br.Readlink(cur)
			return nil, &RefusedError{Op: "write through", Path: shown,
				Reason: fmt.Sprintf("it is a symlink (to %s); output paths inside the repository must be real directories", to)}
		case !fi.IsDir():
			return nil, &RefusedError{Op: "write through", Path: shown, Reason: "it is " + describe(fi.Mode()) + ", not a directory"}
		}
		last = fi
	}
	return last, nil
}

// within returns dir relative to base when dir lies inside base. Besides
// the lexical test it recognises base reached through a symlink outside
// the repository (a working directory under a linked /home, say): the
// shallowest ancestor of dir that is the same directory as base counts
// as base, so a link inside the repository can never stand in for it.
func within(base, absDir string) (rel, absBase string, ok bool) {
	if base == "" {
		return "", "", false
	}
	absBase, err := filepath.Abs(base)
	if err != nil {
		return "", "", false
	}
	if r, err := filepath.Rel(absBase, absDir); err == nil && local(r) {
		return r, absBase, true
	}
	bfi, err := os.Stat(absBase)
	if err != nil {
		return "", "", false
	}
	vol := filepath.VolumeName(absDir)
	parts := strings.Split(strings.TrimPrefix(absDir[len(vol):], string(filepath.Separator)), string(filepath.Separator))
	p := vol + string(filepath.Separator)
	for _, part := range parts {
		p = filepath.Join(p, part)
		fi, err := os.Stat(p)
		if err != nil {
			break
		}
		if os.SameFile(fi, bfi) {
			r, err := filepath.Rel(p, absDir)
			if err != nil {
				break
			}
			return r, p, true
		}
	}
	return "", "", false
}

func local(rel string) bool {
	return rel == "." || filepath.IsLocal(rel)
}

// Close releases the directory.
func (d *Dir) Close() error { return d.root.Close() }

// Path is how name in d is named in messages.
func (d *Dir) Path(name string) string { return filepath.Join(d.path, name) }

// target checks what is at name: nil when nothing is, its info when a
// regular file is, a *RefusedError otherwise.
func (d *Dir) target(name string) (fs.FileInfo, error) {
	if name == "" || name != filepath.Base(name) || name == "." || name == ".." {
		return nil, fmt.Errorf("%s: not a file name", d.Path(name))
	}
	fi, err := d.root.Lstat(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if fi.Mode().IsRegular() {
		return fi, nil
	}
	reason := "it is " + describe(fi.Mode()) + ", not a regular file"
	if fi.Mode()&fs.ModeSymlink != 0 {
		to, _ := d.root.Readlink(name)
		reason = fmt.Sprintf("it is a symlink (to %s); give the real path", to)
	}
	return nil, &RefusedError{Op: "replace", Path: d.Path(name), Reason: reason}
}

func describe(m fs.FileMode) string { return repofs.Kind(m) }

// WriteFile creates or replaces name in d with what write produces:
// a temporary file beside it, synced, renamed over it.
func (d *Dir) WriteFile(ctx context.Context, name string, opts Options, write func(io.Writer) error) (err error) {
	old, err := d.target(name)
	if err != nil {
		return err
	}
	perm := opts.perm()
	var own *owner
	if opts.Keep && old != nil {
		perm = old.Mode().Perm()
		own = ownerOf(old)
	}
	tmp, f, err := d.createTemp(d.root, "", "."+name+".", ".tmp")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			d.root.Remove(tmp)
		}
		untrack(filepath.Join(d.abs, tmp))
	}()
	if _, err = writeTo(f, write, filepath.Join(d.abs, tmp)); err != nil {
		return err
	}
	if own != nil {
		if err = own.apply(f); err != nil {
			return fmt.Errorf("keep the owner of %s: %w; nothing was written", d.Path(name), err)
		}
	}
	if err = f.Chmod(perm); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	if err = ctx.Err(); err != nil {
		return err
	}
	if err = beginCommit(); err != nil {
		return err
	}
	err = d.root.Rename(tmp, name)
	endCommit()
	if err != nil {
		return err
	}
	d.sync()
	return nil
}

// writeTo runs write into f through a buffer and returns the bytes
// written; the test hook runs once the content is out.
func writeTo(f *os.File, write func(io.Writer) error, path string) (int64, error) {
	cw := &countWriter{w: f}
	bw := bufio.NewWriterSize(cw, 64<<10)
	if err := write(bw); err != nil {
		return 0, err
	}
	if err := bw.Flush(); err != nil {
		return 0, err
	}
	if h := TestHookAfterWrite; h != nil {
		h(path)
	}
	return cw.n, nil
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// createTemp makes a fresh file prefix+random+suffix in r (dir, relative
// to d, only names it for the registry) with O_EXCL and mode 0600, and
// registers it.
func (d *Dir) createTemp(r *os.Root, dir, prefix, suffix string) (string, *os.File, error) {
	for range 10000 {
		name := prefix + strconv.FormatUint(uint64(rand.Uint32()), 10) + suffix
		var f *os.File
		err := track(filepath.Join(d.abs, dir, name), false, func() (err error) {
			f, err = r.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
			return err
		})
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return "", nil, err
		}
		return name, f, nil
	}
	return "", nil, fmt.Errorf("%s: cannot create a temporary file", d.Path(prefix+"*"+suffix))
}

// mkdirTemp makes a fresh directory prefix+random+suffix in d with mode
// 0700 and registers it.
func (d *Dir) mkdirTemp(prefix, suffix string) (string, error) {
	for range 10000 {
		name := prefix + strconv.FormatUint(uint64(rand.Uint32()), 10) + suffix
		err := track(filepath.Join(d.abs, name), true, func() error { return d.root.Mkdir(name, 0o700) })
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return "", err
		}
		return name, nil
	}
	return "", fmt.Errorf("%s: cannot create a staging directory", d.Path(prefix+"*"+suffix))
}

// sync makes renames in d durable; best effort where directories cannot
// be synced.
func (d *Dir) sync() {
	if f, err := d.root.Open("."); err == nil {
		f.Sync()
		f.Close()
	}
}

// CheckTarget refuses, without writing anything, a path that exists and is
// not a regular file (a symlink, directory, device, FIFO or socket).
func CheckTarget(path string) error {
	d := &Dir{path: filepath.Dir(path)}
	r, err := os.OpenRoot(filepath.Dir(path))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer r.Close()
	d.root = r
	_, err = d.target(filepath.Base(path))
	return err
}

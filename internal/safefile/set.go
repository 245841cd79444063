package safefile

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
)

// File is one member of a set written by WriteSet.
type File struct {
	Name  string      // a plain file name in the directory
	Perm  os.FileMode // default 0644
	Write func(io.Writer) error
}

// Written is what WriteSet wrote for one file.
type Written struct {
	Name   string `json:"name"`
	Bytes  int64  `json:"bytes"`
	SHA256 string `json:"sha256"`
}

// StagePrefix and StageSuffix frame the name of WriteSet's staging
// directory; like temporary files (".NAME.N.tmp") it starts with a dot
// and ends in ".tmp".
const (
	StagePrefix = ".diffpal-stage-"
	StageSuffix = ".tmp"
)

// WriteSet writes files into d as one set, then a manifest made from what
// was written, so that a reader never takes a mix of two runs for one:
//
//  1. Every target and the manifest are checked first: one symlink or
//     non-regular file refuses the whole set before anything is written.
//  2. The files are written and synced, concurrently (so each File.Write
//     must be safe to run alongside the others), the manifest with them
//     once every file is written, in a fresh staging
//     directory inside d (StagePrefix+N+StageSuffix, mode 0700). An error, a
//     cancelled ctx or a signal (Cleanup) up to here leaves the published
//     files exactly as they were, and the staging directory is removed.
//  3. Under an exclusive lock on d (serialising concurrent runs) and the
//     in-process commit lock (so Cleanup waits instead of cutting the swap
//     in half), the old manifest is removed, each file is renamed into
//     place, and the new manifest is renamed in last.
//  4. The staging directory, now empty, is removed.
//
// The manifest lists every file with its size and SHA-256. A reader that
// needs one run's set reads the manifest, then the files, and checks them
// against it; no manifest means a write is in progress or was cut short by
// SIGKILL or a crash in step 3. Nothing else in d is touched: other
// entries (a model-answer cache directory, a session store) stay as they
// are, which is why the set is swapped file by file rather than by
// renaming the directory.
func (d *Dir) WriteSet(ctx context.Context, files []File, manifest string, body func([]Written) func(io.Writer) error) ([]Written, error) {
	seen := map[string]bool{}
	for _, name := range append(names(files), manifest) {
		if seen[name] {
			return nil, fmt.Errorf("%s: named twice in one set", d.Path(name))
		}
		seen[name] = true
		if _, err := d.target(name); err != nil {
			return nil, err
		}
	}
	stage, err := d.mkdirTemp(StagePrefix, StageSuffix)
	if err != nil {
		return nil, err
	}
	absStage := filepath.Join(d.abs, stage)
	defer func() {
		d.root.RemoveAll(stage)
		untrack(absStage)
	}()
	sr, err := d.root.OpenRoot(stage)
	if err != nil {
		return nil, err
	}
	defer sr.Close()
	// The files are staged concurrently: each is rendered, written and
	// synced on its own, and a small review's outputs spent most of their
	// time waiting for one fsync after another. The manifest needs only
	// what was written, so it is written and synced while the files'
	// syncs run (nothing is published before all of them are done).
	written := make([]Written, len(files))
	writeErrs, syncErrs := make([]error, len(files)), make([]error, len(files))
	var wrote, synced sync.WaitGroup
	wrote.Add(len(files))
	for i, f := range files {
		synced.Go(func() {
			out, w, err := stageWrite(sr, absStage, f)
			written[i], writeErrs[i] = w, err
			wrote.Done()
			if err == nil {
				syncErrs[i] = stageSync(out)
			}
		})
	}
	wrote.Wait()
	var manifestErr error
	if !slices.ContainsFunc(writeErrs, func(err error) bool { return err != nil }) {
		_, manifestErr = stageFile(sr, absStage, File{Name: manifest, Write: body(written)})
	}
	synced.Wait()
	for i := range files {
		if err := cmp.Or(writeErrs[i], syncErrs[i]); err != nil {
			return nil, fmt.Errorf("write %s: %w", d.Path(files[i].Name), err)
		}
	}
	if manifestErr != nil {
		return nil, fmt.Errorf("write %s: %w", d.Path(manifest), manifestErr)
	}
	// The staging directory itself is not synced: its entries are
	// renamed away below, and what makes the published names durable is
	// each file's own sync before and d's sync after the renames (as for
	// a single file written by WriteFile).
	if err := ctx.Err(); err != nil {
		return nil, err
	}

	unlock := lockDir(d)
	defer unlock()
	if err := beginCommit(); err != nil {
		return nil, err
	}
	defer endCommit()
	// Checked again under the lock, so that nothing is unpublished for a
	// set that cannot be completed.
	for name := range seen {
		if _, err := d.target(name); err != nil {
			return nil, err
		}
	}
	if err := d.root.Remove(manifest); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("remove the old %s: %w", d.Path(manifest), err)
	}
	for _, name := range append(names(files), manifest) {
		if err := d.root.Rename(filepath.Join(stage, name), name); err != nil {
			return nil, fmt.Errorf("publish %s: %w", d.Path(name), err)
		}
	}
	d.sync()
	return written, nil
}

func names(files []File) []string {
	out := make([]string, len(files))
	for i, f := range files {
		out[i] = f.Name
	}
	return out
}

// stageFile writes one file into the private staging directory and
// syncs it.
func stageFile(sr *os.Root, absStage string, f File) (Written, error) {
	out, w, err := stageWrite(sr, absStage, f)
	if err != nil {
		return Written{}, err
	}
	return w, stageSync(out)
}

// stageWrite writes one file into the private staging directory; the
// file is left open for stageSync (closed on an error).
func stageWrite(sr *os.Root, absStage string, f File) (*os.File, Written, error) {
	perm := Options{Perm: f.Perm}.perm()
	out, err := sr.OpenFile(f.Name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, Written{}, err
	}
	h := sha256.New()
	n, err := writeTo(out, func(w io.Writer) error { return f.Write(io.MultiWriter(w, h)) }, filepath.Join(absStage, f.Name))
	if err == nil {
		err = out.Chmod(perm)
	}
	if err != nil {
		out.Close()
		return nil, Written{}, err
	}
	return out, Written{Name: f.Name, Bytes: n, SHA256: hex.EncodeToString(h.Sum(nil))}, nil
}

// stageSync syncs and closes a file stageWrite wrote.
func stageSync(out *os.File) error {
	if err := out.Sync(); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

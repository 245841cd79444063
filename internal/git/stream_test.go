package git_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/diffpalhq/diffpal/internal/diff"
	"github.com/diffpalhq/diffpal/internal/git"
	"github.com/diffpalhq/diffpal/internal/git/gittest"
)

// TestDiffBlobs: the streamed patch is Diff's, byte for byte, and the
// contents are exactly the new side of every file of the parsed patch that
// has a new blob and is neither binary nor a submodule — read with cat-file
// one by one for comparison — on a change with every awkward kind of file
// and enough files (and a large one) that the patch arrives in many reads
// while blob ids are being sent.
func TestDiffBlobs(t *testing.T) {
	ctx := context.Background()
	repo, base, head := awkwardChange(t)
	r := &git.Runner{Dir: repo.Dir}
	testDiffBlobs(t, ctx, r, base, head)
}

// awkwardChange is a change with every awkward kind of file, and enough
// files (and a large one) that its patch arrives in many reads.
func awkwardChange(t *testing.T) (*gittest.Repo, string, string) {
	sub := gittest.New(t)
	sub.Write("s.txt", "s\n")
	sub.Commit("sub")

	repo := gittest.New(t)
	repo.Write("keep.go", "package x\n\nfunc A() {}\n")
	repo.Write("old name.txt", strings.Repeat("same line\n", 20))
	repo.Write("pure rename.txt", strings.Repeat("unchanged\n", 20))
	repo.Write("gone.txt", "bye\n")
	repo.Write("script.sh", "echo hi\n")
	repo.Write("img.bin", "\x00\x01\x02")
	repo.Write("dir/same.txt", "same\n")
	base := repo.Commit("base")
	repo.Git("config", "diff.noprefix", "true")
	repo.Git("config", "core.quotePath", "true")

	repo.Write("keep.go", "package x\n\nfunc A() {}\n\nfunc B() { panic(1) }")
	repo.Git("mv", "old name.txt", "new \"name\" ü.txt")
	repo.Write("new \"name\" ü.txt", strings.Repeat("same line\n", 20)+"added\n")
	repo.Git("mv", "pure rename.txt", "renamed.txt")
	repo.Remove("gone.txt")
	repo.Chmod("script.sh", 0o755)
	repo.Write("img.bin", "\x00\x01\x03\x04")
	repo.Write("new.bin", "bin\x00ary")
	repo.Write("tab\tname.go", "package y\n")
	repo.Write("empty.txt", "")
	repo.Write("dup1.txt", "same content\n")
	repo.Write("dup2.txt", "same content\n")
	repo.Write("big.txt", strings.Repeat("a fairly long line of text to make a large file\n", 40000))
	// Added files whose content is read from the patch: CRLF lines, no
	// final newline, lines that look like patch syntax, a symlink.
	repo.Write("crlf.txt", "one\r\ntwo\r\n")
	repo.Write("no-eol.txt", "first\nlast")
	repo.Write("lookalike.txt", "diff --git a/x b/x\n@@ -1 +1 @@\n+++ b/x\n\\ No newline at end of file\n-minus\n \n")
	if err := os.Symlink("keep.go", filepath.Join(repo.Dir, "link")); err != nil {
		t.Fatal(err)
	}
	for i := range 300 {
		repo.Write(fmt.Sprintf("many/f%03d.go", i), fmt.Sprintf("package many\n\nconst C%d = %d\n", i, i))
	}
	repo.Git("-c", "protocol.file.allow=always", "submodule", "add", "-q", sub.Dir, "vendor/sub")
	head := repo.Commit("change")
	return repo, base, head
}

func testDiffBlobs(t *testing.T, ctx context.Context, r *git.Runner, base, head string) {
	for _, paths := range [][]string{nil, {"keep.go", "many/f007.go", "img.bin", "vendor/sub"}} {
		want, err := r.Diff(ctx, base, head, paths...)
		if err != nil {
			t.Fatal(err)
		}
		p, err := diffBlobs(ctx, r, base, head, paths...)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(p.diff, want) {
			t.Fatalf("paths %q: the streamed patch differs from Diff's (%d vs %d bytes)", paths, len(p.diff), len(want))
		}
		files, err := diff.Parse(want)
		if err != nil {
			t.Fatal(err)
		}
		br, err := r.Blobs(ctx)
		if err != nil {
			t.Fatal(err)
		}
		wantBlobs := map[string]string{}
		for _, f := range files {
			if f.NewBlob == "" || f.Binary || f.Submodule {
				continue
			}
			data, ok, err := br.Read(f.NewBlob)
			if err != nil || !ok {
				t.Fatalf("%s: %v %v", f.Path(), ok, err)
			}
			wantBlobs[f.NewBlob] = string(data)
		}
		br.Close()
		if len(wantBlobs) < 2 {
			t.Fatalf("paths %q: only %d blobs to compare", paths, len(wantBlobs))
		}
		if len(p.blobs) != len(wantBlobs) {
			t.Errorf("paths %q: %d blobs read, want %d", paths, len(p.blobs), len(wantBlobs))
		}
		for id, w := range wantBlobs {
			if got, ok := p.blobs[id]; !ok || string(got) != w {
				t.Errorf("paths %q: blob %s: got %d bytes (present %v), want %d", paths, id, len(got), ok, len(w))
			}
		}
		for id := range p.blobs {
			if _, ok := wantBlobs[id]; !ok {
				t.Errorf("paths %q: blob %s read but not wanted (binary, submodule or not in the patch)", paths, id)
			}
		}
	}

	// Errors are git's: an unknown revision, a pathspec outside the
	// repository.
	if _, err := diffBlobs(ctx, r, base, strings.Repeat("f", 40)); err == nil {
		t.Error("unknown head: no error")
	}
	if _, err := diffBlobs(ctx, r, base, head, "../outside"); err == nil || !strings.Contains(err.Error(), "outside repository") {
		t.Errorf("pathspec outside the repository: %v", err)
	}
}

// TestDiffFiles: each file's part of the streamed patch starts at its
// "diff --git" line, parses (ParseFrom) to exactly the file the whole
// patch parses to there, and comes with its own blob; an error from the
// callback stops the stream and is returned.
func TestDiffFiles(t *testing.T) {
	ctx := context.Background()
	repo, base, head := awkwardChange(t)
	r := &git.Runner{Dir: repo.Dir}
	whole, err := r.Diff(ctx, base, head)
	if err != nil {
		t.Fatal(err)
	}
	want, err := diff.Parse(whole)
	if err != nil {
		t.Fatal(err)
	}
	var got []*diff.File
	line, blobs := 1, 0
	fromPatch := 0
	restore := git.SetPatchBlob(func(patch []byte, id string, maxBlob int) ([]byte, int, bool) {
		data, size, ok := git.PatchBlob(patch, id, maxBlob)
		if ok {
			fromPatch++
		}
		return data, size, ok
	})
	defer restore()
	info, err := r.DiffFiles(ctx, base, head, -1, func(fd git.FileDiff) error {
		if !bytes.HasPrefix(fd.Patch, []byte("diff --git ")) {
			t.Errorf("a part starts with %q", fd.Patch[:min(len(fd.Patch), 40)])
		}
		fs, err := diff.ParseFrom(fd.Patch, line)
		if err != nil || len(fs) != 1 {
			t.Fatalf("part at line %d: %d files, %v", line, len(fs), err)
		}
		line += bytes.Count(fd.Patch, []byte("\n"))
		if fd.HasBlob {
			blobs++
			if fd.BlobID != fs[0].NewBlob {
				t.Errorf("%s: blob %s, want %s", fs[0].Path(), fd.BlobID, fs[0].NewBlob)
			}
		} else if fs[0].NewBlob != "" && !fs[0].Binary && !fs[0].Submodule {
			t.Errorf("%s: no blob", fs[0].Path())
		}
		got = append(got, fs...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(whole)
	if info.SHA256 != hex.EncodeToString(sum[:]) || info.Size != len(whole) {
		t.Errorf("patch %s, %d bytes; want %x, %d bytes", info.SHA256, info.Size, sum, len(whole))
	}
	if !reflect.DeepEqual(got, want) || blobs < 300 {
		t.Errorf("parts parse to %d files (%d blobs), the whole patch to %d", len(got), blobs, len(want))
	}
	// Added text files' contents come from the patch (testDiffBlobs
	// compares them with cat-file's): the 300 many/, the tab name, the
	// empty, the two duplicates, big, crlf, no-eol, lookalike and link.
	if fromPatch != 300+10 {
		t.Errorf("%d contents from the patch, want %d", fromPatch, 300+10)
	}

	stop := errors.New("stop here")
	n := 0
	_, err = r.DiffFiles(ctx, base, head, -1, func(git.FileDiff) error {
		if n++; n == 3 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || n != 3 {
		t.Errorf("stopped after %d files with %v, want the callback's error after 3", n, err)
	}
}

// TestStartDiffFiles: a diff started ahead streams what DiffFiles does,
// once; one never streamed is closed without waiting on its full pipes
// (this patch is larger than a pipe holds); a bad revision is reported
// by Files.
func TestStartDiffFiles(t *testing.T) {
	ctx := context.Background()
	repo, base, head := awkwardChange(t)
	r := &git.Runner{Dir: repo.Dir}
	whole, err := r.Diff(ctx, base, head)
	if err != nil {
		t.Fatal(err)
	}
	if len(whole) < 1<<20 {
		t.Fatalf("the patch is %d bytes: too small to fill the pipes", len(whole))
	}
	d := r.StartDiffFiles(ctx, base, head)
	if !d.For(repo.Dir, base, head, nil) || d.For(repo.Dir, base, head, []string{"a"}) || d.For(repo.Dir, head, base, nil) || d.For(repo.Dir+"/sub", base, head, nil) {
		t.Error("For does not tell the started diff from others")
	}
	var patch []byte
	blobs := 0
	info, err := d.Files(-1, func(fd git.FileDiff) error {
		patch = append(patch, fd.Patch...)
		if fd.HasBlob {
			blobs++
		}
		return nil
	})
	sum := sha256.Sum256(whole)
	if err != nil || !bytes.Equal(patch, whole) || info.SHA256 != hex.EncodeToString(sum[:]) || blobs < 300 {
		t.Fatalf("started ahead: %v; %d of %d bytes, %d blobs", err, len(patch), len(whole), blobs)
	}
	if d.For(repo.Dir, base, head, nil) {
		t.Error("a streamed diff is still offered")
	}
	if _, err := d.Files(-1, func(git.FileDiff) error { return nil }); err == nil {
		t.Error("streamed twice")
	}
	d.Close() // after Files: nothing to do

	unused := r.StartDiffFiles(ctx, base, head)
	time.Sleep(50 * time.Millisecond) // let git fill the pipes
	unused.Close()
	if _, err := unused.Files(-1, func(git.FileDiff) error { return nil }); err == nil {
		t.Error("a closed stream streamed")
	}

	bad := r.StartDiffFiles(ctx, base, strings.Repeat("f", 40))
	if _, err := bad.Files(-1, func(git.FileDiff) error { return nil }); err == nil {
		t.Error("unknown head: no error")
	}
}

// patchBlobs is a streamed patch collected: the whole patch and the
// contents by blob id.
type patchBlobs struct {
	diff  []byte
	blobs map[string][]byte
}

func diffBlobs(ctx context.Context, r *git.Runner, base, head string, paths ...string) (*patchBlobs, error) {
	p, each := collectBlobs()
	if _, err := r.DiffFiles(ctx, base, head, -1, each, paths...); err != nil {
		return nil, err
	}
	return p, nil
}

// collectBlobs returns a patchBlobs and the DiffFiles callback (no blob
// limit) that fills it.
func collectBlobs() (*patchBlobs, func(git.FileDiff) error) {
	p := &patchBlobs{blobs: map[string][]byte{}}
	return p, func(fd git.FileDiff) error {
		p.diff = append(p.diff, fd.Patch...)
		if fd.HasBlob {
			if fd.Truncated || len(fd.Blob) != fd.BlobSize {
				return fmt.Errorf("%s: %d of %d bytes without a limit", fd.BlobID, len(fd.Blob), fd.BlobSize)
			}
			p.blobs[fd.BlobID] = fd.Blob
		}
		return nil
	}
}

// TestDiffFilesLimit: a blob over the limit arrives as its head with its
// size, the ones after it whole and in step, the patch unchanged.
func TestDiffFilesLimit(t *testing.T) {
	ctx := context.Background()
	repo, base, head := awkwardChange(t)
	r := &git.Runner{Dir: repo.Dir}
	full, err := diffBlobs(ctx, r, base, head)
	if err != nil {
		t.Fatal(err)
	}
	const limit = 1000
	var patch []byte
	truncated, whole := 0, 0
	_, err = r.DiffFiles(ctx, base, head, limit, func(fd git.FileDiff) error {
		patch = append(patch, fd.Patch...)
		if !fd.HasBlob {
			return nil
		}
		want := full.blobs[fd.BlobID]
		switch {
		case fd.BlobSize != len(want):
			t.Errorf("%s: size %d, want %d", fd.BlobID, fd.BlobSize, len(want))
		case fd.BlobSize > limit:
			truncated++
			if fd.Truncated != (len(want) > git.BlobHead) || !bytes.Equal(fd.Blob, want[:min(len(want), git.BlobHead)]) {
				t.Errorf("%s over the limit: truncated=%v, %d bytes kept", fd.BlobID, fd.Truncated, len(fd.Blob))
			}
		default:
			whole++
			if fd.Truncated || !bytes.Equal(fd.Blob, want) {
				t.Errorf("%s under the limit: truncated=%v, %d of %d bytes", fd.BlobID, fd.Truncated, len(fd.Blob), len(want))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(patch, full.diff) || truncated == 0 || whole < 300 {
		t.Errorf("patch same: %v; %d blobs over the limit, %d under", bytes.Equal(patch, full.diff), truncated, whole)
	}
}

// TestParseFromLines: a part's parse errors name lines of the whole patch.
func TestParseFromLines(t *testing.T) {
	_, err := diff.ParseFrom([]byte("diff --git a/x b/x\n@@ -1 +1 @@\n-a\n+b\nbogus\n"), 101)
	var pe *diff.ParseError
	if !errors.As(err, &pe) || pe.Line != 105 {
		t.Errorf("error %v, want one at line 105", err)
	}
}

// TestParseTree: a tree object read through cat-file --batch parses to
// the entries ls-tree lists (mode, name, id), and a malformed one is an
// error, not a guess.
func TestParseTree(t *testing.T) {
	ctx := context.Background()
	repo := gittest.New(t)
	repo.Write("a.go", "package a\n")
	repo.Write("dir/b.txt", "b\n")
	repo.Write("with space.txt", "c\n")
	repo.Chmod("a.go", 0o755)
	head := repo.Commit("c")
	r := &git.Runner{Dir: repo.Dir}
	b, err := r.Blobs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	objs, err := b.ReadObjects([]string{head + "^{tree}", head + ":nothing"}, -1)
	if err != nil || !objs[0].Found || objs[0].Type != "tree" {
		t.Fatalf("root tree: %+v %v", objs, err)
	}
	if o := objs[1]; o.Found || o.Err != nil || o.Type != "" {
		t.Errorf("missing path: %+v", o)
	}
	got, err := git.ParseTree(objs[0].Data, len(head)/2)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, e := range got {
		mode := e.Mode
		if mode == "40000" {
			mode = "040000"
		}
		lines = append(lines, mode+" "+e.ID+"\t"+e.Name)
	}
	out := repo.Git("ls-tree", head)
	var want []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(l) // mode type id\tname
		want = append(want, f[0]+" "+f[2]+"\t"+l[strings.Index(l, "\t")+1:])
	}
	if !slices.Equal(lines, want) || len(got) != 3 {
		t.Errorf("parsed %q\nls-tree %q", lines, want)
	}
	for _, bad := range []string{"100644 a", "100644 a\x00short", " a\x00" + strings.Repeat("x", 20), "100644 \x00" + strings.Repeat("x", 20)} {
		if _, err := git.ParseTree([]byte(bad), 20); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

// TestDiffStreamLend: a started diff lends its cat-file: the borrower's
// requests get their own answers (the stream asks for no blob meanwhile),
// and the stream then streams the same patch and blobs as ever, whether
// the borrower gave it back or Files ended the lending.
func TestDiffStreamLend(t *testing.T) {
	ctx := context.Background()
	repo, base, head := awkwardChange(t)
	r := &git.Runner{Dir: repo.Dir}
	want, err := diffBlobs(ctx, r, base, head)
	if err != nil {
		t.Fatal(err)
	}
	for _, giveBack := range []bool{true, false} {
		d := r.StartDiffFiles(ctx, base, head)
		b, give, ok := d.Lend()
		if !ok {
			t.Fatal("no cat-file to lend")
		}
		time.Sleep(20 * time.Millisecond) // git diffs meanwhile
		objs, err := b.ReadObjects([]string{head + "^{tree}", base + ":no/such/file", head + "^{tree}"}, -1)
		if err != nil || !objs[0].Found || objs[0].Type != "tree" || objs[1].Found || !bytes.Equal(objs[0].Data, objs[2].Data) {
			t.Fatalf("borrowed reads: %v %+v", err, objs)
		}
		if giveBack {
			give()
		}
		got, each := collectBlobs()
		_, err = d.Files(-1, each)
		if err != nil || !bytes.Equal(got.diff, want.diff) || !reflect.DeepEqual(got.blobs, want.blobs) {
			t.Fatalf("gave back %v: streamed %v, %d of %d bytes, %d of %d blobs", giveBack, err, len(got.diff), len(want.diff), len(got.blobs), len(want.blobs))
		}
		give() // after Files: nothing left to do
		if _, _, ok := d.Lend(); ok {
			t.Error("a streamed diff lent its cat-file")
		}
	}
	var none *git.DiffStream
	if _, give, ok := none.Lend(); ok {
		t.Error("a nil stream lent something")
	} else {
		give()
	}
	// Closed while lent and not given back: Close ends the lending.
	d := r.StartDiffFiles(ctx, base, head)
	if _, _, ok := d.Lend(); !ok {
		t.Fatal("no cat-file to lend")
	}
	d.Close()
}

// TestDiffFilesPatchBlobFallback: an added file whose patch does not hash
// to its blob is read from git instead, with the same result; the check
// itself refuses a patch changed by one byte, a patch of a modified file
// and a blob id of the wrong length.
func TestDiffFilesPatchBlobFallback(t *testing.T) {
	ctx := context.Background()
	repo, base, head := awkwardChange(t)
	r := &git.Runner{Dir: repo.Dir}
	want, err := diffBlobs(ctx, r, base, head)
	if err != nil {
		t.Fatal(err)
	}
	var added [][]byte
	var addedIDs []string
	restore := git.SetPatchBlob(func(patch []byte, id string, _ int) ([]byte, int, bool) {
		added, addedIDs = append(added, patch), append(addedIDs, id)
		return nil, 0, false
	})
	got, err := diffBlobs(ctx, r, base, head)
	if err != nil {
		t.Fatal(err)
	}
	// Under a limit, what git answers is kept as from the stream's own
	// cat-file: the head of a blob over it, with its whole size.
	const limit = 1000
	over := 0
	_, err = r.DiffFiles(ctx, base, head, limit, func(fd git.FileDiff) error {
		w, ok := want.blobs[fd.BlobID]
		switch {
		case !fd.HasBlob:
		case !ok || fd.BlobSize != len(w):
			t.Errorf("%s: size %d, want %d", fd.BlobID, fd.BlobSize, len(w))
		case len(w) > limit:
			over++
			if !bytes.Equal(fd.Blob, w[:min(len(w), git.BlobHead)]) || fd.Truncated != (len(w) > git.BlobHead) {
				t.Errorf("%s over the limit: %d bytes kept, truncated=%v", fd.BlobID, len(fd.Blob), fd.Truncated)
			}
		case !bytes.Equal(fd.Blob, w) || fd.Truncated:
			t.Errorf("%s under the limit: %d of %d bytes", fd.BlobID, len(fd.Blob), len(w))
		}
		return nil
	})
	restore()
	if err != nil || over == 0 {
		t.Fatalf("limited stream: %v, %d blobs over the limit", err, over)
	}
	if !reflect.DeepEqual(got.blobs, want.blobs) || !bytes.Equal(got.diff, want.diff) {
		t.Errorf("with every patch refused: %d blobs (want %d), patch same %v", len(got.blobs), len(want.blobs), bytes.Equal(got.diff, want.diff))
	}
	if len(added) < 300 {
		t.Fatalf("only %d added files checked", len(added))
	}
	for i, patch := range added {
		data, size, ok := git.PatchBlob(patch, addedIDs[i], -1)
		w := want.blobs[addedIDs[i]]
		if !ok || string(data) != string(w) || size != len(w) {
			t.Errorf("%s: the check refuses its own patch (ok %v)", addedIDs[i], ok)
			continue
		}
		// Over a limit, the head only, and the whole size.
		if len(w) > 10 {
			head, size, ok := git.PatchBlob(patch, addedIDs[i], 10)
			if !ok || size != len(w) || string(head) != string(w[:min(len(w), git.BlobHead)]) {
				t.Errorf("%s over a limit of 10: %d bytes kept of %d, ok %v", addedIDs[i], len(head), size, ok)
			}
		}
		if k := bytes.LastIndexByte(patch, '+'); k > bytes.Index(patch, []byte("\n@@ ")) && k >= 0 {
			bad := bytes.Clone(patch)
			bad[k+1]++
			if _, _, ok := git.PatchBlob(bad, addedIDs[i], -1); ok {
				t.Errorf("%s: a patch changed by one byte passes the check", addedIDs[i])
			}
		}
		if _, _, ok := git.PatchBlob(patch, addedIDs[i][:39], -1); ok {
			t.Errorf("%s: a short blob id passes", addedIDs[i])
		}
	}
	whole, _ := r.Diff(ctx, base, head, "keep.go")
	if _, _, ok := git.PatchBlob(whole, strings.Repeat("0", 40), -1); ok {
		t.Error("a modified file's patch passes")
	}
}

// TestDiffFilesFromWorktree: with the work tree of the head given, a
// modified file's new content is read from it when the file there hashes
// to the blob — with the same patch, blobs and limits as from cat-file —
// and never when it does not: a file edited since, one swapped for a
// symlink, one removed, a FIFO (which must not block the read).
func TestDiffFilesFromWorktree(t *testing.T) {
	ctx := context.Background()
	repo := gittest.New(t)
	names := []string{"sp ace.txt", "edited.txt", "swapped.txt", "removed.txt", "fifo.txt", "dir/deep.go"}
	for i := range 100 {
		names = append(names, fmt.Sprintf("m/f%03d.go", i))
	}
	for _, n := range names {
		repo.Write(n, "package m\n\n// "+n+"\nconst A = 1\n")
	}
	base := repo.Commit("base")
	for _, n := range names {
		repo.Write(n, "package m\n\n// "+n+"\nconst A = 2\n"+strings.Repeat("var B = 3\n", len(n)))
	}
	repo.Write("m/f050.go", strings.Repeat("// over the head a limit keeps\n", git.BlobHead/20))
	head := repo.Commit("change")
	// The work tree, changed after the commit.
	repo.Write("edited.txt", "edited after the commit\n")
	swapped := filepath.Join(repo.Dir, "swapped.txt")
	if err := os.Remove(swapped); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("m/f000.go", swapped); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(repo.Dir, "removed.txt")); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(repo.Dir, "fifo.txt")
	if err := os.Remove(fifo); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}

	r := &git.Runner{Dir: repo.Dir}
	for _, limit := range []int{-1, 10} {
		want, each := collectBlobs()
		if limit >= 0 {
			want, each = limitedBlobs(limit)
		}
		if _, err := r.DiffFiles(ctx, base, head, limit, each); err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		served := map[string]bool{}
		restore := git.SetWorktreeBlob(func(root *os.Root, path, id string) ([]byte, bool) {
			data, ok := git.WorktreeBlob(root, path, id)
			mu.Lock()
			served[path] = ok
			mu.Unlock()
			return data, ok
		})
		got, each := collectBlobs()
		if limit >= 0 {
			got, each = limitedBlobs(limit)
		}
		_, err := r.StartDiffFilesFrom(ctx, base, head, repo.Dir).Files(limit, each)
		restore()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.diff, want.diff) || !reflect.DeepEqual(got.blobs, want.blobs) || len(want.blobs) != len(names) {
			t.Fatalf("limit %d: from the work tree %d blobs, patch same %v; from cat-file %d blobs", limit, len(got.blobs), bytes.Equal(got.diff, want.diff), len(want.blobs))
		}
		for _, n := range names {
			changed := n == "edited.txt" || n == "swapped.txt" || n == "removed.txt" || n == "fifo.txt"
			if ok, asked := served[n]; !asked || ok == changed {
				t.Errorf("limit %d: %s asked of the work tree %v, served from it %v", limit, n, asked, ok)
			}
		}
	}
}

// limitedBlobs is collectBlobs for a limit: each blob as DiffFiles keeps
// it (its head when over the limit), with its size and truncation.
func limitedBlobs(limit int) (*patchBlobs, func(git.FileDiff) error) {
	p := &patchBlobs{blobs: map[string][]byte{}}
	return p, func(fd git.FileDiff) error {
		p.diff = append(p.diff, fd.Patch...)
		if fd.HasBlob {
			p.blobs[fd.BlobID] = fmt.Appendf(nil, "%s|%d|%v", fd.Blob, fd.BlobSize, fd.Truncated)
		}
		return nil
	}
}

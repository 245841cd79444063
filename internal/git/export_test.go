package git

import "os"

// PatchBlob is patchBlob, for tests of the check.
var PatchBlob = patchBlob

// SetPatchBlob replaces patchBlob until restore is called.
func SetPatchBlob(f func(patch []byte, id string, maxBlob int) ([]byte, int, bool)) (restore func()) {
	old := patchBlob
	patchBlob = f
	return func() { patchBlob = old }
}

// WorktreeBlob is worktreeBlob, for tests of the check.
var WorktreeBlob = worktreeBlob

// SetWorktreeBlob replaces worktreeBlob until restore is called.
func SetWorktreeBlob(f func(root *os.Root, path, id string) ([]byte, bool)) (restore func()) {
	old := worktreeBlob
	worktreeBlob = f
	return func() { worktreeBlob = old }
}

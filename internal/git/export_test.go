package git

// PatchBlob is patchBlob, for tests of the check.
var PatchBlob = patchBlob

// SetPatchBlob replaces patchBlob until restore is called.
func SetPatchBlob(f func(patch []byte, id string, maxBlob int) ([]byte, int, bool)) (restore func()) {
	old := patchBlob
	patchBlob = f
	return func() { patchBlob = old }
}

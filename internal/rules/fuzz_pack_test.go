package rules

import (
	"strings"
	"testing"
)

// FuzzUserPack loads arbitrary bytes as a user rule pack (a pack can come
// from the change under review): an error or a set, never a panic, and
// yamlsafe's bounds keep memory flat.
func FuzzUserPack(f *testing.F) {
	f.Add([]byte(validRule))
	f.Add([]byte("rules: [\n"))
	f.Add([]byte("rules: " + strings.Repeat("[", 300)))
	f.Add([]byte("a: &a [x, x]\nb: &b [*a, *a]\nrules: *b\n"))
	f.Add([]byte("pack: x\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 1<<16 {
			return
		}
		s, err := LoadPacks([]string{"fuzz.yaml"}, [][]byte{data})
		if err == nil && s == nil {
			t.Fatal("nil set without an error")
		}
		if err != nil && !strings.Contains(err.Error(), "fuzz.yaml") {
			t.Fatalf("error does not name the pack: %v", err)
		}
	})
}

package llm

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The cache never reads or writes through a symlink below its base: a
// committed .artifacts symlink cannot point it at another directory.
func TestCacheRefusesSymlinkedDirectory(t *testing.T) {
	root, elsewhere := t.TempDir(), t.TempDir()
	if err := os.Symlink(elsewhere, filepath.Join(root, ".artifacts")); err != nil {
		t.Fatal(err)
	}
	c := &Cache{Dir: filepath.Join(root, DefaultCacheDir), Base: root}
	key := strings.Repeat("ab", 32)
	if err := c.Put(key, "p", "m", "review", json.RawMessage(`{}`), Usage{}); err == nil {
		t.Error("Put wrote through a symlink")
	}
	entries, _ := os.ReadDir(elsewhere)
	if len(entries) != 0 {
		t.Errorf("files appeared in the link's target: %v", entries)
	}
	// An entry planted in the target is not read either.
	os.MkdirAll(filepath.Join(elsewhere, "diffpal/cache/ab"), 0o700)
	os.WriteFile(filepath.Join(elsewhere, "diffpal/cache/ab", key+".json"), []byte(`{"version":1,"key":"`+key+`","answer":{"x":1}}`), 0o600)
	if _, _, ok := c.Get(key); ok {
		t.Error("Get read through a symlink")
	}
	// Without the link the cache works.
	root2 := t.TempDir()
	c2 := &Cache{Dir: filepath.Join(root2, DefaultCacheDir), Base: root2}
	if err := c2.Put(key, "p", "m", "review", json.RawMessage(`{"y":2}`), Usage{}); err != nil {
		t.Fatal(err)
	}
	if a, _, ok := c2.Get(key); !ok || string(a) != `{"y":2}` {
		t.Errorf("round trip: %s %v", a, ok)
	}
}

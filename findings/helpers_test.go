package findings

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"
)

func sha256hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// fuzzSeeds are the bundles under testdata used as fuzz seeds and as
// differential-test inputs.
func fuzzSeeds(t testing.TB) [][]byte {
	var out [][]byte
	for _, pattern := range []string{"testdata/upgrade/*.json", "testdata/corpus/*.json"} {
		files, _ := filepath.Glob(pattern)
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, data)
		}
	}
	return out
}

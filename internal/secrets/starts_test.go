package secrets

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestScanStartsEachDetectorsOwn: the one pass lists, for each keyword
// scan, exactly the offsets that scan's own table and third-byte filter
// select — what each detector looked at when it scanned the text itself
// — on this package's sources and test data (code, keys, tokens in
// every case) and on short texts that end inside a pair.
func TestScanStartsEachDetectorsOwn(t *testing.T) {
	var texts []string
	for _, pat := range []string{"*.go", "testdata/*", "testdata/*/*"} {
		paths, _ := filepath.Glob(pat)
		for _, p := range paths {
			if d, err := os.ReadFile(p); err == nil {
				texts = append(texts, string(d))
			}
		}
	}
	if len(texts) < 10 {
		t.Fatalf("only %d texts to check", len(texts))
	}
	texts = append(texts, "", "g", "gh", "ghp", "pa", "PAS", "-----", "ak", "AKIA", "token", "Tok")
	st := detector()
	for _, s := range texts {
		var formatAt, nameAt []int
		for i := 0; i+1 < len(s); i++ {
			pair := uint16(s[i])<<8 | uint16(s[i+1])
			if g := kwIndex[pair]; g != 0 && !(i+2 < len(s) && kwThird[g].rulesOut(s[i+2])) {
				formatAt = append(formatAt, i)
			}
			if nameKwAt[pair] != 0 {
				nameAt = append(nameAt, i)
			}
		}
		leakAt := st.keywordStarts(s, nil)
		f := &finder{s: s}
		f.scanStarts()
		if !slices.Equal(f.formatAt, formatAt) || !slices.Equal(f.nameAt, nameAt) || !slices.Equal(f.leakAt, leakAt) {
			t.Fatalf("text of %d bytes: starts differ: formats %d/%d, names %d/%d, gitleaks %d/%d",
				len(s), len(f.formatAt), len(formatAt), len(f.nameAt), len(nameAt), len(f.leakAt), len(leakAt))
		}
	}
}

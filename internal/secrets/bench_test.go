package secrets

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/zricethezav/gitleaks/v8/detect"

	st "github.com/diffpalhq/diffpal/internal/secrets/secretstest"
)

// mixedText is what Redact sees in a review: diff hunks of code and
// configuration, finding notes, prose, JSON, with a few secrets.
func mixedText() string {
	var sb strings.Builder
	for i := range 2000 {
		switch i % 10 {
		case 0:
			fmt.Fprintf(&sb, "@@ -%d,7 +%d,9 @@ func handler%d(w http.ResponseWriter, r *http.Request) {\n", i, i, i)
		case 1:
			fmt.Fprintf(&sb, "+\tresult, err := client.Fetch(ctx, key%d, token.Value) // see https://example.com/api/v%d\n", i, i%3)
		case 2:
			fmt.Fprintf(&sb, "+\tcfg := map[string]any{\"name\": \"svc-%d\", \"retries\": %d, \"password\": os.Getenv(\"PW\")}\n", i, i%7)
		case 3:
			fmt.Fprintf(&sb, "  {\"rule_id\": \"sec.tls-insecure-skip-verify\", \"path\": \"internal/api/client%d.go\", \"start_line\": %d, \"severity\": \"high\"},\n", i, i)
		case 4:
			fmt.Fprintf(&sb, "The access token is read from the environment; the API key rotates every %d days.\n", i%90)
		case 5:
			fmt.Fprintf(&sb, "+DATABASE_URL=postgres://app@db:5432/app_%d\n", i)
		case 6:
			fmt.Fprintf(&sb, "-\tif err := s.store.Put(ctx, fmt.Sprintf(\"item/%%d\", id), data); err != nil {\n")
		case 7:
			fmt.Fprintf(&sb, "+    - name: build-%d\n+      run: go test ./...\n", i)
		case 8:
			if i%200 == 8 {
				fmt.Fprintf(&sb, "+const webhookToken = \"ghp_%s\"\n", st.Gen(fmt.Sprint("bench", i), st.Alnum, 36))
			} else {
				fmt.Fprintf(&sb, "+\treturn fmt.Errorf(\"decode response %d: %%w\", err)\n", i)
			}
		default:
			fmt.Fprintf(&sb, "  summary: %d findings (HIGH %d), reviewed in %d ms\n", i, i%5, i*3)
		}
	}
	return sb.String()
}

// BenchmarkRedact is Redact over a realistic mixed output text (~180 KB).
func BenchmarkRedact(b *testing.B) {
	text := mixedText()
	b.SetBytes(int64(len(text)))
	b.ResetTimer()
	for range b.N {
		Redact(text)
	}
}

// BenchmarkRedactLine is Redact over one short line (a snippet, a title).
func BenchmarkRedactLine(b *testing.B) {
	line := "TLS certificate verification disabled for the API client"
	for range b.N {
		Redact(line)
	}
}

// resetDetector forgets the package's gitleaks state, as in a new process.
func resetDetector() {
	gl.once = sync.Once{}
	gl.st = nil
}

// firstScanTexts are what a small review hands the secret scan: a file
// without any keyword, one with a keyword the scan rules out itself, one
// with a value gitleaks must look at and rejects, one with a secret.
var firstScanTexts = map[string]string{
	"nokeyword": "package main\n\nimport \"fmt\"\n\nfunc main() {\n\tfor i := range 10 {\n\t\tfmt.Println(i)\n\t}\n}\n",
	"keyword":   "package main\n\nfunc main() {\n\tapiKey := os.Getenv(\"API_KEY\")\n\tfmt.Println(apiKey)\n}\n",
	"gitleaks":  "package main\n\nfunc main() {\n\ttoken := \"this-is-not-a-real-token-value\"\n\tfmt.Println(token)\n}\n",
	"secret":    "package main\n\nconst token = \"ghp_" + st.Gen("first-ghp", st.Alnum, 36) + "\"\n\nfunc main() {\n\tfmt.Println(token)\n}\n",
}

// BenchmarkFirstScan is the first ScanPath of a process (the package's
// state reset on every iteration): what a small review pays for the
// secret scan. /default-detector is detect.NewDetectorDefaultConfig
// alone, the least the first scan cost before the snapshot.
func BenchmarkFirstScan(b *testing.B) {
	for _, name := range []string{"nokeyword", "keyword", "gitleaks", "secret"} {
		text := firstScanTexts[name]
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				resetDetector()
				ScanPath("main.go", text)
			}
		})
	}
	b.Run("rules", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			resetDetector()
			Rules()
		}
	})
	b.Run("default-detector", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			if _, err := detect.NewDetectorDefaultConfig(); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkScanWarm is ScanPath once the state is built (the subset
// detectors cached).
func BenchmarkScanWarm(b *testing.B) {
	for _, name := range []string{"nokeyword", "keyword", "gitleaks", "secret"} {
		text := firstScanTexts[name]
		b.Run(name, func(b *testing.B) {
			ScanPath("main.go", text)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				ScanPath("main.go", text)
			}
		})
	}
}

// BenchmarkFindParts times each of Find's detectors alone over code: this
// package's sources, or the file SECRETS_BENCH_TEXT names (the bench's
// change, say), cut into texts of a file's size.
func BenchmarkFindParts(b *testing.B) {
	var data []byte
	if p := os.Getenv("SECRETS_BENCH_TEXT"); p != "" {
		d, err := os.ReadFile(p)
		if err != nil {
			b.Fatal(err)
		}
		data = d
	} else {
		for _, p := range []string{"secrets.go", "gitleaks.go", "assign.go", "lines.go", "formats.go", "known.go"} {
			d, err := os.ReadFile(p)
			if err != nil {
				b.Fatal(err)
			}
			data = append(data, d...)
		}
	}
	var texts []string
	for s := string(data); len(s) > 0; {
		n := min(len(s), 6000)
		if k := strings.IndexByte(s[n-1:], '\n'); k >= 0 {
			n += k
		} else {
			n = len(s)
		}
		texts = append(texts, s[:n])
		s = s[n:]
	}
	// The keyword detectors are timed without the one pass that lists
	// where they look (scanStarts, timed as "starts"): each part gets a
	// finder whose starts are listed.
	scanned := make([]finder, len(texts))
	for i, t := range texts {
		scanned[i] = finder{s: t, r: std}
		scanned[i].scanStarts()
	}
	parts := []struct {
		name string
		fn   func(f *finder)
	}{
		{"starts", func(f *finder) { f.pooled = nil; f.scanStarts(); f.releaseStarts() }},
		{"formats", (*finder).formats}, {"urls", (*finder).urls}, {"assignments", (*finder).assignments},
		{"lineRules", (*finder).lineRules}, {"gitleaks", (*finder).gitleaks},
		{"Find", func(f *finder) { std.Find(f.s) }},
	}
	for _, p := range parts {
		b.Run(p.name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				for i := range scanned {
					f := scanned[i] // a copy: its own spans, the shared starts
					p.fn(&f)
				}
			}
		})
	}
}

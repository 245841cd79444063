package qa

import (
	"path"
	"slices"
	"strings"
	"sync"
	"unicode"
)

// HintRule is one row of the file-type → profile hint table. A changed file
// matches a rule when any of the rule's criteria matches it; a rule with
// MinChangedFiles fires on the change as a whole instead. The table is data
// so that the catalog can publish it and hosts can see why a hint appeared.
type HintRule struct {
	Profile     Profile `json:"profile"`
	Description string  `json:"description"`
	// Extensions match the end of the lower-cased base name (".tsx").
	Extensions []string `json:"extensions"`
	// FileNames match the whole lower-cased base name ("gemfile").
	FileNames []string `json:"file_names"`
	// NameSuffixes and NamePrefixes match the base name case-sensitively, so
	// "FooTest.java" matches "Test.java" while "latest.java" does not.
	NameSuffixes []string `json:"name_suffixes"`
	NamePrefixes []string `json:"name_prefixes"`
	// Directories match any lower-cased directory component.
	Directories []string `json:"directories"`
	// PathTokens match any lower-cased word of the path, where words are split
	// at punctuation, camelCase and letter/digit boundaries.
	PathTokens []string `json:"path_tokens"`
	// MinChangedFiles > 0 makes the rule fire when at least that many files
	// changed, regardless of their names.
	MinChangedFiles int `json:"min_changed_files"`
}

// HintRules returns the hint table in the order it is evaluated.
func HintRules() []HintRule {
	return []HintRule{
		{Profile: ProfileTypeScriptReviewer, Description: "TypeScript sources.",
			Extensions: []string{".ts", ".tsx", ".mts", ".cts"}},
		{Profile: ProfileReactReviewer, Description: "JSX/TSX component sources.",
			Extensions: []string{".jsx", ".tsx"}},
		{Profile: ProfileRubyReviewer, Description: "Ruby sources, tasks and gem manifests.",
			Extensions: []string{".rb", ".rake", ".gemspec", ".erb"}, FileNames: []string{"gemfile", "rakefile"}},
		{Profile: ProfilePythonReviewer, Description: "Python sources and project manifests.",
			Extensions: []string{".py", ".pyi"}, FileNames: []string{"pyproject.toml", "setup.py", "requirements.txt"}},
		{Profile: ProfileMobileReviewer, Description: "Android, iOS and React Native paths and native sources.",
			Extensions:  []string{".swift", ".kt", ".kts", ".m", ".mm", ".gradle", ".xcconfig", ".pbxproj", ".storyboard", ".xib"},
			FileNames:   []string{"androidmanifest.xml", "podfile", "info.plist", "metro.config.js", "react-native.config.js"},
			Directories: []string{"android", "ios", "react-native"}},
		{Profile: ProfilePRTestAnalyzer, Description: "Test files and test directories.",
			NameSuffixes: []string{"_test.go", "_test.py", "_test.rb", "_spec.rb", ".test.ts", ".test.tsx", ".test.js",
				".test.jsx", ".spec.ts", ".spec.tsx", ".spec.js", ".spec.jsx", "Test.java", "Tests.java", "Test.kt",
				"Tests.kt", "Test.swift", "Tests.swift"},
			NamePrefixes: []string{"test_"},
			Directories:  []string{"test", "tests", "__tests__", "spec", "specs", "e2e", "testdata"}},
		{Profile: ProfileSecurityReviewer, Description: "Paths that look like authentication, cryptography or secrets handling.",
			Extensions: []string{".pem", ".key", ".p12", ".pfx", ".crt"},
			FileNames:  []string{".env"},
			PathTokens: []string{"auth", "authn", "authz", "authentication", "authorization", "authorize", "oauth",
				"oidc", "saml", "sso", "login", "logout", "password", "passwd", "credential", "credentials", "secret",
				"secrets", "token", "tokens", "jwt", "crypto", "cryptography", "encrypt", "encryption", "decrypt",
				"cipher", "hmac", "tls", "ssl", "cert", "certs", "certificate", "certificates", "permission",
				"permissions", "acl", "rbac", "csrf", "xss", "sanitize", "sanitizer", "vault", "kms", "keystore", "keychain"}},
		{Profile: ProfileSilentFailureHunter, Description: "Paths that look like error handling, retries or fallbacks.",
			PathTokens: []string{"error", "errors", "err", "exception", "exceptions", "rescue", "retry", "retries",
				"fallback", "recover", "recovery", "panic", "timeout", "timeouts", "circuit", "breaker", "resilience", "failover"}},
		{Profile: ProfileCodeExplorer, Description: "Multi-file changes: map the path before reviewing it.", MinChangedFiles: 2},
		{Profile: ProfileCodeReviewer, Description: "Multi-file changes: review the changed surface as a whole.", MinChangedFiles: 2},
	}
}

// RecommendProfiles returns the profiles hinted by changedFiles, in profile
// declaration order. Hints never restrict what the host may select.
func RecommendProfiles(changedFiles []string) []Profile {
	hit := map[Profile]bool{}
	// Each file's name parts are worked out once, not once per rule: a
	// review-bound start has up to 500 changed files.
	files := make([]hintFile, len(changedFiles))
	for i, f := range changedFiles {
		files[i] = newHintFile(f)
	}
	for _, r := range hintRules() {
		if hit[r.Profile] {
			continue
		}
		if r.MinChangedFiles > 0 {
			if len(changedFiles) >= r.MinChangedFiles {
				hit[r.Profile] = true
			}
			continue
		}
		for i := range files {
			if r.matches(&files[i]) {
				hit[r.Profile] = true
				break
			}
		}
	}
	out := []Profile{}
	for _, p := range Profiles() {
		if hit[p] {
			out = append(out, p)
		}
	}
	return out
}

// hintRules is HintRules(), made once, on first use; RecommendProfiles
// only reads it.
var hintRules = sync.OnceValue(HintRules)

// hintFile is a changed file's name, in the parts HintRule criteria match.
type hintFile struct {
	file, base, lbase string
	dirs              []string // lower-cased, made on first use
	tokens            []string // pathTokens, made on first use (tokDone)
	tokDone           bool
}

func newHintFile(file string) hintFile {
	file = strings.ReplaceAll(file, "\\", "/")
	base := path.Base(file)
	return hintFile{file: file, base: base, lbase: strings.ToLower(base)}
}

func (r HintRule) matches(f *hintFile) bool {
	for _, e := range r.Extensions {
		if strings.HasSuffix(f.lbase, e) && len(f.lbase) > len(e) {
			return true
		}
	}
	if slices.Contains(r.FileNames, f.lbase) {
		return true
	}
	for _, s := range r.NameSuffixes {
		if strings.HasSuffix(f.base, s) {
			return true
		}
	}
	for _, s := range r.NamePrefixes {
		if strings.HasPrefix(f.base, s) {
			return true
		}
	}
	if len(r.Directories) > 0 {
		if f.dirs == nil {
			f.dirs = strings.Split(strings.ToLower(path.Dir(f.file)), "/") // never nil
		}
		for _, d := range f.dirs {
			if slices.Contains(r.Directories, d) {
				return true
			}
		}
	}
	if len(r.PathTokens) > 0 {
		if !f.tokDone {
			f.tokens, f.tokDone = pathTokens(f.file), true
		}
		for _, tok := range f.tokens {
			if slices.Contains(r.PathTokens, tok) {
				return true
			}
		}
	}
	return false
}

// pathTokens splits a path into lower-case words at punctuation, camelCase
// and letter/digit boundaries, so "src/AuthService.ts" yields "auth" and
// "HTTPServer" yields "http" and "server".
func pathTokens(p string) []string {
	// One pass over p's runes, remembering the one before: no rune slice
	// and no copies but the lower-cased tokens (an unbound review asks it
	// of up to thousands of files, on its one goroutine).
	var toks []string
	start := -1 // where the current token starts, in bytes
	flush := func(end int) {
		if start >= 0 && end > start {
			toks = append(toks, strings.ToLower(p[start:end]))
		}
		start = -1
	}
	var prev rune
	prevAt := 0
	for i, r := range p {
		switch {
		case !unicode.IsLetter(r) && !unicode.IsDigit(r):
			flush(i)
		case start < 0:
			start = i
		case unicode.IsDigit(r) != unicode.IsDigit(prev):
			flush(i)
			start = i
		case unicode.IsUpper(r) && unicode.IsLower(prev):
			// fooBar: split before B.
			flush(i)
			start = i
		case unicode.IsLower(r) && unicode.IsUpper(prev) && prevAt > start:
			// HTTPServer: split before the S that starts "Server".
			flush(prevAt)
			start = prevAt
		}
		prev, prevAt = r, i
	}
	flush(len(p))
	return toks
}

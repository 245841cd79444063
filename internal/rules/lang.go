package rules

import (
	"path"
	"strings"
)

// DetectLanguage maps a repo-relative path (and, for extension-less scripts,
// the first line of the file) to a language id used by rule packs. It returns
// "" when the language is unknown.
func DetectLanguage(p, firstLine string) string {
	p = strings.ReplaceAll(p, "\\", "/")
	base := path.Base(p)
	lower := strings.ToLower(base)
	switch {
	case lower == "dockerfile" || strings.HasPrefix(lower, "dockerfile.") || strings.HasSuffix(lower, ".dockerfile") || lower == "containerfile":
		return "dockerfile"
	case lower == "androidmanifest.xml":
		return "xml"
	case lower == ".env" || strings.HasPrefix(lower, ".env.") || strings.HasSuffix(lower, ".env"):
		return "dotenv"
	case lower == "gemfile" || lower == "rakefile" || lower == "podfile" || lower == "fastfile" || lower == "guardfile" || lower == "vagrantfile":
		return "ruby"
	case lower == "makefile" || lower == "gnumakefile":
		return "makefile"
	case lower == "jenkinsfile":
		return "groovy"
	case lower == "go.mod" || lower == "go.sum":
		return "gomod"
	}
	ext := strings.ToLower(path.Ext(base))
	switch ext {
	case ".go":
		return "go"
	case ".py", ".pyw", ".pyi":
		return "python"
	case ".js", ".jsx", ".mjs", ".cjs":
		return "javascript"
	case ".ts", ".tsx", ".mts", ".cts":
		return "typescript"
	case ".rb", ".rake", ".gemspec", ".ru", ".erb":
		return "ruby"
	case ".java":
		return "java"
	case ".kt", ".kts":
		if strings.HasSuffix(lower, ".gradle.kts") {
			return "gradle"
		}
		return "kotlin"
	case ".swift":
		return "swift"
	case ".m", ".mm":
		return "objc"
	case ".sh", ".bash", ".zsh", ".ksh":
		return "shell"
	case ".yml", ".yaml":
		return "yaml"
	case ".json", ".jsonc":
		return "json"
	case ".toml":
		return "toml"
	case ".xml", ".xsd", ".xsl":
		return "xml"
	case ".plist", ".entitlements":
		return "plist"
	case ".properties":
		return "properties"
	case ".gradle":
		return "gradle"
	case ".groovy":
		return "groovy"
	case ".md", ".markdown", ".mdx", ".rst", ".txt", ".adoc":
		return "markdown"
	case ".c", ".h":
		return "c"
	case ".cc", ".cpp", ".cxx", ".hpp", ".hh":
		return "cpp"
	case ".cs":
		return "csharp"
	case ".php":
		return "php"
	case ".rs":
		return "rust"
	case ".scala":
		return "scala"
	case ".dart":
		return "dart"
	case ".ini", ".cfg", ".conf":
		return "ini"
	case ".html", ".htm":
		return "html"
	case ".sql":
		return "sql"
	case ".tf", ".hcl":
		return "hcl"
	}
	if ext == "" || ext == ".in" {
		fl := strings.TrimSpace(firstLine)
		if strings.HasPrefix(fl, "#!") {
			switch {
			case strings.Contains(fl, "python"):
				return "python"
			case strings.Contains(fl, "node") || strings.Contains(fl, "deno"):
				return "javascript"
			case strings.Contains(fl, "ruby"):
				return "ruby"
			case strings.Contains(fl, "bash") || strings.Contains(fl, "/sh") || strings.Contains(fl, "zsh") || strings.Contains(fl, "ksh") || strings.HasSuffix(fl, " sh"):
				return "shell"
			}
		}
	}
	return ""
}

// languageAliases expands group names usable in a rule's languages list.
var languageAliases = map[string][]string{
	"js":     {"javascript", "typescript"},
	"jvm":    {"java", "kotlin"},
	"code":   {"go", "python", "javascript", "typescript", "ruby", "java", "kotlin", "swift", "objc", "shell", "c", "cpp", "csharp", "php", "rust", "scala", "dart", "groovy", "gradle"},
	"config": {"yaml", "json", "toml", "xml", "properties", "dotenv", "plist", "ini", "dockerfile", "hcl", "gradle"},
}

// knownLanguages are the ids DetectLanguage may return (plus "*" and aliases).
var knownLanguages = map[string]bool{
	"go": true, "python": true, "javascript": true, "typescript": true, "ruby": true, "java": true,
	"kotlin": true, "swift": true, "objc": true, "shell": true, "dockerfile": true, "yaml": true,
	"json": true, "toml": true, "xml": true, "properties": true, "gradle": true, "plist": true,
	"markdown": true, "dotenv": true, "makefile": true, "groovy": true, "gomod": true, "c": true,
	"cpp": true, "csharp": true, "php": true, "rust": true, "scala": true, "dart": true, "ini": true,
	"html": true, "sql": true, "hcl": true,
}

// IsTestPath reports whether a path looks like a test file or test fixture.
func IsTestPath(p string) bool {
	p = strings.ReplaceAll(p, "\\", "/")
	lp := strings.ToLower(p)
	base := path.Base(lp)
	origBase := path.Base(p)
	for _, seg := range strings.Split(path.Dir(lp), "/") {
		switch seg {
		case "test", "tests", "__tests__", "spec", "specs", "testdata", "testing", "e2e", "cypress", "fixtures", "__mocks__", "androidtest", "uitests", "testutil", "testutils":
			return true
		}
		if strings.HasSuffix(seg, "tests") && (strings.HasSuffix(seg, "uitests") || strings.HasSuffix(seg, "unittests")) {
			return true
		}
	}
	switch {
	case strings.HasSuffix(base, "_test.go"):
		return true
	case strings.HasSuffix(base, ".py") && (strings.HasPrefix(base, "test_") || strings.HasSuffix(base, "_test.py") || base == "conftest.py"):
		return true
	case strings.Contains(base, ".test.") || strings.Contains(base, ".spec.") || strings.Contains(base, ".cy."):
		return true
	case strings.HasSuffix(base, "_spec.rb") || strings.HasSuffix(base, "_test.rb"):
		return true
	case strings.HasSuffix(base, "_test.sh") || strings.HasSuffix(base, ".bats"):
		return true
	}
	for _, suf := range []string{"Test.java", "Tests.java", "IT.java", "Test.kt", "Tests.kt", "Spec.kt", "Tests.swift", "Test.swift", "Spec.swift"} {
		if strings.HasSuffix(origBase, suf) {
			return true
		}
	}
	return false
}

// isDocPath reports documentation-like files that never count as source.
func isDocLanguage(lang string) bool {
	return lang == "markdown" || lang == ""
}

// isSourceLanguage reports programming languages (for change-level test rules).
func isSourceLanguage(lang string) bool {
	switch lang {
	case "go", "python", "javascript", "typescript", "ruby", "java", "kotlin", "swift", "objc", "c", "cpp", "csharp", "php", "rust", "scala", "dart":
		return true
	}
	return false
}

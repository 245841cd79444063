package rules

import (
	"regexp"
	"sort"
	"strings"
)

// Symbol is a definition on an added line and where it is used elsewhere.
type Symbol struct {
	Name, Kind, Path string
	Line             int
	UsedIn           []Use
}

// Use is one reference to a symbol.
type Use struct {
	Path string
	Line int
}

type defPattern struct {
	kind string
	re   *regexp.Regexp
}

func dp(kind, re string) defPattern { return defPattern{kind, regexp.MustCompile(re)} }

// defPatterns recognise definitions per language; each has a "name" group.
var defPatterns = map[string][]defPattern{
	"go": {
		dp("method", `^func\s+\([^)]*\)\s*(?P<name>\w+)\s*(?:\[[^\]]*\])?\(`),
		dp("func", `^func\s+(?P<name>\w+)\s*(?:\[[^\]]*\])?\(`),
		dp("type", `^type\s+(?P<name>\w+)\b`),
		dp("const", `^const\s+(?P<name>\w+)\b`),
		dp("var", `^var\s+(?P<name>\w+)\b`),
	},
	"python": {
		dp("method", `^\s+(?:async\s+)?def\s+(?P<name>\w+)\s*\(`),
		dp("func", `^(?:async\s+)?def\s+(?P<name>\w+)\s*\(`),
		dp("class", `^\s*class\s+(?P<name>\w+)`),
		dp("const", `^(?P<name>[A-Z][A-Z0-9_]{2,})\s*(?::[^=]+)?=[^=]`),
	},
	"javascript": jsDefs,
	"typescript": append(append([]defPattern(nil), jsDefs...),
		dp("type", `^\s*(?:export\s+)?(?:declare\s+)?(?:interface|type|enum)\s+(?P<name>\w+)`)),
	"ruby": {
		dp("method", `^\s*def\s+(?:self\.)?(?P<name>\w+[?!=]?)`),
		dp("class", `^\s*(?:class|module)\s+(?P<name>[A-Z]\w*)`),
	},
	"java": {
		dp("class", `^\s*(?:(?:public|protected|private|static|final|abstract|sealed)\s+)*(?:class|interface|enum|record)\s+(?P<name>\w+)`),
		dp("method", `^\s*(?:(?:public|protected|private|static|final|abstract|synchronized|native|default)\s+)+(?:<[^>]+>\s+)?[\w<>\[\],.? ]+?\s+(?P<name>\w+)\s*\([^;]*$`),
	},
	"kotlin": {
		dp("func", `^\s*(?:(?:public|private|internal|protected|override|suspend|inline|open|abstract|operator|infix|tailrec)\s+)*fun\s+(?:<[^>]+>\s+)?(?:[\w.]+\.)?(?P<name>\w+)\s*\(`),
		dp("class", `^\s*(?:(?:public|private|internal|open|abstract|sealed|data|enum|inner|annotation|value)\s+)*(?:class|interface|object)\s+(?P<name>\w+)`),
	},
	"swift": {
		dp("func", `^\s*(?:(?:public|private|internal|fileprivate|open|static|class|override|final|mutating|@\w+)\s+)*func\s+(?P<name>\w+)`),
		dp("type", `^\s*(?:(?:public|private|internal|fileprivate|open|final)\s+)*(?:class|struct|enum|protocol)\s+(?P<name>\w+)`),
	},
	"shell": {
		dp("func", `^\s*function\s+(?P<name>[A-Za-z_][\w-]*)`),
		dp("func", `^\s*(?P<name>[A-Za-z_][\w-]*)\s*\(\)\s*\{?\s*$`),
	},
}

var jsDefs = []defPattern{
	dp("func", `^\s*(?:export\s+)?(?:default\s+)?(?:async\s+)?function\s*\*?\s*(?P<name>\w+)\s*[(<]`),
	dp("class", `^\s*(?:export\s+)?(?:default\s+)?(?:abstract\s+)?class\s+(?P<name>\w+)`),
	dp("func", `^\s*(?:export\s+)?(?:const|let|var)\s+(?P<name>\w+)\s*(?::[^=]+)?=\s*(?:async\s+)?(?:\([^)]*\)|\w+)\s*(?::\s*[^=]+)?=>`),
	dp("method", `^\s+(?:(?:public|private|protected|static|async|readonly|override)\s+)*(?P<name>[A-Za-z_]\w*)\s*\([^)]*\)\s*(?::\s*[^{]+)?\{\s*$`),
}

var notSymbol = map[string]bool{
	"if": true, "for": true, "while": true, "switch": true, "catch": true, "function": true, "return": true,
	"main": true, "init": true, "__init__": true, "constructor": true, "setUp": true, "tearDown": true,
	"new": true, "else": true, "do": true, "try": true, "with": true, "render": true, "initialize": true,
	"String": true, "Error": true, "ServeHTTP": true, "toString": true, "equals": true, "hashCode": true,
}

type def struct {
	name, kind string
	line       int
	text       string // masked, whitespace-collapsed definition line
}

// definitions returns the definitions on the given lines (masked texts).
func definitions(lang string, lines []Line, masked func(i int) string) []def {
	pats := defPatterns[lang]
	if pats == nil {
		return nil
	}
	var out []def
	for i, l := range lines {
		m := masked(i)
		for _, p := range pats {
			sm := p.re.FindStringSubmatch(m)
			if sm == nil {
				continue
			}
			name := sm[p.re.SubexpIndex("name")]
			if len(name) < 3 || notSymbol[name] || strings.HasPrefix(name, "test") || strings.HasPrefix(name, "Test") {
				break
			}
			out = append(out, def{name: name, kind: p.kind, line: l.No, text: strings.Join(strings.Fields(m), " ")})
			break
		}
	}
	return out
}

func addedDefs(fc *fileCtx) []def {
	return definitions(fc.f.Language, fc.f.Added, func(i int) string { return fc.addedMasked[fc.f.Added[i].No] })
}

func removedDefs(fc *fileCtx) []def {
	return definitions(fc.f.Language, fc.f.Removed, func(i int) string { return fc.removedMask[i] })
}

// usesOf finds references to name in the Content of the files other than
// skip (masked, so comments and strings do not count).
func usesOf(name string, skip *File, ctxs []*fileCtx, skipAdded bool) []Use {
	re := regexp.MustCompile(`\b` + regexp.QuoteMeta(name) + `\b`)
	var uses []Use
	for _, fc := range ctxs {
		if fc.f == skip || fc.f.Content == nil {
			continue
		}
		added := map[int]bool{}
		if skipAdded {
			for _, l := range fc.f.Added {
				added[l.No] = true
			}
		}
		for i, m := range fc.masked {
			if added[i+1] {
				continue
			}
			if re.MatchString(m) {
				uses = append(uses, Use{Path: fc.f.Path, Line: i + 1})
				if len(uses) >= 50 {
					return uses
				}
			}
		}
	}
	return uses
}

// ChangedSymbols lists the definitions on added lines (functions, methods,
// types, classes, constants) and where they are used in the other files'
// Content.
func ChangedSymbols(files []*File) []Symbol {
	ctxs := make([]*fileCtx, 0, len(files))
	for _, f := range files {
		if f != nil {
			ctxs = append(ctxs, newFileCtx(f))
		}
	}
	var out []Symbol
	for _, fc := range ctxs {
		for _, d := range addedDefs(fc) {
			out = append(out, Symbol{
				Name: d.name, Kind: d.kind, Path: fc.f.Path, Line: d.line,
				UsedIn: usesOf(d.name, fc.f, ctxs, false),
			})
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Path != out[j].Path {
			return out[i].Path < out[j].Path
		}
		return out[i].Line < out[j].Line
	})
	return out
}

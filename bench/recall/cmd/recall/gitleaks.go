package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"hash/fnv"
	"math/rand"
	"path/filepath"
	"regexp/syntax"
	"sort"
	"strconv"
	"strings"
)

// gitleaks: cmd/generate/config/rules/*.go build each rule and validate it
// with utils.Validate(r, tps, fps). The true- and false-positive examples are
// evaluated from the AST: string literals, +, fmt.Sprintf, strings.Repeat,
// append, []string{...}, local string variables, utils.GenerateSampleSecret(s)
// (templates read from the clone's utils/generate.go), utils.AlphaNumeric &
// co. and secrets.NewSecret(regex) (a deterministic generator, seeded by the
// rule id). Anything else is skipped and counted.

type sample struct {
	text, variant string // variant: a GenerateSampleSecrets template name, or ""
}

type glEval struct {
	templates map[string]string // variant -> template
	vars      map[string][]sample
	rnd       *rand.Rand
	skipped   int
}

func (p *prep) gitleaks() error {
	dir := filepath.Join(p.src, "cmd", "generate", "config")
	templates, err := gitleaksTemplates(filepath.Join(dir, "utils", "generate.go"))
	if err != nil {
		return err
	}
	files, _ := filepath.Glob(filepath.Join(dir, "rules", "*.go"))
	if len(files) == 0 {
		return fmt.Errorf("gitleaks: no rules under %s", dir)
	}
	sort.Strings(files)
	fset := token.NewFileSet()
	type out struct {
		lines []string
		items []Item
	}
	outs := map[string]*out{}
	var order []string
	for _, file := range files {
		if strings.HasSuffix(file, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, file, nil, 0)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			fd, ok := decl.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			id := ruleIDOf(fd)
			if id == "" {
				continue
			}
			s := p.subject(id)
			if s == "" {
				p.stats["unclaimed"]++
				continue
			}
			h := fnv.New64a()
			h.Write([]byte(id))
			ev := &glEval{templates: templates, vars: map[string][]sample{}, rnd: rand.New(rand.NewSource(int64(h.Sum64())))}
			tps, fps := ev.function(fd)
			p.stats["skipped_exprs"] += ev.skipped
			for kind, list := range map[string][]sample{"pos": tps, "neg": fps} {
				for _, smp := range list {
					name := fmt.Sprintf("gitleaks/%s/%s%s", id, map[string]string{"pos": "tp", "neg": "fp"}[kind], variantFile(smp.variant))
					if strings.HasSuffix(name, "/Makefile") {
						name = fmt.Sprintf("gitleaks/%s/%s/Makefile", id, map[string]string{"pos": "tp", "neg": "fp"}[kind])
					}
					o := outs[name]
					if o == nil {
						o = &out{}
						outs[name] = o
						order = append(order, name)
					}
					text := strings.ReplaceAll(smp.text, "\r\n", "\n")
					ls := strings.Split(text, "\n")
					start := len(o.lines) + 1
					o.lines = append(o.lines, ls...)
					o.lines = append(o.lines, "", "")
					o.items = append(o.items, Item{Suite: p.suite, Kind: kind, Subject: s, Path: name, Start: start,
						End: start + len(ls) - 1, Rule: id, Lang: langOf(name), Text: text})
				}
			}
		}
	}
	sort.Strings(order)
	for _, name := range order {
		o := outs[name]
		if err := p.write(name, []byte(strings.Join(o.lines, "\n")+"\n")); err != nil {
			return err
		}
		p.items = append(p.items, o.items...)
	}
	return nil
}

// variantFile names the file a sample is written to from its template
// (so that a JSON sample is in a .json file); plain samples go to .txt.
func variantFile(v string) string {
	lv := strings.ToLower(v)
	switch {
	case v == "":
		return ".txt"
	case strings.HasPrefix(lv, "ini"):
		return ".ini"
	case strings.HasPrefix(lv, "json"):
		return ".json"
	case strings.HasPrefix(lv, "xml"):
		return ".xml"
	case strings.HasPrefix(lv, "yaml"):
		return ".yaml"
	case strings.HasPrefix(lv, "c#"):
		return ".cs"
	case strings.HasPrefix(lv, "go"):
		return ".go"
	case strings.HasPrefix(lv, "java"), strings.HasPrefix(lv, "misc"):
		return ".java"
	case strings.HasPrefix(lv, "kotlin"):
		return ".kt"
	case strings.HasPrefix(lv, "php"):
		return ".php"
	case strings.HasPrefix(lv, "python"):
		return ".py"
	case strings.HasPrefix(lv, "make"):
		return "/Makefile"
	}
	return ".conf"
}

func gitleaksTemplates(file string) (map[string]string, error) {
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	ast.Inspect(f, func(n ast.Node) bool {
		fd, ok := n.(*ast.FuncDecl)
		if ok && fd.Name.Name != "GenerateSampleSecrets" {
			return false
		}
		kv, ok := n.(*ast.KeyValueExpr)
		if !ok {
			return true
		}
		k, ok1 := kv.Key.(*ast.BasicLit)
		v, ok2 := kv.Value.(*ast.BasicLit)
		if ok1 && ok2 && k.Kind == token.STRING && v.Kind == token.STRING {
			ks, _ := strconv.Unquote(k.Value)
			vs, _ := strconv.Unquote(v.Value)
			out[ks] = vs
		}
		return true
	})
	if len(out) == 0 {
		return nil, fmt.Errorf("gitleaks: no GenerateSampleSecrets templates in %s", file)
	}
	return out, nil
}

func ruleIDOf(fd *ast.FuncDecl) string {
	id := ""
	ast.Inspect(fd.Body, func(n ast.Node) bool {
		kv, ok := n.(*ast.KeyValueExpr)
		if !ok || id != "" {
			return id == ""
		}
		if k, ok := kv.Key.(*ast.Ident); ok && k.Name == "RuleID" {
			if v, ok := kv.Value.(*ast.BasicLit); ok && v.Kind == token.STRING {
				id, _ = strconv.Unquote(v.Value)
			}
		}
		return true
	})
	return id
}

// function evaluates the body's assignments in order and returns the values
// of the identifiers passed to utils.Validate / ValidateWithPaths.
func (ev *glEval) function(fd *ast.FuncDecl) (tps, fps []sample) {
	var tpName, fpName string
	ast.Inspect(fd.Body, func(n ast.Node) bool {
		c, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		if name := callName(c); (name == "utils.Validate" || name == "utils.ValidateWithPaths") && len(c.Args) == 3 {
			if id, ok := c.Args[1].(*ast.Ident); ok {
				tpName = id.Name
			}
			if id, ok := c.Args[2].(*ast.Ident); ok {
				fpName = id.Name
			}
		}
		return true
	})
	ast.Inspect(fd.Body, func(n ast.Node) bool {
		switch s := n.(type) {
		case *ast.AssignStmt:
			for i, lhs := range s.Lhs {
				id, ok := lhs.(*ast.Ident)
				if !ok || i >= len(s.Rhs) {
					continue
				}
				ev.vars[id.Name] = ev.eval(s.Rhs[i])
			}
			return false
		case *ast.ValueSpec:
			for i, id := range s.Names {
				if i < len(s.Values) {
					ev.vars[id.Name] = ev.eval(s.Values[i])
				}
			}
			return false
		}
		return true
	})
	return ev.vars[tpName], ev.vars[fpName]
}

func callName(c *ast.CallExpr) string {
	switch f := c.Fun.(type) {
	case *ast.SelectorExpr:
		if x, ok := f.X.(*ast.Ident); ok {
			return x.Name + "." + f.Sel.Name
		}
	case *ast.Ident:
		return f.Name
	}
	return ""
}

// one evaluates e to a single string.
func (ev *glEval) one(e ast.Expr) (string, bool) {
	v := ev.eval(e)
	if len(v) != 1 {
		return "", false
	}
	return v[0].text, true
}

func (ev *glEval) eval(e ast.Expr) []sample {
	switch x := e.(type) {
	case *ast.BasicLit:
		if x.Kind == token.STRING {
			s, err := strconv.Unquote(x.Value)
			if err == nil {
				return []sample{{text: s}}
			}
		}
		if x.Kind == token.INT {
			return []sample{{text: x.Value}}
		}
	case *ast.ParenExpr:
		return ev.eval(x.X)
	case *ast.Ident:
		if v, ok := ev.vars[x.Name]; ok {
			return v
		}
	case *ast.BinaryExpr:
		if x.Op == token.ADD {
			a, ok1 := ev.one(x.X)
			b, ok2 := ev.one(x.Y)
			if ok1 && ok2 {
				return []sample{{text: a + b}}
			}
		}
	case *ast.CompositeLit:
		var out []sample
		for _, el := range x.Elts {
			if kv, ok := el.(*ast.KeyValueExpr); ok {
				el = kv.Value // ValidateWithPaths: path -> content
			}
			v := ev.eval(el)
			if v == nil {
				ev.skipped++
			}
			out = append(out, v...)
		}
		if out == nil {
			out = []sample{}
		}
		return out
	case *ast.CallExpr:
		return ev.call(x)
	}
	return nil
}

func (ev *glEval) call(c *ast.CallExpr) []sample {
	name := callName(c)
	strArgs := func() ([]string, bool) {
		var out []string
		for _, a := range c.Args {
			s, ok := ev.one(a)
			if !ok {
				return nil, false
			}
			out = append(out, s)
		}
		return out, true
	}
	switch name {
	case "append":
		if len(c.Args) == 0 {
			return nil
		}
		out := append([]sample{}, ev.eval(c.Args[0])...)
		for _, a := range c.Args[1:] {
			v := ev.eval(a)
			if v == nil {
				ev.skipped++
			}
			out = append(out, v...)
		}
		return out
	case "utils.GenerateSampleSecret":
		if a, ok := strArgs(); ok && len(a) == 2 {
			return []sample{{text: fmt.Sprintf("%s_api_token = \"%s\"", a[0], a[1]), variant: "python - double quote"}}
		}
	case "utils.GenerateSampleSecrets":
		if a, ok := strArgs(); ok && len(a) == 2 {
			r := strings.NewReplacer("{i}", a[0], "{I}", strings.ToUpper(a[0]), "{s}", a[1])
			keys := make([]string, 0, len(ev.templates))
			for k := range ev.templates {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			var out []sample
			for _, k := range keys {
				out = append(out, sample{text: r.Replace(ev.templates[k]), variant: k})
			}
			return out
		}
	case "secrets.NewSecret":
		if a, ok := strArgs(); ok && len(a) == 1 {
			if s, ok := genRegex(a[0], ev.rnd); ok {
				return []sample{{text: s}}
			}
		}
	case "utils.Numeric", "utils.Hex", "utils.AlphaNumeric", "utils.AlphaNumericExtendedShort",
		"utils.AlphaNumericExtended", "utils.AlphaNumericExtendedLong":
		class := map[string]string{"utils.Numeric": `[0-9]`, "utils.Hex": `[a-f0-9]`, "utils.AlphaNumeric": `[a-z0-9]`,
			"utils.AlphaNumericExtendedShort": `[a-z0-9_-]`, "utils.AlphaNumericExtended": `[a-z0-9=_\-]`,
			"utils.AlphaNumericExtendedLong": `[a-z0-9\/=_\+\-]`}[name]
		if a, ok := strArgs(); ok && len(a) == 1 {
			return []sample{{text: class + "{" + a[0] + "}"}}
		}
	case "utils.Hex8_4_4_4_12":
		return []sample{{text: `[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`}}
	case "fmt.Sprintf":
		if a, ok := strArgs(); ok && len(a) >= 1 {
			args := make([]any, len(a)-1)
			for i, s := range a[1:] {
				args[i] = s
			}
			return []sample{{text: fmt.Sprintf(a[0], args...)}}
		}
	case "strings.Repeat":
		if a, ok := strArgs(); ok && len(a) == 2 {
			if n, err := strconv.Atoi(a[1]); err == nil && n >= 0 && n < 10000 {
				return []sample{{text: strings.Repeat(a[0], n)}}
			}
		}
	}
	return nil
}

// genRegex produces one string matching re (unbounded repeats take up to 10
// more), like reggen's Generate(1), but deterministic.
func genRegex(re string, rnd *rand.Rand) (string, bool) {
	r, err := syntax.Parse(re, syntax.Perl)
	if err != nil {
		return "", false
	}
	r = r.Simplify()
	var sb strings.Builder
	var gen func(r *syntax.Regexp)
	gen = func(r *syntax.Regexp) {
		switch r.Op {
		case syntax.OpLiteral:
			sb.WriteString(string(r.Rune))
		case syntax.OpCharClass:
			var total int
			for i := 0; i+1 < len(r.Rune); i += 2 {
				total += int(r.Rune[i+1]-r.Rune[i]) + 1
			}
			if total == 0 {
				return
			}
			k := rnd.Intn(total)
			for i := 0; i+1 < len(r.Rune); i += 2 {
				n := int(r.Rune[i+1]-r.Rune[i]) + 1
				if k < n {
					sb.WriteRune(r.Rune[i] + rune(k))
					return
				}
				k -= n
			}
		case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
			sb.WriteByte(byte('a' + rnd.Intn(26)))
		case syntax.OpCapture:
			gen(r.Sub[0])
		case syntax.OpConcat:
			for _, s := range r.Sub {
				gen(s)
			}
		case syntax.OpAlternate:
			gen(r.Sub[rnd.Intn(len(r.Sub))])
		case syntax.OpStar, syntax.OpPlus, syntax.OpQuest, syntax.OpRepeat:
			min, max := r.Min, r.Max
			switch r.Op {
			case syntax.OpStar:
				min, max = 0, -1
			case syntax.OpPlus:
				min, max = 1, -1
			case syntax.OpQuest:
				min, max = 0, 1
			}
			if max < 0 {
				max = min + 10
			}
			n := min + rnd.Intn(max-min+1)
			for i := 0; i < n; i++ {
				gen(r.Sub[0])
			}
		}
	}
	gen(r)
	return sb.String(), true
}

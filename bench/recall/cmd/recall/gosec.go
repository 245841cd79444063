package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

var gosecVar = regexp.MustCompile(`^SampleCode(G\d{3})`)

// gosec: testutils/g*_samples.go hold `SampleCodeGxxx = []CodeSample{{[]string{code...}, errors, config}}`.
// Each sample run with gosec.NewConfig() becomes a directory gosec/Gxxx/<var>-<n>/
// with one file per code string; a sample is positive when errors > 0.
func (p *prep) gosec() error {
	files, err := filepath.Glob(filepath.Join(p.src, "testutils", "g*_samples.go"))
	if err != nil {
		return err
	}
	if len(files) == 0 {
		return fmt.Errorf("gosec: no testutils/g*_samples.go under %s", p.src)
	}
	sort.Strings(files)
	fset := token.NewFileSet()
	for _, file := range files {
		f, err := parser.ParseFile(fset, file, nil, 0)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.VAR {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, name := range vs.Names {
					m := gosecVar.FindStringSubmatch(name.Name)
					if m == nil || i >= len(vs.Values) {
						continue
					}
					if err := p.gosecSamples(m[1], name.Name, vs.Values[i]); err != nil {
						return err
					}
				}
			}
		}
	}
	return nil
}

func (p *prep) gosecSamples(code, varName string, e ast.Expr) error {
	cl, ok := e.(*ast.CompositeLit)
	if !ok {
		return nil
	}
	s := p.subject(code)
	if s == "" {
		p.stats["unclaimed"] += len(cl.Elts)
		return nil
	}
	for n, elt := range cl.Elts {
		sc, ok := elt.(*ast.CompositeLit)
		if !ok || len(sc.Elts) < 3 {
			p.stats["unparsed"]++
			continue
		}
		if !isNewConfig(sc.Elts[2]) {
			p.stats["custom_config"]++
			continue
		}
		codes, ok := sc.Elts[0].(*ast.CompositeLit)
		lit, ok2 := sc.Elts[1].(*ast.BasicLit)
		if !ok || !ok2 {
			p.stats["unparsed"]++
			continue
		}
		errs, _ := strconv.Atoi(lit.Value)
		dir := fmt.Sprintf("gosec/%s/%s-%03d/", code, varName, n)
		var first string
		for k, c := range codes.Elts {
			bl, ok := c.(*ast.BasicLit)
			if !ok || bl.Kind != token.STRING {
				continue
			}
			src, err := strconv.Unquote(bl.Value)
			if err != nil {
				continue
			}
			if err := p.write(fmt.Sprintf("%sf%d.go", dir, k), []byte(src)); err != nil {
				return err
			}
			if first == "" {
				first = firstCodeLine(src)
			}
		}
		kind := "neg"
		if errs > 0 {
			kind = "pos"
		}
		p.items = append(p.items, Item{Suite: p.suite, Kind: kind, Subject: s, Path: dir, Rule: code,
			Lang: "go", Text: first})
	}
	return nil
}

func isNewConfig(e ast.Expr) bool {
	c, ok := e.(*ast.CallExpr)
	if !ok {
		return false
	}
	sel, ok := c.Fun.(*ast.SelectorExpr)
	return ok && sel.Sel.Name == "NewConfig" && len(c.Args) == 0
}

// firstCodeLine: the first comment of a sample usually says what it shows.
func firstCodeLine(src string) string {
	for _, l := range strings.Split(src, "\n") {
		if t := strings.TrimSpace(l); t != "" {
			return t
		}
	}
	return ""
}

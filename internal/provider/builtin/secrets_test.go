package builtin

import (
	"context"
	"strings"
	"testing"

	"github.com/diffpalhq/diffpal/internal/diff"
	"github.com/diffpalhq/diffpal/internal/provider"
	"github.com/diffpalhq/diffpal/internal/qa"
	"github.com/diffpalhq/diffpal/internal/rules"
	st "github.com/diffpalhq/diffpal/internal/secrets/secretstest"
)

// Secrets are found in every text file type, with rule ids
// secrets.<gitleaks id>, on the new-side line, never shown.
func TestSecretsInEveryFileType(t *testing.T) {
	b, err := New()
	if err != nil {
		t.Fatal(err)
	}
	ghp := func(l string) string { return "ghp_" + st.Gen(l, st.Alnum, 36) }
	files := map[string][]string{
		"Makefile":                {"deploy:", "\tcurl -H 'Authorization: token " + ghp("mk") + "' https://api.github.com"},
		"web/index.php":           {"<?php", "$token = '" + ghp("php") + "';"},
		"conf/app.xml":            {"<config>", "  <token>" + ghp("xml") + "</token>", "</config>"},
		"conf/app.ini":            {"[github]", "token = " + ghp("ini")},
		".env":                    {"APP_ENV=prod", "GITHUB_TOKEN=" + ghp("env")},
		"notebooks/explore.ipynb": {"{", ` "cells": [{"source": ["token = '` + ghp("nb") + `'\n"]}]`, "}"},
	}
	var changed []*provider.ChangedFile
	for p, lines := range files {
		changed = append(changed, newFile(p, lines...))
	}
	res, err := b.ReviewProfile(context.Background(), provider.ProfileRequest{Profile: qa.ProfileSecurityReviewer,
		Change: &provider.Change{Files: changed}, RuleProfiles: []string{"security_reviewer"}})
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]bool{}
	for _, c := range res.Candidates {
		if !strings.HasPrefix(c.RuleID, "secrets.") {
			continue
		}
		found[c.Path] = true
		if c.RuleID != "secrets.github-pat" || c.Category != "security" || c.RuleProfile != "security_reviewer" || c.StartLine != 2 {
			t.Errorf("candidate %+v", c)
		}
		for _, field := range []string{c.Snippet, c.Anchor, c.Message, c.Title} {
			if strings.Contains(field, "ghp_") && !strings.Contains(field, "ghp_[REDACTED]") {
				t.Errorf("%s: secret shown in %q", c.Path, field)
			}
		}
	}
	for p := range files {
		if !found[p] {
			t.Errorf("no secret finding in %s", p)
		}
	}
}

// Consecutive added lines are scanned together: a private key added in a
// modification is one finding on its BEGIN line, numbered on the new side.
func TestSecretsMultiLineKeyOnNewSideLines(t *testing.T) {
	body := st.PEMBody("builtin-pem", "MIIEowIBAAKCAQEA", 8, 64, false)
	key := append(append([]string{"-----BEGIN RSA PRIVATE KEY-----"}, body...), "-----END RSA PRIVATE KEY-----")
	h := diff.Hunk{OldStart: 10, OldLines: 2, NewStart: 10, NewLines: 2 + len(key)}
	h.Lines = append(h.Lines, diff.Line{Kind: ' ', Text: "tls:", OldNo: 10, NewNo: 10})
	for i, l := range key {
		h.Lines = append(h.Lines, diff.Line{Kind: '+', Text: "  " + l, NewNo: 11 + i})
	}
	h.Lines = append(h.Lines, diff.Line{Kind: ' ', Text: "port: 443", OldNo: 11, NewNo: 11 + len(key)})
	f := &provider.ChangedFile{Diff: &diff.File{NewPath: "deploy/values.yaml", OldPath: "deploy/values.yaml", Status: diff.Modified, Hunks: []diff.Hunk{h}}}
	hits := secretHits(builtinSet(t), f.Rules())
	if len(hits) != 1 {
		t.Fatalf("hits = %+v", hits)
	}
	if h := hits[0]; h.RuleID != "secrets.private-key" || h.StartLine != 11 || h.EndLine != 10+len(key) {
		t.Errorf("hit %s lines %d-%d, want secrets.private-key 11-%d", h.RuleID, h.StartLine, h.EndLine, 10+len(key))
	}
	for _, l := range body {
		if strings.Contains(hits[0].Snippet, l[:20]) || strings.Contains(hits[0].Anchor, l[:20]) {
			t.Errorf("key material in %q / %q", hits[0].Snippet, hits[0].Anchor)
		}
	}
}

func builtinSet(t *testing.T) *rules.Set {
	t.Helper()
	s, err := rules.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// rules.disable turns secret detector rules off like pack rules.
func TestSecretsDisabledByConfig(t *testing.T) {
	f := rules.DiffFile("deploy.sh", nil, []byte("export GITHUB_TOKEN=ghp_R8d2kLq9Zt4Vb7Nw1Xc5Hy3Pm6Sj0Fa2Ge8u\n"))
	s := builtinSet(t)
	if hits := secretHits(s, f); len(hits) != 1 {
		t.Fatalf("enabled: hits = %+v, want 1", hits)
	}
	if err := s.Configure(nil, []string{"secrets.github-*"}); err != nil {
		t.Fatal(err)
	}
	if hits := secretHits(s, f); len(hits) != 0 {
		t.Fatalf("disabled: hits = %+v, want none", hits)
	}
	if err := s.Configure(nil, []string{"secrets.no-such-rule"}); err == nil {
		t.Fatal("an unknown secrets id was accepted")
	}
}

// A private key or a generic match under a test path is a fixture: not
// reported; a fixed-format provider token there still is.
func TestSecretsInTestFixtures(t *testing.T) {
	s := builtinSet(t)
	key := append(append([]string{"-----BEGIN RSA PRIVATE KEY-----"}, st.PEMBody("fixture-pem", "MIIEowIBAAKCAQEA", 8, 64, false)...), "-----END RSA PRIVATE KEY-----")
	src := []byte(strings.Join(key, "\n") + "\n")
	if hits := secretHits(s, rules.DiffFile("tests/certs/server.key", nil, src)); len(hits) != 0 {
		t.Fatalf("fixture key: hits = %+v, want none", hits)
	}
	if hits := secretHits(s, rules.DiffFile("deploy/server.key", nil, src)); len(hits) != 1 {
		t.Fatalf("production key: hits = %+v, want one", hits)
	}
	tok := []byte("TOKEN = \"ghp_R8d2kLq9Zt4Vb7Nw1Xc5Hy3Pm6Sj0Fa2Ge8u\"\n")
	if hits := secretHits(s, rules.DiffFile("tests/test_client.py", nil, tok)); len(hits) != 1 {
		t.Fatalf("provider token in a test: hits = %+v, want one", hits)
	}
}

// TestSecretBlocksFromText: a block of added lines is scanned as a slice
// of the file's Text when they are its own lines, and the hits are those
// of the lines joined; blockText gives exactly the joined lines, or declines.
func TestSecretBlocksFromText(t *testing.T) {
	body := st.PEMBody("builtin-text", "MIIEowIBAAKCAQEA", 8, 64, false)
	content := []string{"tls:", "  ca: none"}
	content = append(content, "  key: |", "    -----BEGIN RSA PRIVATE KEY-----")
	for _, l := range body {
		content = append(content, "    "+l)
	}
	content = append(content, "    -----END RSA PRIVATE KEY-----", "port: 443", "token: ghp_"+st.Gen("text", st.Alnum, 36), "end: true")
	var added []rules.Line
	for i, l := range content {
		if i != 1 && i != len(content)-3 { // two runs of added lines and a lone one
			added = append(added, rules.Line{No: i + 1, Text: l})
		}
	}
	withText := &rules.File{Path: "deploy/values.yaml", Language: "yaml", Status: "modified", Added: added, Content: content, Text: strings.Join(content, "\n")}
	joined := &rules.File{Path: "deploy/values.yaml", Language: "yaml", Status: "modified", Added: added, Content: content}
	a, b := secretHits(builtinSet(t), withText), secretHits(builtinSet(t), joined)
	if len(a) != 2 || len(a) != len(b) {
		t.Fatalf("hits from Text %+v, from joined lines %+v", a, b)
	}
	for i := range a {
		if a[i].RuleID != b[i].RuleID || a[i].StartLine != b[i].StartLine || a[i].EndLine != b[i].EndLine || a[i].Snippet != b[i].Snippet {
			t.Errorf("hit %d: from Text %+v, from joined lines %+v", i, a[i], b[i])
		}
	}

	var at rules.TextCursor
	for _, blk := range [][2]int{{0, 1}, {2, 5}, {7, 9}} {
		block := added[blk[0]:blk[1]]
		var want []string
		for _, l := range block {
			want = append(want, l.Text)
		}
		if got, ok := blockText(&at, withText, block); !ok || got != strings.Join(want, "\n") {
			t.Errorf("block %v: %q, %v; want %q", blk, got, ok, strings.Join(want, "\n"))
		}
	}
	if _, ok := blockText(&at, withText, added[0:2]); ok {
		t.Error("the cursor went back to an earlier line")
	}
	var fresh rules.TextCursor
	changed := []rules.Line{{No: 1, Text: "tls:"}, {No: 2, Text: "not the content"}}
	if _, ok := blockText(&fresh, withText, changed); ok {
		t.Error("blockText took lines that are not the content's")
	}
}

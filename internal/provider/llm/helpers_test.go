package llm

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/diffpalhq/diffpal/internal/diff"
	"github.com/diffpalhq/diffpal/internal/evidence"
	"github.com/diffpalhq/diffpal/internal/provider"
	"github.com/diffpalhq/diffpal/internal/qa"
)

// tfile describes one changed file of a test change: its new content and
// which (1-based) lines are added; nil added means a new file (all added).
type tfile struct {
	path    string
	content []string
	added   []int
}

// mkChange builds a Change and its evidence packet without git.
func mkChange(t testing.TB, files ...tfile) *provider.Change {
	t.Helper()
	sort.Slice(files, func(i, j int) bool { return files[i].path < files[j].path })
	ch := &provider.Change{}
	var raw strings.Builder
	for _, f := range files {
		d := &diff.File{OldPath: f.path, NewPath: f.path, Status: diff.Modified, NewMode: "100644"}
		if f.added == nil {
			d.Status = diff.Added
			h := diff.Hunk{NewStart: 1, NewLines: len(f.content)}
			for i, l := range f.content {
				h.Lines = append(h.Lines, diff.Line{Kind: '+', Text: l, NewNo: i + 1})
			}
			d.Hunks = []diff.Hunk{h}
		} else {
			// One hunk per added line, with up to 3 lines of context,
			// merged when they touch.
			isAdded := map[int]bool{}
			for _, n := range f.added {
				isAdded[n] = true
			}
			lo, hi := 0, 0
			flush := func() {
				if lo == 0 {
					return
				}
				h := diff.Hunk{NewStart: lo, NewLines: hi - lo + 1}
				old := lo
				for n := lo; n <= hi; n++ {
					if isAdded[n] {
						h.Lines = append(h.Lines, diff.Line{Kind: '+', Text: f.content[n-1], NewNo: n})
					} else {
						h.Lines = append(h.Lines, diff.Line{Kind: ' ', Text: f.content[n-1], NewNo: n, OldNo: old})
						old++
					}
				}
				h.OldStart, h.OldLines = lo, old-lo
				d.Hunks = append(d.Hunks, h)
				lo = 0
			}
			sorted := append([]int(nil), f.added...)
			sort.Ints(sorted)
			for _, n := range sorted {
				s, e := max(1, n-3), min(len(f.content), n+3)
				if lo != 0 && s > hi+1 {
					flush()
				}
				if lo == 0 {
					lo = s
				}
				hi = max(hi, e)
			}
			flush()
		}
		ch.Files = append(ch.Files, &provider.ChangedFile{Diff: d, Content: f.content})
		fmt.Fprintf(&raw, "diff --git a/%s b/%s\n%s\n", f.path, f.path, strings.Join(f.content, "\n"))
	}
	ch.RawDiff = []byte(raw.String())
	var err error
	if ch.Packet, err = buildPacket(ch); err != nil {
		t.Fatal(err)
	}
	return ch
}

// buildPacket builds ch's evidence packet as the engine does for a
// committed range of example/repo.
func buildPacket(ch *provider.Change) (*evidence.Packet, error) {
	ef := make([]evidence.File, len(ch.Files))
	for i, f := range ch.Files {
		ef[i] = evidence.File{Diff: f.Diff, Content: f.Content}
	}
	return evidence.Build(ch.RawDiff, ef, evidence.Options{
		Repository: "example/repo", BaseSHA: strings.Repeat("a", 40), HeadSHA: strings.Repeat("b", 40)})
}

func lines(n int, f string) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf(f, i+1)
	}
	return out
}

func profileReq(t testing.TB, ch *provider.Change, p qa.Profile) provider.ProfileRequest {
	t.Helper()
	route, err := qa.Prepare(qa.PrepareInput{AgentProfile: p})
	if err != nil {
		t.Fatal(err)
	}
	return provider.ProfileRequest{Profile: p, Route: route, Change: ch, RuleProfiles: []string{string(p)}}
}

// step is one scripted reply.
type step struct {
	json string
	err  error
	// block makes the call wait for its context (timeouts).
	block bool
	usage Usage
}

// fakeClient replays a script, then answers with fallback (default: a
// valid answer citing the first evidence block of the request).
type fakeClient struct {
	mu       sync.Mutex
	script   []step
	fallback func(req Request) (Response, error)
	reqs     []Request
	inflight int
	peak     int
	delay    time.Duration
}

func (f *fakeClient) Name() string { return "fake" }

func (f *fakeClient) Complete(ctx context.Context, req Request) (Response, error) {
	f.mu.Lock()
	f.reqs = append(f.reqs, req)
	f.inflight++
	f.peak = max(f.peak, f.inflight)
	var s *step
	if len(f.script) > 0 {
		s = &f.script[0]
		f.script = f.script[1:]
	}
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		f.inflight--
		f.mu.Unlock()
	}()
	if f.delay > 0 {
		time.Sleep(f.delay)
	}
	if s == nil {
		if f.fallback != nil {
			return f.fallback(req)
		}
		return Response{JSON: json.RawMessage(validAnswer(req)), Usage: Usage{InputTokens: 100, OutputTokens: 10}}, nil
	}
	if s.block {
		<-ctx.Done()
		return Response{}, ctx.Err()
	}
	if s.err != nil {
		return Response{}, s.err
	}
	u := s.usage
	if u == (Usage{}) {
		u = Usage{InputTokens: 100, OutputTokens: 10}
	}
	return Response{JSON: json.RawMessage(s.json), Usage: u}, nil
}

func (f *fakeClient) requests() []Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Request(nil), f.reqs...)
}

var (
	openRE = regexp.MustCompile(`^<<<DATA (DPF[0-9a-f]{24}) ref=(\S+) kind=(\S+)(?: lines=(\d+)-(\d+))?>>>$`)
)

// firstBlock finds the first evidence block of a request: ref, path and
// line range.
func firstBlock(req Request) (ref, path string, start, end int) {
	ls := strings.Split(req.Messages[0].Content, "\n")
	for i, l := range ls {
		m := openRE.FindStringSubmatch(l)
		if m == nil || i+1 >= len(ls) {
			continue
		}
		ref = m[2]
		fmt.Sscan(m[4], &start)
		fmt.Sscan(m[5], &end)
		p := strings.TrimPrefix(ls[i+1], gutter+"path: ")
		_ = json.Unmarshal([]byte(p), &path)
		return
	}
	return
}

func candJSON(title, ref, path string, start, end int) string {
	c := map[string]any{
		"title": title, "description": "The change may fail.", "category": "correctness", "severity": "high",
		"confidence": 0.8, "path": path, "start_line": start, "end_line": end, "evidence_refs": []string{ref},
		"impact": "Requests fail.", "impact_scope": "API callers", "suggestion": nil, "anchor": nil,
		"failure_condition": nil, "flip_condition": nil,
	}
	b, _ := json.Marshal(c)
	return string(b)
}

func answerJSON(cands ...string) string {
	return `{"candidates":[` + strings.Join(cands, ",") + `],"coverage_gaps":[],"unverified":[]}`
}

// validAnswer answers with one candidate on the request's first block.
func validAnswer(req Request) string {
	ref, path, s, _ := firstBlock(req)
	if ref == "" {
		return answerJSON()
	}
	return answerJSON(candJSON("Problem in "+path, ref, path, max(s, 1), max(s, 1)))
}

// fakeTime is an instant clock and sleeper.
type fakeTime struct {
	mu    sync.Mutex
	now   time.Time
	waits []time.Duration
}

func newFakeTime() *fakeTime {
	return &fakeTime{now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
}

func (c *fakeTime) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(time.Millisecond)
	return c.now
}

func (c *fakeTime) Sleep(ctx context.Context, d time.Duration) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.waits = append(c.waits, d)
	c.now = c.now.Add(d)
	return ctx.Err()
}

func newProvider(t testing.TB, c Client, mod func(*Config)) (*Provider, *fakeTime) {
	t.Helper()
	ft := newFakeTime()
	// Most tests exercise budgets and chunking over every item, windows
	// included; TestWindowsOnlyForVerification covers the default.
	cfg := Config{Client: c, Model: "test-model", Now: ft.Now, Sleep: ft.Sleep, Rand: func() float64 { return 0.5 }, ProfileWindows: true}
	if mod != nil {
		mod(&cfg)
	}
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p, ft
}

// allBytes is everything a set of requests sent.
func allBytes(reqs []Request) string {
	var b strings.Builder
	for _, r := range reqs {
		b.WriteString(r.Model + "\n" + r.System + "\n" + string(r.Schema) + "\n")
		for _, m := range r.Messages {
			b.WriteString(m.Role + "\n" + m.Content + "\n")
		}
	}
	return b.String()
}

// Command gen writes a deterministic, valid v3 findings bundle of any size
// for benchmarks:
//
//	go run ./bench/gen -n 100000 -o bench/.out/findings-100000.json
//	go run ./bench/gen -n 1000000 -blocking-every 1000 -o big-blocked.json
//
// Findings look like real review output: varied paths (some non-ASCII),
// categories, severities and confidences, multi-sentence messages with
// quotes, backslashes, tabs, newlines and unicode, structured evidence and
// impact, changed_span, and sometimes a supporting span and a suggestion.
//
// Blocking follows the policy recorded in the bundle (block_on high,
// min_confidence 0.8). With -blocking-every 0 (the default) no finding
// blocks, although many are high or critical (with lower confidence), so
// `diffpal gate` exits 0; with -blocking-every K every K-th finding is a
// confident high or critical one and blocks, so the gate exits 10.
//
// The bundle is streamed: findings are generated already in the order
// findings.Normalize sorts them, normalized (ids, stable ids, changed_span,
// blocking) and encoded with findings.Encode a chunk at a time, so memory
// stays flat for millions of findings and the bytes are exactly those of
// Normalize+Encode over the whole bundle (-selfcheck verifies that).
//
// -old writes the same findings as an older bundle for `diffpal upgrade`
// to convert: version v2, no id, stable_id, fingerprint_version or gate,
// and each chunk's findings in reverse order (so upgrade has to sort).
package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/diffpalhq/diffpal/findings"
)

func main() {
	n := flag.Int("n", 1000, "number of findings")
	out := flag.String("o", "", "output file (default stdout)")
	every := flag.Int("blocking-every", 0, "make every K-th finding blocking (0: no finding blocks)")
	seed := flag.Uint64("seed", 1, "random seed; the same flags always give the same bytes")
	chunk := flag.Int("chunk", 4096, "findings normalized and encoded per batch")
	old := flag.Bool("old", false, "write an older bundle for `diffpal upgrade`: version v2, no id, stable_id, fingerprint_version or gate, findings of each chunk in reverse order")
	selfcheck := flag.Bool("selfcheck", false, "also build the bundle in memory with findings.Normalize+Encode and fail unless the bytes match (small -n only)")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: gen -n N [-o FILE] [-blocking-every K] [-seed S]\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() > 0 || *n < 0 || *every < 0 || *chunk < 1 {
		flag.Usage()
		os.Exit(2)
	}
	if *old && *selfcheck {
		fmt.Fprintln(os.Stderr, "gen: -selfcheck checks a v3 bundle; not with -old")
		os.Exit(2)
	}
	cfg := config{N: *n, BlockingEvery: *every, Seed: *seed, Chunk: *chunk, Old: *old}
	if err := run(cfg, *out, *selfcheck); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

type config struct {
	N             int
	BlockingEvery int
	Seed          uint64
	Chunk         int
	// Old writes a v2 bundle without ids, stable ids, fingerprint
	// version or gate, each chunk's findings reversed: what `diffpal
	// upgrade` turns into the v3 bundle of the same flags.
	Old bool
}

func run(cfg config, out string, selfcheck bool) error {
	var sum stats
	write := func(w io.Writer) error {
		var err error
		sum, err = stream(w, cfg)
		return err
	}
	if out == "" || out == "-" {
		if err := write(os.Stdout); err != nil {
			return err
		}
	} else if err := findings.AtomicWrite(out, 0o644, write); err != nil {
		return err
	}
	if out != "" && out != "-" {
		fi, err := os.Stat(out)
		if err != nil {
			return err
		}
		avg := 0.0
		if cfg.N > 0 {
			avg = float64(fi.Size()) / float64(cfg.N)
		}
		fmt.Fprintf(os.Stderr, "gen: wrote %s: %d findings (%d blocking, %d high+critical), %d bytes, %.0f bytes/finding\n",
			out, cfg.N, sum.blocking, sum.highCrit, fi.Size(), avg)
	}
	if selfcheck {
		var streamed, whole bytes.Buffer
		if _, err := stream(&streamed, cfg); err != nil {
			return err
		}
		g := newGenerator(cfg)
		b := g.header()
		b.Findings = make([]findings.Finding, 0, cfg.N)
		for i := 0; i < cfg.N; i++ {
			b.Findings = append(b.Findings, g.next(i))
		}
		// Shuffle so Normalize's sort is exercised, not just trusted.
		r := rand.New(rand.NewPCG(cfg.Seed, 99))
		r.Shuffle(len(b.Findings), func(i, j int) { b.Findings[i], b.Findings[j] = b.Findings[j], b.Findings[i] })
		if err := findings.Normalize(b, findings.Options{Policy: policy}); err != nil {
			return fmt.Errorf("selfcheck: normalize: %w", err)
		}
		if err := findings.Encode(&whole, b); err != nil {
			return err
		}
		if !bytes.Equal(streamed.Bytes(), whole.Bytes()) {
			i := 0
			for i < streamed.Len() && i < whole.Len() && streamed.Bytes()[i] == whole.Bytes()[i] {
				i++
			}
			lo := max(0, i-200)
			return fmt.Errorf("selfcheck: streamed output differs from Normalize+Encode at byte %d:\nstreamed: %q\nwhole:    %q",
				i, streamed.Bytes()[lo:min(streamed.Len(), i+200)], whole.Bytes()[lo:min(whole.Len(), i+200)])
		}
		fmt.Fprintf(os.Stderr, "gen: selfcheck ok: %d bytes identical to findings.Normalize+findings.Encode\n", streamed.Len())
	}
	return nil
}

// policy is the gate recorded in the bundle and used for blocking flags.
var policy = findings.Policy{BlockOn: findings.High, MinConfidence: ptr(0.8)}

func ptr[T any](v T) *T { return &v }

type stats struct{ blocking, highCrit int }

// stream writes the bundle: the header and the findings array framing come
// from findings.Encode, the findings from Normalize+Encode per chunk.
func stream(w io.Writer, cfg config) (stats, error) {
	var st stats
	g := newGenerator(cfg)
	hdr := g.header()
	if err := findings.Normalize(hdr, findings.Options{Policy: policy}); err != nil {
		return st, fmt.Errorf("header: %w", err)
	}
	if cfg.N > 0 {
		hdr.FingerprintVersion = findings.FingerprintVersion // as Normalize sets it for a non-empty bundle
	}
	if cfg.Old {
		hdr.Version, hdr.FingerprintVersion, hdr.Gate = findings.V2, "", nil
	}
	var buf bytes.Buffer
	if err := findings.Encode(&buf, hdr); err != nil {
		return st, err
	}
	head, ok := bytes.CutSuffix(buf.Bytes(), []byte("[]\n}\n"))
	if !ok {
		return st, errors.New("findings.Encode output does not end with an empty findings array")
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	bw.Write(head)
	if cfg.N == 0 {
		bw.WriteString("[]\n}\n")
		return st, bw.Flush()
	}
	bw.WriteString("[")
	// Each chunk is a bundle of its own, carrying what the id recipe and
	// Normalize need from the header (version, review id, repo, head SHA).
	part := &findings.Bundle{Version: hdr.Version, ReviewID: hdr.ReviewID, BaseSHA: hdr.BaseSHA, HeadSHA: hdr.HeadSHA, Repo: hdr.Repo}
	part.Findings = make([]findings.Finding, 0, cfg.Chunk)
	marker := []byte(`"findings": [`)
	for start := 0; start < cfg.N; start += cfg.Chunk {
		end := min(start+cfg.Chunk, cfg.N)
		part.Findings = part.Findings[:0]
		for i := start; i < end; i++ {
			part.Findings = append(part.Findings, g.next(i))
		}
		if err := findings.Normalize(part, findings.Options{Policy: policy}); err != nil {
			return st, fmt.Errorf("findings %d..%d: %w", start, end-1, err)
		}
		for i := range part.Findings {
			f := &part.Findings[i]
			if f.Blocking {
				st.blocking++
			}
			if f.Severity == findings.High || f.Severity == findings.Critical {
				st.highCrit++
			}
		}
		if cfg.Old {
			for i := range part.Findings {
				part.Findings[i].ID, part.Findings[i].StableID = "", ""
			}
			slices.Reverse(part.Findings)
		}
		buf.Reset()
		if err := findings.Encode(&buf, part); err != nil {
			return st, err
		}
		body := buf.Bytes()
		i := bytes.Index(body, marker)
		if i < 0 {
			return st, errors.New("findings.Encode output has no findings array")
		}
		body, ok = bytes.CutSuffix(body[i+len(marker):], []byte("\n  ]\n}\n"))
		if !ok {
			return st, errors.New("findings.Encode output does not end with the findings array")
		}
		if start > 0 {
			bw.WriteByte(',')
		}
		bw.Write(body) // "\n    {...},\n    {...}"
	}
	bw.WriteString("\n  ]\n}\n")
	return st, bw.Flush()
}

// generator produces findings in their final order: paths sorted
// byte-wise, start lines strictly increasing within a path. Anchors carry
// the line, so every (category, path, anchor) is unique and stable ids do
// not depend on how findings are chunked.
type generator struct {
	cfg    config
	rng    *rand.Rand
	paths  []string
	counts []int // findings per path
	file   int   // current path index
	left   int   // findings left in the current path
	line   int   // last start line in the current path
}

func newGenerator(cfg config) *generator {
	g := &generator{cfg: cfg, rng: rand.New(rand.NewPCG(cfg.Seed, 0x5eed))}
	// About 8 findings per file on average, at most 50,000 files.
	nfiles := max(1, min(cfg.N/8, 50000))
	if cfg.N == 0 {
		nfiles = 0
	}
	avg := 1
	if nfiles > 0 {
		avg = max(1, cfg.N/nfiles)
	}
	left := cfg.N
	for left > 0 {
		c := 1 + g.rng.IntN(2*avg)
		c = min(c, left)
		g.counts = append(g.counts, c)
		left -= c
	}
	seen := make(map[string]bool, len(g.counts))
	for len(g.paths) < len(g.counts) {
		p := g.path(len(seen))
		if !seen[p] {
			seen[p] = true
			g.paths = append(g.paths, p)
		}
	}
	slices.Sort(g.paths) // byte order, as Normalize sorts
	g.file = -1
	return g
}

var (
	dirs = []string{
		"cmd/server", "cmd/worker", "internal/auth", "internal/billing", "internal/session",
		"internal/storage/postgres", "internal/storage/s3", "internal/queue", "internal/http/middleware",
		"pkg/api/v2", "pkg/client", "services/payments", "services/notifications", "web/src/components",
		"web/src/pages/checkout", "scripts", "deploy/k8s", "docs/über-uns", "src/日本語", "lib/naïve-bayes",
		"app/models", "app/controllers", "migrations", "tools/лексер", "crates/parser/src",
	}
	names = []string{
		"handler", "session", "store", "client", "middleware", "router", "cache", "queue",
		"worker", "config", "util", "schema", "migrate", "token", "invoice", "retry", "limiter",
		"upload", "export", "search", "webhook", "audit", "résumé", "main", "index",
	}
	exts = []string{".go", ".go", ".go", "_test.go", ".ts", ".tsx", ".py", ".rs", ".java", ".sql", ".yaml", ".md"}
)

func (g *generator) path(k int) string {
	d := dirs[g.rng.IntN(len(dirs))]
	n := names[g.rng.IntN(len(names))]
	e := exts[g.rng.IntN(len(exts))]
	if k >= len(dirs)*len(names) { // past the plain combinations: number them
		n += "_" + strconv.Itoa(g.rng.IntN(k))
	}
	return d + "/" + n + e
}

func (g *generator) header() *findings.Bundle {
	r := rand.New(rand.NewPCG(g.cfg.Seed, 0x4ead))
	sha := func() string {
		var b [20]byte
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		return fmt.Sprintf("%x", b)
	}
	b := &findings.Bundle{
		Version:  findings.V3,
		ReviewID: fmt.Sprintf("bench-s%d-b%d", g.cfg.Seed, g.cfg.BlockingEvery),
		BaseSHA:  sha(),
		HeadSHA:  sha(),
		Repo:     "github.com/acme/webshop",
		Language: "en",
		Prompt: &findings.Prompt{
			PromptID: "diffpal.review", PromptVersion: "2025-06-01", Purpose: "code review", SchemaVersion: "findings.v3",
		},
		Inspection: &findings.Inspection{
			ProviderType: "agent", Required: true, ToolCalls: []string{"read_diff", "read_file", "grep"},
			DiffInspected: true, ContextInspected: true,
		},
		ChangeSummary: []string{
			"Moves session storage from cookies to Redis and adds token rotation.",
			"Adds retries with jitter to the payment client.",
			"Rewrites the checkout page with the new design system.",
		},
		ReviewResult: fmt.Sprintf("Synthetic benchmark review with %d findings.", g.cfg.N),
		Findings:     []findings.Finding{},
	}
	statuses := []string{"modified", "modified", "modified", "added", "renamed"}
	for _, p := range g.paths {
		b.Files = append(b.Files, findings.File{Path: p, Status: statuses[r.IntN(len(statuses))]})
	}
	return b
}

type category struct {
	name        string
	titles      []string
	messages    []string // sentences; two to four are joined
	anchors     []string
	reasons     []string
	impacts     []string
	scopes      []string
	suggestions []string
}

// Templates use {fn}, {var} and {n}; see expand.
var categories = []category{
	{
		name:   "security",
		titles: []string{"SQL built from request input", "Shell command includes user data", "Token compared in variable time", "Path traversal in upload name"},
		messages: []string{
			"{fn} now interpolates {var} into the query with fmt.Sprintf.",
			"The value comes straight from the request and is never validated.",
			"An attacker can send `' OR 1=1 --` and read every row.",
			"The comparison uses == on the secret, which leaks timing.",
			"Names like \"..\\..\\etc\\passwd\" are joined onto the upload root.",
			"Escaping with strings.Replace(s, \"'\", \"''\") is not enough here.",
		},
		anchors:     []string{"{fn} passes {var} to db.Query at line {n}", "exec.Command(\"sh\", \"-c\", {var}) in {fn} at line {n}", "{var} == expected in {fn} at line {n}"},
		reasons:     []string{"the changed line builds the statement from unsanitized input", "no allow-list or escaping is applied before the sink"},
		impacts:     []string{"attackers can read or modify other tenants' data", "remote code execution on the worker host"},
		scopes:      []string{"request handling path", "all authenticated endpoints", "background jobs"},
		suggestions: []string{"Use a parameterized query: db.Query(\"SELECT … WHERE id = $1\", {var}).", "Compare with subtle.ConstantTimeCompare."},
	},
	{
		name:   "correctness",
		titles: []string{"Off-by-one in pagination", "Error ignored after write", "Nil map write on first use", "Wrong time zone for cutoff"},
		messages: []string{
			"{fn} loops to len({var}) inclusive, so the last page repeats one item.",
			"The error returned by {fn} is assigned to _ and dropped.",
			"{var} is declared but never made, so the first insert panics.",
			"The cutoff is computed in local time but compared with UTC timestamps.",
			"Customers in UTC+9 (東京) see yesterday's invoices as overdue.",
			"This path had a test before the change; it was deleted in this diff.",
		},
		anchors:     []string{"for i := 0; i <= len({var}); i++ in {fn} at line {n}", "_ = {fn}({var}) at line {n}", "var {var} map[string]int before use at line {n}"},
		reasons:     []string{"the loop bound changed from < to <= in this diff", "the error was checked before the refactor"},
		impacts:     []string{"users see duplicated or missing rows", "silent data loss when the disk is full"},
		scopes:      []string{"list endpoints", "nightly export", "checkout flow"},
		suggestions: []string{"Loop while i < len({var}).", "Return the error: if err := {fn}({var}); err != nil { return err }."},
	},
	{
		name:   "concurrency",
		titles: []string{"Data race on shared cache", "Goroutine leak on cancel", "Lock held across network call", "WaitGroup.Add inside goroutine"},
		messages: []string{
			"{var} is read in {fn} without holding mu, while refresh writes it.",
			"The goroutine started in {fn} blocks on a channel nobody reads after ctx is done.",
			"mu.Lock() is held while {fn} calls the payment API — up to 30 s.",
			"wg.Add(1) runs inside the goroutine, so Wait can return early.",
			"go test -race reports this on TestRefresh\twith GOMAXPROCS=4.",
		},
		anchors:     []string{"{var}[key] read without mu in {fn} at line {n}", "go func() { ch <- {fn}() }() at line {n}", "mu.Lock() before {fn} at line {n}"},
		reasons:     []string{"the mutex was removed from the read path in this change", "no select on ctx.Done() guards the send"},
		impacts:     []string{"crashes under load with concurrent map writes", "memory grows with every cancelled request"},
		scopes:      []string{"hot path under concurrent requests", "worker pool"},
		suggestions: []string{"Take mu.RLock() around the read, or use sync.Map.", "Select on ctx.Done() next to the send."},
	},
	{
		name:   "performance",
		titles: []string{"N+1 queries in list view", "Regexp compiled per call", "Unbounded slice growth", "Quadratic string concatenation"},
		messages: []string{
			"{fn} issues one query per item in {var}; 500 items mean 501 round trips.",
			"regexp.MustCompile(`^\\d{4}-\\d{2}$`) runs on every call to {fn}.",
			"{var} is appended to without a cap and never truncated.",
			"Building the report with s += line is O(n²) for large exports.",
			"p99 latency rose from 40 ms to ≈1.2 s in the staging trace.",
		},
		anchors:     []string{"for _, item := range {var} { db.Get(item.ID) } at line {n}", "regexp.MustCompile in {fn} at line {n}", "{var} = append({var}, row) at line {n}"},
		reasons:     []string{"the batch loader was replaced by a per-item call", "the compile moved from package scope into the function"},
		impacts:     []string{"list endpoints time out for large accounts", "CPU saturation during exports"},
		scopes:      []string{"admin dashboard", "export job", "public API"},
		suggestions: []string{"Load all items with one WHERE id = ANY($1) query.", "Hoist the regexp to a package-level var."},
	},
	{
		name:   "error-handling",
		titles: []string{"Panic on malformed input", "Error message leaks internals", "Retry without backoff", "Wrapped error loses cause"},
		messages: []string{
			"{fn} indexes parts[1] without checking len(parts).",
			"The error returned to clients includes the DSN \"postgres://admin:…@db\".",
			"{fn} retries immediately in a tight loop when {var} fails.",
			"fmt.Errorf uses %v instead of %w, so errors.Is no longer matches.",
			"Log lines now read \"failed: <nil>\" when the error is swallowed.\nOperators cannot tell which tenant failed.",
		},
		anchors:     []string{"parts[1] in {fn} at line {n}", "http.Error(w, err.Error(), 500) in {fn} at line {n}", "fmt.Errorf(\"{fn}: %v\", err) at line {n}"},
		reasons:     []string{"the length check was removed in this diff", "errors are forwarded verbatim to the response"},
		impacts:     []string{"a single bad request crashes the process", "credentials exposed to API clients"},
		scopes:      []string{"parsing of untrusted input", "error responses"},
		suggestions: []string{"Check len(parts) < 2 and return a 400.", "Wrap with %w and map to a generic message."},
	},
	{
		name:   "resource-leak",
		titles: []string{"Response body not closed", "File handle leaked on error path", "Ticker never stopped", "Rows not closed"},
		messages: []string{
			"{fn} returns early when {var} is non-nil without closing resp.Body.",
			"The file opened in {fn} is not closed when decoding fails.",
			"time.NewTicker in {fn} is never stopped, so each call leaks a timer.",
			"rows.Close() is missing; connections run out after ~100 requests.",
		},
		anchors:     []string{"return before defer resp.Body.Close() in {fn} at line {n}", "os.Open({var}) without Close at line {n}", "time.NewTicker in {fn} at line {n}"},
		reasons:     []string{"the defer moved below the early return", "the error branch was added in this change"},
		impacts:     []string{"file descriptor exhaustion after hours of traffic", "connection pool starvation"},
		scopes:      []string{"long-running server", "CLI batch mode"},
		suggestions: []string{"defer resp.Body.Close() right after the error check.", "Stop the ticker with defer t.Stop()."},
	},
	{
		name:   "api-compat",
		titles: []string{"Removed JSON field breaks clients", "Changed default page size", "Renamed exported function"},
		messages: []string{
			"The \"customer_id\" field was dropped from {fn}'s response.",
			"Mobile clients ≤ 3.2 still read it and will show «unknown».",
			"{fn} was renamed without a deprecated alias; downstream modules fail to build.",
			"The default page size changed from 50 to 20 without a version bump.",
		},
		anchors:     []string{"json:\"customer_id\" removed from {var} at line {n}", "func {fn} renamed at line {n}"},
		reasons:     []string{"the struct tag was deleted in this diff", "the public symbol no longer exists"},
		impacts:     []string{"older clients break on upgrade", "semver-incompatible change in a minor release"},
		scopes:      []string{"public API v2", "Go module consumers"},
		suggestions: []string{"Keep the field and mark it deprecated in the OpenAPI spec.", "Add a deprecated wrapper named like the old function."},
	},
	{
		name:   "maintainability",
		titles: []string{"Duplicated validation logic", "Magic number for timeout", "Dead code after refactor"},
		messages: []string{
			"{fn} re-implements the checks already in validate{var}.",
			"The timeout 37 * time.Second has no name or comment.",
			"The helper {fn} has no callers after this change.",
			"Consider a table-driven test — the five cases differ by one value.",
		},
		anchors:     []string{"copy of the checks in {fn} at line {n}", "37 * time.Second in {fn} at line {n}"},
		reasons:     []string{"the same conditions appear in two places now", "the constant was inlined in this diff"},
		impacts:     []string{"fixes applied to one copy will miss the other", "harder to tune in production"},
		scopes:      []string{"this package", "validation layer"},
		suggestions: []string{"Call the shared validator.", "Name it: const {var}Timeout = 37 * time.Second."},
	},
	{
		name:   "testing",
		titles: []string{"Test depends on wall clock", "Assertion never fails", "Flaky sleep in test"},
		messages: []string{
			"{fn} compares against time.Now(), so it fails around midnight UTC.",
			"The assertion checks {var} != nil on a value that is never nil.",
			"time.Sleep(100 * time.Millisecond) waits for a goroutine instead of syncing.",
		},
		anchors:     []string{"time.Now() in {fn} at line {n}", "if {var} != nil in {fn} at line {n}"},
		reasons:     []string{"the test was added in this diff", "the fake clock was removed"},
		impacts:     []string{"flaky CI runs", "regressions slip through"},
		scopes:      []string{"unit tests", "CI pipeline"},
		suggestions: []string{"Inject a clock.", "Use a channel or sync.WaitGroup instead of sleeping."},
	},
	{
		name:   "i18n",
		titles: []string{"Byte slicing cuts multibyte text", "Hard-coded English string", "Case folding with ToLower"},
		messages: []string{
			"{fn} truncates {var} with s[:40], which splits \"Ωmega café 🚀\" mid-rune.",
			"The message \"Your order shipped\" bypasses the translation catalog.",
			"strings.ToLower does not fold \"İstanbul\" correctly for Turkish users.",
		},
		anchors:     []string{"{var}[:40] in {fn} at line {n}", "literal \"Your order shipped\" at line {n}"},
		reasons:     []string{"the truncation is new in this change", "other strings in the file use T()"},
		impacts:     []string{"garbled names in emails (â€œ mojibake)", "untranslated UI for 30 % of users"},
		scopes:      []string{"notifications", "checkout UI"},
		suggestions: []string{"Truncate on rune boundaries with utf8.", "Wrap the string in T(\"order.shipped\")."},
	},
}

var (
	funcs     = []string{"LoadSession", "handleUpload", "(*Store).Get", "chargeCard", "renderInvoice", "parseHeader", "refreshCache", "ListOrders", "exportCSV", "rotateToken", "sendWebhook", "Migrate"}
	vars      = []string{"userID", "req.Form[\"q\"]", "items", "cache", "resp", "filename", "tenant", "rows", "cfg.Timeout", "payload"}
	providers = []string{"anthropic", "openai", "google", "local"}
	sources   = []string{"changed_line", "changed_line", "context", "diff_hunk"}
)

func (g *generator) pick(list []string) string { return list[g.rng.IntN(len(list))] }

// expand fills {fn}, {var} and {n}.
func expand(t, fn, v string, n int) string {
	if !strings.Contains(t, "{") {
		return t
	}
	var b strings.Builder
	for {
		i := strings.IndexByte(t, '{')
		if i < 0 {
			b.WriteString(t)
			return b.String()
		}
		b.WriteString(t[:i])
		t = t[i:]
		switch {
		case strings.HasPrefix(t, "{fn}"):
			b.WriteString(fn)
			t = t[4:]
		case strings.HasPrefix(t, "{var}"):
			b.WriteString(v)
			t = t[5:]
		case strings.HasPrefix(t, "{n}"):
			b.WriteString(strconv.Itoa(n))
			t = t[3:]
		default:
			b.WriteByte('{')
			t = t[1:]
		}
	}
}

// next returns finding i (0-based, in final order), not yet normalized.
func (g *generator) next(i int) findings.Finding {
	for g.left == 0 {
		g.file++
		g.left = g.counts[g.file]
		g.line = 0
	}
	g.left--
	path := g.paths[g.file]
	g.line += 1 + g.rng.IntN(60)
	start := g.line
	end := start + g.rng.IntN(9)

	blocks := g.cfg.BlockingEvery > 0 && (i+1)%g.cfg.BlockingEvery == 0
	var sev findings.Severity
	var conf int // hundredths
	switch r := g.rng.IntN(100); {
	case blocks:
		sev = findings.High
		if r < 30 {
			sev = findings.Critical
		}
		conf = 80 + g.rng.IntN(20) // >= min_confidence: blocks
	case r < 38:
		sev, conf = findings.Low, 30+g.rng.IntN(70)
	case r < 72:
		sev, conf = findings.Medium, 30+g.rng.IntN(70)
	case r < 92:
		sev, conf = findings.High, 35+g.rng.IntN(45) // < 0.8: does not block
	default:
		sev, conf = findings.Critical, 40+g.rng.IntN(40)
	}

	c := &categories[g.rng.IntN(len(categories))]
	fn, v := g.pick(funcs), g.pick(vars)
	ex := func(t string) string { return expand(t, fn, v, start) }

	nsent := 2 + g.rng.IntN(2)
	var msg strings.Builder
	first := g.rng.IntN(len(c.messages))
	for k := 0; k < nsent && k < len(c.messages); k++ {
		if k > 0 {
			if g.rng.IntN(6) == 0 {
				msg.WriteString("\n\n")
			} else {
				msg.WriteByte(' ')
			}
		}
		msg.WriteString(ex(c.messages[(first+k)%len(c.messages)]))
	}
	if g.rng.IntN(50) == 0 {
		msg.WriteString("\u2028See the runbook § 4.2.") // encoded as \u2028
	}

	f := findings.Finding{
		Category:   c.name,
		Severity:   sev,
		Confidence: float64(conf) / 100,
		Path:       path,
		StartLine:  start,
		EndLine:    end,
		Title:      g.pick(c.titles),
		Message:    msg.String(),
		Evidence: &findings.Evidence{
			Anchor:         ex(g.pick(c.anchors)),
			ReasoningBasis: g.pick(c.reasons),
			Source:         g.pick(sources),
		},
		Impact:   &findings.Impact{Summary: g.pick(c.impacts), Scope: g.pick(c.scopes)},
		Provider: g.pick(providers),
	}
	if g.rng.IntN(10) < 5 {
		f.Suggestion = ex(g.pick(c.suggestions))
	}
	if g.rng.IntN(20) < 3 {
		sl := 1 + g.rng.IntN(400)
		f.SupportingSpan = &findings.Span{Path: g.paths[g.rng.IntN(len(g.paths))], StartLine: sl, EndLine: sl + g.rng.IntN(20)}
	}
	return f
}

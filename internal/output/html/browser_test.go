package html

import (
	"bytes"
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// The browser test drives Debian's chromium headless with chromedp: it
// loads report.html from file://, uses the filters and the search, checks
// that hostile text is text in the DOM, takes PNG screenshots and fails on
// any network request. Without chromium it skips, unless
// DIFFPAL_REQUIRE_BROWSER is set (CI sets it): then it fails.
//
// DIFFPAL_CHROMIUM names another browser binary (only that one is tried).
// Screenshots go to $DIFFPAL_TEST_ARTIFACTS when set, else to a temporary
// directory; the test logs where.

const chromiumPath = "/usr/bin/chromium"

// pageTimeout bounds one subtest: a page that freezes fails here. It is a
// hang guard, not a performance bound.
const pageTimeout = 60 * time.Second

func findChromium(t *testing.T) string {
	t.Helper()
	var msg string
	if p := os.Getenv("DIFFPAL_CHROMIUM"); p != "" {
		if _, err := os.Stat(p); err == nil {
			return p
		}
		msg = "chromium not found at $DIFFPAL_CHROMIUM (" + p + ")"
	} else {
		if _, err := os.Stat(chromiumPath); err == nil {
			return chromiumPath
		}
		for _, name := range []string{"chromium", "chromium-browser"} {
			if p, err := exec.LookPath(name); err == nil {
				return p
			}
		}
		msg = "chromium not found at " + chromiumPath + " or on PATH (scripts/deps.sh installs it; apt-get install chromium)"
	}
	if _, required := os.LookupEnv("DIFFPAL_REQUIRE_BROWSER"); required {
		t.Fatalf("%s, and DIFFPAL_REQUIRE_BROWSER is set", msg)
	}
	t.Skipf("%s; set DIFFPAL_REQUIRE_BROWSER=1 to make this a failure", msg)
	return ""
}

func artifactDir(t *testing.T) string {
	t.Helper()
	if d := os.Getenv("DIFFPAL_TEST_ARTIFACTS"); d != "" {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}
	return t.TempDir()
}

// tab is one page of the shared browser, with what it saw.
type tab struct {
	t       *testing.T
	ctx     context.Context
	fileURL string

	mu       sync.Mutex
	requests []string
	dialogs  []string
}

// openReport writes r to dir/name, opens it in a new tab of the browser
// and waits for the script to have rendered its first batch.
func openReport(t *testing.T, browser context.Context, dir, name string, r *Report) *tab {
	t.Helper()
	var b bytes.Buffer
	if err := Write(&b, r); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := chromedp.NewContext(browser)
	t.Cleanup(cancel)
	tb := &tab{t: t, fileURL: (&url.URL{Scheme: "file", Path: path}).String()}
	// Opens the tab; the listener sees everything from the navigation on.
	if err := chromedp.Listen(ctx, func(ev any) {
		tb.mu.Lock()
		defer tb.mu.Unlock()
		switch ev := ev.(type) {
		case *network.EventRequestWillBeSent:
			tb.requests = append(tb.requests, ev.Request.URL)
		case *page.EventJavascriptDialogOpening:
			tb.dialogs = append(tb.dialogs, string(ev.Type)+": "+ev.Message)
		}
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Call(ctx, network.Enable, network.EnableParams{}); err != nil {
		t.Fatal(err)
	}
	ctx, cancelT := context.WithTimeout(ctx, pageTimeout)
	t.Cleanup(cancelT)
	tb.ctx = ctx
	t.Cleanup(tb.checkNetwork)

	start := time.Now()
	if err := chromedp.Do(ctx, chromedp.Navigate(tb.fileURL)); err != nil {
		t.Fatalf("navigate %s: %v", tb.fileURL, err)
	}
	tb.poll(`window.diffpal && window.diffpal.ready`)
	t.Logf("%s (%d bytes) loaded and rendered in %v (wall clock, for information)", name, b.Len(), time.Since(start).Round(time.Millisecond))
	return tb
}

// checkNetwork fails on any request that is not the report itself, a
// data: or an about: URL, and on any dialog (alert) the page opened.
func (tb *tab) checkNetwork() {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	if len(tb.requests) == 0 {
		tb.t.Error("no request seen at all: is the network listener working?")
	}
	for _, u := range tb.requests {
		base, _, _ := strings.Cut(u, "#")
		switch {
		case base == tb.fileURL, strings.HasPrefix(u, "data:"), strings.HasPrefix(u, "about:"):
		default:
			tb.t.Errorf("network request attempted: %s", u)
		}
	}
	for _, d := range tb.dialogs {
		tb.t.Errorf("the page opened a dialog: %s", d)
	}
}

func (tb *tab) poll(expr string) {
	tb.t.Helper()
	if _, err := chromedp.Run(tb.ctx, chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingTimeout(pageTimeout))); err != nil {
		tb.t.Fatalf("waiting for %s: %v", expr, err)
	}
}

func eval[T any](tb *tab, expr string) T {
	tb.t.Helper()
	v, err := chromedp.Run(tb.ctx, chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		tb.t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

func (tb *tab) do(steps ...chromedp.Action[chromedp.Void]) {
	tb.t.Helper()
	if err := chromedp.Do(tb.ctx, steps...); err != nil {
		tb.t.Fatal(err)
	}
}

// matching is the number of findings the filters let through, as the
// page shows it; shown is how many are rendered.
func (tb *tab) matching() (matching, shown int) {
	tb.t.Helper()
	v := eval[[2]int](tb, `[+document.getElementById("count").dataset.matching, document.querySelectorAll("#list > article.finding").length]`)
	return v[0], v[1]
}

func (tb *tab) wantMatching(n int) {
	tb.t.Helper()
	tb.poll(fmt.Sprintf(`document.getElementById("count").dataset.matching === "%d"`, n))
}

// press types one key as a keyboard does: a keyDown that carries its
// text (so a handler that prevents the default also stops the typing),
// then a keyUp.
func (tb *tab) press(key string) {
	tb.t.Helper()
	down := input.DispatchKeyEventParams{Type: input.DispatchKeyEventTypeKeyDown, Key: key}
	switch key {
	case "Escape":
		down.Code, down.WindowsVirtualKeyCode = "Escape", 27
	case "/":
		down.Code, down.Text, down.WindowsVirtualKeyCode = "Slash", key, 191
	default:
		down.Code, down.Text, down.WindowsVirtualKeyCode = "Key"+strings.ToUpper(key), key, int64(strings.ToUpper(key)[0])
	}
	down.UnmodifiedText = down.Text
	up := down
	up.Type, up.Text, up.UnmodifiedText = input.DispatchKeyEventTypeKeyUp, "", ""
	for _, ev := range []input.DispatchKeyEventParams{down, up} {
		if _, err := chromedp.Call(tb.ctx, input.DispatchKeyEvent, ev); err != nil {
			tb.t.Fatal(err)
		}
	}
}

func (tb *tab) screenshot(dir, name string, full bool) {
	tb.t.Helper()
	var png []byte
	var err error
	if full {
		png, err = chromedp.Run(tb.ctx, chromedp.FullScreenshot(100))
	} else {
		png, err = chromedp.Run(tb.ctx, chromedp.CaptureScreenshot())
	}
	if err != nil {
		tb.t.Fatal(err)
	}
	if !bytes.HasPrefix(png, []byte("\x89PNG\r\n\x1a\n")) {
		tb.t.Fatalf("screenshot is not a PNG")
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, png, 0o644); err != nil {
		tb.t.Fatal(err)
	}
	tb.t.Logf("screenshot: %s (%d bytes)", p, len(png))
}

func TestBrowser(t *testing.T) {
	exe := findChromium(t)
	artifacts := artifactDir(t)
	dir := t.TempDir()

	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900),
	)
	// The whole test's bound: the browser lives as long as this context.
	root, cancelRoot := context.WithTimeout(context.Background(), 4*pageTimeout)
	defer cancelRoot()
	alloc, cancelAlloc := chromedp.NewExecAllocator(root, opts...)
	defer cancelAlloc()
	browser, cancelBrowser := chromedp.NewContext(alloc, chromedp.WithLogf(t.Logf))
	defer cancelBrowser()
	if err := chromedp.Do(browser); err != nil {
		t.Fatalf("start %s: %v", exe, err)
	}

	t.Run("small", func(t *testing.T) {
		tb := openReport(t, browser, dir, "small.html", smallReport())
		if m, s := tb.matching(); m != 3 || s != 3 {
			t.Fatalf("matching %d, shown %d; want 3 and 3", m, s)
		}
		// Snippet lines with numbers, the finding's lines marked.
		if got := eval[string](tb, `Array.from(document.querySelectorAll("#finding-0 .snip .l.m")).map(e => e.dataset.n).join(",")`); got != "10,11,12" {
			t.Errorf("marked lines %q, want 10,11,12", got)
		}
		if got := eval[string](tb, `(a => a ? a.getAttribute("href") + " " + a.rel : "")(document.querySelector("#finding-0 a"))`); got != "https://git.example.com/acme/shop/blob/bbbb222/api/run.go#L10-L12 noopener noreferrer" {
			t.Errorf("link %q", got)
		}
		if got := eval[string](tb, `document.querySelector("#finding-0 .blocking").textContent`); got != "blocking" {
			t.Errorf("blocking mark %q", got)
		}

		// Severity filter: uncheck critical.
		tb.do(chromedp.Click(chromedp.ID("f-sev-0")))
		tb.wantMatching(2)
		// Search.
		tb.do(chromedp.SendKeys(chromedp.ID("f-q"), "nil"))
		tb.wantMatching(1)
		if got := eval[string](tb, `document.querySelector("#list .title").textContent`); got != "Removed nil check" {
			t.Errorf("search left %q", got)
		}
		// Profile and file filters are real selects.
		tb.do(chromedp.Click(chromedp.ID("f-reset")))
		tb.wantMatching(3)
		tb.do(chromedp.SetValue(chromedp.ID("f-file"), "b.go"))
		eval[chromedp.Void](tb, `document.getElementById("f-file").dispatchEvent(new Event("change", {bubbles: true}))`)
		tb.wantMatching(1)
		tb.do(chromedp.Click(chromedp.ID("f-reset")))
		tb.wantMatching(3)

		// Keys: j / k move through the findings, / goes to the search.
		eval[chromedp.Void](tb, `document.activeElement.blur()`)
		tb.press("j")
		tb.press("j")
		if got := eval[string](tb, `document.activeElement.id`); got != "finding-1" {
			t.Errorf("after j j, focus on %q, want finding-1", got)
		}
		tb.press("k")
		if got := eval[string](tb, `document.activeElement.id`); got != "finding-0" {
			t.Errorf("after k, focus on %q, want finding-0", got)
		}
		tb.press("/")
		if got := eval[string](tb, `document.activeElement.id + " " + JSON.stringify(document.activeElement.value)`); got != `f-q ""` {
			t.Errorf("after /, focus and value %s, want f-q and an empty search", got)
		}
		// Esc leaves the search; Tab then goes on to the findings.
		tb.press("Escape")
		if got := eval[string](tb, `document.activeElement.id`); got == "f-q" {
			t.Error("Esc did not leave the search")
		}
		tb.screenshot(artifacts, "report-small.png", true)

		// Dark, then print: filters hidden.
		if _, err := chromedp.Call(tb.ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
			Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: "dark"}}}); err != nil {
			t.Fatal(err)
		}
		if bg := eval[string](tb, `getComputedStyle(document.documentElement).backgroundColor`); bg != "rgb(13, 17, 23)" {
			t.Errorf("dark background %q", bg)
		}
		tb.screenshot(artifacts, "report-small-dark.png", true)
		if _, err := chromedp.Call(tb.ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{Media: "print"}); err != nil {
			t.Fatal(err)
		}
		if d := eval[string](tb, `getComputedStyle(document.getElementById("filters")).display`); d != "none" {
			t.Errorf("print: filters display %q", d)
		}
	})

	t.Run("hostile", func(t *testing.T) {
		tb := openReport(t, browser, dir, "hostile.html", browserHostileReport())
		if m, s := tb.matching(); m != 3 || s != 3 {
			t.Fatalf("matching %d, shown %d; want 3 and 3", m, s)
		}
		// Nothing was injected: no image, no svg but the chart, no script
		// but the two, no on* attribute, no javascript: link, no pwn.
		type injected struct {
			Img, Script, Svg, OnAttr, JSLinks int
			Pwned                             bool
		}
		got := eval[injected](tb, `(() => {
			let on = 0;
			for (const e of document.querySelectorAll("*")) for (const a of e.attributes) if (/^on/i.test(a.name)) on++;
			return {
				Img: document.querySelectorAll("img, iframe, object, embed").length,
				Script: document.scripts.length,
				Svg: document.querySelectorAll("svg").length,
				OnAttr: on,
				JSLinks: document.querySelectorAll("a[href]:not([href^='#']):not([href^='https:']):not([href^='http:'])").length,
				Pwned: window.__pwned !== undefined,
			};
		})()`)
		if got != (injected{Script: 2, Svg: 1}) {
			t.Errorf("injected: %+v", got)
		}
		// The hostile strings are text.
		text := eval[string](tb, `document.querySelector("header").textContent + "\n" + document.querySelector("main").textContent`)
		for _, want := range []string{hostileImg, hostileScript, hostilePwn, `evil\u202eog.go`, `a..b\n# approved`} {
			if !strings.Contains(text, want) {
				t.Errorf("page text lacks %q", want)
			}
		}
		if strings.ContainsAny(text, "\u202e\u2028\u2029\x1b") {
			t.Error("page text holds a raw bidi override, separator or escape")
		}
		const evil = `Array.from(document.querySelectorAll("#list article")).find(a => a.querySelector(".where code").textContent.startsWith("evil"))`
		if got := eval[string](tb, evil+`.querySelector(".snip .l").textContent`); got != hostileImg {
			t.Errorf("snippet line %q", got)
		}
		if got := eval[string](tb, evil+`.querySelector(".body dd").textContent`); got != hostileScript+"\n<!-- x" {
			t.Errorf("message %q", got)
		}
		// Filters and search over hostile text.
		tb.do(chromedp.SendKeys(chromedp.ID("f-q"), "</script>"))
		tb.wantMatching(1)
		tb.screenshot(artifacts, "report-hostile.png", true)
	})

	t.Run("noscript", func(t *testing.T) {
		ctx, cancel := chromedp.NewContext(browser)
		defer cancel()
		ctx, cancelT := context.WithTimeout(ctx, pageTimeout)
		defer cancelT()
		if _, err := chromedp.Call(ctx, emulation.SetScriptExecutionDisabled, emulation.SetScriptExecutionDisabledParams{Value: true}); err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if err := Write(&b, smallReport()); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, "noscript.html")
		if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := chromedp.Do(ctx, chromedp.Navigate((&url.URL{Scheme: "file", Path: path}).String())); err != nil {
			t.Fatal(err)
		}
		rows, err := chromedp.Run(ctx, chromedp.Nodes(chromedp.CSSAll("noscript tbody tr")))
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) != 3 {
			t.Errorf("without JavaScript, %d findings listed, want 3", len(rows))
		}
	})

	t.Run("10000", func(t *testing.T) {
		const n = 10000
		tb := openReport(t, browser, dir, "big.html", bigReport(n))
		m, s := tb.matching()
		if m != n || s == 0 || s >= n {
			t.Fatalf("matching %d, shown %d: want %d matching and a first batch", m, s, n)
		}
		if vis := eval[bool](tb, `document.getElementById("f-base-field").offsetParent !== null`); vis {
			t.Error("baseline filter shown without a baseline")
		}
		type paint struct {
			FCP, FirstBatchMark, FirstBatchMs, DOMContentLoaded float64
		}
		p := eval[paint](tb, `(() => {
			const fcp = performance.getEntriesByName("first-contentful-paint")[0];
			const mark = performance.getEntriesByName("diffpal-first-batch")[0];
			const nav = performance.getEntriesByType("navigation")[0];
			return {FCP: fcp ? fcp.startTime : -1, FirstBatchMark: mark ? mark.startTime : -1,
				FirstBatchMs: window.diffpal.firstBatchMs, DOMContentLoaded: nav ? nav.domContentLoadedEventEnd : -1};
		})()`)
		t.Logf("%d findings: first contentful paint %.0f ms, first batch of %d rendered at %.0f ms (render %.1f ms), DOMContentLoaded %.0f ms",
			n, p.FCP, s, p.FirstBatchMark, p.FirstBatchMs, p.DOMContentLoaded)
		if p.FirstBatchMark < 0 {
			t.Error("no diffpal-first-batch mark")
		}

		type filtered struct {
			Ms, Script float64
			Matching   int
		}
		measure := func(what, js string, want int) {
			t.Helper()
			f := eval[filtered](tb, `(() => {
				const t0 = performance.now();
				`+js+`;
				return {Ms: performance.now() - t0, Script: window.diffpal.lastFilterMs, Matching: window.diffpal.matching};
			})()`)
			// The paint after it: one animation frame.
			paintMs := eval[float64](tb, `new Promise(r => { const t0 = performance.now(); requestAnimationFrame(() => setTimeout(() => r(performance.now() - t0))); })`)
			t.Logf("%d findings: %s: %.1f ms (filter+render %.1f ms), next frame after %.1f ms; %d match", n, what, f.Ms, f.Script, paintMs, f.Matching)
			if f.Matching != want {
				t.Errorf("%s: %d match, want %d", what, f.Matching, want)
			}
		}
		measure("severity filter (uncheck critical)",
			`const b = document.getElementById("f-sev-0"); b.checked = false; b.dispatchEvent(new Event("change", {bubbles: true}))`, n*3/4)
		measure("search \"needle3\"",
			`const q = document.getElementById("f-q"); q.value = "needle3"; q.dispatchEvent(new Event("input", {bubbles: true}))`, n/10)
		measure("clear",
			`document.getElementById("filters").reset(); document.getElementById("f-q").value = ""; for (const b of document.querySelectorAll("#f-sev input")) b.checked = true; document.getElementById("f-q").dispatchEvent(new Event("input", {bubbles: true}))`, n)
		// A real click through the page, and a real typed search.
		tb.do(chromedp.Click(chromedp.ID("f-sev-1")))
		tb.wantMatching(n * 3 / 4)
		tb.do(chromedp.SendKeys(chromedp.ID("f-q"), "needle4"))
		tb.wantMatching(n / 10) // needle4: i%10 == 4 is even: critical or medium, none high
		tb.do(chromedp.Click(chromedp.ID("f-reset")))
		tb.wantMatching(n)
		// More on demand.
		_, before := tb.matching()
		tb.do(chromedp.Click(chromedp.ID("more")))
		if _, after := tb.matching(); after <= before {
			t.Errorf("show more: %d then %d rendered", before, after)
		}
		eval[chromedp.Void](tb, `window.scrollTo(0, 0)`)
		tb.screenshot(artifacts, "report-10000.png", false)
	})
}

const hostilePwn = `<img src=x onerror="window.__pwned=1"><svg onload="window.__pwned=2">`

// browserHostileReport is hostileReport with payloads that would set
// window.__pwned rather than open a dialog, in every kind of place.
func browserHostileReport() *Report {
	r := hostileReport()
	r.Findings = append(r.Findings, Finding{StableID: "id3", Category: hostilePwn, Severity: "medium", Profile: hostilePwn,
		Path: hostilePwn, StartLine: 9, EndLine: 9, Title: hostilePwn, Message: hostilePwn, Evidence: hostilePwn,
		Snippet: &Snippet{Start: 9, Lines: []string{hostilePwn}, MarkStart: 9, MarkEnd: 9}, Link: "https://h/" + hostilePwn})
	r.Files = append(r.Files, File{Path: hostilePwn})
	r.Notes = append(r.Notes, hostilePwn)
	return r
}

package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// testStreams are IOStreams over buffers with exactly env as the
// environment and the TTY answers given.
func testStreams(env map[string]string, stdoutTTY, stderrTTY bool) (*IOStreams, *bytes.Buffer, *bytes.Buffer) {
	var out, errOut bytes.Buffer
	ios := &IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut,
		LookupEnvFunc: func(k string) (string, bool) { v, ok := env[k]; return v, ok }}
	ios.SetStdoutTTY(stdoutTTY)
	ios.SetStderrTTY(stderrTTY)
	return ios, &out, &errOut
}

func TestColorEnabled(t *testing.T) {
	cases := []struct {
		name string
		mode ColorMode
		tty  bool
		env  map[string]string
		want bool
	}{
		{"auto on a terminal", ColorAuto, true, nil, true},
		{"empty mode is auto", "", true, nil, true},
		{"auto off a terminal", ColorAuto, false, nil, false},
		{"auto with NO_COLOR", ColorAuto, true, map[string]string{"NO_COLOR": "1"}, false},
		{"auto with an empty NO_COLOR (set counts)", ColorAuto, true, map[string]string{"NO_COLOR": ""}, false},
		{"auto with TERM=dumb", ColorAuto, true, map[string]string{"TERM": "dumb"}, false},
		{"auto with another TERM", ColorAuto, true, map[string]string{"TERM": "xterm-256color"}, true},
		{"always off a terminal", ColorAlways, false, nil, true},
		{"always beats NO_COLOR", ColorAlways, false, map[string]string{"NO_COLOR": "1", "TERM": "dumb"}, true},
		{"never on a terminal", ColorNever, true, nil, false},
	}
	for _, tc := range cases {
		ios, _, _ := testStreams(tc.env, tc.tty, false)
		if got := ios.ColorEnabled(tc.mode); got != tc.want {
			t.Errorf("%s: ColorEnabled = %v, want %v", tc.name, got, tc.want)
		}
	}
	if _, err := parseColorMode("sometimes"); err == nil || !strings.Contains(err.Error(), `invalid --color "sometimes": want auto, always or never`) {
		t.Errorf("parseColorMode: %v", err)
	}
}

// TestIOStreamsDefaults: unset funcs and a nil *IOStreams are the
// process's environment and working directory; buffers are not terminals.
func TestIOStreamsDefaults(t *testing.T) {
	t.Setenv("DIFFPAL_TEST_IOSTREAMS", "from the process")
	wd, _ := os.Getwd()
	for _, ios := range []*IOStreams{nil, {Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}}} {
		if v := ios.Getenv("DIFFPAL_TEST_IOSTREAMS"); v != "from the process" {
			t.Errorf("%v: Getenv = %q", ios, v)
		}
		if _, ok := ios.LookupEnv("DIFFPAL_TEST_IOSTREAMS_UNSET"); ok {
			t.Errorf("%v: an unset variable is set", ios)
		}
		if got, err := ios.Getwd(); err != nil || got != wd {
			t.Errorf("%v: Getwd = %q, %v", ios, got, err)
		}
		if ios.IsStdoutTTY() || ios.IsStderrTTY() || ios.ProgressEnabled() {
			t.Errorf("%v: a buffer (or nothing) is a terminal", ios)
		}
	}
	// A file that is not a character device is not a terminal either.
	f, err := os.CreateTemp(t.TempDir(), "out")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if ios := (&IOStreams{Out: f, ErrOut: f}); ios.IsStdoutTTY() || ios.IsStderrTTY() {
		t.Error("a regular file is a terminal")
	}
	// Overrides win both ways.
	ios := &IOStreams{Out: f, ErrOut: f}
	ios.SetStdoutTTY(true)
	if !ios.IsStdoutTTY() || ios.IsStderrTTY() {
		t.Error("SetStdoutTTY(true) not honoured, or leaked to stderr")
	}
	ios.SetStdoutTTY(false)
	if ios.IsStdoutTTY() {
		t.Error("SetStdoutTTY(false) not honoured")
	}
}

func TestIOStreamsInjected(t *testing.T) {
	t.Setenv("DIFFPAL_TEST_IOSTREAMS", "from the process")
	ios, _, _ := testStreams(map[string]string{"ONLY_HERE": "x"}, false, false)
	ios.GetwdFunc = func() (string, error) { return "/somewhere/else", nil }
	if ios.Getenv("DIFFPAL_TEST_IOSTREAMS") != "" || ios.Getenv("ONLY_HERE") != "x" {
		t.Error("the injected environment is not the one read")
	}
	if wd, _ := ios.Getwd(); wd != "/somewhere/else" {
		t.Errorf("Getwd = %q", wd)
	}
}

// TestProgressOnlyOnTTY: the progress line (carriage return, erase, text)
// is drawn only when stderr is a terminal.
func TestProgressOnlyOnTTY(t *testing.T) {
	for _, tty := range []bool{false, true} {
		ios, _, errOut := testStreams(nil, false, tty)
		p := newProgress(ios)
		p.step("reading the change")
		p.done()
		got := errOut.String()
		if tty && !strings.HasPrefix(got, "\r\x1b[2K⏳ reading the change (") || tty && !strings.HasSuffix(got, "\r\x1b[2K") {
			t.Errorf("tty: progress = %q", got)
		}
		if !tty && got != "" {
			t.Errorf("not a tty: progress = %q", got)
		}
	}
}

// TestReviewStreams runs review end to end with injected streams: colour
// follows --color, the TTY, NO_COLOR and TERM; progress goes to stderr
// only when it is a terminal; paths are shown relative to the injected
// working directory; the DIFFPAL_* variables and CI come from the
// injected environment, not the process's.
func TestReviewStreams(t *testing.T) {
	repo := safeRepo(t)
	t.Setenv("DIFFPAL_BLOCK_ON", "low") // the process's: must not be read
	t.Setenv("NO_COLOR", "1")
	cases := []struct {
		name                 string
		args                 []string
		env                  map[string]string
		stdoutTTY, stderrTTY bool
		colour, progress     bool
	}{
		{"terminal", nil, nil, true, true, true, true},
		{"pipes", nil, nil, false, false, false, false},
		{"stdout piped, stderr a terminal", nil, nil, false, true, false, true},
		{"NO_COLOR", nil, map[string]string{"NO_COLOR": "1"}, true, true, false, true},
		{"TERM=dumb", nil, map[string]string{"TERM": "dumb"}, true, false, false, false},
		{"--color never", []string{"--color", "never"}, nil, true, false, false, false},
		{"--color always", []string{"--color", "always"}, map[string]string{"NO_COLOR": "1"}, false, false, true, false},
	}
	for _, tc := range cases {
		ios, out, errOut := testStreams(tc.env, tc.stdoutTTY, tc.stderrTTY)
		ios.GetwdFunc = func() (string, error) { return repo.Dir, nil }
		code := Run(context.Background(), append([]string{"review", "-C", repo.Dir}, tc.args...), ios)
		if code != 0 {
			t.Fatalf("%s: exit %d\n%s%s", tc.name, code, out, errOut)
		}
		if got := sgr.MatchString(out.String()); got != tc.colour {
			t.Errorf("%s: colour = %v, want %v:\n%q", tc.name, got, tc.colour, out.String())
		}
		if got := strings.Contains(errOut.String(), "\r\x1b[2K⏳ "); got != tc.progress {
			t.Errorf("%s: progress = %v, want %v: %q", tc.name, got, tc.progress, errOut.String())
		}
		plain := sgr.ReplaceAllString(out.String(), "")
		if !strings.HasPrefix(plain, "diffpal review . ") || !strings.Contains(plain, "  wrote .artifacts/diffpal/findings.json, ") {
			t.Errorf("%s: names not relative to the injected working directory:\n%s", tc.name, plain)
		}
		if !strings.Contains(plain, "(block on high)") {
			t.Errorf("%s: the process's DIFFPAL_BLOCK_ON was read:\n%s", tc.name, plain)
		}
	}

	// The injected environment is the one review reads.
	ios, out, _ := testStreams(map[string]string{"DIFFPAL_BLOCK_ON": "critical", "CI": "true"}, false, false)
	elsewhere := t.TempDir()
	ios.GetwdFunc = func() (string, error) { return elsewhere, nil }
	if code := Run(context.Background(), []string{"review", "-C", repo.Dir}, ios); code != 0 {
		t.Fatalf("exit %d\n%s", code, out)
	}
	got := out.String()
	if !strings.Contains(got, "no blocking findings (block on critical)") || !strings.Contains(got, "policy from base revision") {
		t.Errorf("injected DIFFPAL_BLOCK_ON or CI not read:\n%s", got)
	}
	if !strings.Contains(got, "  wrote "+filepath.Join(repo.Dir, ".artifacts", "diffpal", "findings.json")) {
		t.Errorf("a path outside the working directory is not shown absolute:\n%s", got)
	}
}

// TestBundleCommandsReadInjectedEnv: DIFFPAL_MAX_BUNDLE_BYTES reaches
// validate, gate, sarif and upgrade through IOStreams.
func TestBundleCommandsReadInjectedEnv(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "v1.json")
	if err := os.WriteFile(path, []byte(v1Bundle), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"validate", path}, {"gate", path}, {"sarif", "--input", path, "--out", "-"}, {"upgrade", path}} {
		ios, out, errOut := testStreams(map[string]string{"DIFFPAL_MAX_BUNDLE_BYTES": "64"}, false, false)
		code := Run(context.Background(), args, ios)
		if code != ExitUsage || !strings.Contains(out.String()+errOut.String(), "set DIFFPAL_MAX_BUNDLE_BYTES to raise the limit") {
			t.Errorf("%v: exit %d\n%s%s", args, code, out, errOut)
		}
		ios, out, errOut = testStreams(nil, false, false)
		if code := Run(context.Background(), args, ios); code == ExitUsage {
			t.Errorf("%v without the limit: exit %d\n%s%s", args, code, out, errOut)
		}
	}
}

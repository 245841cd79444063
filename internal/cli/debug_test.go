package cli

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDebugPrompt prints the prompts a model review would send without
// calling the model (the loopback API fails the test if it is reached),
// without a key, and without writing any output.
func TestDebugPrompt(t *testing.T) {
	called := false
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		called = true
		w.WriteHeader(500)
	}))
	defer srv.Close()
	dir := providerRepo(t)
	t.Setenv("OPENAI_BASE_URL", srv.URL+"/v1")
	t.Setenv("OPENAI_API_KEY", "")
	code, stdout, stderr := runCLI(t, "debug", "prompt", "-C", dir, "--provider", "openai", "--model", "gpt-test", "--color", "never")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	if called {
		t.Error("debug prompt called the model")
	}
	for _, want := range []string{"=== request 1 of ", "schema diffpal_profile_answer", `model "gpt-test"`, "evidence budget", "--- system", "calc.go"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%.2000s", want, stdout)
		}
	}
	if strings.Contains(stdout, plantedToken) {
		t.Error("a planted secret reached the printed prompt")
	}
	if _, err := os.Stat(filepath.Join(dir, ".artifacts", "diffpal", "findings.json")); err == nil {
		t.Error("debug prompt wrote outputs")
	}
	// The built-in provider sends none, and says so.
	code, stdout, _ = runCLI(t, "debug", "prompt", "-C", dir, "--color", "never")
	if code != 0 || !strings.Contains(stdout, "sends no prompt") {
		t.Errorf("builtin: exit %d\n%s", code, stdout)
	}
}

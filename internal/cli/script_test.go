package cli

import (
	"context"
	"os"
	"testing"

	"github.com/diffpalhq/diffpal/internal/policy"
	"github.com/rogpeppe/go-internal/testscript"
)

// TestMain lets testscript run the real command tree as the "diffpal"
// program inside scripts, in a fresh temporary directory per script.
func TestMain(m *testing.M) {
	// Tests choose the policy source explicitly where it matters: a CI
	// runner's own CI variable must not switch the default under them.
	for _, k := range policy.CIVars {
		os.Unsetenv(k)
	}
	testscript.Main(m, map[string]func(){
		"diffpal": func() { os.Exit(Run(context.Background(), os.Args[1:], System())) },
	})
}

// TestScripts runs testdata/script/*.txtar: end-to-end command runs with
// their stdout, stderr and exit codes (go test -run Scripts -update
// rewrites the expected output in place).
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir:           "testdata/script",
		UpdateScripts: os.Getenv("UPDATE_SCRIPTS") != "",
	})
}

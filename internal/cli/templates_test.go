package cli

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// The CI templates and the action call diffpal with flags; a renamed flag
// must fail here, not in a user's pipeline.

func readRepoFile(t *testing.T, rel string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", filepath.FromSlash(rel)))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

var flagToken = regexp.MustCompile(`(?:^|[\s(])(--[a-z][a-z0-9-]*)`)

// checkReviewFlags fails for every --flag in text that diffpal review does
// not have.
func checkReviewFlags(t *testing.T, file, text string) int {
	t.Helper()
	cmd := NewCmdReview(&IOStreams{}, func(*ReviewOptions) error { return nil })
	n := 0
	for _, m := range flagToken.FindAllStringSubmatch(text, -1) {
		name := strings.TrimPrefix(m[1], "--")
		if name == "no-tags" { // git fetch's
			continue
		}
		n++
		if cmd.Flags().Lookup(name) == nil {
			t.Errorf("%s: diffpal review has no flag --%s", file, name)
		}
	}
	return n
}

func TestGitHubActionInputsReachTheScript(t *testing.T) {
	var action struct {
		Inputs  map[string]struct{ Default string } `yaml:"inputs"`
		Outputs map[string]struct{ Value string }   `yaml:"outputs"`
		Runs    struct {
			Using string `yaml:"using"`
			Steps []struct {
				ID   string            `yaml:"id"`
				Env  map[string]string `yaml:"env"`
				Run  string            `yaml:"run"`
				With map[string]string `yaml:"with"`
				Uses string            `yaml:"uses"`
			} `yaml:"steps"`
		} `yaml:"runs"`
	}
	if err := yaml.Unmarshal([]byte(readRepoFile(t, "action.yml")), &action); err != nil {
		t.Fatalf("action.yml: %v", err)
	}
	if action.Runs.Using != "composite" {
		t.Fatalf("action.yml: runs.using %q", action.Runs.Using)
	}
	script := readRepoFile(t, "scripts/github-action.sh")
	var review map[string]string
	setupGo := false
	for _, s := range action.Runs.Steps {
		if s.ID == "review" {
			review = s.Env
			if !strings.Contains(s.Run, "github-action.sh\" review") {
				t.Errorf("review step runs %q", s.Run)
			}
		}
		if strings.HasPrefix(s.Uses, "actions/setup-go@") && strings.Contains(s.With["go-version-file"], "github.action_path") {
			setupGo = true
		}
		// Inputs go through env, never into the shell text.
		if strings.Contains(s.Run, "${{") {
			t.Errorf("step %q splices an expression into its shell code: %q", s.ID, s.Run)
		}
	}
	if !setupGo {
		t.Error("action.yml does not set up Go from the action's go.mod")
	}
	for name := range action.Inputs {
		v := "INPUT_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
		if name == "token" {
			v = "GITHUB_TOKEN"
		}
		if review[v] != "${{ inputs."+name+" }}" {
			t.Errorf("input %s does not reach the review step as %s (got %q)", name, v, review[v])
		}
		if v != "GITHUB_TOKEN" && !strings.Contains(script, v) {
			t.Errorf("scripts/github-action.sh ignores %s", v)
		}
	}
	for _, want := range []string{"bundle", "blocking", "exit-code"} {
		if !strings.Contains(action.Outputs[want].Value, "steps.review.outputs."+want) {
			t.Errorf("output %s: %q", want, action.Outputs[want].Value)
		}
	}
	start, end := strings.Index(script, "args=(review"), strings.Index(script, `"$bin" "${args[@]}"`)
	if start < 0 || end < start {
		t.Fatal("scripts/github-action.sh: the review command line is not where the test looks")
	}
	if n := checkReviewFlags(t, "scripts/github-action.sh", script[start:end]); n < 8 {
		t.Errorf("only %d flags found in the script: the pattern is broken", n)
	}
}

func TestCITemplates(t *testing.T) {
	var gl map[string]struct {
		Variables map[string]string `yaml:"variables"`
		Script    []string          `yaml:"script"`
		Artifacts struct {
			Reports map[string]string `yaml:"reports"`
		} `yaml:"artifacts"`
	}
	text := readRepoFile(t, "ci/gitlab/diffpal.gitlab-ci.yml")
	if err := yaml.Unmarshal([]byte(text), &gl); err != nil {
		t.Fatalf("gitlab template: %v", err)
	}
	job := gl["diffpal"]
	if job.Artifacts.Reports["codequality"] != ".artifacts/diffpal/gl-code-quality-report.json" {
		t.Errorf("gitlab template: codequality report %q", job.Artifacts.Reports["codequality"])
	}
	cmdline := strings.Join(job.Script, "\n") + " " + job.Variables["DIFFPAL_ARGS"]
	if !strings.Contains(cmdline, "diffpal review --publish gitlab") {
		t.Errorf("gitlab template does not publish: %q", cmdline)
	}
	if job.Variables["GIT_DEPTH"] != "0" {
		t.Error("gitlab template: a shallow clone lacks the merge request's base")
	}
	checkReviewFlags(t, "gitlab template", cmdline[strings.Index(cmdline, "diffpal review"):])

	var az struct {
		Steps []map[string]any `yaml:"steps"`
	}
	if err := yaml.Unmarshal([]byte(readRepoFile(t, "ci/azure/diffpal.yml")), &az); err != nil {
		t.Fatalf("azure template: %v", err)
	}
	found := false
	for _, s := range az.Steps {
		bash, _ := s["bash"].(string)
		if !strings.Contains(bash, "diffpal review --publish azure") {
			continue
		}
		found = true
		env, _ := s["env"].(map[string]any)
		if env["SYSTEM_ACCESSTOKEN"] != "$(System.AccessToken)" {
			t.Error("azure template: System.AccessToken is not mapped into the step")
		}
		checkReviewFlags(t, "azure template", bash)
	}
	if !found {
		t.Error("azure template: no step runs diffpal review --publish azure")
	}
}

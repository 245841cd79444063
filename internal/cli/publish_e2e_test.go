package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/diffpalhq/diffpal/internal/git/gittest"
	"github.com/diffpalhq/diffpal/internal/publish"
	"github.com/diffpalhq/diffpal/internal/publish/azure/azuretest"
	"github.com/diffpalhq/diffpal/internal/publish/github/githubtest"
	"github.com/diffpalhq/diffpal/internal/publish/gitlab/gitlabtest"
)

// End to end: diffpal review --publish in a real git repository, against
// the loopback hosts, with the context read from each CI system's own
// variables (no flag names the pull request).

const e2eBase = "package main\n\nfunc main() {}\n"

// e2eFeature has two findings on added lines: TLS verification disabled
// (high, blocking) and a shell command built from a variable (medium).
const e2eFeature = `package main

import (
	"crypto/tls"
	"net/http"
	"os/exec"
)

func main() {}

func fetch(url string) (*http.Response, error) {
	tr := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}
	return (&http.Client{Transport: tr}).Get(url)
}

func run(name string) error {
	return exec.Command("sh", "-c", "ls "+name).Run()
}
`

// e2eFixed fixes the TLS finding and moves the shell finding down a line.
const e2eFixed = `package main

import (
	"net/http"
	"os/exec"
)

// main does nothing yet.
func main() {}

func fetch(url string) (*http.Response, error) {
	return http.Get(url)
}

func run(name string) error {
	return exec.Command("sh", "-c", "ls "+name).Run()
}
`

type e2eRepo struct {
	*gittest.Repo
	base, head string
}

func newE2ERepo(t *testing.T) *e2eRepo {
	r := &e2eRepo{Repo: gittest.New(t)}
	r.Write("main.go", e2eBase)
	r.base = r.Commit("base")
	r.Git("checkout", "-q", "-b", "feature")
	r.Write("main.go", e2eFeature)
	r.head = r.Commit("feature")
	return r
}

func (r *e2eRepo) push(content string) {
	r.Write("main.go", content)
	r.head = r.Commit("push")
}

// patch is the hunks of main.go between base and head, as the hosts show
// a pull request's diff.
func (r *e2eRepo) patch() string {
	d := r.Git("diff", "--no-color", "-U3", r.base, r.head, "--", "main.go")
	if i := strings.Index(d, "\n@@"); i >= 0 {
		return d[i+1:]
	}
	return d
}

// run runs diffpal in-process with env layered over the process's.
func runEnv(t *testing.T, env map[string]string, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	ios := &IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut, LookupEnvFunc: func(k string) (string, bool) {
		if v, ok := env[k]; ok {
			return v, v != ""
		}
		return os.LookupEnv(k)
	}}
	code := Run(context.Background(), args, ios)
	return code, out.String(), errOut.String()
}

func writeEvent(t *testing.T, dir string, number int, base, head, headRepo, baseRepo string) string {
	t.Helper()
	ev := map[string]any{"action": "synchronize", "number": number, "pull_request": map[string]any{
		"number": number,
		"head":   map[string]any{"sha": head, "repo": map[string]any{"full_name": headRepo}},
		"base":   map[string]any{"sha": base, "repo": map[string]any{"full_name": baseRepo}},
	}}
	data, _ := json.Marshal(ev)
	p := filepath.Join(dir, fmt.Sprintf("event-%s.json", head[:8]))
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func readPlan(t *testing.T, path string) *publish.Plan {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var p publish.Plan
	if err := json.Unmarshal(data, &p); err != nil {
		t.Fatal(err)
	}
	return &p
}

func openThreads(ths []githubtest.Thread) (open, resolved int) {
	for _, th := range ths {
		if th.Resolved {
			resolved++
		} else {
			open++
		}
	}
	return
}

// diffpalReviews counts the pull request reviews diffpal posted (a reply
// is a review of its own on GitHub).
func diffpalReviews(gh *githubtest.Server) int {
	n := 0
	for _, r := range gh.Reviews() {
		if strings.HasPrefix(r.Body, "<!-- diffpal:review") {
			n++
		}
	}
	return n
}

func TestPublishGitHubEndToEnd(t *testing.T) {
	repo := newE2ERepo(t)
	gh := githubtest.New(t)
	owner := gh.Owner + "/" + gh.Repo
	evDir := t.TempDir()
	env := map[string]string{
		"GITHUB_ACTIONS": "true", "GITHUB_EVENT_NAME": "pull_request", "GITHUB_REPOSITORY": owner,
		"GITHUB_TOKEN": gh.Token, "GITHUB_API_URL": gh.APIURL, "GITHUB_GRAPHQL_URL": gh.GraphQLURL, "GITHUB_SERVER_URL": gh.URL,
	}
	sync := func() {
		gh.SetHead(repo.head)
		gh.SetFiles(githubtest.File{Filename: "main.go", Patch: repo.patch()})
		env["GITHUB_EVENT_PATH"] = writeEvent(t, evDir, gh.Number, repo.base, repo.head, owner, owner)
		env["GITHUB_SHA"] = repo.head
	}
	sync()
	planPath := filepath.Join(repo.Dir, ".artifacts/diffpal/github-plan.json")

	// 1. Review and publish: the range is the pull request's, read from the event.
	code, stdout, stderr := runEnv(t, env, "review", "-C", repo.Dir, "--publish", "github", "--color", "never")
	if code != 0 {
		t.Fatalf("review --publish: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if !strings.Contains(stdout, "base "+repo.base) && !strings.Contains(stdout, repo.base[:12]) {
		t.Errorf("review did not take the pull request's base:\n%s", stdout)
	}
	ths := gh.Threads()
	if len(ths) != 2 || diffpalReviews(gh) != 1 || len(gh.IssueComments()) != 1 {
		t.Fatalf("first publish: %d threads, %d reviews, %d issue comments\n%s", len(ths), diffpalReviews(gh), len(gh.IssueComments()), stderr)
	}
	if !strings.Contains(stderr, "published on github #42: 2 new") {
		t.Errorf("stderr: %s", stderr)
	}
	p := readPlan(t, planPath)
	if p.Count(publish.Create) != 2 || p.Head != repo.head {
		t.Errorf("plan: %+v", p)
	}
	for _, a := range p.Actions {
		if a.Kind == publish.Create && a.Result != "done" {
			t.Errorf("create %s: %s", a.StableID, a.Result)
		}
	}

	// 2. publish again on the same head: nothing new, the summary edited in place.
	gh.ResetRequests()
	if code, _, stderr := runEnv(t, env, "publish", "github", "-C", repo.Dir); code != 0 {
		t.Fatalf("publish again: exit %d: %s", code, stderr)
	}
	for _, w := range gh.Writes() {
		if !(w.Method == "PATCH" && strings.Contains(w.Path, "/issues/comments/")) {
			t.Errorf("second publish wrote %s %s", w.Method, w.Path)
		}
	}

	// 3. Push a fix for the TLS finding; the shell finding moves a line.
	repo.push(e2eFixed)
	sync()
	gh.ResetRequests()
	code, stdout, stderr = runEnv(t, env, "review", "-C", repo.Dir, "--publish", "github", "--color", "never")
	if code != 0 {
		t.Fatalf("review after the fix: exit %d\n%s\n%s", code, stdout, stderr)
	}
	ths = gh.Threads()
	if open, resolved := openThreads(ths); len(ths) != 2 || open != 1 || resolved != 1 {
		t.Fatalf("after the fix: %d threads, %d open, %d resolved", len(ths), open, resolved)
	}
	for _, th := range ths {
		if th.Resolved {
			last := th.Comments[len(th.Comments)-1].Body
			if !strings.Contains(last, repo.head[:12]) || !strings.Contains(th.Comments[0].Body, "tls") && !strings.Contains(th.Comments[0].Body, "TLS") {
				t.Errorf("resolved thread: first %q, reply %q", th.Comments[0].Body, last)
			}
		}
	}
	if diffpalReviews(gh) != 1 {
		t.Errorf("the fix reposted findings: %d reviews", diffpalReviews(gh))
	}

	// 4. Three more runs: no duplicates.
	for i := 0; i < 3; i++ {
		if code, _, stderr := runEnv(t, env, "review", "-C", repo.Dir, "--publish", "github", "--color", "never"); code != 0 {
			t.Fatalf("rerun %d: exit %d: %s", i, code, stderr)
		}
	}
	if len(gh.Threads()) != 2 || diffpalReviews(gh) != 1 || len(gh.IssueComments()) != 1 {
		t.Errorf("after reruns: %d threads, %d reviews, %d summaries", len(gh.Threads()), diffpalReviews(gh), len(gh.IssueComments()))
	}
	for _, r := range gh.Requests() {
		if strings.Contains(r.Path, "Bearer") || r.Query.Encode() != "" && strings.Contains(r.Query.Encode(), gh.Token) {
			t.Errorf("token in a request line: %s", r.Path)
		}
	}
	if data, _ := os.ReadFile(planPath); bytes.Contains(data, []byte(gh.Token)) {
		t.Error("the plan holds the token")
	}

	// 5. A fork's pull_request event: no request at all, exit 0, says why.
	gh.ResetRequests()
	forkEnv := map[string]string{}
	for k, v := range env {
		forkEnv[k] = v
	}
	forkEnv["GITHUB_EVENT_PATH"] = writeEvent(t, t.TempDir(), gh.Number, repo.base, repo.head, "stranger/demo", owner)
	code, _, stderr = runEnv(t, forkEnv, "review", "-C", repo.Dir, "--publish", "github", "--color", "never")
	if code != 0 || !strings.Contains(stderr, "publishing skipped: pull request from fork stranger/demo") {
		t.Fatalf("fork: exit %d\n%s", code, stderr)
	}
	if n := len(gh.Requests()); n != 0 {
		t.Errorf("fork run sent %d requests", n)
	}
	if p := readPlan(t, planPath); p.Skipped == "" {
		t.Errorf("fork plan not marked skipped: %+v", p)
	}

	// 6. The gate does not depend on publishing; a failed publish exits 4.
	repo.push(e2eFeature)
	sync()
	summaryPath := fmt.Sprintf("/issues/comments/%d", gh.IssueComments()[0].ID)
	gh.FailOnce("PATCH", summaryPath, 500, `{"message":"Server Error"}`)
	code, _, stderr = runEnv(t, env, "review", "-C", repo.Dir, "--publish", "github", "--gate", "--color", "never")
	if code != ExitGateBlocked || !strings.Contains(stderr, "500") {
		t.Errorf("gate with a failed publish: exit %d (want 10)\n%s", code, stderr)
	}
	gh.FailOnce("PATCH", summaryPath, 500, `{"message":"Server Error"}`)
	code, _, stderr = runEnv(t, env, "review", "-C", repo.Dir, "--publish", "github", "--color", "never")
	if code != ExitPublish || !strings.Contains(stderr, "PATCH") || strings.Contains(stderr, gh.Token) {
		t.Errorf("failed publish: exit %d (want 4)\n%s", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(repo.Dir, ".artifacts/diffpal/summary.md")); err != nil {
		t.Errorf("artifacts missing after a failed publish: %v", err)
	}
}

// TestPublishDryRunAndContextErrors: --dry-run reads but never writes; a
// missing context names the variables; bad flags are usage errors.
func TestPublishDryRunAndContextErrors(t *testing.T) {
	repo := newE2ERepo(t)
	gh := githubtest.New(t)
	gh.SetHead(repo.head)
	gh.SetFiles(githubtest.File{Filename: "main.go", Patch: repo.patch()})
	owner := gh.Owner + "/" + gh.Repo
	env := map[string]string{"GITHUB_ACTIONS": "", "GITHUB_TOKEN": gh.Token, "GITHUB_API_URL": gh.APIURL, "GITHUB_GRAPHQL_URL": gh.GraphQLURL,
		"GITHUB_EVENT_PATH": "", "GITHUB_REPOSITORY": "", "CI": ""}
	if code, _, stderr := runEnv(t, env, "review", "-C", repo.Dir, "--base", "main", "--color", "never"); code != 0 {
		t.Fatalf("review: %d %s", code, stderr)
	}
	code, _, stderr := runEnv(t, env, "publish", "github", "-C", repo.Dir, "--dry-run", "--repo", owner, "--pr", "42", "--head", repo.head)
	if code != 0 {
		t.Fatalf("dry run: exit %d: %s", code, stderr)
	}
	if w := gh.Writes(); len(w) != 0 {
		t.Errorf("dry run wrote: %+v", w)
	}
	p := readPlan(t, filepath.Join(repo.Dir, ".artifacts/diffpal/github-plan.json"))
	if !p.DryRun || p.Count(publish.Create) != 2 || p.Count(publish.CreateSummary) != 1 {
		t.Errorf("dry-run plan: %+v", p)
	}
	for _, a := range p.Actions {
		if a.Kind == publish.Create && (a.Result != "dry-run" || a.Body == "" || a.Reason == "") {
			t.Errorf("dry-run action %+v", a)
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"publish", "github", "-C", repo.Dir}, "GITHUB_REPOSITORY or --repo OWNER/NAME"},
		{[]string{"publish", "github", "-C", repo.Dir, "--repo", "nope", "--pr", "1"}, `--repo "nope": want OWNER/NAME`},
		{[]string{"publish", "bitbucket", "-C", repo.Dir}, `unknown host "bitbucket"`},
		{[]string{"publish", "github", "-C", repo.Dir, "--feedback", "all"}, `--feedback "all"`},
		{[]string{"publish", "github", "-C", repo.Dir, "--review-channel", "a b"}, "--review-channel"},
		{[]string{"publish", "github", "-C", repo.Dir, "--input", "missing.json"}, "--input"},
		{[]string{"review", "-C", repo.Dir, "--publish", "gitea"}, `--publish "gitea"`},
	} {
		code, _, stderr := runEnv(t, env, c.args...)
		if code != ExitUsage || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q (want %q)", c.args, code, stderr, c.want)
		}
	}
}

func TestPublishGitLabEndToEnd(t *testing.T) {
	repo := newE2ERepo(t)
	gl := gitlabtest.New(t)
	env := map[string]string{
		"GITLAB_CI": "true", "CI_API_V4_URL": gl.APIURL(), "CI_PROJECT_ID": gitlabtest.Project,
		"CI_MERGE_REQUEST_IID": fmt.Sprint(gitlabtest.MRIID), "GITLAB_TOKEN": gitlabtest.Token,
	}
	sync := func() {
		gl.SetVersion(repo.base, repo.head, gitlabtest.File{Path: "main.go", Diff: repo.patch()})
		env["CI_MERGE_REQUEST_DIFF_BASE_SHA"], env["CI_COMMIT_SHA"] = repo.base, repo.head
	}
	sync()
	code, stdout, stderr := runEnv(t, env, "review", "-C", repo.Dir, "--publish", "gitlab", "--gate", "--color", "never")
	if code != ExitGateBlocked {
		t.Fatalf("review --publish gitlab --gate: exit %d (want 10)\n%s\n%s", code, stdout, stderr)
	}
	ours := func() (open, resolved int) {
		for _, d := range gl.Discussions() {
			if len(d.Notes) == 0 || !strings.HasPrefix(d.Notes[0].Body, "<!-- diffpal:finding") {
				continue
			}
			if d.Notes[0].Resolved {
				resolved++
			} else {
				open++
			}
		}
		return
	}
	if open, _ := ours(); open != 2 {
		t.Fatalf("first publish: %d open discussions\n%s", open, stderr)
	}
	if st := gl.Statuses(); len(st) != 1 || st[0].State != "failed" {
		t.Errorf("status: %+v", st)
	}
	report, err := os.ReadFile(filepath.Join(repo.Dir, ".artifacts/diffpal/gl-code-quality-report.json"))
	if err != nil || bytes.Count(report, []byte(`"fingerprint"`)) != 2 {
		t.Errorf("code quality report: %v\n%s", err, report)
	}
	repo.push(e2eFixed)
	sync()
	for i := 0; i < 4; i++ {
		if code, _, stderr := runEnv(t, env, "review", "-C", repo.Dir, "--publish", "gitlab", "--gate", "--color", "never"); code != 0 {
			t.Fatalf("run %d after the fix: exit %d\n%s", i, code, stderr)
		}
	}
	if open, resolved := ours(); open != 1 || resolved != 1 {
		t.Errorf("after the fix and reruns: %d open, %d resolved", open, resolved)
	}
	if n := len(gl.NotesWithPrefix("<!-- diffpal:summary")); n != 1 {
		t.Errorf("%d summaries", n)
	}
	if st := gl.Statuses(); st[len(st)-1].State != "success" {
		t.Errorf("last status %+v", st[len(st)-1])
	}
}

func TestPublishAzureEndToEnd(t *testing.T) {
	repo := newE2ERepo(t)
	az := azuretest.New(t)
	repo.Git("update-ref", "refs/remotes/origin/main", repo.base)
	env := map[string]string{
		"TF_BUILD": "True", "SYSTEM_COLLECTIONURI": az.URL, "SYSTEM_TEAMPROJECT": az.Project, "BUILD_REPOSITORY_ID": az.RepoID,
		"SYSTEM_PULLREQUEST_PULLREQUESTID": fmt.Sprint(az.PR), "SYSTEM_ACCESSTOKEN": az.Token, "SYSTEM_PULLREQUEST_TARGETBRANCH": "refs/heads/main",
	}
	lines := func() int { return strings.Count(repo.Git("show", repo.head+":main.go"), "\n") }
	sync := func() {
		az.Push(repo.head, azuretest.Change{Path: "main.go", Type: "edit", Lines: lines()})
		env["SYSTEM_PULLREQUEST_SOURCECOMMITID"] = repo.head
	}
	sync()
	code, stdout, stderr := runEnv(t, env, "review", "-C", repo.Dir, "--publish", "azure", "--color", "never")
	if code != 0 {
		t.Fatalf("review --publish azure: exit %d\n%s\n%s", code, stdout, stderr)
	}
	finding := func() (active, closed, fixed int) {
		for _, th := range az.Threads() {
			if len(th.Comments) == 0 || !strings.HasPrefix(th.Comments[0].Content, "<!-- diffpal:finding") {
				continue
			}
			switch th.Status {
			case "active":
				active++
			case "closed":
				closed++
			case "fixed":
				fixed++
			}
		}
		return
	}
	if a, c, _ := finding(); a != 1 || c != 1 {
		t.Fatalf("first publish: %d active (blocking), %d closed\n%s", a, c, stderr)
	}
	repo.push(e2eFixed)
	sync()
	for i := 0; i < 4; i++ {
		if code, _, stderr := runEnv(t, env, "review", "-C", repo.Dir, "--publish", "azure", "--color", "never"); code != 0 {
			t.Fatalf("run %d after the fix: exit %d\n%s", i, code, stderr)
		}
	}
	if a, c, f := finding(); a != 0 || c != 1 || f != 1 {
		t.Errorf("after the fix: %d active, %d closed, %d fixed", a, c, f)
	}
	// A fork build: nothing is sent.
	az.ResetRequests()
	env["SYSTEM_PULLREQUEST_ISFORK"] = "True"
	if code, _, stderr := runEnv(t, env, "review", "-C", repo.Dir, "--publish", "azure", "--color", "never"); code != 0 || !strings.Contains(stderr, "fork") {
		t.Errorf("fork: exit %d %s", code, stderr)
	}
	if n := len(az.Requests()); n != 0 {
		t.Errorf("fork build sent %d requests", n)
	}
}

var (
	actionBinOnce sync.Once
	actionBin     string
	actionBinErr  error
)

// TestGitHubActionScript runs scripts/github-action.sh review (what
// action.yml's review step runs) with a fake pull_request event and the
// loopback GitHub: outputs, job summary, annotations, the ::error:: line
// of a blocked gate, and the review on the pull request.
func TestGitHubActionScript(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the diffpal binary")
	}
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	actionBinOnce.Do(func() {
		dir, err := os.MkdirTemp("", "diffpal-action-bin")
		if err != nil {
			actionBinErr = err
			return
		}
		actionBin = filepath.Join(dir, "diffpal")
		cmd := exec.Command("go", "build", "-o", actionBin, "./cmd/diffpal")
		cmd.Dir = filepath.Join("..", "..")
		if out, err := cmd.CombinedOutput(); err != nil {
			actionBinErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if actionBinErr != nil {
		t.Fatal(actionBinErr)
	}
	t.Cleanup(func() {})
	repo := newE2ERepo(t)
	gh := githubtest.New(t)
	gh.SetHead(repo.head)
	gh.SetFiles(githubtest.File{Filename: "main.go", Patch: repo.patch()})
	owner := gh.Owner + "/" + gh.Repo
	tmp := t.TempDir()
	outFile, summaryFile := filepath.Join(tmp, "output"), filepath.Join(tmp, "summary")
	script, _ := filepath.Abs(filepath.Join("..", "..", "scripts", "github-action.sh"))
	cmd := exec.Command("bash", script, "review")
	cmd.Dir = repo.Dir
	cmd.Env = append(os.Environ(),
		"DIFFPAL_BIN="+actionBin, "GITHUB_ACTIONS=true", "GITHUB_EVENT_NAME=pull_request", "GITHUB_REPOSITORY="+owner,
		"GITHUB_EVENT_PATH="+writeEvent(t, tmp, gh.Number, repo.base, repo.head, owner, owner),
		"GITHUB_TOKEN="+gh.Token, "GITHUB_API_URL="+gh.APIURL, "GITHUB_GRAPHQL_URL="+gh.GraphQLURL, "GITHUB_SERVER_URL="+gh.URL,
		"GITHUB_OUTPUT="+outFile, "GITHUB_STEP_SUMMARY="+summaryFile,
		"INPUT_GATE=true", "INPUT_BLOCK_ON=high", "INPUT_FEEDBACK=review", "INPUT_PUBLISH=true",
		"INPUT_EXTRA_ARGS=--color never", "INPUT_REVIEW_CHANNEL=ci")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != ExitGateBlocked {
		t.Fatalf("action script: %v (want exit 10)\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	outputs, _ := os.ReadFile(outFile)
	for _, want := range []string{"bundle=.artifacts/diffpal/findings.json\n", "blocking=1\n", "exit-code=10\n"} {
		if !strings.Contains(string(outputs), want) {
			t.Errorf("GITHUB_OUTPUT lacks %q:\n%s", want, outputs)
		}
	}
	if sum, _ := os.ReadFile(summaryFile); !strings.Contains(string(sum), "# diffpal review") {
		t.Errorf("job summary:\n%s", sum)
	}
	out := stdout.String()
	if !strings.Contains(out, "::error file=main.go,line=12,title=HIGH ") || !strings.Contains(out, "::warning file=main.go,line=17,") {
		t.Errorf("annotations missing:\n%s", out)
	}
	if !strings.Contains(out, "::error title=diffpal gate::1 blocking findings at or above high") {
		t.Errorf("gate error line missing:\n%s", out)
	}
	if len(gh.Threads()) != 2 || len(gh.IssueComments()) != 1 || !strings.Contains(gh.IssueComments()[0].Body, "channel=ci") {
		t.Errorf("the action did not publish: %d threads, comments %+v", len(gh.Threads()), gh.IssueComments())
	}
}

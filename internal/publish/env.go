package publish

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os"
	"strconv"
	"strings"

	"github.com/diffpalhq/diffpal/internal/weblink"
)

// Secret is a token. It prints, formats and marshals as "[redacted]", so
// no log line, error or plan file can carry it by accident; Reveal is the
// one way to read it, for the Authorization header.
type Secret struct{ v string }

// NewSecret wraps a token.
func NewSecret(s string) Secret { return Secret{v: s} }

// Reveal returns the token.
func (s Secret) Reveal() string { return s.v }

// Empty reports whether there is no token.
func (s Secret) Empty() bool { return s.v == "" }

func (s Secret) String() string   { return "[redacted]" }
func (s Secret) GoString() string { return "[redacted]" }

// MarshalJSON writes "[redacted]".
func (s Secret) MarshalJSON() ([]byte, error) { return []byte(`"[redacted]"`), nil }

// Target is the pull request to publish on and how to reach it, read from
// the host's CI environment (FromEnv) and overridden by flags.
type Target struct {
	Host string `json:"host"`
	// APIURL is the REST base: https://api.github.com (GitHub Enterprise:
	// https://HOST/api/v3), https://gitlab.com/api/v4, or the Azure
	// collection URI https://dev.azure.com/ORG/.
	APIURL string `json:"api_url"`
	// GraphQLURL is GitHub's GraphQL endpoint.
	GraphQLURL string `json:"graphql_url,omitempty"`
	// ServerURL is the web UI's base, for permalinks.
	ServerURL string `json:"server_url,omitempty"`
	Token     Secret `json:"-"`
	// TokenFrom names the variable the token came from (never its value).
	TokenFrom string `json:"token_from,omitempty"`
	// Repo is owner/name on GitHub, the project id or path on GitLab, the
	// repository id (or name) on Azure.
	Repo string `json:"repo"`
	// Project is Azure's team project.
	Project string `json:"project,omitempty"`
	// Number is the pull request (merge request iid on GitLab).
	Number  int    `json:"number"`
	BaseSHA string `json:"base_sha,omitempty"`
	HeadSHA string `json:"head_sha,omitempty"`
	// BaseRef is the target branch (Azure gives no base commit).
	BaseRef string `json:"base_ref,omitempty"`
	// SourceBranch is the merge request's source branch (GitLab statuses).
	SourceBranch string `json:"source_branch,omitempty"`
	// Event is GitHub's event name.
	Event string `json:"event,omitempty"`
	// Fork, when set, says why nothing may be published: a pull request
	// from a fork whose job holds a read-only token.
	Fork string `json:"fork,omitempty"`
	// JobURL links statuses to the CI job.
	JobURL string `json:"job_url,omitempty"`
}

// permalink is the web link to lines of path at sha (package weblink).
func (t *Target) permalink(sha, path string, start, end int) string {
	base := strings.TrimRight(t.ServerURL, "/")
	switch t.Host {
	case GitHub:
		return weblink.Repo{Kind: weblink.GitHub, Base: base + "/" + t.Repo}.Lines(sha, path, start, end)
	case GitLab:
		// CI_PROJECT_URL is the project's own page.
		return weblink.Repo{Kind: weblink.GitLab, Base: base}.Lines(sha, path, start, end)
	}
	return ""
}

// Env reads the process environment and files (the GitHub event payload).
type Env struct {
	Getenv   func(string) string
	ReadFile func(string) ([]byte, error)
}

// maxEvent bounds the GitHub event payload read (GitHub caps payloads at
// 25 MB).
const maxEvent = 25 << 20

func (e Env) readFile(p string) ([]byte, error) {
	if e.ReadFile != nil {
		return e.ReadFile(p)
	}
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxEvent+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxEvent {
		return nil, fmt.Errorf("larger than %d MB", maxEvent>>20)
	}
	return data, nil
}

// FromEnv reads the target of host from its CI environment. Missing
// values are left empty for flags to fill; Check says what is still
// missing. A malformed value (an event payload that is not JSON, a pull
// request number that is not a number) is an error naming the variable.
func FromEnv(host string, e Env) (*Target, error) {
	get := e.Getenv
	t := &Target{Host: host}
	switch host {
	case GitHub:
		t.APIURL = cmp.Or(get("GITHUB_API_URL"), "https://api.github.com")
		t.GraphQLURL = cmp.Or(get("GITHUB_GRAPHQL_URL"), graphQLFor(t.APIURL))
		t.ServerURL = cmp.Or(get("GITHUB_SERVER_URL"), "https://github.com")
		t.Repo, t.Event, t.HeadSHA = get("GITHUB_REPOSITORY"), get("GITHUB_EVENT_NAME"), get("GITHUB_SHA")
		for _, v := range []string{"GITHUB_TOKEN", "GH_TOKEN"} {
			if s := get(v); s != "" {
				t.Token, t.TokenFrom = NewSecret(s), v
				break
			}
		}
		if p := get("GITHUB_EVENT_PATH"); p != "" {
			data, err := e.readFile(p)
			if err != nil {
				return nil, fmt.Errorf("GITHUB_EVENT_PATH %s: %v", p, err)
			}
			if err := t.githubEvent(data); err != nil {
				return nil, fmt.Errorf("GITHUB_EVENT_PATH %s: %v", p, err)
			}
		}
	case GitLab:
		t.APIURL = cmp.Or(get("CI_API_V4_URL"), "https://gitlab.com/api/v4")
		t.ServerURL = get("CI_PROJECT_URL")
		if mp := get("CI_MERGE_REQUEST_PROJECT_URL"); mp != "" {
			t.ServerURL = mp
		}
		t.Repo = cmp.Or(get("CI_MERGE_REQUEST_PROJECT_ID"), get("CI_PROJECT_ID"))
		t.BaseSHA, t.HeadSHA = get("CI_MERGE_REQUEST_DIFF_BASE_SHA"), cmp.Or(get("CI_MERGE_REQUEST_SOURCE_BRANCH_SHA"), get("CI_COMMIT_SHA"))
		t.SourceBranch, t.BaseRef, t.JobURL = get("CI_MERGE_REQUEST_SOURCE_BRANCH_NAME"), get("CI_MERGE_REQUEST_TARGET_BRANCH_NAME"), get("CI_JOB_URL")
		if v := get("CI_MERGE_REQUEST_IID"); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n <= 0 {
				return nil, fmt.Errorf("CI_MERGE_REQUEST_IID %q: not a merge request number", v)
			}
			t.Number = n
		}
		switch {
		case get("GITLAB_TOKEN") != "":
			t.Token, t.TokenFrom = NewSecret(get("GITLAB_TOKEN")), "GITLAB_TOKEN"
		case get("CI_JOB_TOKEN") != "":
			t.Token, t.TokenFrom = NewSecret(get("CI_JOB_TOKEN")), "CI_JOB_TOKEN"
		}
		if src, dst := get("CI_MERGE_REQUEST_SOURCE_PROJECT_ID"), get("CI_MERGE_REQUEST_PROJECT_ID"); src != "" && dst != "" && src != dst && t.TokenFrom != "GITLAB_TOKEN" {
			t.Fork = fmt.Sprintf("merge request from fork project %s: the job token cannot write to project %s (set GITLAB_TOKEN in a protected pipeline to publish)", src, dst)
		}
	case Azure:
		t.APIURL = get("SYSTEM_COLLECTIONURI")
		t.Project, t.Repo = get("SYSTEM_TEAMPROJECT"), get("BUILD_REPOSITORY_ID")
		t.HeadSHA = get("SYSTEM_PULLREQUEST_SOURCECOMMITID")
		t.BaseRef = strings.TrimPrefix(get("SYSTEM_PULLREQUEST_TARGETBRANCH"), "refs/heads/")
		if v := get("SYSTEM_PULLREQUEST_PULLREQUESTID"); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n <= 0 {
				return nil, fmt.Errorf("SYSTEM_PULLREQUEST_PULLREQUESTID %q: not a pull request id", v)
			}
			t.Number = n
		}
		switch {
		case get("SYSTEM_ACCESSTOKEN") != "":
			t.Token, t.TokenFrom = NewSecret(get("SYSTEM_ACCESSTOKEN")), "SYSTEM_ACCESSTOKEN"
		case get("AZURE_DEVOPS_EXT_PAT") != "":
			t.Token, t.TokenFrom = NewSecret(get("AZURE_DEVOPS_EXT_PAT")), "AZURE_DEVOPS_EXT_PAT"
		}
		if strings.EqualFold(get("SYSTEM_PULLREQUEST_ISFORK"), "true") {
			t.Fork = "pull request from a fork: the build's System.AccessToken is read-only"
		}
		if u := get("SYSTEM_COLLECTIONURI"); u != "" && t.Project != "" {
			t.JobURL = strings.TrimRight(u, "/") + "/" + url.PathEscape(t.Project) + "/_build/results?buildId=" + url.QueryEscape(get("BUILD_BUILDID"))
		}
	default:
		return nil, fmt.Errorf("unknown host %q: want %s", host, strings.Join(Hosts, ", "))
	}
	return t, nil
}

// graphQLFor derives the GraphQL endpoint from a REST base: api.github.com
// → api.github.com/graphql, HOST/api/v3 → HOST/api/graphql (Enterprise).
func graphQLFor(api string) string {
	api = strings.TrimRight(api, "/")
	if b, ok := strings.CutSuffix(api, "/api/v3"); ok {
		return b + "/api/graphql"
	}
	return api + "/graphql"
}

// githubEvent reads the pull request from an event payload: pull_request
// and pull_request_target (and review events) carry it whole,
// workflow_run a list that is empty for forks.
func (t *Target) githubEvent(data []byte) error {
	var ev struct {
		Number      int   `json:"number"`
		PullRequest *ghPR `json:"pull_request"`
		WorkflowRun *struct {
			Event        string `json:"event"`
			HeadSHA      string `json:"head_sha"`
			PullRequests []ghPR `json:"pull_requests"`
		} `json:"workflow_run"`
	}
	if err := json.Unmarshal(data, &ev); err != nil {
		return fmt.Errorf("not a JSON event payload: %v", err)
	}
	switch {
	case ev.PullRequest != nil:
		pr := ev.PullRequest
		t.Number = pr.Number
		t.HeadSHA, t.BaseSHA = cmp.Or(pr.Head.SHA, t.HeadSHA), pr.Base.SHA
		if base := pr.Base.Repo.FullName; base != "" && t.Repo == "" {
			t.Repo = base
		}
		head, base := pr.Head.Repo.FullName, pr.Base.Repo.FullName
		if t.Event == "pull_request" && head != base && base != "" {
			if head == "" {
				head = "a deleted repository"
			}
			t.Fork = fmt.Sprintf("pull request from fork %s: GITHUB_TOKEN is read-only on pull_request events from forks (publish from a workflow_run job, docs/ci.md)", head)
		}
	case ev.WorkflowRun != nil:
		if len(ev.WorkflowRun.PullRequests) > 0 {
			pr := ev.WorkflowRun.PullRequests[0]
			t.Number, t.HeadSHA, t.BaseSHA = pr.Number, cmp.Or(pr.Head.SHA, ev.WorkflowRun.HeadSHA), pr.Base.SHA
		} else {
			t.HeadSHA = cmp.Or(ev.WorkflowRun.HeadSHA, t.HeadSHA)
		}
	}
	return nil
}

type ghPR struct {
	Number int `json:"number"`
	Head   struct {
		SHA  string `json:"sha"`
		Repo struct {
			FullName string `json:"full_name"`
		} `json:"repo"`
	} `json:"head"`
	Base struct {
		SHA  string `json:"sha"`
		Repo struct {
			FullName string `json:"full_name"`
		} `json:"repo"`
	} `json:"base"`
}

// Check says what a target still lacks, naming the variable or flag that
// provides it.
func (t *Target) Check(needToken bool) error {
	var missing []string
	add := func(what, from string) { missing = append(missing, what+" ("+from+")") }
	switch t.Host {
	case GitHub:
		if t.Repo == "" {
			add("repository", "GITHUB_REPOSITORY or --repo OWNER/NAME")
		} else if o, n, ok := strings.Cut(t.Repo, "/"); !ok || o == "" || n == "" || strings.Contains(n, "/") {
			return fmt.Errorf("--repo %q: want OWNER/NAME", t.Repo)
		}
		if t.Number <= 0 {
			add("pull request number", "a pull_request event in GITHUB_EVENT_PATH or --pr N")
		}
		if needToken && t.Token.Empty() {
			add("token", "GITHUB_TOKEN")
		}
	case GitLab:
		if t.Repo == "" {
			add("project", "CI_PROJECT_ID or --repo ID")
		}
		if t.Number <= 0 {
			add("merge request", "CI_MERGE_REQUEST_IID or --pr N")
		}
		if needToken && t.Token.Empty() {
			add("token", "GITLAB_TOKEN or CI_JOB_TOKEN")
		}
	case Azure:
		if t.APIURL == "" {
			add("organization URL", "SYSTEM_COLLECTIONURI or --api-url")
		}
		if t.Project == "" {
			add("team project", "SYSTEM_TEAMPROJECT or --project")
		}
		if t.Repo == "" {
			add("repository", "BUILD_REPOSITORY_ID or --repo")
		}
		if t.Number <= 0 {
			add("pull request", "SYSTEM_PULLREQUEST_PULLREQUESTID or --pr N")
		}
		if needToken && t.Token.Empty() {
			add("token", "SYSTEM_ACCESSTOKEN or AZURE_DEVOPS_EXT_PAT")
		}
	}
	for _, u := range []struct{ name, v string }{{"--api-url", t.APIURL}, {"--graphql-url", t.GraphQLURL}} {
		if u.v == "" {
			continue
		}
		pu, err := url.Parse(u.v)
		if err != nil || (pu.Scheme != "https" && pu.Scheme != "http") || pu.Host == "" {
			return fmt.Errorf("%s %q: want an http(s) URL", u.name, u.v)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("publish %s: missing %s", t.Host, strings.Join(missing, "; "))
	}
	return nil
}

// Package weblink makes links to lines of a file on a code host's web UI:
// GitHub's /blob/SHA/PATH#L1-L3 and GitLab's /-/blob/SHA/PATH#L1-3. It is
// the one place that knows those URL shapes, for the publishers' comments,
// summary.md and report.html.
package weblink

import (
	"fmt"
	"net/url"
	"strings"
)

// Kinds of hosts.
const (
	GitHub = "github"
	GitLab = "gitlab"
)

// Repo is a repository's web UI: its kind and base URL
// (https://github.com/owner/repo).
type Repo struct {
	Kind string
	Base string
}

// FromID reads a repository id as review records it (the origin URL
// without scheme, credentials and ".git": github.com/owner/repo). Only
// github.com and gitlab.com are recognised: another host's URL scheme is
// not known from its name. ok is false otherwise.
func FromID(id string) (Repo, bool) {
	host, rest, found := strings.Cut(id, "/")
	if !found || rest == "" || strings.ContainsAny(id, " \t\r\n?#@\\") || strings.Contains("/"+rest+"/", "/../") {
		return Repo{}, false
	}
	switch strings.ToLower(host) {
	case "github.com":
		if strings.Count(rest, "/") != 1 {
			return Repo{}, false
		}
		return Repo{Kind: GitHub, Base: "https://github.com/" + rest}, true
	case "gitlab.com":
		return Repo{Kind: GitLab, Base: "https://gitlab.com/" + rest}, true
	}
	return Repo{}, false
}

// Lines links lines start..end of path at commit sha; "" when the path
// cannot be linked (absolute, "..", empty) or the repo is unknown.
func (r Repo) Lines(sha, path string, start, end int) string {
	if r.Base == "" || sha == "" || path == "" || strings.HasPrefix(path, "/") || strings.Contains("/"+path+"/", "/../") {
		return ""
	}
	parts := strings.Split(path, "/")
	for i, s := range parts {
		parts[i] = url.PathEscape(s)
	}
	esc := strings.Join(parts, "/")
	base := strings.TrimRight(r.Base, "/")
	anchor := ""
	if start > 0 {
		anchor = fmt.Sprintf("#L%d", start)
	}
	switch r.Kind {
	case GitHub:
		if end > start && start > 0 {
			anchor += fmt.Sprintf("-L%d", end)
		}
		return fmt.Sprintf("%s/blob/%s/%s%s", base, url.PathEscape(sha), esc, anchor)
	case GitLab:
		if end > start && start > 0 {
			anchor += fmt.Sprintf("-%d", end)
		}
		return fmt.Sprintf("%s/-/blob/%s/%s%s", base, url.PathEscape(sha), esc, anchor)
	}
	return ""
}

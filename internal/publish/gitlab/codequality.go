package gitlab

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/diffpalhq/diffpal/findings"
	"github.com/diffpalhq/diffpal/internal/clip"
	"github.com/diffpalhq/diffpal/internal/secrets"
	"github.com/diffpalhq/diffpal/internal/textsafe"
)

// CodeQualityIssue is one entry of GitLab's Code Quality report
// (https://docs.gitlab.com/ci/testing/code_quality/#code-quality-report-format),
// a subset of the Code Climate issue format.
type CodeQualityIssue struct {
	Description string              `json:"description"`
	CheckName   string              `json:"check_name"`
	Fingerprint string              `json:"fingerprint"`
	Severity    string              `json:"severity"`
	Location    CodeQualityLocation `json:"location"`
	Categories  []string            `json:"categories,omitempty"`
}

// CodeQualityLocation is an issue's file and lines.
type CodeQualityLocation struct {
	Path  string           `json:"path"`
	Lines CodeQualityLines `json:"lines"`
}

// CodeQualityLines are the first and last line (begin is required).
type CodeQualityLines struct {
	Begin int `json:"begin"`
	End   int `json:"end"`
}

// codeQualitySeverity maps diffpal's severities onto GitLab's info,
// minor, major, critical, blocker.
var codeQualitySeverity = map[findings.Severity]string{
	findings.Critical: "critical",
	findings.High:     "major",
	findings.Medium:   "minor",
	findings.Low:      "info",
}

// codeQualityCategory maps diffpal's categories onto Code Climate's.
var codeQualityCategory = map[string]string{
	"security":        "Security",
	"correctness":     "Bug Risk",
	"reliability":     "Bug Risk",
	"performance":     "Performance",
	"maintainability": "Clarity",
	"testing":         "Bug Risk",
	"style":           "Style",
}

// CodeQuality renders the Code Quality report (gl-code-quality-report.json)
// for every finding of b, in the bundle's order. The fingerprint is the
// finding's stable_id (its id when it has none), so GitLab's MR widget
// tells new findings from ones already on the target branch across
// pushes; a repeated fingerprint gets "~2", "~3", … so each entry stays
// unique. Text from the bundle is redacted and its control characters
// escaped.
func CodeQuality(b *findings.Bundle) ([]byte, error) {
	issues := []CodeQualityIssue{}
	if b != nil {
		base := make([]string, len(b.Findings))
		taken := map[string]bool{}
		for i := range b.Findings {
			f := &b.Findings[i]
			base[i] = fingerprint(f)
			taken[base[i]] = true
		}
		used := map[string]bool{}
		for i := range b.Findings {
			f := &b.Findings[i]
			fp := base[i]
			if used[fp] {
				for n := 2; ; n++ {
					c := base[i] + "~" + strconv.Itoa(n)
					if !used[c] && !taken[c] {
						fp = c
						break
					}
				}
			}
			used[fp] = true
			issues = append(issues, codeQualityIssue(f, fp))
		}
	}
	out, err := json.MarshalIndent(issues, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(out, '\n'), nil
}

func fingerprint(f *findings.Finding) string {
	if s := strings.TrimSpace(f.StableID); s != "" {
		return s
	}
	if s := strings.TrimSpace(f.ID); s != "" {
		return s
	}
	sum := sha256.Sum256([]byte(strings.Join([]string{f.RuleID, f.Path, strconv.Itoa(f.StartLine), strconv.Itoa(f.EndLine), f.Title}, "\x00")))
	return "diffpal-" + hex.EncodeToString(sum[:12])
}

func codeQualityIssue(f *findings.Finding, fp string) CodeQualityIssue {
	desc := f.Title
	if strings.TrimSpace(desc) == "" {
		desc = f.Message
	}
	check := f.RuleID
	if check == "" {
		check = "diffpal/" + f.Category
		if f.Category == "" {
			check = "diffpal"
		}
	}
	sev := codeQualitySeverity[f.Severity]
	if sev == "" {
		sev = "info"
	}
	begin := max(f.StartLine, 1)
	iss := CodeQualityIssue{
		Description: plain(desc, 1000),
		CheckName:   plain(check, 200),
		Fingerprint: fp,
		Severity:    sev,
		Location:    CodeQualityLocation{Path: textsafe.Visible(f.Path), Lines: CodeQualityLines{Begin: begin, End: max(f.EndLine, begin)}},
	}
	if c := codeQualityCategory[strings.ToLower(f.Category)]; c != "" {
		iss.Categories = []string{c}
	}
	return iss
}

// plain is text on one line: secrets redacted, white space runs folded,
// control and format characters shown as escapes, clipped to n bytes.
func plain(s string, n int) string {
	return textsafe.Visible(clip.Text(strings.Join(strings.Fields(secrets.Redact(s)), " "), n))
}

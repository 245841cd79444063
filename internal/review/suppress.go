package review

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/diffpalhq/diffpal/internal/needle"
	"github.com/diffpalhq/diffpal/internal/scope"
)

// suppress applies the configured ignores and the diffpal:ignore comments
// on a finding's lines (or the line above). A suppressed candidate is
// listed in the audit with who suppressed it and why; a diffpal:ignore
// without a reason is listed as invalid and not applied. Policy findings
// skip this stage: the edit under report must not silence itself.
type suppress struct{}

func (suppress) Name() string { return "suppress" }

func (suppress) Process(_ context.Context, e *engine) error {
	e.keepCands(func(c *candidate) bool {
		if c.policy {
			return true
		}
		if sup, ok := e.suppressed(c.file, c); ok {
			e.audit.Suppressed = append(e.audit.Suppressed, sup)
			return false
		}
		return true
	})
	return nil
}

// Ignore is a configured suppression. A reason is required: a suppression
// nobody can explain is a finding nobody looked at.
type Ignore struct {
	Rule     string `json:"rule,omitempty" yaml:"rule"`
	Category string `json:"category,omitempty" yaml:"category"`
	Path     string `json:"path,omitempty" yaml:"path"`
	Reason   string `json:"reason" yaml:"reason"`
}

func (ig Ignore) validate() error {
	if strings.TrimSpace(ig.Reason) == "" {
		return errors.New("reason is required")
	}
	if ig.Rule == "" && ig.Category == "" && ig.Path == "" {
		return errors.New("set at least one of rule, category or path")
	}
	return nil
}

func (ig Ignore) matches(c *candidate) bool {
	return (ig.Rule == "" || ig.Rule == c.RuleID) &&
		(ig.Category == "" || ig.Category == c.Category) &&
		(ig.Path == "" || scope.Glob(ig.Path, c.Path))
}

// Suppressed records one suppressed candidate.
type Suppressed struct {
	RuleID   string `json:"rule_id"`
	Category string `json:"category"`
	Path     string `json:"path"`
	Line     int    `json:"line"`
	By       string `json:"by"`
	Reason   string `json:"reason"`
}

// inlineIgnore matches `diffpal:ignore TARGET[,TARGET...] [-- REASON]`
// right after a comment marker of any common syntax (//, #, /*, *, --,
// ;, <!--, %), so that prose or a string literal that merely mentions
// the directive ("each diffpal:ignore the change adds") suppresses
// nothing. The directive ends at the end of the comment (*/ or -->).
var inlineIgnore = regexp.MustCompile(`(?:^|^\s*\*|//|/\*|#|--|;|<!--|%)\s*diffpal:ignore(?:\s+([A-Za-z0-9_.,*/][A-Za-z0-9_.,*/-]*))?(?:\s+--\s*(.*?))?\s*(?:\*/|-->)?\s*$`)

// matchIgnore is inlineIgnore's match of line, after a literal check: the
// regexp backtracks, and almost no line mentions the directive.
func matchIgnore(line string) []string {
	if !ignoreWord.Contains(line) {
		return nil
	}
	return inlineIgnore.FindStringSubmatch(line)
}

// ignoreWord is looked for from its colon (needle.Finder): the policy
// record asks it of every added line, and strings.Contains stops at every
// "d" of a line of code, where most lines have no colon at all.
var ignoreWord = needle.New("diffpal:ignore")

func (e *engine) suppressed(f *ChangedFile, c *candidate) (Suppressed, bool) {
	s := Suppressed{RuleID: c.RuleID, Category: c.Category, Path: c.Path, Line: c.StartLine}
	for i, ig := range e.o.Ignores {
		if ig.matches(c) {
			s.By, s.Reason = fmt.Sprintf("config ignores[%d]", i), ig.Reason
			return s, true
		}
	}
	if c.side != "RIGHT" || f.Content == nil {
		return s, false
	}
	// The flagged lines and the line just above them.
	for ln := c.StartLine - 1; ln <= c.EndLine; ln++ {
		if ln < 1 || ln > len(f.Content) {
			continue
		}
		m := matchIgnore(f.Content[ln-1])
		if m == nil {
			continue
		}
		targets, reason := m[1], strings.TrimSpace(m[2])
		hit := targets == "" || targets == "*" || targets == "all"
		for _, t := range strings.Split(targets, ",") {
			if t == c.RuleID || t == c.Category {
				hit = true
			}
		}
		if !hit {
			continue
		}
		s.By = fmt.Sprintf("diffpal:ignore at %s:%d", c.Path, ln)
		if reason == "" {
			s.Reason = "no reason given (write `diffpal:ignore " + nonEmpty(c.RuleID, c.Category) + " -- why`)"
			e.audit.Invalid = append(e.audit.Invalid, s)
			return s, false
		}
		s.Reason = reason
		return s, true
	}
	return s, false
}

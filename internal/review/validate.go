package review

import (
	"context"
	"strings"

	"github.com/diffpalhq/diffpal/findings"
)

// wellFormed drops candidates a finding cannot be made of (no path,
// category or title, or a severity that is none of low, medium, high,
// critical) and spells the severity the one way.
type wellFormed struct{}

func (wellFormed) Name() string { return "well-formed" }

func (wellFormed) Process(_ context.Context, e *engine) error {
	e.keepCands(func(c *candidate) bool {
		if _, err := findings.ParseSeverity(c.Severity); err != nil || c.Path == "" || c.Category == "" || c.Title == "" {
			e.drop("malformed candidate (missing path, category, title or a valid severity)", c.where())
			return false
		}
		c.Severity = strings.ToLower(strings.TrimSpace(c.Severity))
		return true
	})
	return nil
}

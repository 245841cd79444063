package review

import "context"

// inScope drops candidates about files the review does not cover (skipped
// by scope, or not changed at all).
type inScope struct{}

func (inScope) Name() string { return "in scope" }

func (inScope) Process(_ context.Context, e *engine) error {
	e.keepCands(func(c *candidate) bool {
		if c.file = e.fileByPath(c.Path); c.file == nil {
			e.drop("file not in review scope", c.where())
			return false
		}
		return true
	})
	return nil
}

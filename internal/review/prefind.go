package review

import (
	"context"

	"github.com/diffpalhq/diffpal/internal/evidence"
	"github.com/diffpalhq/diffpal/internal/par"
	"github.com/diffpalhq/diffpal/internal/secrets"
)

// prefinder runs the evidence packet's secret detection on each file in
// scope as the change's stream reads it, on a goroutine of its own (add
// a file with prefindable). The packet needs every file and is built
// once the stream ends, and its detection over every file's new text and
// over the hunks it redacts whole was the largest part of the review's
// work after git: run while git still diffs, it takes up time a core
// spent waiting for the patch (docs/benchmarks.md, twelfth round). Stop
// ends it where it is: the files it has not reached are detected by the
// packet, on every core, as before.
type prefinder = par.Ahead[*ChangedFile, prefound]

func newPrefinder(ctx context.Context) *prefinder { return par.NewAhead(ctx, prefind) }

// prefind is one file's detection, as the packet would run it.
func prefind(f *ChangedFile) prefound {
	return prefound{text: evidence.Prefind(f.Text),
		hunks: evidence.PrefindHunks(evidence.File{Diff: f.Diff, Content: f.Content, Text: f.Text})}
}

// prefindable reports whether the packet would take f's detection run
// ahead: it is of f's joined text, and a file without one (lines ending
// in "\r") has its text joined by the packet.
func prefindable(f *ChangedFile) bool { return f.Content != nil && f.Text != "" }

// prefound is one file's detection run ahead: of its text
// (evidence.Prefind) and of the hunks the packet redacts whole
// (evidence.PrefindHunks).
type prefound struct {
	text  []secrets.Span
	hunks []evidence.HunkFound
}

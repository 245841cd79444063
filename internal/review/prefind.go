package review

import (
	"sync"

	"github.com/diffpalhq/diffpal/internal/evidence"
	"github.com/diffpalhq/diffpal/internal/secrets"
)

// prefinder runs the evidence packet's secret detection (evidence.Prefind
// and PrefindHunks) on each file in scope as the change's stream reads it, on a goroutine
// of its own. The packet needs every file and is built once the stream
// ends, and its detection over every file's new text was the largest
// part of the review's work after git: run while git still diffs, it
// takes up time a core spent waiting for the patch (docs/benchmarks.md,
// twelfth round). stop ends it where it is: the files it has not reached
// are detected by the packet, on every core, as before.
type prefinder struct {
	mu      sync.Mutex
	wake    *sync.Cond
	queue   []*ChangedFile
	stopped bool
	found   map[*ChangedFile]prefound
	done    chan struct{} // nil until the goroutine starts
}

// prefound is one file's detection run ahead: of its text
// (evidence.Prefind) and of the hunks the packet redacts whole
// (evidence.PrefindHunks).
type prefound struct {
	text  []secrets.Span
	hunks [][]secrets.Span
}

// add queues f (a file with no joined text is left to the packet).
func (p *prefinder) add(f *ChangedFile) {
	if f.Content == nil || f.Text == "" {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped {
		return
	}
	if p.done == nil {
		p.wake = sync.NewCond(&p.mu)
		p.found = map[*ChangedFile]prefound{}
		p.done = make(chan struct{})
		go p.run()
	}
	p.queue = append(p.queue, f)
	p.wake.Signal()
}

func (p *prefinder) run() {
	defer close(p.done)
	p.mu.Lock()
	defer p.mu.Unlock()
	for {
		for len(p.queue) == 0 && !p.stopped {
			p.wake.Wait()
		}
		if p.stopped {
			return
		}
		f := p.queue[0]
		p.queue[0] = nil
		p.queue = p.queue[1:]
		p.mu.Unlock()
		pf := prefound{text: evidence.Prefind(f.Text),
			hunks: evidence.PrefindHunks(evidence.File{Diff: f.Diff, Content: f.Content, Text: f.Text})}
		p.mu.Lock()
		p.found[f] = pf
	}
}

// stop ends the detection after the file in progress and returns what it
// found, by file (nil when it never started).
func (p *prefinder) stop() map[*ChangedFile]prefound {
	p.mu.Lock()
	p.stopped = true
	started := p.done != nil
	if started {
		p.wake.Broadcast()
	}
	p.mu.Unlock()
	if !started {
		return nil
	}
	<-p.done
	return p.found
}

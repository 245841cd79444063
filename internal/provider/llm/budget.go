package llm

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/diffpalhq/diffpal/internal/evidence"
	"github.com/diffpalhq/diffpal/internal/jcs"
	"github.com/diffpalhq/diffpal/internal/provider"
	"github.com/diffpalhq/diffpal/internal/qa"
)

// MaxSelectionBytes is the contract's ceiling for context_selection.max_bytes.
const MaxSelectionBytes = 2_000_000

// sensitivePath marks paths whose changes are reviewed first when the
// budget cannot hold everything.
var sensitivePath = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)(auth|login|logout|passw|secret|token|crypt|cipher|session|cookie|permission|privilege|acl|rbac|policy|admin|payment|billing|checkout|invoice|oauth|saml|jwt|credential|keys?[/._-]|security|sanitiz|escape|sql|query|migration|webhook|upload|deserial|\.env|dockerfile|\.github/workflows|terraform|iam)`)
})

// EstimateTokens is a rough token count for text sent to a model (about
// four bytes per token for code and English).
func EstimateTokens(s string) int { return (len(s) + 3) / 4 }

// block is one evidence item rendered for the model: data is the redacted
// text that goes inside its fence.
type block struct {
	item  *evidence.Item
	index int // packet position
	attrs string
	data  string
	size  int // bytes of the whole fenced block
	// shownPath is the path as the model sees it (redacted).
	shownPath string
}

// selection is the budgeted subset of the packet sent for one profile.
type selection struct {
	blocks   []*block // in packet order
	ctx      *qa.ContextSelection
	omitted  int // bytes of budget-omitted items
	omitRefs []string
}

// renderItem renders an item's fence attributes and data.
func (p *Provider) renderItem(it *evidence.Item, idx int) *block {
	attrs := "ref=" + it.Ref + " kind=" + it.Kind
	if s, e := it.Lines(); s > 0 {
		attrs += fmt.Sprintf(" lines=%d-%d", s, e)
	}
	path := ""
	if it.Path != nil {
		path = *it.Path
	}
	shown := p.red.Redact(path)
	qp, _ := json.Marshal(shown)
	data := "path: " + string(qp) + "\n" + numbered(it, p.red.Redact(it.Content()))
	b := &block{item: it, index: idx, attrs: attrs, data: data, shownPath: shown}
	var sb strings.Builder
	writeFence(&sb, strings.Repeat("0", TokenLen), attrs, data)
	b.size = sb.Len()
	return b
}

var hunkHeader = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^@@ -\d+(?:,\d+)? \+(\d+)(?:,\d+)? @@`) })

// numbered prefixes each line with its new-file line number, so the
// model cites lines without counting: "  12 +code" for diff lines (blank
// numbers for removed lines), "  12 code" for source windows. Hashes are
// over the packet items, not this presentation.
func numbered(it *evidence.Item, content string) string {
	ls := strings.Split(content, "\n")
	var b strings.Builder
	switch it.Kind {
	case evidence.KindSource:
		start, _ := it.Lines()
		if start == 0 {
			return content
		}
		for i, l := range ls {
			fmt.Fprintf(&b, "%5d  %s\n", start+i, l)
		}
	case evidence.KindDiff:
		n := 0
		for i, l := range ls {
			if i == len(ls)-1 && l == "" {
				break
			}
			if m := hunkHeader().FindStringSubmatch(l); m != nil {
				fmt.Sscan(m[1], &n)
				b.WriteString(l + "\n")
				continue
			}
			switch {
			case n == 0:
				b.WriteString(l + "\n")
			case strings.HasPrefix(l, "-"):
				b.WriteString("       " + l + "\n")
			default:
				fmt.Fprintf(&b, "%5d  %s\n", n, l)
				n++
			}
		}
	default:
		return content
	}
	return b.String()
}

// fileRisk ranks the files of a change for the budget.
type fileRisk struct {
	sensitive bool
	added     int
}

func risks(ch *provider.Change) map[string]fileRisk {
	m := map[string]fileRisk{}
	for _, f := range ch.Files {
		a, _ := f.Diff.Stats()
		m[f.Path()] = fileRisk{sensitive: sensitivePath().MatchString(f.Path()), added: a}
	}
	return m
}

// selectEvidence picks the items of the packet that fit maxBytes, in risk
// order: hunks before context windows; within each kind, security-sensitive
// paths first, then files with more added lines, then path and packet
// order. The choice is deterministic.
func (p *Provider) selectEvidence(ch *provider.Change, maxBytes int) (*selection, error) {
	pk := ch.Packet
	maxBytes = min(max(maxBytes, 1), MaxSelectionBytes)
	rk := risks(ch)
	all := make([]*block, len(pk.Items))
	for i := range pk.Items {
		all[i] = p.renderItem(&pk.Items[i], i)
	}
	order := slices.Clone(all)
	pathOf := func(b *block) string {
		if b.item.Path == nil {
			return ""
		}
		return *b.item.Path
	}
	slices.SortStableFunc(order, func(a, b *block) int {
		ad, bd := a.item.Kind == evidence.KindDiff, b.item.Kind == evidence.KindDiff
		if ad != bd {
			if ad {
				return -1
			}
			return 1
		}
		ra, rb := rk[pathOf(a)], rk[pathOf(b)]
		if ra.sensitive != rb.sensitive {
			if ra.sensitive {
				return -1
			}
			return 1
		}
		if ra.added != rb.added {
			return rb.added - ra.added
		}
		if c := strings.Compare(pathOf(a), pathOf(b)); c != 0 {
			return c
		}
		return a.index - b.index
	})
	used := 0
	in := make([]bool, len(all))
	skip := make([]bool, len(all))
	var omitted int
	for _, b := range order {
		if !p.cfg.ProfileWindows && b.item.Kind == evidence.KindSource {
			// Hunks already carry three lines of context each side; the
			// wider windows are kept for verification, whose budget is its
			// own. Left out on purpose, not for the budget.
			skip[b.index] = true
			continue
		}
		if used+b.size <= maxBytes {
			used += b.size
			in[b.index] = true
		} else {
			omitted += b.size
		}
	}
	s := &selection{ctx: &qa.ContextSelection{SourcePacketSHA256: pk.SHA256, MaxBytes: maxBytes, SelectedBytes: used,
		IncludedRefs: []string{}}, omitted: omitted}
	var chosen []evidence.Item
	for i, b := range all {
		if in[i] {
			s.blocks = append(s.blocks, b)
			s.ctx.IncludedRefs = append(s.ctx.IncludedRefs, b.item.Ref)
			chosen = append(chosen, *b.item)
		} else if skip[i] {
			s.ctx.OmittedRefs = append(s.ctx.OmittedRefs, b.item.Ref)
		} else {
			s.ctx.BudgetOmittedRefs = append(s.ctx.BudgetOmittedRefs, b.item.Ref)
		}
	}
	s.omitRefs = s.ctx.BudgetOmittedRefs
	if chosen == nil {
		chosen = []evidence.Item{}
	}
	h, err := jcs.SHA256Hex(chosen)
	if err != nil {
		return nil, fmt.Errorf("hash selected evidence: %w", err)
	}
	s.ctx.SelectedPacketSHA256 = h
	return s, nil
}

// chunk is one part of a profile's evidence, reviewed by one call and
// cached by its content.
type chunk struct {
	blocks []*block
	bytes  int
}

// chunkBlocks splits the selection into chunks of at most chunkBytes
// (single items larger than that travel alone). Items of one file stay
// together when they fit; small files are grouped, and a group also ends
// after any file whose path hashes to a boundary, so a change to one file
// only moves the boundaries of its own group and a small push re-asks
// about one or two chunks, not the whole change.
func chunkBlocks(blocks []*block, chunkBytes int) []*chunk {
	var out []*chunk
	cur := &chunk{}
	flush := func() {
		if len(cur.blocks) > 0 {
			out = append(out, cur)
		}
		cur = &chunk{}
	}
	for i := 0; i < len(blocks); {
		path := blockPath(blocks[i])
		j := i
		size := 0
		for j < len(blocks) && blockPath(blocks[j]) == path {
			size += blocks[j].size
			j++
		}
		file := blocks[i:j]
		if size > chunkBytes {
			// The file alone: split it into parts of consecutive items.
			flush()
			for _, b := range file {
				if cur.bytes+b.size > chunkBytes {
					flush()
				}
				cur.blocks = append(cur.blocks, b)
				cur.bytes += b.size
			}
			flush()
		} else {
			if cur.bytes+size > chunkBytes {
				flush()
			}
			cur.blocks = append(cur.blocks, file...)
			cur.bytes += size
			if groupBoundary(path) {
				flush()
			}
		}
		i = j
	}
	flush()
	return out
}

func blockPath(b *block) string {
	if b.item.Path == nil {
		return ""
	}
	return *b.item.Path
}

func groupBoundary(path string) bool {
	h := fnv.New32a()
	h.Write([]byte(path))
	return h.Sum32()%4 == 0
}

// scopeOf is what an answer about chunk c may cite. Paths are keyed as
// the model saw them (redacted), and mapped back to the real paths.
func scopeOf(c *chunk, ch *provider.Change) scope {
	sc := scope{refs: map[string]bool{}, paths: map[string]bool{}, ranges: map[string][][2]int{}, lines: map[string]int{},
		real: map[string]string{}}
	for _, b := range c.blocks {
		sc.refs[b.item.Ref] = true
		path := blockPath(b)
		if path == "" {
			continue
		}
		sc.paths[b.shownPath] = true
		sc.real[b.shownPath] = path
		if s, e := b.item.Lines(); s > 0 {
			sc.ranges[b.shownPath] = append(sc.ranges[b.shownPath], [2]int{s, e})
		}
	}
	for shown, path := range sc.real {
		for _, f := range ch.Files {
			if f.Path() == path && f.Content != nil {
				sc.lines[shown] = len(f.Content)
			}
		}
	}
	return sc
}

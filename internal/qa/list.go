package qa

import (
	"context"
	"encoding/base64"
	"errors"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/diffpalhq/diffpal/internal/qa/store"
)

// maxCursor bounds the length of a list cursor (a run id and a timestamp,
// base64-encoded, are far shorter).
const maxCursor = 512

// cursorVersion prefixes every cursor's payload, so that a later format
// can tell its own cursors from these.
const cursorVersion = "1|"

// encodeCursor returns the opaque cursor that continues after p.
func encodeCursor(p store.Position) string {
	return base64.RawURLEncoding.EncodeToString([]byte(cursorVersion + p.ExpiresAt.UTC().Format(time.RFC3339Nano) + "|" + p.RunID))
}

// errBadCursor is the answer to a cursor this server did not hand out.
var errBadCursor = newError(CodeInvalidArgument, "cursor", "not a next_cursor returned by list_qa_orchestrations")

// decodeCursor parses a cursor made by encodeCursor.
func decodeCursor(c string) (store.Position, error) {
	raw, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil || !utf8.Valid(raw) {
		return store.Position{}, errBadCursor
	}
	rest, ok := strings.CutPrefix(string(raw), cursorVersion)
	if !ok {
		return store.Position{}, errBadCursor
	}
	ts, id, ok := strings.Cut(rest, "|")
	if !ok || id == "" || strings.ContainsRune(id, 0) {
		return store.Position{}, errBadCursor
	}
	t, err := time.Parse(time.RFC3339Nano, ts)
	if err != nil {
		return store.Position{}, errBadCursor
	}
	return store.Position{ExpiresAt: t.UTC(), RunID: id}, nil
}

// listPage is the validated page of a ListInput.
func listPage(in ListInput) (limit int, after *store.Position, err error) {
	if err := checkArgs(in); err != nil {
		return 0, nil, err
	}
	limit = DefaultListLimit
	if in.Limit != nil {
		limit = *in.Limit
		if limit < 1 || limit > MaxListLimit {
			// checkArgs applies the same range; this keeps the bound
			// independent of the rule table.
			return 0, nil, newError(CodeInvalidArgument, "limit", "must be between 1 and 1000")
		}
	}
	if in.Cursor != nil {
		p, err := decodeCursor(*in.Cursor)
		if err != nil {
			return 0, nil, err
		}
		after = &p
	}
	return limit, after, nil
}

// List returns one page of the retained, unexpired sessions, newest expiry
// first (ties by run id, descending): at most in.Limit (default
// DefaultListLimit) sessions that sort after in.Cursor, and the cursor of
// the next page when there may be more. It neither purges nor writes.
//
// Pages are keyset pages: a session that is refreshed (every state change
// extends its expiry) or started while a host pages moves to the front, so
// it is not shown twice and a later walk from the first page finds it. A
// page may hold fewer than limit sessions when some were deleted while it
// was read; only a null next_cursor means the end.
func (o *Orchestrator) List(ctx context.Context, in ListInput) (ListOutput, error) {
	limit, after, err := listPage(in)
	if err != nil {
		return ListOutput{}, err
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	now := o.clock()
	var sums []Summary
	var last *store.Position
	if o.indexed != nil {
		sums, last, err = o.listIndexed(ctx, now, after, limit)
	} else {
		sums, last, err = o.listAll(ctx, now, after, limit)
	}
	if err != nil {
		return ListOutput{}, err
	}
	out := ListOutput{Sessions: sums, ReadOnly: true, HostOwnsDecisions: true}
	if last != nil {
		c := encodeCursor(*last)
		out.NextCursor = &c
	}
	return out, nil
}

// listIndexed reads one page from the store's index: limit+1 records'
// metadata tell whether there is a next page. Summaries come from the
// cache when it was taken at the record's columns; otherwise (a session
// another process wrote) the record is read and decoded.
func (o *Orchestrator) listIndexed(ctx context.Context, now time.Time, after *store.Position, limit int) ([]Summary, *store.Position, error) {
	metas, err := o.indexed.Page(ctx, now, after, limit+1)
	if err != nil {
		return nil, nil, storeError(CodeStoreRead, err)
	}
	var next *store.Position
	if len(metas) > limit {
		metas = metas[:limit]
		p := store.PositionOf(metas[limit-1])
		next = &p
	}
	sums := make([]Summary, 0, len(metas))
	for _, r := range metas {
		sum, ok := o.cachedSummaryFor(r)
		if !ok {
			rec, err := o.store.Get(ctx, r.RunID)
			if errors.Is(err, store.ErrNotFound) {
				continue // deleted since the page was read
			}
			if err != nil {
				return nil, nil, storeError(CodeStoreRead, err)
			}
			l, err := decodeRecord(rec)
			if err != nil {
				return nil, nil, err
			}
			o.remember(&l.sess, rec.Revision)
			if !l.sess.ExpiresAt.After(now) {
				continue
			}
			sum = summaryOf(&l.sess)
		}
		sums = append(sums, sum)
	}
	return sums, next, nil
}

// listAll is the page of a store without an index: every record's
// metadata, the live ones sorted, then the page cut from them. Payloads
// are read (all at once) only when some live session has no current
// cached summary, e.g. one written by another process sharing the store.
func (o *Orchestrator) listAll(ctx context.Context, now time.Time, after *store.Position, limit int) ([]Summary, *store.Position, error) {
	metas, err := o.store.ListMeta(ctx)
	if err != nil {
		return nil, nil, storeError(CodeStoreRead, err)
	}
	sums := []Summary{}
	complete := true
	for _, r := range metas {
		if !r.ExpiresAt.After(now) {
			continue
		}
		sum, ok := o.cachedSummaryFor(r)
		if !ok {
			complete = false
			break
		}
		sums = append(sums, sum)
	}
	if !complete {
		recs, err := o.store.List(ctx)
		if err != nil {
			return nil, nil, storeError(CodeStoreRead, err)
		}
		sums = sums[:0]
		for _, r := range recs {
			if !r.ExpiresAt.After(now) {
				continue
			}
			l, err := decodeRecord(r)
			if err != nil {
				return nil, nil, err
			}
			o.remember(&l.sess, r.Revision)
			sums = append(sums, summaryOf(&l.sess))
		}
	}
	o.pruneSummaries(metas)
	pos := func(s Summary) store.Position { return store.Position{ExpiresAt: s.ExpiresAt, RunID: s.RunID} }
	slices.SortFunc(sums, func(a, b Summary) int { return pos(b).Compare(pos(a)) })
	if after != nil {
		i, _ := slices.BinarySearchFunc(sums, *after, func(s Summary, p store.Position) int { return p.Compare(pos(s)) })
		for i < len(sums) && pos(sums[i]).Compare(*after) >= 0 {
			i++
		}
		sums = sums[i:]
	}
	var next *store.Position
	if len(sums) > limit {
		sums = sums[:limit]
		p := pos(sums[limit-1])
		next = &p
	}
	return slices.Clip(sums), next, nil
}

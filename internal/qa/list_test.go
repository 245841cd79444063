package qa

import (
	"encoding/base64"
	"slices"
	"testing"
	"time"

	"github.com/diffpalhq/diffpal/internal/qa/store"
)

// TestListPages: the default page is 100 sessions, newest expiry first
// (ties by run id, descending); following next_cursor visits every
// unexpired session exactly once, and the last page has a null cursor.
func TestListPages(t *testing.T) {
	for name, st := range map[string]Store{"indexed": store.NewMemory(), "listing": listingOnly{store.NewMemory()}} {
		t.Run(name, func(t *testing.T) {
			o, clk := newTestOrch(t, func(c *Config) { c.Store = st; c.MaxSessions = 500 })
			var started []Session
			for i := range 250 {
				started = append(started, mustStart(t, o, StartInput{TaskType: TaskOther}))
				if i%3 == 0 { // some share an expiry
					clk.Add(time.Second)
				}
			}
			want := slices.Clone(started)
			slices.SortFunc(want, func(a, b Session) int {
				return store.Position{ExpiresAt: b.ExpiresAt, RunID: b.RunID}.Compare(store.Position{ExpiresAt: a.ExpiresAt, RunID: a.RunID})
			})
			first, err := o.List(ctx, ListInput{})
			if err != nil || len(first.Sessions) != DefaultListLimit || first.NextCursor == nil {
				t.Fatalf("default page: %d sessions, cursor %v, %v", len(first.Sessions), first.NextCursor, err)
			}
			for _, limit := range []int{1, 7, 100, 250, 1000} {
				var got []string
				in := ListInput{Limit: &limit}
				for {
					out, err := o.List(ctx, in)
					if err != nil {
						t.Fatal(err)
					}
					if len(out.Sessions) > limit {
						t.Fatalf("limit %d: page of %d", limit, len(out.Sessions))
					}
					for _, s := range out.Sessions {
						got = append(got, s.RunID)
					}
					if out.NextCursor == nil {
						break
					}
					in.Cursor = out.NextCursor
				}
				var ids []string
				for _, s := range want {
					ids = append(ids, s.RunID)
				}
				if !slices.Equal(got, ids) {
					t.Fatalf("limit %d: pages visit %d sessions, not the %d in order", limit, len(got), len(ids))
				}
			}
			// Expired sessions are not listed, and a cursor past the end
			// gives an empty last page.
			clk.Add(DefaultTTL - 40*time.Second)
			out, err := o.List(ctx, ListInput{Limit: ptr(1000)})
			if err != nil || len(out.Sessions) >= 250 || len(out.Sessions) == 0 || out.NextCursor != nil {
				t.Fatalf("after expiry: %d sessions, cursor %v, %v", len(out.Sessions), out.NextCursor, err)
			}
			last := out.Sessions[len(out.Sessions)-1]
			c := encodeCursor(store.Position{ExpiresAt: last.ExpiresAt, RunID: last.RunID})
			if out, err := o.List(ctx, ListInput{Cursor: &c}); err != nil || len(out.Sessions) != 0 || out.NextCursor != nil {
				t.Fatalf("after the last: %d sessions, cursor %v, %v", len(out.Sessions), out.NextCursor, err)
			}
		})
	}
}

// TestListInputErrors: limit out of range and cursors this server did not
// hand out are invalid arguments naming the field.
func TestListInputErrors(t *testing.T) {
	o, _ := newTestOrch(t, nil)
	for _, limit := range []int{0, -1, 1001, 1 << 40} {
		_, err := o.List(ctx, ListInput{Limit: &limit})
		wantErr(t, err, CodeInvalidArgument, "limit")
	}
	enc := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
	for _, c := range []string{"", "!!", "not base64?", enc("2|2026-10-14T09:30:00Z|qar-1"), enc("1|yesterday|qar-1"),
		enc("1|2026-10-14T09:30:00Z|"), enc("1|2026-10-14T09:30:00Z"), enc("1|2026-10-14T09:30:00Z|a\x00b"), enc("\xff\xfe"),
		string(make([]byte, maxCursor+1))} {
		_, err := o.List(ctx, ListInput{Cursor: &c})
		wantErr(t, err, CodeInvalidArgument, "cursor")
	}
	good := encodeCursor(store.Position{ExpiresAt: time.Date(2026, 10, 14, 9, 30, 0, 5, time.UTC), RunID: "qar-1"})
	p, err := decodeCursor(good)
	if err != nil || p.RunID != "qar-1" || p.ExpiresAt.Nanosecond() != 5 {
		t.Fatalf("decode(encode) = %+v, %v", p, err)
	}
}

package qa

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// marshalAllReference is marshalAll as it was before nested values were
// written in place: every field through json.Marshal (which calls nested
// MarshalJSON methods and compacts their output).
func marshalAllReference(v any) ([]byte, error) {
	rv := reflect.ValueOf(v)
	rt := rv.Type()
	var buf bytes.Buffer
	buf.WriteByte('{')
	n := 0
	for i := range rt.NumField() {
		f := rt.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		fv := rv.Field(i)
		var b []byte
		if fv.Kind() == reflect.Slice && fv.IsNil() {
			b = []byte("[]")
		} else {
			var err error
			if b, err = json.Marshal(fv.Interface()); err != nil {
				return nil, err
			}
		}
		if n > 0 {
			buf.WriteByte(',')
		}
		n++
		key, _ := json.Marshal(name)
		buf.Write(key)
		buf.WriteByte(':')
		buf.Write(b)
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// TestMarshalAllSameBytes checks the in-place writer against the reference
// on every state of a bound flow, and on a session with nil pointers and
// slices and HTML-escaped text.
func TestMarshalAllSameBytes(t *testing.T) {
	check := func(s Session) {
		t.Helper()
		want, err := marshalAllReference(s)
		if err != nil {
			t.Fatal(err)
		}
		// The reference's nested output went through json.Marshal's
		// compaction; so does the top level when a caller marshals.
		var c bytes.Buffer
		if err := json.Compact(&c, want); err != nil {
			t.Fatal(err)
		}
		got, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		direct, err := marshalAll(s)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, c.Bytes()) || !bytes.Equal(direct, got) {
			t.Fatalf("marshalAll differs:\n got %s\nwant %s", got, c.Bytes())
		}
	}
	check(Session{})
	o, _ := newTestOrch(t, nil)
	rc := boundContext()
	rc.ChangedFiles = append(rc.ChangedFiles, "a<b>&c\u2028.go")
	s := mustStart(t, o, StartInput{TaskType: TaskOther, ReviewContext: rc})
	check(s)
	s = mustAdvance(t, o, AdvanceInput{RunID: s.RunID, CompletedStep: StepTriage, Status: OutcomeCompleted,
		SelectedBundle: ptr(BundleOrdinaryMR)})
	check(s)
	s = runPrimary(t, o, s, RiskSignals{})
	check(s)
	s = mustAdvance(t, o, AdvanceInput{RunID: s.RunID, CompletedStep: StepSynthesis, Status: OutcomeCompleted,
		FinalReviewReport: finalReportFor(s)})
	check(s)
}

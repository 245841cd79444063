package qa

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestMarshalAllSameBytes checks the in-place writer against the
// reflective one (marshalAllReflective) on every state of a bound flow,
// and on a session with nil pointers and slices and HTML-escaped text.
func TestMarshalAllSameBytes(t *testing.T) {
	check := func(s Session) {
		t.Helper()
		want, err := marshalAllReflective(s)
		if err != nil {
			t.Fatal(err)
		}
		direct, err := marshalAll(s)
		if err != nil {
			t.Fatal(err)
		}
		// What a caller gets: MarshalJSON's output after json.Marshal's
		// own validation and compaction.
		got, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(direct, want) || !bytes.Equal(got, want) {
			t.Fatalf("marshalAll differs:\n got %s\n via json.Marshal %s\nwant %s", direct, got, want)
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

// marshalAllReflective is the in-place writer as it was before it was
// compiled per type: reflection on every call, every leaf through
// json.Marshal.
func marshalAllReflective(v any) ([]byte, error) {
	var buf bytes.Buffer
	if err := reflectiveAll(&buf, reflect.ValueOf(v)); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func reflectiveValue(buf *bytes.Buffer, fv reflect.Value) error {
	t := fv.Type()
	switch {
	case t.Kind() == reflect.Struct && t.Implements(allFieldsType):
		return reflectiveAll(buf, fv)
	case t.Kind() == reflect.Pointer && t.Elem().Kind() == reflect.Struct && t.Elem().Implements(allFieldsType):
		if fv.IsNil() {
			buf.WriteString("null")
			return nil
		}
		return reflectiveAll(buf, fv.Elem())
	case t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Struct && t.Elem().Implements(allFieldsType):
		if fv.IsNil() {
			buf.WriteString("null")
			return nil
		}
		buf.WriteByte('[')
		for i := range fv.Len() {
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := reflectiveAll(buf, fv.Index(i)); err != nil {
				return err
			}
		}
		buf.WriteByte(']')
		return nil
	}
	b, err := json.Marshal(fv.Interface())
	if err != nil {
		return err
	}
	buf.Write(b)
	return nil
}

func reflectiveAll(buf *bytes.Buffer, rv reflect.Value) error {
	rt := rv.Type()
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
		if n > 0 {
			buf.WriteByte(',')
		}
		n++
		key, _ := json.Marshal(name)
		buf.Write(key)
		buf.WriteByte(':')
		if fv.Kind() == reflect.Slice && fv.IsNil() {
			buf.WriteString("[]")
			continue
		}
		if err := reflectiveValue(buf, fv); err != nil {
			return err
		}
	}
	buf.WriteByte('}')
	return nil
}

// randomFill sets v (settable) to random content: strings drawn from
// characters json.Marshal treats differently (quotes, backslashes, control
// characters, HTML characters, DEL, non-ASCII, U+2028, invalid UTF-8),
// integers of every size and sign, floats, nil and non-nil pointers, nil,
// empty and filled slices.
func randomFill(r *rand.Rand, v reflect.Value, depth int) {
	pieces := []string{"a", "Z", "0", " ", "_", "-", `"`, `\`, "\n", "\r", "\t", "\b", "\f", "\x00", "\x1f", "\x7f",
		"<", ">", "&", "/", "é", "\u2028", "\u2029", "\xff", "\xe2\x80", "日本", "\U0001F600"}
	switch v.Kind() {
	case reflect.String:
		var b strings.Builder
		for range r.IntN(12) {
			b.WriteString(pieces[r.IntN(len(pieces))])
		}
		v.SetString(b.String())
	case reflect.Bool:
		v.SetBool(r.IntN(2) == 1)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(r.Int64() >> r.IntN(64) * int64(1-2*r.IntN(2)))
		if v.OverflowInt(v.Int()) {
			v.SetInt(int64(r.IntN(100)))
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(uint64(r.IntN(1000)))
	case reflect.Float32, reflect.Float64:
		v.SetFloat(r.NormFloat64() * float64(r.IntN(1e6)))
	case reflect.Pointer:
		if r.IntN(3) == 0 || depth > 6 {
			v.SetZero()
			return
		}
		p := reflect.New(v.Type().Elem())
		randomFill(r, p.Elem(), depth+1)
		v.Set(p)
	case reflect.Slice:
		switch n := r.IntN(4); {
		case n == 0 || depth > 6:
			v.SetZero()
		default:
			s := reflect.MakeSlice(v.Type(), n-1, n-1)
			for i := range n - 1 {
				randomFill(r, s.Index(i), depth+1)
			}
			v.Set(s)
		}
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[time.Time]() {
			v.Set(reflect.ValueOf(time.Unix(r.Int64N(1<<34), r.Int64N(1e9)).UTC()))
			return
		}
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				randomFill(r, v.Field(i), depth+1)
			}
		}
	}
}

// TestMarshalAllRandomSameBytes compares the compiled writer with the
// reflective one (and with json.Marshal, which calls it) on random
// sessions and on random values of every allFields type.
func TestMarshalAllRandomSameBytes(t *testing.T) {
	r := rand.New(rand.NewPCG(16, 4))
	types := []reflect.Type{reflect.TypeFor[Session]()}
	for _, v := range []any{RegistryEntry{}, ReviewRules{}, ReviewContext{}, RefNote{}, SourceLocation{},
		ProfileCandidate{}, ContextSelection{}, ExecutionAttempt{}, ExecutionMetrics{}, ProfileReport{},
		FinalCandidate{}, CandidateDecision{}, FinalReviewReport{}, RiskSignals{}, DeepAssessment{}} {
		types = append(types, reflect.TypeOf(v))
	}
	for i := range 3000 {
		typ := types[i%len(types)]
		v := reflect.New(typ).Elem()
		randomFill(r, v, 0)
		want, err := marshalAllReflective(v.Interface())
		if err != nil {
			t.Fatal(err)
		}
		got, err := marshalAll(v.Interface())
		if err != nil {
			t.Fatal(err)
		}
		std, err := json.Marshal(v.Interface())
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) || !bytes.Equal(std, want) {
			t.Fatalf("%s: compiled writer differs:\n got %s\nwant %s\n std %s", typ, got, want, std)
		}
	}
}

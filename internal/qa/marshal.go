package qa

import (
	"encoding"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// marshalAll encodes a struct with every exported field present, ignoring
// omitzero/omitempty: nil slices become [] and nil pointers null. The input
// types need omitzero so schema inference marks them optional, while the
// contract wants full objects on output; this reconciles the two.
//
// Nested values of such types (fields, pointers, slice elements) are
// written into the same buffer rather than through json.Marshal, which
// would call their MarshalJSON and then re-compact its output at every
// level. Every other value is written as json.Marshal writes it, so the
// bytes are the same (compacting compact, escaped JSON is the identity).
//
// The writer for each type is compiled once (compileAll): keys are
// escaped once, and leaves whose json.Marshal output is simple to produce
// exactly (strings of plain ASCII, integers, booleans, and pointers,
// slices and plain structs of those) are appended directly, without
// json.Marshal's per-call reflection, boxing and allocation; every other
// leaf, and every string that needs escaping beyond quotes and
// backslashes, still goes through json.Marshal. The session is marshalled
// on every write (its stored payload) and this was most of a start's or
// an advance's own time. TestMarshalAllSameBytes and
// TestMarshalAllRandomSameBytes compare the bytes with the reflective
// writer it replaces.
func marshalAll(v any) ([]byte, error) {
	rv := reflect.ValueOf(v)
	w := allWriterFor(rv.Type())
	b := make([]byte, 0, w.sizeHint.Load()+64)
	b, err := w.write(b, rv)
	if err != nil {
		return nil, err
	}
	// The next value of this type is likely about as large: start its
	// buffer there instead of growing it step by step.
	w.sizeHint.Store(int64(len(b)))
	return b, nil
}

// allFields is implemented by the types whose MarshalJSON is marshalAll.
type allFields interface{ marshalsAllFields() }

var allFieldsType = reflect.TypeFor[allFields]()

// appendFunc appends the JSON of v (a value of the type it was compiled
// for) to b.
type appendFunc func(b []byte, v reflect.Value) ([]byte, error)

// allWriter writes one allFields struct type.
type allWriter struct {
	write    appendFunc
	sizeHint atomic.Int64
}

var (
	allWriters   sync.Map // reflect.Type -> *allWriter
	compileMu    sync.Mutex
	compileTypes = map[reflect.Type]*allWriter{} // being compiled, under compileMu
)

// allWriterFor returns the compiled writer of the allFields struct type t.
func allWriterFor(t reflect.Type) *allWriter {
	if w, ok := allWriters.Load(t); ok {
		return w.(*allWriter)
	}
	compileMu.Lock()
	defer compileMu.Unlock()
	return compileAllLocked(t)
}

func compileAllLocked(t reflect.Type) *allWriter {
	if w, ok := allWriters.Load(t); ok {
		return w.(*allWriter)
	}
	if w, ok := compileTypes[t]; ok {
		// A type that contains itself: its writer is looked up when it
		// runs, by which time it is complete.
		return &allWriter{write: func(b []byte, v reflect.Value) ([]byte, error) { return w.write(b, v) }}
	}
	w := &allWriter{}
	compileTypes[t] = w
	defer delete(compileTypes, t)
	type field struct {
		index int
		key   []byte // `"name":`, with a leading comma after the first
		slice bool
		write appendFunc
	}
	var fields []field
	for i := range t.NumField() {
		f := t.Field(i)
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
		key, _ := json.Marshal(name)
		if len(fields) > 0 {
			key = append([]byte{','}, key...)
		}
		fields = append(fields, field{index: i, key: append(key, ':'), slice: f.Type.Kind() == reflect.Slice,
			write: valueWriterLocked(f.Type)})
	}
	w.write = func(b []byte, v reflect.Value) ([]byte, error) {
		b = append(b, '{')
		for _, f := range fields {
			b = append(b, f.key...)
			fv := v.Field(f.index)
			if f.slice && fv.IsNil() {
				b = append(b, "[]"...)
				continue
			}
			var err error
			if b, err = f.write(b, fv); err != nil {
				return nil, err
			}
		}
		return append(b, '}'), nil
	}
	allWriters.Store(t, w)
	return w
}

// valueWriterLocked returns the writer of a field of type t: allFields
// structs, pointers to them and slices of them are written in place;
// everything else as json.Marshal writes it.
func valueWriterLocked(t reflect.Type) appendFunc {
	isAll := func(t reflect.Type) bool { return t.Kind() == reflect.Struct && t.Implements(allFieldsType) }
	switch {
	case isAll(t):
		w := compileAllLocked(t)
		return func(b []byte, v reflect.Value) ([]byte, error) { return w.write(b, v) }
	case t.Kind() == reflect.Pointer && isAll(t.Elem()):
		w := compileAllLocked(t.Elem())
		return func(b []byte, v reflect.Value) ([]byte, error) {
			if v.IsNil() {
				return append(b, "null"...), nil
			}
			return w.write(b, v.Elem())
		}
	case t.Kind() == reflect.Slice && isAll(t.Elem()):
		w := compileAllLocked(t.Elem())
		return sliceWriter(w.write)
	}
	if f := plainWriter(t, map[reflect.Type]bool{}); f != nil {
		return f
	}
	return marshalLeaf
}

// marshalLeaf is the general case: json.Marshal of the value.
func marshalLeaf(b []byte, v reflect.Value) ([]byte, error) {
	j, err := json.Marshal(v.Interface())
	if err != nil {
		return nil, err
	}
	return append(b, j...), nil
}

var (
	marshalerType     = reflect.TypeFor[json.Marshaler]()
	textMarshalerType = reflect.TypeFor[encoding.TextMarshaler]()
	numberType        = reflect.TypeFor[json.Number]()
)

// plainWriter returns a writer producing exactly json.Marshal's bytes for
// values of t, or nil when t is not one of the shapes it models: booleans,
// integers, strings, and pointers, slices and plain structs (no embedded
// fields, no tag options, simple unique names) of those, none of them with
// a MarshalJSON or MarshalText method of its own (on the value or the
// pointer) and none json.Number. Floats, maps, interfaces, arrays and
// []byte are left to json.Marshal. seen guards against types that contain
// themselves (left to json.Marshal too).
func plainWriter(t reflect.Type, seen map[reflect.Type]bool) appendFunc {
	if seen[t] || t == numberType || t.Implements(marshalerType) || t.Implements(textMarshalerType) ||
		reflect.PointerTo(t).Implements(marshalerType) || reflect.PointerTo(t).Implements(textMarshalerType) {
		return nil
	}
	seen[t] = true
	defer delete(seen, t)
	switch t.Kind() {
	case reflect.Bool:
		return func(b []byte, v reflect.Value) ([]byte, error) { return strconv.AppendBool(b, v.Bool()), nil }
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return func(b []byte, v reflect.Value) ([]byte, error) { return strconv.AppendInt(b, v.Int(), 10), nil }
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return func(b []byte, v reflect.Value) ([]byte, error) { return strconv.AppendUint(b, v.Uint(), 10), nil }
	case reflect.String:
		return func(b []byte, v reflect.Value) ([]byte, error) { return appendString(b, v.String()) }
	case reflect.Pointer:
		elem := plainWriter(t.Elem(), seen)
		if elem == nil {
			return nil
		}
		return func(b []byte, v reflect.Value) ([]byte, error) {
			if v.IsNil() {
				return append(b, "null"...), nil
			}
			return elem(b, v.Elem())
		}
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return nil // base64, and byte-slice element types have their own rules
		}
		elem := plainWriter(t.Elem(), seen)
		if elem == nil {
			return nil
		}
		return sliceWriter(elem)
	case reflect.Struct:
		return plainStructWriter(t, seen)
	}
	return nil
}

// sliceWriter writes a slice as json.Marshal does (nil as null), each
// element with elem.
func sliceWriter(elem appendFunc) appendFunc {
	return func(b []byte, v reflect.Value) ([]byte, error) {
		if v.IsNil() {
			return append(b, "null"...), nil
		}
		b = append(b, '[')
		for i := range v.Len() {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = elem(b, v.Index(i)); err != nil {
				return nil, err
			}
		}
		return append(b, ']'), nil
	}
}

// plainStructWriter is plainWriter for a struct type.
func plainStructWriter(t reflect.Type, seen map[reflect.Type]bool) appendFunc {
	type field struct {
		index int
		key   string
		write appendFunc
	}
	var fields []field
	names := map[string]bool{}
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Anonymous {
			return nil // embedding has its own rules
		}
		if !f.IsExported() {
			continue // json.Marshal skips these
		}
		tag, hasTag := f.Tag.Lookup("json")
		if strings.Contains(tag, ",") || tag == "-" {
			return nil // options, or a skipped field: not modelled
		}
		name := f.Name
		if hasTag && tag != "" {
			name = tag
		}
		if !plainName(name) || names[name] {
			return nil
		}
		names[name] = true
		w := plainWriter(f.Type, seen)
		if w == nil {
			return nil
		}
		key := `"` + name + `":`
		if len(fields) > 0 {
			key = "," + key
		}
		fields = append(fields, field{index: i, key: key, write: w})
	}
	return func(b []byte, v reflect.Value) ([]byte, error) {
		b = append(b, '{')
		for _, f := range fields {
			b = append(b, f.key...)
			var err error
			if b, err = f.write(b, v.Field(f.index)); err != nil {
				return nil, err
			}
		}
		return append(b, '}'), nil
	}
}

// plainName reports whether name is a non-empty run of ASCII letters,
// digits and underscores: a key json.Marshal takes from the tag as it is
// and writes without escaping.
func plainName(name string) bool {
	if name == "" {
		return false
	}
	for i := range len(name) {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// appendString appends s as json.Marshal writes a string. Printable ASCII
// is copied, with quotes, backslashes, newlines, carriage returns and tabs
// escaped as json.Marshal escapes them; a string with any other byte (other
// control characters, the HTML characters json.Marshal escapes as \u00XX,
// and everything outside ASCII, where invalid UTF-8 and U+2028/U+2029 have
// their own rules) is written by json.Marshal.
func appendString(b []byte, s string) ([]byte, error) {
	start := len(b)
	b = append(b, '"')
	last := 0
	for i := range len(s) {
		c := s[i]
		if c >= 0x20 && c < 0x7f && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
			continue
		}
		var esc string
		switch c {
		case '"':
			esc = `\"`
		case '\\':
			esc = `\\`
		case '\n':
			esc = `\n`
		case '\r':
			esc = `\r`
		case '\t':
			esc = `\t`
		default:
			j, err := json.Marshal(s)
			if err != nil {
				return nil, err
			}
			return append(b[:start], j...), nil
		}
		b = append(append(b, s[last:i]...), esc...)
		last = i + 1
	}
	b = append(b, s[last:]...)
	return append(b, '"'), nil
}

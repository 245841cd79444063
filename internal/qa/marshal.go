package qa

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
)

// marshalAll encodes a struct with every exported field present, ignoring
// omitzero/omitempty: nil slices become [] and nil pointers null. The input
// types need omitzero so schema inference marks them optional, while the
// contract wants full objects on output; this reconciles the two.
//
// Nested values of such types (fields, pointers, slice elements) are
// written into the same buffer rather than through json.Marshal, which
// would call their MarshalJSON and then re-compact its output at every
// level; every leaf still comes from json.Marshal, so the bytes are the
// same (compacting compact, escaped JSON is the identity).
func marshalAll(v any) ([]byte, error) {
	var buf bytes.Buffer
	if err := writeAll(&buf, reflect.ValueOf(v)); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// allFields is implemented by the types whose MarshalJSON is marshalAll.
type allFields interface{ marshalsAllFields() }

var allFieldsType = reflect.TypeFor[allFields]()

// writeValue writes fv as json.Marshal would, descending into allFields
// types directly.
func writeValue(buf *bytes.Buffer, fv reflect.Value) error {
	t := fv.Type()
	switch {
	case t.Kind() == reflect.Struct && t.Implements(allFieldsType):
		return writeAll(buf, fv)
	case t.Kind() == reflect.Pointer && t.Elem().Kind() == reflect.Struct && t.Elem().Implements(allFieldsType):
		if fv.IsNil() {
			buf.WriteString("null")
			return nil
		}
		return writeAll(buf, fv.Elem())
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
			if err := writeAll(buf, fv.Index(i)); err != nil {
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

// writeAll writes the struct rv with marshalAll's rules.
func writeAll(buf *bytes.Buffer, rv reflect.Value) error {
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
		if err := writeValue(buf, fv); err != nil {
			return err
		}
	}
	buf.WriteByte('}')
	return nil
}

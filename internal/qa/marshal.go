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
func marshalAll(v any) ([]byte, error) {
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

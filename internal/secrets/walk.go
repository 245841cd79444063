package secrets

import "reflect"

// RedactAll redacts, in place, every string reachable from v (a pointer):
// struct fields, slice and array elements, map values, pointers and
// interfaces. Unexported fields and map keys are left alone.
func RedactAll(v any) { std.RedactAll(v) }

// RedactAll is the package's RedactAll with r.
func (r *Redactor) RedactAll(v any) {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return
	}
	r.walk(rv, map[uintptr]bool{})
}

var byteType = reflect.TypeFor[byte]()

func (r *Redactor) walk(v reflect.Value, seen map[uintptr]bool) {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() || seen[v.Pointer()] {
			return
		}
		seen[v.Pointer()] = true
		r.walk(v.Elem(), seen)
	case reflect.Interface:
		if v.IsNil() || !v.CanSet() {
			return
		}
		e := v.Elem()
		c := reflect.New(e.Type()).Elem()
		c.Set(e)
		r.walk(c, seen)
		v.Set(c)
	case reflect.Struct:
		t := v.Type()
		for i := range v.NumField() {
			if t.Field(i).IsExported() {
				r.walk(v.Field(i), seen)
			}
		}
	case reflect.Slice:
		if v.IsNil() || v.Type().Elem() == byteType {
			return
		}
		if seen[v.Pointer()] && v.Len() > 0 {
			return
		}
		seen[v.Pointer()] = true
		for i := range v.Len() {
			r.walk(v.Index(i), seen)
		}
	case reflect.Array:
		for i := range v.Len() {
			r.walk(v.Index(i), seen)
		}
	case reflect.Map:
		if v.IsNil() || !v.CanSet() && !v.CanInterface() {
			return
		}
		for _, k := range v.MapKeys() {
			e := v.MapIndex(k)
			c := reflect.New(e.Type()).Elem()
			c.Set(e)
			r.walk(c, seen)
			v.SetMapIndex(k, c)
		}
	case reflect.String:
		if v.CanSet() {
			if s := v.String(); len(s) >= 6 {
				if red := r.Redact(s); red != s {
					v.SetString(red)
				}
			}
		}
	}
}

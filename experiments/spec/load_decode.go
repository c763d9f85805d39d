package spec

import (
	"encoding"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"time"
)

// decoder decodes nodes into Go values strictly: every key must name a
// field, every value must have the field's type, and every problem is
// recorded (at its key path) rather than stopping at the first.
type decoder struct {
	iss    *issues
	broken map[string]bool // paths that have a problem of their own
	// unknown holds the paths of keys that name no field: a problem of the
	// mapping they sit in may come from the key the writer meant.
	unknown map[string]bool
	// zeros holds the paths where the file writes a number or a duration
	// that is 0: the spec's types cannot tell it from a key left out, and
	// the validator must not let a default replace it silently.
	zeros  map[string]bool
	fields map[reflect.Type][]keyField
}

func newDecoder(iss *issues) *decoder {
	return &decoder{iss: iss, broken: map[string]bool{}, unknown: map[string]bool{}, zeros: map[string]bool{}, fields: map[reflect.Type][]keyField{}}
}

// stringForm is implemented by types that are written as a plain string
// or as a mapping (a threshold entry, a stop condition).
type stringForm interface {
	setString(s string)
}

// keyHinter is implemented by struct types that know keys people write by
// mistake and what to write instead.
type keyHinter interface {
	keyHints() map[string]string
}

var (
	timeDurationType = reflect.TypeFor[time.Duration]()
	durationType     = reflect.TypeFor[Duration]()
	textUnmarshaler  = reflect.TypeFor[encoding.TextUnmarshaler]()
	jsonUnmarshaler  = reflect.TypeFor[json.Unmarshaler]()
	stringFormType   = reflect.TypeFor[stringForm]()
)

func (d *decoder) bad(path, format string, args ...any) {
	d.broken[path] = true
	d.iss.add(path, format, args...)
}

// decode stores n into v (settable), reporting problems at path.
func (d *decoder) decode(path string, n *node, v reflect.Value) {
	t := v.Type()
	if n.kind == kNull {
		// null (or an empty value) leaves the field unset.
		return
	}
	if t.Kind() == reflect.Pointer {
		if v.IsNil() {
			v.Set(reflect.New(t.Elem()))
		}
		d.decode(path, n, v.Elem())
		return
	}
	if t == timeDurationType || t == durationType {
		d.duration(path, n, v)
		return
	}
	pt := reflect.PointerTo(t)
	if pt.Implements(stringFormType) {
		switch n.kind {
		case kString:
			v.Addr().Interface().(stringForm).setString(n.text)
			return
		case kMap:
		default:
			d.bad(path, "got %s, want a string such as \"p(99)<500ms\" or a mapping with keys %s", n.describe(), strings.Join(fieldNames(d.fieldsOf(t)), ", "))
			return
		}
	}
	if pt.Implements(textUnmarshaler) {
		if !n.scalar() || n.kind == kBool {
			d.bad(path, "got %s, want a string such as %s", n.describe(), textExample(t))
			return
		}
		if err := v.Addr().Interface().(encoding.TextUnmarshaler).UnmarshalText([]byte(n.text)); err != nil {
			d.bad(path, "%v", err)
		}
		return
	}
	if pt.Implements(jsonUnmarshaler) {
		b, err := json.Marshal(n.jsonValue())
		if err == nil {
			err = v.Addr().Interface().(json.Unmarshaler).UnmarshalJSON(b)
		}
		if err != nil {
			d.bad(path, "%v", err)
		}
		return
	}
	switch t.Kind() {
	case reflect.String:
		if n.kind != kString {
			hint := ""
			if n.scalar() {
				hint = fmt.Sprintf(" (quote it: %q)", n.text)
			}
			d.bad(path, "got %s, want a string%s", n.describe(), hint)
			return
		}
		v.SetString(n.text)
	case reflect.Bool:
		if n.kind != kBool {
			d.bad(path, "got %s, want true or false", n.describe())
			return
		}
		v.SetBool(n.b)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if n.kind != kInt {
			d.bad(path, "got %s, want an integer", n.describe())
			return
		}
		if n.big || v.OverflowInt(n.i) {
			d.bad(path, "integer %s is out of range", n.text)
			return
		}
		v.SetInt(n.i)
		d.zeros[path] = n.i == 0
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if n.kind != kInt {
			d.bad(path, "got %s, want an integer", n.describe())
			return
		}
		u := n.u
		if !n.big {
			if n.i < 0 {
				d.bad(path, "integer %s is negative, want 0 or more", n.text)
				return
			}
			u = uint64(n.i)
		}
		if v.OverflowUint(u) {
			d.bad(path, "integer %s is out of range", n.text)
			return
		}
		v.SetUint(u)
		d.zeros[path] = u == 0
	case reflect.Float32, reflect.Float64:
		var f float64
		switch {
		case n.kind == kFloat:
			f = n.f
		case n.kind == kInt && n.big:
			f = float64(n.u)
		case n.kind == kInt:
			f = float64(n.i)
		default:
			d.bad(path, "got %s, want a number", n.describe())
			return
		}
		if t.Kind() == reflect.Float32 && !math.IsInf(f, 0) && math.Abs(f) > math.MaxFloat32 {
			d.bad(path, "number %s is out of range", n.text)
			return
		}
		v.SetFloat(f)
		d.zeros[path] = f == 0
	case reflect.Struct:
		d.structure(path, n, v)
	case reflect.Map:
		if n.kind != kMap {
			d.bad(path, "got %s, want a mapping of keys to values", n.describe())
			return
		}
		if t.Key().Kind() != reflect.String {
			d.bad(path, "cannot decode into %s", t)
			return
		}
		if v.IsNil() {
			v.Set(reflect.MakeMapWithSize(t, len(n.keys)))
		}
		for _, e := range n.keys {
			ev := reflect.New(t.Elem()).Elem()
			d.decode(child(path, e.key), e.val, ev)
			v.SetMapIndex(reflect.ValueOf(e.key).Convert(t.Key()), ev)
		}
	case reflect.Slice:
		if n.kind != kSeq {
			d.bad(path, "got %s, want a list", n.describe())
			return
		}
		s := reflect.MakeSlice(t, len(n.items), len(n.items))
		for i, it := range n.items {
			d.decode(index(path, i), it, s.Index(i))
		}
		v.Set(s)
	case reflect.Interface:
		if t.NumMethod() != 0 {
			d.bad(path, "cannot decode into %s", t)
			return
		}
		v.Set(reflect.ValueOf(n.toAny()))
	default:
		d.bad(path, "cannot decode into %s", t)
	}
}

// duration decodes a Go duration string; a bare 0 is 0s.
func (d *decoder) duration(path string, n *node, v reflect.Value) {
	switch {
	case n.kind == kInt && !n.big && n.i == 0:
		v.SetInt(0)
		d.zeros[path] = true
		return
	case n.kind == kInt || n.kind == kFloat:
		d.bad(path, "%s has no unit: write %ss or %sms", n.text, n.text, n.text)
		return
	case n.kind != kString:
		d.bad(path, "got %s, want a duration such as 200ms, 15s or 1m30s", n.describe())
		return
	}
	x, err := time.ParseDuration(strings.TrimSpace(n.text))
	if err != nil {
		d.bad(path, "%q is not a duration: write a number with a unit (ns, us, ms, s, m, h), such as 200ms, 15s or 1m30s", n.text)
		return
	}
	v.SetInt(int64(x))
	d.zeros[path] = x == 0
}

// textExample returns an example of the text form of a type, for messages.
func textExample(t reflect.Type) string {
	switch t {
	case reflect.TypeFor[Dist]():
		return `512 or "lognormal:1020:0.8,max=6144"`
	case reflect.TypeFor[DurationDist]():
		return `"2s" or "exponential:3s"`
	case reflect.TypeFor[Rate]():
		return `20 or "80%"`
	}
	return "its text form"
}

// field is one key of a struct type: its name, the index path to the Go
// field (through inlined structs) and whether it was written with
// omitempty (optional) in its tag.
type keyField struct {
	name  string
	index []int
}

// fieldsOf returns the keys of struct type t, inlined structs flattened:
// the yaml tag names a key, else the json tag, else the lower-cased field
// name; an anonymous struct field without a name, or with ",inline", is
// inlined.
func (d *decoder) fieldsOf(t reflect.Type) []keyField {
	if fs, ok := d.fields[t]; ok {
		return fs
	}
	fs := structFields(t, nil)
	d.fields[t] = fs
	return fs
}

func structFields(t reflect.Type, prefix []int) []keyField {
	var out []keyField
	for i := range t.NumField() {
		sf := t.Field(i)
		name, inline, skip := fieldTag(sf)
		if skip {
			continue
		}
		idx := append(slices.Clone(prefix), i)
		if inline {
			ft := sf.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				out = append(out, structFields(ft, idx)...)
				continue
			}
		}
		if !sf.IsExported() {
			continue
		}
		out = append(out, keyField{name: name, index: idx})
	}
	return out
}

// fieldTag reads a struct field's key name from its yaml or json tag.
func fieldTag(sf reflect.StructField) (name string, inline, skip bool) {
	tag, ok := sf.Tag.Lookup("yaml")
	if !ok {
		tag, ok = sf.Tag.Lookup("json")
	}
	if tag == "-" {
		return "", false, true
	}
	name, opts, _ := strings.Cut(tag, ",")
	for _, o := range strings.Split(opts, ",") {
		if o == "inline" {
			inline = true
		}
	}
	if sf.Anonymous && name == "" {
		inline = true
	}
	if !ok || name == "" {
		name = strings.ToLower(sf.Name)
	}
	return name, inline, false
}

// structure decodes a mapping into struct v, reporting unknown keys with a
// suggestion.
func (d *decoder) structure(path string, n *node, v reflect.Value) {
	t := v.Type()
	if n.kind != kMap {
		d.bad(path, "got %s, want a mapping with keys %s", n.describe(), strings.Join(fieldNames(d.fieldsOf(t)), ", "))
		return
	}
	fs := d.fieldsOf(t)
	for _, e := range n.keys {
		i := slices.IndexFunc(fs, func(f keyField) bool { return f.name == e.key })
		p := child(path, e.key)
		if i < 0 {
			d.broken[p] = true
			d.unknown[p] = true
			d.iss.addKey(p, "%s", unknownKey(e.key, t, fs))
			continue
		}
		fv := v
		for _, x := range fs[i].index {
			if fv.Kind() == reflect.Pointer {
				if fv.IsNil() {
					fv.Set(reflect.New(fv.Type().Elem()))
				}
				fv = fv.Elem()
			}
			fv = fv.Field(x)
		}
		d.decode(p, e.val, fv)
	}
}

func fieldNames(fs []keyField) []string {
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = f.name
	}
	return out
}

// unknownKey says that key is not a key of struct type t, with the nearest
// known key when one is near, a hint when the type has one, or the list of
// known keys.
func unknownKey(key string, t reflect.Type, fs []keyField) string {
	names := fieldNames(fs)
	if h, ok := reflect.Zero(t).Interface().(keyHinter); ok {
		if hint, ok := h.keyHints()[key]; ok {
			return fmt.Sprintf("unknown key %q: %s", key, hint)
		}
	}
	if s := suggest(key, names); s != "" {
		return fmt.Sprintf("unknown key %q; did you mean %q?", key, s)
	}
	return fmt.Sprintf("unknown key %q; known keys: %s", key, strings.Join(names, ", "))
}

// Package settings decodes the untyped maps that come out of a YAML file into typed
// configuration structs, strictly: unknown keys, wrong types and missing required
// fields are all collected, each with its dotted path in the file, instead of
// stopping at the first one.
//
// Config structs name their keys with the `key` tag and mark required fields with
// `required:"true"`:
//
//	type Config struct {
//		Container string        `key:"container" required:"true"`
//		BlockSize settings.Size `key:"block_size"`
//	}
//	var cfg Config
//	problems := settings.Decode("pipelines.orders.stores.blob", raw, &cfg)
//
// A struct may keep the keys it does not declare by giving one map[string]any field
// the tag `key:",remain"` (used where a `type:` field picks which typed struct
// decodes the rest).
//
// Four more tags state a key's own rules for the JSON Schema editors check
// pipeline files with (docs/schemas/pipeline.json): `range:"MIN-MAX"` (either
// end may be left out), `pattern:"REGEXP"`, `length:"MIN-MAX"` and
// `conflicts:"KEY ..."` (keys of the same struct not to be set beside it; a
// boolean one, not set true). Decode does not read them: the structs' Validate
// methods check the same rules with messages that say what to change, and
// config's schema test checks that the two refuse the same files.
package settings

import (
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Decode decodes raw (a value produced by a YAML parser: maps, slices, strings,
// numbers, booleans) into the struct, slice or map that target points to. Fields
// absent from raw keep the values target already holds, so callers set defaults
// before decoding. All problems are returned; target is filled as far as possible.
func Decode(path string, raw any, target any) Problems {
	v := reflect.ValueOf(target)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		panic(fmt.Sprintf("settings.Decode: target must be a non-nil pointer, got %T", target))
	}
	d := &decoder{}
	d.value(path, raw, v.Elem())
	return d.problems
}

// Validator is implemented by config structs with rules beyond types and required
// keys (ranges, enums, one field depending on another). Decode calls Validate after
// decoding the struct, with the struct's path.
type Validator interface {
	Validate(path string, problems *Problems)
}

type decoder struct {
	problems Problems
}

func (d *decoder) add(path, format string, args ...any) {
	d.problems.Add(path, format, args...)
}

var (
	durationType = reflect.TypeFor[time.Duration]()
	sizeType     = reflect.TypeFor[Size]()
	autoSizeType = reflect.TypeFor[SizeOrAuto]()
)

func (d *decoder) value(path string, raw any, v reflect.Value) {
	if raw == nil {
		// `key:` with nothing after it: leave the default in place.
		return
	}
	switch v.Type() {
	case durationType:
		d.duration(path, raw, v)
		return
	case sizeType:
		d.size(path, raw, v)
		return
	case autoSizeType:
		if s, ok := raw.(string); ok {
			if strings.TrimSpace(s) == "auto" {
				v.SetInt(int64(Auto))
				return
			}
			if _, err := ParseSize(s); err != nil {
				d.add(path, "must be auto or a size such as 65536, 64KiB or 1MiB, got %q", s)
				return
			}
		}
		d.size(path, raw, v)
		return
	}
	switch v.Kind() {
	case reflect.Struct:
		d.structure(path, raw, v)
		if validator, ok := v.Addr().Interface().(Validator); ok {
			validator.Validate(path, &d.problems)
		}
	case reflect.Map:
		d.mapping(path, raw, v)
	case reflect.Slice:
		d.slice(path, raw, v)
	case reflect.Pointer:
		elem := reflect.New(v.Type().Elem())
		if !v.IsNil() {
			elem.Elem().Set(v.Elem())
		}
		d.value(path, raw, elem.Elem())
		v.Set(elem)
	case reflect.String:
		d.str(path, raw, v)
	case reflect.Bool:
		b, ok := raw.(bool)
		if s, isString := raw.(string); isString {
			// Environment overrides arrive as strings.
			b, ok = s == "true", s == "true" || s == "false"
		}
		if !ok {
			d.add(path, "must be true or false, got %s", describe(raw))
			return
		}
		v.SetBool(b)
	case reflect.Int, reflect.Int32, reflect.Int64:
		d.integer(path, raw, v)
	case reflect.Float64:
		f, ok := number(raw)
		if !ok {
			d.add(path, "must be a number, got %s", describe(raw))
			return
		}
		v.SetFloat(f)
	case reflect.Interface:
		v.Set(reflect.ValueOf(raw))
	default:
		panic(fmt.Sprintf("settings.Decode: unsupported field type %s at %s", v.Type(), path))
	}
}

func (d *decoder) structure(path string, raw any, v reflect.Value) {
	m, ok := raw.(map[string]any)
	if !ok {
		d.add(path, "must be a mapping of keys to values, got %s", describe(raw))
		return
	}
	t := v.Type()
	known := make(map[string]bool, t.NumField())
	var remain reflect.Value
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("key"), ",")
		if opts == "remain" {
			remain = v.Field(i)
			continue
		}
		if name == "" || name == "-" {
			continue
		}
		known[name] = true
		fieldPath := join(path, name)
		rawField, present := m[name]
		if !present || rawField == nil {
			if f.Tag.Get("required") == "true" && v.Field(i).IsZero() {
				d.add(fieldPath, "required")
			}
			continue
		}
		before := len(d.problems)
		d.value(fieldPath, rawField, v.Field(i))
		// An empty string or list where one is required; a struct's own
		// required keys speak for themselves.
		if f.Tag.Get("required") == "true" && len(d.problems) == before &&
			v.Field(i).Kind() != reflect.Struct && v.Field(i).IsZero() {
			d.add(fieldPath, "required, must not be empty")
		}
	}
	var unknown []string
	for k := range m {
		if !known[k] {
			unknown = append(unknown, k)
		}
	}
	sort.Strings(unknown)
	if remain.IsValid() {
		rest := make(map[string]any, len(unknown))
		for _, k := range unknown {
			rest[k] = m[k]
		}
		remain.Set(reflect.ValueOf(rest))
		return
	}
	for _, k := range unknown {
		d.add(join(path, k), "unknown key%s", suggest(k, known))
	}
}

func (d *decoder) mapping(path string, raw any, v reflect.Value) {
	m, ok := raw.(map[string]any)
	if !ok {
		d.add(path, "must be a mapping of keys to values, got %s", describe(raw))
		return
	}
	if v.IsNil() {
		v.Set(reflect.MakeMapWithSize(v.Type(), len(m)))
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		elem := reflect.New(v.Type().Elem()).Elem()
		if existing := v.MapIndex(reflect.ValueOf(k)); existing.IsValid() {
			elem.Set(existing)
		}
		d.value(join(path, k), m[k], elem)
		v.SetMapIndex(reflect.ValueOf(k), elem)
	}
}

func (d *decoder) slice(path string, raw any, v reflect.Value) {
	list, ok := raw.([]any)
	if !ok {
		d.add(path, "must be a list, got %s", describe(raw))
		return
	}
	out := reflect.MakeSlice(v.Type(), len(list), len(list))
	for i, item := range list {
		d.value(fmt.Sprintf("%s[%d]", path, i), item, out.Index(i))
	}
	v.Set(out)
}

// str accepts strings, and numbers and booleans where a string is expected (pass-through
// librdkafka properties such as `fetch.max.bytes: 52428800` are strings to librdkafka).
func (d *decoder) str(path string, raw any, v reflect.Value) {
	switch r := raw.(type) {
	case string:
		v.SetString(r)
	case bool:
		v.SetString(strconv.FormatBool(r))
	case int, int64, uint64, float64:
		f, _ := number(r)
		v.SetString(strconv.FormatFloat(f, 'f', -1, 64))
	default:
		d.add(path, "must be a string, got %s", describe(raw))
	}
}

func (d *decoder) integer(path string, raw any, v reflect.Value) {
	f, ok := number(raw)
	if !ok {
		if s, isString := raw.(string); isString {
			if n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64); err == nil {
				f, ok = float64(n), true
			}
		}
	}
	if !ok || f != math.Trunc(f) {
		d.add(path, "must be a whole number, got %s", describe(raw))
		return
	}
	// Check the float before converting: int64(1e30) is MinInt64, not an error.
	lo, hi := math.MinInt64>>(64-v.Type().Bits()), math.MaxInt64>>(64-v.Type().Bits())
	if f < float64(lo) || f >= float64(hi)+1 {
		d.add(path, "%s is out of range (at most %d)", strconv.FormatFloat(f, 'g', 6, 64), hi)
		return
	}
	v.SetInt(int64(f))
}

func (d *decoder) duration(path string, raw any, v reflect.Value) {
	s, ok := raw.(string)
	if !ok {
		d.add(path, "must be a duration with a unit such as 100ms, 30s or 5m, got %s", describe(raw))
		return
	}
	dur, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil {
		d.add(path, "must be a duration with a unit such as 100ms, 30s or 5m, got %q", s)
		return
	}
	if dur < 0 {
		d.add(path, "must not be negative, got %q", s)
		return
	}
	v.SetInt(int64(dur))
}

func (d *decoder) size(path string, raw any, v reflect.Value) {
	var (
		size Size
		err  error
	)
	switch r := raw.(type) {
	case string:
		size, err = ParseSize(r)
	default:
		f, ok := number(raw)
		switch {
		case !ok || f != math.Trunc(f) || f < 0:
			err = fmt.Errorf("must be a size such as 65536, 64KiB or 1MiB, got %s", describe(raw))
		case f > float64(MaxSize):
			err = fmt.Errorf("must be at most 1PiB, got %v bytes", raw)
		}
		size = Size(f)
	}
	if err != nil {
		d.add(path, "%v", err)
		return
	}
	v.SetInt(int64(size))
}

func number(raw any) (float64, bool) {
	switch n := raw.(type) {
	case int:
		return float64(n), true
	case int64:
		return float64(n), true
	case uint64:
		return float64(n), true
	case float64:
		return n, true
	}
	return 0, false
}

// describe names a raw value's kind for an error message without echoing the value
// itself: a misplaced secret must not end up in a log.
func describe(raw any) string {
	switch raw.(type) {
	case map[string]any:
		return "a mapping"
	case []any:
		return "a list"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case int, int64, uint64, float64:
		return "a number"
	}
	return fmt.Sprintf("%T", raw)
}

// maxKeyInPath is where a key in a problem's path is cut: keys come from the
// file, and a 50 MB one must not be echoed.
const maxKeyInPath = 64

func join(path, key string) string {
	if len(key) > maxKeyInPath {
		key = key[:maxKeyInPath] + "..."
	}
	if path == "" {
		return key
	}
	return path + "." + key
}

// suggest names the known key closest to a misspelt one.
func suggest(unknown string, known map[string]bool) string {
	best := Closest(unknown, slices.Collect(maps.Keys(known)))
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}

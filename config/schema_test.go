package config

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.yaml.in/yaml/v3"

	"github.com/offloader/offloader/config/configtest"
	"github.com/offloader/offloader/settings"
	"github.com/offloader/offloader/stores"
	"github.com/offloader/offloader/transforms"
)

const schemaFile = "../docs/schemas/pipeline.json"

// TestPipelineFileSchema: docs/schemas/pipeline.json, the JSON Schema that
// editors complete and check pipeline files with, is generated from the
// structs docs/configuration.md is (go test ./config -run Schema -update
// rewrites it). It takes every shipped example file and refuses the invalid
// files whose problems are of shape (unknown keys, wrong types, missing
// keys); the rules between keys are validate's.
func TestPipelineFileSchema(t *testing.T) {
	r := &keyReference{t: t, docs: map[string]string{}}
	got, err := json.MarshalIndent(r.fileSchema(), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	if *update {
		if err := os.WriteFile(schemaFile, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if want, err := os.ReadFile(schemaFile); err != nil || !bytes.Equal(want, got) {
		t.Fatalf("%s is not what the structs give (%v): go test ./config -run Schema -update rewrites it", schemaFile, err)
	}
	schema, err := jsonschema.NewCompiler().Compile(schemaFile)
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob("../configs/*.yaml")
	examples, _ := filepath.Glob("../docs/examples/*.yaml")
	for _, f := range append(files, examples...) {
		if err := schema.Validate(yamlAsJSON(t, f)); err != nil {
			t.Errorf("the schema refuses %s: %v", f, err)
		}
	}
	refused := []string{"empty-file", "missing-required-fields", "unknown-keys-with-suggestions", "unknown-types-and-bad-step-settings", "wrong-types"}
	for _, ex := range configtest.InvalidExamples(t, "testdata/invalid") {
		if slices.Contains(refused, ex.Name) {
			if err := schema.Validate(yamlAsJSON(t, ex.File)); err == nil {
				t.Errorf("the schema takes %s", ex.File)
			}
		}
	}
}

// yamlAsJSON is the YAML file as the JSON value a schema validates.
func yamlAsJSON(t *testing.T, file string) any {
	t.Helper()
	body, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var v any
	if err := yaml.Unmarshal(body, &v); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

type object = map[string]any

// fileSchema is the schema of a pipeline file.
func (r *keyReference) fileSchema() object {
	defs := object{"pipeline": r.object(reflect.ValueOf(defaults("NAME")).Elem())}
	for _, typ := range stores.Backends.Types() {
		b, _ := stores.Backends.Lookup(typ)
		defs["store."+typ] = r.object(reflect.ValueOf(b.NewConfig()).Elem())
	}
	for _, typ := range transforms.Kinds.Types() {
		k, _ := transforms.Kinds.Lookup(typ)
		defs["transform."+typ] = r.object(reflect.ValueOf(k.NewConfig()).Elem())
	}
	for _, typ := range transforms.Predicates.Types() {
		k, _ := transforms.Predicates.Lookup(typ)
		defs["predicate."+typ] = r.object(reflect.ValueOf(k.NewConfig()).Elem())
	}
	for name, d := range defs {
		if name != "pipeline" {
			// A type's own keys, checked beside the common ones: the
			// store, step or predicate refuses the others.
			delete(d.(object), "additionalProperties")
		}
	}
	return object{
		"$schema":     "https://json-schema.org/draft/2020-12/schema",
		"$id":         "https://github.com/offloader/offloader/docs/schemas/pipeline.json",
		"title":       "offloader pipeline file",
		"description": "Generated from the code by go test ./config -run Schema -update; docs/configuration.md describes each key. offloader validate checks the rules between keys too.",
		"type":        "object",
		"required":    []string{"pipelines"},
		"properties": object{"pipelines": object{
			"description":          "the pipelines, by name; one process runs one",
			"type":                 "object",
			"minProperties":        1,
			"propertyNames":        object{"pattern": validName.String()},
			"additionalProperties": object{"$ref": "#/$defs/pipeline"},
		}},
		"additionalProperties": false,
		"$defs":                defs,
	}
}

// object is the schema of the struct v's keys. A struct with a `,remain`
// field (a store, a step, a predicate) takes the keys of the config its
// type: names, from the $defs of that kind (kind: store, transform or
// predicate, found from the struct's type).
func (r *keyReference) object(v reflect.Value) object {
	t := v.Type()
	props, required := object{}, []string{}
	kind := ""
	for i := range t.NumField() {
		f := t.Field(i)
		key := f.Tag.Get("key")
		if key == ",remain" {
			kind = map[string]string{"Store": "store", "Step": "transform", "Condition": "predicate"}[t.Name()]
		}
		if key == "" || key == "-" || strings.HasPrefix(key, ",") {
			continue
		}
		s := r.value(v.Field(i), f.Type)
		if doc := r.keyDoc(t, f.Name); doc != "" {
			s["description"] = doc
		}
		r.keyRules(s, f)
		props[key] = s
		if f.Tag.Get("required") == "true" {
			required = append(required, key)
		}
	}
	s := object{"type": "object", "properties": props}
	if len(required) > 0 {
		s["required"] = required
	}
	var conflicts []any
	for i := range t.NumField() {
		f := t.Field(i)
		for _, other := range strings.Fields(f.Tag.Get("conflicts")) {
			both := object{"required": []string{f.Tag.Get("key"), other}}
			if o, ok := props[other].(object); ok && o["type"] == "boolean" {
				both["properties"] = object{other: object{"const": true}}
			} else if !ok {
				r.t.Fatalf("%s.%s conflicts with %q, which %s has no key of", t, f.Name, other, t)
			}
			conflicts = append(conflicts, object{"not": both})
		}
	}
	if len(conflicts) > 0 {
		s["allOf"] = conflicts
	}
	if kind == "" {
		s["additionalProperties"] = false
		return s
	}
	// The type's own keys: one branch per type; unevaluatedProperties
	// refuses a key that neither the common keys nor the type's have.
	var types []string
	switch kind {
	case "store":
		types = stores.Backends.Types()
	case "transform":
		types = transforms.Kinds.Types()
	case "predicate":
		types = transforms.Predicates.Types()
	}
	props["type"] = object{"enum": types, "description": props["type"].(object)["description"]}
	var branches []any
	for _, typ := range types {
		branches = append(branches, object{
			"if":   object{"properties": object{"type": object{"const": typ}}, "required": []string{"type"}},
			"then": object{"$ref": "#/$defs/" + kind + "." + typ},
		})
	}
	s["allOf"] = append(branches, conflicts...)
	s["unevaluatedProperties"] = false
	return s
}

// keyRules adds to s, the schema of the key of field f, what its tags say
// of its value (package settings): required (not empty), range, length,
// pattern.
func (r *keyReference) keyRules(s object, f reflect.StructField) {
	if f.Tag.Get("required") == "true" {
		switch s["type"] {
		case "string":
			s["minLength"] = 1
		case "array":
			s["minItems"] = 1
		}
	}
	bounds := func(tag, low, high string) {
		lo, hi, ok := strings.Cut(f.Tag.Get(tag), "-")
		if !ok {
			if f.Tag.Get(tag) != "" {
				r.t.Fatalf("%s: %s:%q is not MIN-MAX", f.Name, tag, f.Tag.Get(tag))
			}
			return
		}
		for key, n := range map[string]string{low: lo, high: hi} {
			if n == "" {
				continue
			}
			v, err := strconv.Atoi(n)
			if err != nil {
				r.t.Fatalf("%s: %s:%q: %v", f.Name, tag, f.Tag.Get(tag), err)
			}
			s[key] = v
		}
	}
	bounds("range", "minimum", "maximum")
	bounds("length", "minLength", "maxLength")
	if p := f.Tag.Get("pattern"); p != "" {
		if _, err := regexp.Compile(p); err != nil {
			r.t.Fatalf("%s: pattern:%q: %v", f.Name, p, err)
		}
		s["pattern"] = p
	}
}

var oneOfValues = regexp.MustCompile(`^must be ((?:"[^"]*"(?:, | or ))*"[^"]*"), got `)

// value is the schema of one key's value, of Go type t (v: its default).
func (r *keyReference) value(v reflect.Value, t reflect.Type) object {
	const duration = `^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`
	const size = `^[0-9]+(\.[0-9]+)?\s*(B|KB|KiB|MB|MiB|GB|GiB|TB|TiB)?$`
	switch t {
	case reflect.TypeFor[time.Duration]():
		return object{"type": "string", "pattern": duration}
	case reflect.TypeFor[settings.Size]():
		return object{"type": []string{"integer", "string"}, "pattern": size, "minimum": 0}
	case reflect.TypeFor[settings.SizeOrAuto]():
		return object{"type": []string{"integer", "string"}, "pattern": `^(auto|` + size[1:len(size)-1] + `)$`, "minimum": 0}
	}
	switch t.Kind() {
	case reflect.Pointer:
		if t.Elem().Kind() == reflect.Struct {
			return r.object(reflect.New(t.Elem()).Elem())
		}
		return r.value(reflect.New(t.Elem()).Elem(), t.Elem())
	case reflect.Struct:
		return r.object(v)
	case reflect.Map:
		if t.Elem().Kind() == reflect.Pointer {
			return object{"type": "object", "additionalProperties": r.value(reflect.New(t.Elem()).Elem(), t.Elem())}
		}
		// librdkafka properties: scalars, as YAML writes them.
		return object{"type": "object", "additionalProperties": object{"type": []string{"string", "number", "boolean"}}}
	case reflect.Slice:
		return object{"type": "array", "items": r.value(reflect.New(t.Elem()).Elem(), t.Elem())}
	case reflect.Int, reflect.Int32, reflect.Int64, reflect.Uint32:
		return object{"type": "integer"}
	case reflect.Float64:
		return object{"type": "number"}
	case reflect.Bool:
		return object{"type": "boolean"}
	case reflect.String:
		s := object{"type": "string"}
		if vv, ok := reflect.New(t).Elem().Interface().(interface{ Validate() error }); ok {
			if err := vv.Validate(); err != nil {
				if m := oneOfValues.FindStringSubmatch(strings.ReplaceAll(err.Error(), `, got ""`, `, got `)); m != nil {
					var values []string
					for _, q := range regexp.MustCompile(`"([^"]*)"`).FindAllStringSubmatch(m[1], -1) {
						values = append(values, q[1])
					}
					s["enum"] = values
				}
			}
		}
		return s
	}
	r.t.Fatalf("no schema for a value of type %s", t)
	return nil
}

package config

import (
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/offloader/offloader/settings"
	"github.com/offloader/offloader/stores"
	_ "github.com/offloader/offloader/stores/azblob"
	_ "github.com/offloader/offloader/stores/filesystem"
	_ "github.com/offloader/offloader/stores/httpstore"
	_ "github.com/offloader/offloader/stores/s3"
	"github.com/offloader/offloader/transforms"
)

var update = flag.Bool("update", false, "rewrite docs/configuration.md from the schema")

// TestConfigurationReference: docs/configuration.md is the reference of
// every configuration key, generated from the code's own schema (the
// structs settings.Decode fills, their defaults, and the doc comments of
// their fields): a key without a doc comment fails, and so does a reference
// that is not what the schema gives. go test ./config -run Reference -update
// rewrites it.
func TestConfigurationReference(t *testing.T) {
	r := &keyReference{t: t, docs: map[string]string{}}
	r.section("Pipeline", "pipelines.NAME", "", reflect.ValueOf(defaults("NAME")).Elem())
	for _, typ := range stores.Backends.Types() {
		b, _ := stores.Backends.Lookup(typ)
		r.section("Store type `"+typ+"`", "stores.NAME", "type: "+typ, reflect.ValueOf(b.NewConfig()).Elem())
	}
	for _, typ := range transforms.Kinds.Types() {
		k, _ := transforms.Kinds.Lookup(typ)
		r.section("Transform `"+typ+"`", "transforms[]", "type: "+typ, reflect.ValueOf(k.NewConfig()).Elem())
	}
	for _, typ := range transforms.Predicates.Types() {
		k, _ := transforms.Predicates.Lookup(typ)
		r.section("Predicate `"+typ+"`", "transforms[].if", "type: "+typ, reflect.ValueOf(k.NewConfig()).Elem())
	}
	got := referenceHead + r.out.String()
	const file = "../docs/configuration.md"
	if *update {
		if err := os.WriteFile(file, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if string(want) != got {
		t.Errorf("%s is not what the schema gives: go test ./config -run Reference -update rewrites it", file)
	}
}

const referenceHead = `# Configuration reference

Every key of a pipeline file, generated from the code's own schema by
` + "`go test ./config -run Reference -update`" + ` (the test fails when a key has no
description or this file is out of date). A pipeline file holds
` + "`pipelines:`" + `, a map of pipeline names to pipelines; one process runs one.
Strings may use ` + "`${VAR}`" + ` and ` + "`${VAR:-default}`" + `; any key may be overridden by
an environment variable: ` + "`OFFLOADER_`" + ` and the key path in upper case, ` + "`__`" + `
between levels (` + "`OFFLOADER_KAFKA__TRANSACTIONAL_ID`" + `). Durations are Go
durations (` + "`100ms`, `30s`, `720h`" + `), sizes are bytes or ` + "`KiB`/`MiB`/`GiB`" + `.
` + "`offloader validate -F FILE --print`" + ` shows a file with every default filled in.

Editors complete and check pipeline files with the JSON Schema
[schemas/pipeline.json](schemas/pipeline.json), generated from the same code
(` + "`go test ./config -run Schema -update`" + `). With the YAML language server (VS Code's
YAML extension, Neovim, Helix, IntelliJ), name it on a file's first line:

` + "```yaml" + `
# yaml-language-server: $schema=https://raw.githubusercontent.com/offloader/offloader/main/docs/schemas/pipeline.json
pipelines:
  orders:
` + "```" + `

(a path relative to the file works too, as in ` + "`configs/`" + `), or map it to
your pipeline files in the editor's settings (` + "`yaml.schemas`" + `). The schema checks
each key's name, type, presence and allowed values (ranges, patterns such as a
container's name, keys that exclude each other such as two ways to authenticate);
` + "`offloader validate`" + ` checks the rules between keys too (a step's store is
defined, the dead-letter topic is not the slim topic), and a value that comes from
` + "`${VAR}`" + ` only once it is set.
`

type keyReference struct {
	t    *testing.T
	out  strings.Builder
	docs map[string]string // "pkgpath.Type.Field" -> doc comment
	read map[string]bool   // packages parsed
}

func (r *keyReference) section(title, at, selector string, v reflect.Value) {
	fmt.Fprintf(&r.out, "\n## %s\n\n", title)
	if selector != "" {
		fmt.Fprintf(&r.out, "Under `%s`, with `%s`.\n\n", at, selector)
	} else {
		fmt.Fprintf(&r.out, "Under `%s`.\n\n", at)
	}
	r.out.WriteString("| key | type | default | description |\n|---|---|---|---|\n")
	r.fields("", v)
}

// fields writes a row per key of the struct v, recursing into nested
// structs and lists of structs.
func (r *keyReference) fields(prefix string, v reflect.Value) {
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		key := f.Tag.Get("key")
		if key == "" || key == "-" || strings.HasPrefix(key, ",") {
			continue
		}
		path := prefix + key
		fv := v.Field(i)
		ft := f.Type
		switch {
		case ft.Kind() == reflect.Struct:
			r.fields(path+".", fv)
			continue
		case ft.Kind() == reflect.Pointer && ft.Elem().Kind() == reflect.Struct:
			r.row(path, "mapping", "", f, t)
			r.fields(path+".", reflect.New(ft.Elem()).Elem())
			continue
		case ft.Kind() == reflect.Map && ft.Elem().Kind() == reflect.Pointer:
			r.row(path, "map of names to mappings", "", f, t)
			r.fields(path+".NAME.", reflect.New(ft.Elem().Elem()).Elem())
			continue
		case ft.Kind() == reflect.Slice && elem(ft).Kind() == reflect.Struct:
			r.row(path, "list", "", f, t)
			r.fields(path+"[].", reflect.New(elem(ft)).Elem())
			continue
		}
		r.row(path, typeName(ft), defaultOf(path, fv), f, t)
	}
}

func elem(t reflect.Type) reflect.Type {
	t = t.Elem()
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

func (r *keyReference) row(path, typ, def string, f reflect.StructField, owner reflect.Type) {
	doc := r.keyDoc(owner, f.Name)
	if doc == "" {
		r.t.Errorf("%s (%s.%s) has no doc comment: write one on the field", path, owner, f.Name)
	}
	if f.Tag.Get("required") == "true" {
		def = "required"
	}
	cell := strings.NewReplacer("|", `\|`, "\n", " ", "<", "&lt;", ">", "&gt;").Replace
	fmt.Fprintf(&r.out, "| `%s` | %s | %s | %s |\n", path, typ, cell(def), cell(doc))
}

// keyDoc is the doc comment of owner's field name, speaking of keys where
// it speaks of Go fields.
func (r *keyReference) keyDoc(owner reflect.Type, name string) string {
	doc := r.doc(owner, name)
	for i := range owner.NumField() {
		if k := owner.Field(i).Tag.Get("key"); k != "" && !strings.HasPrefix(k, ",") && k != "-" {
			doc = regexp.MustCompile(`\b`+owner.Field(i).Name+`\b`).ReplaceAllString(doc, "`"+k+"`")
		}
	}
	return doc
}

func typeName(t reflect.Type) string {
	switch t {
	case reflect.TypeFor[time.Duration]():
		return "duration"
	case reflect.TypeFor[settings.Size]():
		return "size"
	case reflect.TypeFor[settings.SizeOrAuto]():
		return "size or `auto`"
	}
	switch t.Kind() {
	case reflect.Pointer:
		return typeName(t.Elem())
	case reflect.Map:
		if t.Elem().Kind() == reflect.Pointer {
			return "map of name to the section below"
		}
		return "map of string to " + typeName(t.Elem())
	case reflect.Slice:
		return "list of " + typeName(t.Elem())
	case reflect.Int, reflect.Int32, reflect.Int64:
		return "integer"
	case reflect.Bool:
		return "boolean"
	case reflect.Struct:
		return "mapping with `type:`, below"
	}
	return t.Kind().String()
}

func defaultOf(path string, v reflect.Value) string {
	if v.IsZero() {
		return ""
	}
	switch x := v.Interface().(type) {
	case time.Duration, settings.Size:
		return fmt.Sprintf("`%v`", x)
	case settings.SizeOrAuto:
		if x == settings.Auto {
			return "`auto`"
		}
		return fmt.Sprintf("`%v`", settings.Size(x))
	}
	if v.Kind() == reflect.Int && strings.HasSuffix(path, "_mode") {
		return fmt.Sprintf("`%d` (`0o%o`)", v.Int(), v.Int())
	}
	return fmt.Sprintf("`%v`", v.Interface())
}

// doc is the doc comment of owner's field name, read from the package's
// source (its directory under the module).
func (r *keyReference) doc(owner reflect.Type, name string) string {
	pkg := owner.PkgPath()
	if r.read == nil {
		r.read = map[string]bool{}
	}
	if !r.read[pkg] {
		r.read[pkg] = true
		dir := filepath.Join("..", strings.TrimPrefix(pkg, "github.com/offloader/offloader/"))
		r.parse(pkg, dir)
	}
	return r.docs[pkg+"."+owner.Name()+"."+name]
}

func (r *keyReference) parse(pkg, dir string) {
	fset := token.NewFileSet()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		r.t.Fatal(err)
	}
	for _, file := range files {
		if strings.HasSuffix(file, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, file, nil, parser.ParseComments)
		if err != nil {
			r.t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			ts, ok := n.(*ast.TypeSpec)
			if !ok {
				return true
			}
			st, ok := ts.Type.(*ast.StructType)
			if !ok {
				return true
			}
			for _, field := range st.Fields.List {
				text := field.Doc.Text()
				if text == "" {
					text = field.Comment.Text()
				}
				for _, n := range field.Names {
					r.docs[pkg+"."+ts.Name.Name+"."+n.Name] = strings.Join(strings.Fields(text), " ")
				}
			}
			return true
		})
	}
}

package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/offloader/offloader/redact"
)

// pipelineSource is the -F/--config and --pipeline flags shared by the
// commands that read a pipeline file.
type pipelineSource struct {
	file, name *string
}

func (c *cli) pipelineFlags(fs *pflag.FlagSet) pipelineSource {
	return pipelineSource{
		file: fs.StringP("config", "F", "", "pipeline `FILE` (YAML)"),
		name: fs.String("pipeline", "", "pipeline `NAME`; optional when the file defines one"),
	}
}

// propertyFlag is -X PROP=VALUE, kcat's librdkafka property flag,
// repeatable, for a client of kind (consumer, producer).
func propertyFlag(fs *pflag.FlagSet, kind string, props map[string]string) {
	fs.FuncP("property", "X", "librdkafka "+kind+" `PROP=VALUE`, repeatable", func(s string) error {
		k, v, ok := strings.Cut(s, "=")
		if !ok || k == "" {
			return fmt.Errorf("want PROP=VALUE, got %q", s)
		}
		props[k] = v
		return nil
	})
}

// partitionFlag is -p N, only partition N, repeatable.
func partitionFlag(fs *pflag.FlagSet, parts *[]int32) {
	fs.FuncP("partition", "p", "only partition `N`, repeatable", func(s string) error {
		n, err := strconv.ParseInt(s, 10, 32)
		if err != nil || n < 0 {
			return fmt.Errorf("want a partition number, got %q", s)
		}
		*parts = append(*parts, int32(n))
		return nil
	})
}

// outputFlag is --output table|json, and --json as its older spelling
// (deprecated: hidden from the help, and said so when used). The command
// runner checks them and sets cli.asJSON (outputOf).
func outputFlag(fs *pflag.FlagSet) {
	fs.String("output", "table", "`FORMAT` of the result: table (for people) or json (for tools; the shapes are in docs/output.md)")
	fs.Bool("json", false, "the same as --output json")
	fs.MarkDeprecated("json", "use --output json")
}

// outputOf reads the output flags of fs, if it has them: whether the
// result is printed as JSON.
func outputOf(fs *pflag.FlagSet) (asJSON bool, err error) {
	if fs.Lookup("output") == nil {
		return false, nil
	}
	format, _ := fs.GetString("output")
	json, _ := fs.GetBool("json")
	switch {
	case format != "table" && format != "json":
		return false, fmt.Errorf("--output must be table or json, got %q", format)
	case json && format == "table" && fs.Changed("output"):
		return false, fmt.Errorf("--json and --output table contradict each other: give one")
	}
	return format == "json" || json, nil
}

// printJSON prints v as indented JSON to stdout, every string in it
// redacted (redact.JSON).
func (c *cli) printJSON(v any) { printJSON(c.stdout, v) }

// printJSON prints v to w as indented JSON, every string in it redacted.
func printJSON(w io.Writer, v any) {
	b, err := redact.JSON(v)
	if err != nil {
		msg, _ := json.Marshal("encoding the result as JSON: " + err.Error())
		fmt.Fprintf(w, "{\"error\": %s}\n", msg)
		return
	}
	w.Write(b)
}

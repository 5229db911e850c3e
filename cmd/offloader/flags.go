package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
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

package main

import (
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"
)

// flagValues are the values of the flags that take one of a few words, for
// the shell's completion (offloader completion bash|zsh|fish|powershell).
var flagValues = map[string][]string{
	"output":    {"table", "json"},
	"format":    {"json", "raw"},
	"not-found": {"error", "skip", "pointer"},
	"offset":    {"beginning", "end"},
}

// completeFlagValues registers, for cc's flags, the completion of their
// values: the words of flagValues, and for --pipeline the pipelines of the
// file -F names.
func completeFlagValues(cc *cobra.Command) {
	for name, values := range flagValues {
		if cc.Flags().Lookup(name) != nil {
			cc.RegisterFlagCompletionFunc(name, cobra.FixedCompletions(values, cobra.ShellCompDirectiveNoFileComp))
		}
	}
	if cc.Flags().Lookup("pipeline") != nil {
		cc.RegisterFlagCompletionFunc("pipeline", func(cc *cobra.Command, _ []string, prefix string) ([]string, cobra.ShellCompDirective) {
			file, _ := cc.Flags().GetString("config")
			return pipelineNames(file, prefix), cobra.ShellCompDirectiveNoFileComp
		})
	}
}

// pipelineNames are the names of the pipelines the file defines that start
// with prefix; none when it cannot be read (completion says nothing then).
func pipelineNames(file, prefix string) []string {
	body, err := os.ReadFile(file)
	if err != nil || len(body) > 4<<20 {
		return nil
	}
	var doc struct {
		Pipelines map[string]any `yaml:"pipelines"`
	}
	if yaml.Unmarshal(body, &doc) != nil {
		return nil
	}
	var names []string
	for name := range doc.Pipelines {
		if strings.HasPrefix(name, prefix) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

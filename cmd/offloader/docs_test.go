package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// docFiles are the files whose commands a new user runs as written.
func docFiles(t *testing.T) []string {
	t.Helper()
	var files []string
	for _, pattern := range []string{"../../README.md", "../../docs/*.md", "../../docker-compose.yml", "../../Dockerfile",
		"../../deploy/*/*.yaml", "../../deploy/*/*/*.yaml", "../../configs/*.yaml", "../../Makefile", "../../scripts/*.sh"} {
		found, err := filepath.Glob(pattern)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, found...)
	}
	if len(files) < 20 {
		t.Fatalf("found %d documentation files", len(files))
	}
	return files
}

// invocation is `offloader` followed by words, up to what ends a command
// in a shell line or in Markdown.
var invocation = regexp.MustCompile("offloader((?: +[^ \n|;&>#`\"'\\\\)\\]]+)+)")

// TestTheDocsUseOnlyFlagsThatExist: every `offloader COMMAND --flag` in the
// README, the docs, the Compose file, the Dockerfile, the manifests, the
// example configs, the Makefile and the scripts names a command and flags
// that exist (a removed or renamed flag in a doc fails here, not in a
// user's terminal).
func TestTheDocsUseOnlyFlagsThatExist(t *testing.T) {
	root := (&cli{}).root()
	checked := 0
	for _, file := range docFiles(t) {
		body, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		// A shell line continued with a backslash is one command.
		text := regexp.MustCompile(`\\\n\s*#?\s*`).ReplaceAllString(string(body), " ")
		for _, m := range invocation.FindAllStringSubmatch(text, -1) {
			words := strings.Fields(m[1])
			cmd, rest, err := root.Find(words)
			if err != nil || cmd == root {
				continue // prose: "offloader reads", "offloader keeps"
			}
			checked++
			for _, w := range rest {
				if !strings.HasPrefix(w, "-") || w == "-" || w == "--" || !flagLike.MatchString(w) {
					continue
				}
				if !hasFlag(cmd, w) {
					t.Errorf("%s: `offloader%s`: %s has no flag %s", file, m[1], cmd.CommandPath(), w)
				}
			}
		}
	}
	if checked < 50 {
		t.Errorf("checked %d offloader commands in the docs; the pattern finds too few", checked)
	}
}

// flagLike is a flag as written: -x, -xVALUE, --name, --name=value.
var flagLike = regexp.MustCompile(`^(-[a-zA-Z]|--[a-z][a-z0-9-]*)`)

// hasFlag reports whether cmd takes the flag w starts with.
func hasFlag(cmd *cobra.Command, w string) bool {
	name := flagLike.FindString(w)
	if strings.HasPrefix(name, "--") {
		name = strings.TrimPrefix(name, "--")
		return name == "help" || cmd.Flags().Lookup(name) != nil || cmd.InheritedFlags().Lookup(name) != nil
	}
	short := strings.TrimPrefix(name, "-")
	return short == "h" || cmd.Flags().ShorthandLookup(short) != nil
}

// Command offloader moves oversize Kafka record values to a payload store and
// leaves small pointer records in a slim topic, exactly once.
//
// Subcommands: run, validate, check, status, pause, resume, leave, cat,
// analyze, migrate, gc, demo, version, completion. `offloader help COMMAND`
// explains each.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/offloader/offloader/internal/kafka/client"
	"github.com/offloader/offloader/redact"

	// Store backends register themselves by type name.
	_ "github.com/offloader/offloader/stores/azblob"
	_ "github.com/offloader/offloader/stores/filesystem"
	_ "github.com/offloader/offloader/stores/httpstore"
	_ "github.com/offloader/offloader/stores/s3"
)

// Exit codes.
const (
	exitOK      = 0
	exitFailure = 1 // a runtime failure: Kafka, the store, a fenced instance
	exitUsage   = 2 // bad flags or a bad pipeline file
)

// Set at build time with -ldflags "-X main.version=... -X main.commit=...".
var (
	version = "dev"
	commit  = "unknown"
)

// command is one subcommand: its texts, and setup, which declares its flags
// on fs and returns what runs once they are parsed (an exit code).
type command struct {
	name    string // the words after offloader: "migrate verify"
	summary string
	usage   string // the arguments after the name
	help    string // what it does, for `offloader help NAME`
	example string // one or more example invocations
	setup   func(c *cli, fs *pflag.FlagSet) func() int
	// exclusive are groups of flags that contradict each other.
	exclusive [][]string
}

// cli carries the process's streams and environment so tests can run commands.
// stdout and stderr are redacted (package redact); records, when set, is
// where cat prints records, byte for byte (stdout otherwise).
type cli struct {
	stdout, stderr io.Writer
	records        io.Writer
	environ        []string
	code           int  // the exit code of the command that ran
	asJSON         bool // --output json: results are printed as JSON
}

// recordsOut is where records are printed.
func (c *cli) recordsOut() io.Writer {
	if c.records != nil {
		return c.records
	}
	return c.stdout
}

func commands() []*command {
	return []*command{runCommand(), validateCommand(), checkCommand(), statusCommand(), pauseCommand(), resumeCommand(),
		leaveCommand(), catCommand(), analyzeCommand(), migrateCommand(), verifyCommand(), translateCommand(),
		gcCommand(), versionCommand(), demoCommand()}
}

func main() {
	// Before any Kafka client starts its threads (validating a pipeline
	// file creates some).
	client.LimitMallocArenas()
	c := &cli{stdout: redact.NewWriter(os.Stdout), stderr: redact.NewWriter(os.Stderr), records: os.Stdout, environ: os.Environ()}
	os.Exit(c.main(os.Args[1:]))
}

// main runs the command args name and returns its exit code. Asked for
// --output json, it prints a document on stdout even when the command fails
// (jsonOnFailure).
func (c *cli) main(args []string) int {
	if wantsJSON(args) {
		return c.jsonOnFailure(func() int { return c.execute(args) })
	}
	return c.execute(args)
}

// execute runs the command args name and returns its exit code.
func (c *cli) execute(args []string) int {
	root := c.root()
	root.SetArgs(args)
	if len(args) == 0 {
		root.SetOut(c.stderr)
		root.Usage()
		return exitUsage
	}
	cmd, err := root.ExecuteC()
	if err == nil {
		return c.code
	}
	path := cmd.CommandPath()
	msg := err.Error()
	if strings.HasPrefix(msg, "unknown command") {
		// cobra's own wording, with its "Did you mean this?" list.
		fmt.Fprintf(c.stderr, "%s: %s\n", path, strings.TrimRight(msg, "\n"))
		fmt.Fprintf(c.stderr, "Run '%s --help' for the commands.\n", path)
		return exitUsage
	}
	fmt.Fprintf(c.stderr, "%s: %s\n", path, msg)
	if strings.HasPrefix(msg, "if any flags in the group") {
		fmt.Fprintf(c.stderr, "Give one of them: nothing was changed.\n")
	}
	switch {
	case strings.Contains(msg, "shorthand flag: 'c' in -c") && cmd.Flags().Lookup("config") != nil:
		fmt.Fprintf(c.stderr, "The pipeline file is -F FILE (--config FILE).\n")
	case strings.Contains(msg, `for "-c, --count" flag`):
		fmt.Fprintf(c.stderr, "-c is the record count, as in kcat; the pipeline file is -F FILE (--config FILE).\n")
	}
	fmt.Fprintf(c.stderr, "Run '%s --help' for usage.\n", path)
	return exitUsage
}

// root is the offloader command with every subcommand under it.
func (c *cli) root() *cobra.Command {
	root := &cobra.Command{
		Use:   "offloader",
		Short: "keeps oversize values out of Kafka",
		Long: `offloader keeps oversize values out of Kafka: it consumes a raw topic, stores
values over a threshold in a payload store (Azure Blob, S3, HTTP, filesystem), and produces
small pointer records to a slim topic, exactly once, in Kafka transactions.

Exit codes: 0 success, 1 runtime failure, 2 usage or configuration error.`,
		Version:       fmt.Sprintf("%s (commit %s)", version, commit),
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	root.SetOut(c.stdout)
	root.SetErr(c.stderr)
	root.SetHelpCommand(helpCommand(root))
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return err })
	byName := map[string]*cobra.Command{"": root}
	for _, cmd := range commands() {
		parent, last := "", cmd.name
		if i := strings.LastIndex(cmd.name, " "); i >= 0 {
			parent, last = cmd.name[:i], cmd.name[i+1:]
		}
		cc := c.cobra(cmd, last)
		byName[cmd.name] = cc
		byName[parent].AddCommand(cc)
	}
	return root
}

// cobra is cmd as a cobra command named last.
func (c *cli) cobra(cmd *command, last string) *cobra.Command {
	fs := pflag.NewFlagSet(cmd.name, pflag.ContinueOnError)
	run := cmd.setup(c, fs)
	cc := &cobra.Command{
		Use:                   strings.TrimSpace(last + " " + cmd.usage),
		Short:                 cmd.summary,
		Long:                  strings.TrimSpace(cmd.help),
		Example:               indent(strings.TrimSpace(cmd.example)),
		DisableFlagsInUseLine: true,
		Args: func(cc *cobra.Command, args []string) error {
			if len(args) == 0 {
				return nil
			}
			if cc.HasSubCommands() {
				err := fmt.Sprintf("unknown command %q for %q", args[0], cc.CommandPath())
				if s := cc.SuggestionsFor(args[0]); len(s) > 0 {
					err += "\n\nDid you mean this?\n\t" + strings.Join(s, "\n\t")
				}
				return errors.New(err)
			}
			return fmt.Errorf("unexpected argument %q (flags come as --flag value)", args[0])
		},
		Run: func(*cobra.Command, []string) {
			asJSON, err := outputOf(fs)
			if err != nil {
				c.code = c.usageError(fs, "%v", err)
				return
			}
			c.asJSON = asJSON
			c.code = run()
		},
	}
	cc.SuggestionsMinimumDistance = 2
	cc.Flags().AddFlagSet(fs)
	// pflag's notices (a deprecated flag) go to stderr: cobra would print
	// them on stdout, before a --output json document.
	cc.Flags().SetOutput(c.stderr)
	completeFlagValues(cc)
	for _, group := range cmd.exclusive {
		cc.MarkFlagsMutuallyExclusive(group...)
	}
	return cc
}

// helpCommand is `offloader help [COMMAND]`: a command's help, or, for a
// name that is none, a usage error (exit 2) with the nearest names, where
// cobra's own printed the command list and exited 0.
func helpCommand(root *cobra.Command) *cobra.Command {
	return &cobra.Command{
		Use:   "help [COMMAND]",
		Short: "Help about any command",
		Long:  "The help of a command: offloader help migrate verify is offloader migrate verify --help.",
		RunE: func(cc *cobra.Command, args []string) error {
			cmd, rest, err := root.Find(args)
			if err != nil || len(rest) > 0 {
				words := strings.Join(args, " ")
				msg := fmt.Sprintf("unknown command %q for %q", words, "offloader help")
				// The nearest names under the last command that is one.
				parent, unknown := root, args[0]
				for _, a := range args {
					child, _, err := parent.Find([]string{a})
					if err != nil || child == parent {
						unknown = a
						break
					}
					parent = child
				}
				if s := parent.SuggestionsFor(unknown); len(s) > 0 {
					msg += "\n\nDid you mean this?\n\t" + strings.Join(s, "\n\t")
				}
				return errors.New(msg)
			}
			return cmd.Help()
		},
	}
}

func indent(s string) string {
	if s == "" {
		return ""
	}
	return "  " + strings.ReplaceAll(s, "\n", "\n  ")
}

// usageError reports a bad flag value with exit code 2.
func (c *cli) usageError(fs *pflag.FlagSet, format string, args ...any) int {
	fmt.Fprintf(c.stderr, "offloader %s: %s\nRun 'offloader %s --help' for usage.\n", fs.Name(), fmt.Sprintf(format, args...), fs.Name())
	return exitUsage
}

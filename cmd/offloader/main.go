// Command offloader moves oversize Kafka record values to a payload store and
// leaves small pointer records in a slim topic, exactly once.
//
// Subcommands: run, validate, check, cat, analyze, migrate, gc, demo, version. `offloader help COMMAND` explains each.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	// Store backends and transforms register themselves by type name.
	"github.com/offloader/offloader/internal/kafka"
	"github.com/offloader/offloader/redact"
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

// command is one subcommand.
type command struct {
	name    string
	summary string
	usage   string // the arguments after the name
	help    string // what it does, for `offloader help NAME`
	run     func(c *cli, args []string) int
}

// cli carries the process's streams and environment so tests can run commands.
// stdout and stderr are redacted (package redact); records, when set, is
// where cat prints records, byte for byte (stdout otherwise).
type cli struct {
	stdout, stderr io.Writer
	records        io.Writer
	environ        []string
}

// recordsOut is where records are printed.
func (c *cli) recordsOut() io.Writer {
	if c.records != nil {
		return c.records
	}
	return c.stdout
}

func commands() []*command {
	return []*command{runCommand(), validateCommand(), checkCommand(), statusCommand(), pauseCommand(), resumeCommand(), leaveCommand(), catCommand(), analyzeCommand(), migrateCommand(), gcCommand(), versionCommand(), demoCommand()}
}

func main() {
	// Before any Kafka client starts its threads (validating a pipeline
	// file creates some).
	kafka.LimitMallocArenas()
	c := &cli{stdout: redact.NewWriter(os.Stdout), stderr: redact.NewWriter(os.Stderr), records: os.Stdout, environ: os.Environ()}
	os.Exit(c.main(os.Args[1:]))
}

func (c *cli) main(args []string) int {
	if len(args) == 0 {
		c.usage(c.stderr)
		return exitUsage
	}
	name, rest := args[0], args[1:]
	switch name {
	case "help", "-h", "--help", "-help":
		if len(rest) == 0 {
			c.usage(c.stdout)
			return exitOK
		}
		cmd := find(rest[0])
		if cmd == nil {
			fmt.Fprintf(c.stderr, "offloader: unknown command %q\n\n", rest[0])
			c.usage(c.stderr)
			return exitUsage
		}
		return cmd.run(c, []string{"--help"})
	case "--version", "-version":
		name = "version"
	}
	cmd := find(name)
	if cmd == nil {
		fmt.Fprintf(c.stderr, "offloader: unknown command %q\n\n", name)
		c.usage(c.stderr)
		return exitUsage
	}
	return cmd.run(c, rest)
}

func find(name string) *command {
	for _, cmd := range commands() {
		if cmd.name == name {
			return cmd
		}
	}
	return nil
}

func (c *cli) usage(w io.Writer) {
	fmt.Fprintf(w, `offloader keeps oversize values out of Kafka: it consumes a raw topic, stores
values over a threshold in a payload store (Azure Blob, S3, HTTP, filesystem), and produces
small pointer records to a slim topic, exactly once, in Kafka transactions.

Usage:
  offloader COMMAND [flags]

Commands:
`)
	cmds := commands()
	sort.Slice(cmds, func(i, j int) bool { return cmds[i].name < cmds[j].name })
	for _, cmd := range cmds {
		fmt.Fprintf(w, "  %-10s %s\n", cmd.name, cmd.summary)
	}
	fmt.Fprintf(w, `
Run 'offloader help COMMAND' (or 'offloader COMMAND --help') for its flags.
Exit codes: 0 success, 1 runtime failure, 2 usage or configuration error.
`)
}

// flags returns a flag set for cmd whose --help prints the command's help text.
func (c *cli) flags(cmd *command) *flag.FlagSet {
	fs := flag.NewFlagSet(cmd.name, flag.ContinueOnError)
	fs.SetOutput(c.stderr)
	fs.Usage = func() {
		w := fs.Output()
		fmt.Fprintf(w, "Usage: offloader %s %s\n\n%s\n", cmd.name, cmd.usage, strings.TrimSpace(cmd.help))
		var any bool
		fs.VisitAll(func(*flag.Flag) { any = true })
		if any {
			fmt.Fprintf(w, "\nFlags:\n")
			fs.PrintDefaults()
		}
	}
	return fs
}

// parse parses args; it returns an exit code and false when the command should
// stop (after --help, or a usage error).
func (c *cli) parse(fs *flag.FlagSet, args []string) (int, bool) {
	for _, a := range args {
		if a == "--" {
			break
		}
		if a == "-h" || a == "-help" || a == "--help" {
			fs.SetOutput(c.stdout)
			fs.Usage()
			return exitOK, false
		}
	}
	if err := fs.Parse(args); err != nil {
		return exitUsage, false
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(c.stderr, "offloader %s: unexpected argument %q (flags come as -flag value)\n", fs.Name(), fs.Arg(0))
		return exitUsage, false
	}
	return exitOK, true
}

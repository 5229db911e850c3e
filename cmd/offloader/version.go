package main

import (
	"fmt"
	"runtime"

	"github.com/spf13/pflag"

	"github.com/offloader/offloader/internal/kafka/client"
)

func versionCommand() *command {
	return &command{
		name:    "version",
		summary: "print the version, commit and librdkafka version",
		help:    `Prints offloader's version and commit, the Go version it was built with, and the version of the librdkafka bundled into it.`,
		example: `offloader version`,
		setup: func(c *cli, fs *pflag.FlagSet) func() int {
			return func() int {
				fmt.Fprintf(c.stdout, "offloader %s (commit %s, %s, librdkafka %s)\n", version, commit, runtime.Version(), client.LibraryVersion())
				return exitOK
			}
		},
	}
}

package main

import (
	"io"
	"strings"
)

// failure is what a command asked for --output json prints when it fails
// before printing its own document: tools piping it into jq get a document
// whatever happened (docs/schemas/failure.json).
type failure struct {
	OK       bool   `json:"ok"`
	ExitCode int    `json:"exit_code"`
	Error    string `json:"error"`
}

// wantsJSON reports whether args ask for --output json (or --json, its
// older spelling), before any flag is parsed: a flag error is a failure too.
func wantsJSON(args []string) bool {
	for i, a := range args {
		switch {
		case a == "--":
			return false
		case a == "--json" || a == "--json=true" || a == "--output=json":
			return true
		case a == "--output" && i+1 < len(args) && args[i+1] == "json":
			return true
		}
	}
	return false
}

// countingWriter counts what goes through it.
type countingWriter struct {
	w io.Writer
	n int
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += n
	return n, err
}

// tail keeps the last max bytes written to it: a daemon's log on stderr
// runs for days.
type tail struct {
	buf []byte
	max int
}

func (t *tail) Write(p []byte) (int, error) {
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

// jsonOnFailure runs run (which prints to c's streams) and, if it fails
// having printed nothing to stdout, prints a failure document whose error
// is the end of what it wrote to stderr (pflag's deprecation notices left
// out).
func (c *cli) jsonOnFailure(run func() int) int {
	stdout, stderr := c.stdout, c.stderr
	out := &countingWriter{w: stdout}
	said := &tail{max: 8 << 10}
	c.stdout, c.stderr = out, io.MultiWriter(stderr, said)
	code := run()
	c.stdout, c.stderr = stdout, stderr
	if code == exitOK || out.n > 0 {
		return code
	}
	var lines []string
	for _, line := range strings.Split(strings.TrimSpace(string(said.buf)), "\n") {
		if !(strings.HasPrefix(line, "Flag --") && strings.Contains(line, " has been deprecated, ")) {
			lines = append(lines, line)
		}
	}
	printJSON(stdout, failure{ExitCode: code, Error: strings.Join(lines, "\n")})
	return code
}

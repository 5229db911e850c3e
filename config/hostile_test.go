package config_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strings"
	"syscall"
	"testing"

	"github.com/offloader/offloader/config"
	"github.com/offloader/offloader/settings"
)

// allocatedBy returns the heap bytes f allocated (runtime/metrics).
func allocatedBy(f func()) uint64 {
	read := func() uint64 {
		s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
		metrics.Read(s)
		return s[0].Value.Uint64()
	}
	runtime.GC()
	before := read()
	f()
	return read() - before
}

func problemText(t *testing.T, err error) string {
	t.Helper()
	var problems settings.Problems
	if !errors.As(err, &problems) {
		t.Fatalf("Load = %v, want settings.Problems", err)
	}
	return problems.Error()
}

// TestPipelineFilesAreBounded: a huge file, a device, a FIFO, deep nesting
// and a flood of pipelines each cost a clear problem and little memory, not
// gigabytes before an answer.
func TestPipelineFilesAreBounded(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	deep := func(maps int) string {
		var b strings.Builder
		b.WriteString("pipelines:\n")
		for i := range maps {
			fmt.Fprintf(&b, "  p%d: %s1%s\n", i, strings.Repeat("{a: ", 10_000), strings.Repeat("}", 10_000))
		}
		return b.String()
	}
	var tiny strings.Builder
	tiny.WriteString("pipelines:\n")
	for i := 0; tiny.Len() < config.MaxFileSize-32; i++ {
		fmt.Fprintf(&tiny, " p%d: {}\n", i)
	}
	var manyProperties strings.Builder
	manyProperties.WriteString("pipelines:\n  a:\n    kafka:\n      consumer:\n")
	for i := 0; manyProperties.Len() < config.MaxFileSize-32; i++ {
		fmt.Fprintf(&manyProperties, "        k%d: 1\n", i)
	}
	cases := []struct {
		name, path, want string
	}{
		{"5 MiB file", writeFile(t, "pipelines: {}\n# "+strings.Repeat("x", 5<<20)), "a pipeline file may be at most 4194304"},
		{"/dev/zero", "/dev/zero", "is not a regular file (it is a device)"},
		{"a FIFO", fifo, "is not a regular file (it is a named pipe)"},
		{"a directory", dir, "is not a regular file (it is a directory)"},
		{"one 10,000-deep map", writeFile(t, deep(1)), "nest deeper than 64 levels"},
		{"two 10,000-deep maps", writeFile(t, deep(2)), "nest deeper than 64 levels"},
		{"half a million tiny pipelines", writeFile(t, tiny.String()), "keys; at most 1000 (a file defines at most 1000 pipelines"},
		{"200,000 librdkafka properties", writeFile(t, manyProperties.String()), "keys; at most 1000"},
	}
	for _, c := range cases {
		var err error
		n := allocatedBy(func() { _, err = config.Load(c.path, config.Options{}) })
		if text := problemText(t, err); !strings.Contains(text, c.want) {
			t.Errorf("%s: %q, want it to say %q", c.name, text, c.want)
		}
		if n > 512<<20 {
			t.Errorf("%s: loading allocated %d MiB", c.name, n>>20)
		}
	}
}

// TestProblemsAreBoundedAndQuoteNoSecret: a value from the environment that
// lands in the wrong field, or one under a secret's key, is never quoted; a
// long value is cut; a file with hundreds of problems lists fifty.
func TestProblemsAreBoundedAndQuoteNoSecret(t *testing.T) {
	secret := "hunter2-kafka-password"
	body := `
pipelines:
  orders:
    kafka: {bootstrap_servers: "${KAFKA_PASSWORD}", consumer: {sasl.password: 5}}
    source: {topics: [orders.raw], group: g}
    slim_topic: orders.slim
    partitioning: ${KAFKA_PASSWORD}
    limits: "prefix-${KAFKA_PASSWORD}"
    observability: {log_level: "` + strings.Repeat("v", 3<<20) + `"}
`
	_, err := config.Load(writeFile(t, body), config.Options{Environ: []string{"KAFKA_PASSWORD=" + secret}})
	text := problemText(t, err)
	if strings.Contains(text, "hunter2") {
		t.Errorf("a problem quotes the secret from the environment:\n%s", text)
	}
	for _, want := range []string{"pipelines.orders.partitioning: must be", "<${KAFKA_PASSWORD}>", "pipelines.orders.observability.log_level"} {
		if !strings.Contains(text, want) {
			t.Errorf("problems do not say %q:\n%.2000s", want, text)
		}
	}
	if len(text) > 4000 {
		t.Errorf("the problems take %d bytes: a 3 MiB value was echoed", len(text))
	}

	var many strings.Builder
	many.WriteString(minimal)
	for i := range 200 {
		fmt.Fprintf(&many, "    unknown_%d: x\n", i)
	}
	text = problemText(t, func() error { _, err := config.Load(writeFile(t, many.String()), config.Options{}); return err }())
	if lines := strings.Count(text, "\n") + 1; lines != settings.MaxShown+1 || !strings.HasSuffix(text, "(and 150 more problems)") {
		t.Errorf("200 problems print as %d lines ending %q", lines, text[max(0, len(text)-40):])
	}
}

// TestNumbersOutOfRangeAreNotWrapped: 1e30 is out of range, not MinInt64.
func TestNumbersOutOfRangeAreNotWrapped(t *testing.T) {
	body := strings.Replace(minimal, "    slim_topic: orders.slim\n", "    slim_topic: orders.slim\n    commit: {max_records: 1e30}\n", 1)
	text := problemText(t, func() error { _, err := config.Load(writeFile(t, body), config.Options{}); return err }())
	if !strings.Contains(text, "pipelines.orders.commit.max_records: 1e+30 is out of range") || strings.Contains(text, "-9223372036854775808") {
		t.Errorf("max_records: 1e30 reports %q", text)
	}
}

// TestTheMemoryBudgetIsBounded: a budget too small to hold a fetch, or so
// large that librdkafka's ranges refuse the sizes derived from it, is refused
// at its path, and so is an upload cap of 0.
func TestTheMemoryBudgetIsBounded(t *testing.T) {
	for _, c := range []struct{ memory, want string }{
		{"{in_flight: 1MiB}", "pipelines.orders.memory.in_flight: must be between 16MiB and 4GiB, got 1MiB"},
		{"{in_flight: 1024GiB}", "pipelines.orders.memory.in_flight: must be between 16MiB and 4GiB, got 1024GiB"},
		{"{max_uploads: 0}", "pipelines.orders.memory.max_uploads: must be between 1 and 1024, got 0"},
	} {
		body := strings.Replace(minimal, "    slim_topic: orders.slim\n", "    slim_topic: orders.slim\n    memory: "+c.memory+"\n", 1)
		text := problemText(t, func() error { _, err := config.Load(writeFile(t, body), config.Options{}); return err }())
		if !strings.Contains(text, c.want) {
			t.Errorf("memory: %s reports %q, want %q", c.memory, text, c.want)
		}
	}
	body := strings.Replace(minimal, "    slim_topic: orders.slim\n", "    slim_topic: orders.slim\n    memory: {in_flight: 4GiB, max_uploads: 64}\n", 1)
	if _, err := config.Load(writeFile(t, body), config.Options{}); err != nil {
		t.Errorf("memory: {in_flight: 4GiB, max_uploads: 64}: %v", err)
	}
}

// TestOverridesAreTakenLiterally: an OFFLOADER_ override is not expanded
// again, so a password containing "${" stays what it is.
func TestOverridesAreTakenLiterally(t *testing.T) {
	f, err := config.Load(writeFile(t, minimal), config.Options{Environ: []string{
		"OFFLOADER_KAFKA__CONSUMER__SASL_PASSWORD=pa${ss}wo$${rd", "ss=changed"}})
	if err != nil {
		t.Fatal(err)
	}
	p, _ := f.Select("")
	if got := p.Kafka.Consumer["sasl.password"]; got != "pa${ss}wo$${rd" {
		t.Errorf("the override reads %q, want it as set", got)
	}
}

// FuzzLoad: no file makes Load panic or accept a file that breaks its bounds.
func FuzzLoad(f *testing.F) {
	f.Add([]byte(minimal))
	f.Add([]byte("pipelines: &a [*a]"))
	f.Add([]byte("a: &a [\"lol\",\"lol\"]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\n"))
	f.Add([]byte("pipelines:\n  a: {}\n  a: {}\n"))
	f.Add([]byte("pipelines: " + strings.Repeat("[", 100) + strings.Repeat("]", 100)))
	f.Add([]byte("pipelines:\n  o:\n    commit: {max_records: 1e30}\n    partitioning: ${X}\n"))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(dir, "fuzz.yaml")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		file, err := config.Load(path, config.Options{Environ: []string{"X=secret-value-from-env"}})
		if err != nil {
			var problems settings.Problems
			if !errors.As(err, &problems) || len(problems) == 0 {
				t.Fatalf("Load failed without problems: %v", err)
			}
			if strings.Contains(err.Error(), "secret-value-from-env") {
				t.Fatalf("a problem quotes the environment's value: %v", err)
			}
			return
		}
		if len(file.Pipelines) == 0 || len(file.Pipelines) > config.MaxKeys {
			t.Fatalf("accepted a file with %d pipelines", len(file.Pipelines))
		}
	})
}

package main

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/spf13/pflag"

	"go.yaml.in/yaml/v3"

	"github.com/offloader/offloader/config"
	"github.com/offloader/offloader/daemon"
	"github.com/offloader/offloader/internal/kafka/client"
	"github.com/offloader/offloader/settings"
	"github.com/offloader/offloader/transforms"
)

func validateCommand() *command {
	return &command{
		name:    "validate",
		summary: "check a pipeline file and list every problem in it",
		usage:   "-F FILE [--with FILE]... [--pipeline NAME] [--print | --output json]",
		help: `
Loads the pipeline file the way 'run' does (environment interpolation, OFFLOADER_
overrides, strict keys, defaults, cross-field rules) without connecting to Kafka
or a store, and checks the kafka.consumer and kafka.producer properties against
the bundled librdkafka (names and values). Exits 0 when the file is valid;
otherwise prints every problem, one per line with its path in the file, and
exits 2:

  pipelines.orders.stores.blob.container: required
  pipelines.orders.commit.interval: must be a duration with a unit such as 100ms, 30s or 5m, got "fast"
  pipelines.orders.kafka.producer.linger.msx: librdkafka refuses "5": No such configuration property: "linger.msx"

Every command that reads a pipeline file (run, check, cat) makes the same checks
first.

Store names that resolve to one physical store (the same account and
container, bucket, URL or directory), in the file and across the files given
with --with (the other pipeline files deployed on the same stores), are named
in a note with what offloader gc does about them.

--print shows the effective configuration of the chosen pipeline with defaults
filled in and secrets redacted. --output json prints the verdict as a document
(docs/schemas/validate.json): valid, the pipelines, every problem with its
path, the warnings and the notes.`,
		example: `offloader validate -F pipeline.yaml
offloader validate -F pipeline.yaml --pipeline orders --print
offloader validate -F orders.yaml --with payments.yaml --with audit.yaml
offloader validate -F pipeline.yaml --output json | jq -r '.problems[] | "\(.path): \(.message)"'`,
		setup: func(c *cli, fs *pflag.FlagSet) func() int {
			src := c.pipelineFlags(fs)
			print := fs.Bool("print", false, "print the effective pipeline configuration, secrets redacted")
			with := fs.StringArray("with", nil, "another pipeline `FILE` deployed on the same stores, repeatable: its stores count in the notes")
			outputFlag(fs)
			return func() int {
				if c.asJSON {
					if *print {
						return c.usageError(fs, "--print prints YAML: it does not go with --output json")
					}
					return c.validateJSON(fs, src, *with)
				}
				f, code, ok := c.loadFile(fs.Name(), src)
				if !ok {
					return code
				}
				files, bad, err := c.loadWith(*with)
				if err != nil {
					c.reportConfigError(bad, err)
					return exitUsage
				}
				files[*src.file] = f
				file, pipeline := src.file, src.name
				p, err := f.Select(*pipeline)
				if err != nil && (*print || *pipeline != "") {
					fmt.Fprintf(c.stderr, "%s: %v\n", *file, err)
					return exitUsage
				}
				if *print {
					out, err := yaml.Marshal(map[string]any{"pipelines": map[string]any{p.Name: settings.Encode(p)}})
					if err != nil {
						fmt.Fprintf(c.stderr, "offloader validate: %v\n", err)
						return exitFailure
					}
					c.stdout.Write(out)
					fmt.Fprint(c.stdout, derived(p))
					return exitOK
				}
				fmt.Fprintf(c.stdout, "%s: valid (%d pipeline%s)\n", *file, len(f.Pipelines), plural(len(f.Pipelines)))
				for _, name := range slices.Sorted(maps.Keys(f.Pipelines)) {
					for _, w := range f.Pipelines[name].Warnings() {
						fmt.Fprintf(c.stderr, "warning: %s\n", w)
					}
				}
				for _, shared := range config.SharedPlaces(files) {
					fmt.Fprintf(c.stdout, "note: %s\n", shared.Note())
				}
				return exitOK
			}
		},
	}
}

// validation is validate's verdict, as --output json prints it
// (docs/schemas/validate.json).
type validation struct {
	File      string             `json:"file"`
	Valid     bool               `json:"valid"`
	Pipelines []string           `json:"pipelines"`
	Problems  []settings.Problem `json:"problems"`
	Warnings  []string           `json:"warnings"`
	// Notes name the store names that resolve to one physical store.
	Notes []string `json:"notes"`
}

// loadWith loads the files of --with, each validated as -F is, by path; a
// failure says which file.
func (c *cli) loadWith(with []string) (files map[string]*config.File, bad string, err error) {
	files = map[string]*config.File{}
	for _, other := range with {
		name := ""
		if files[other], err = c.load(pipelineSource{file: &other, name: &name}); err != nil {
			return nil, other, err
		}
	}
	return files, "", nil
}

// validateJSON prints validate's verdict as JSON; the exit code is
// validate's.
func (c *cli) validateJSON(fs *pflag.FlagSet, src pipelineSource, with []string) int {
	f, err := c.load(src)
	if errors.Is(err, errNoFile) {
		return c.usageError(fs, "%v", err)
	}
	v := validation{File: *src.file, Pipelines: []string{}, Problems: []settings.Problem{}, Warnings: []string{}, Notes: []string{}}
	var files map[string]*config.File
	if err == nil {
		var bad string
		if files, bad, err = c.loadWith(with); err != nil {
			err = fmt.Errorf("--with %s: %w", bad, err)
		} else {
			files[*src.file] = f
		}
	}
	if err == nil {
		_, err = f.Select(*src.name)
	}
	var problems settings.Problems
	switch {
	case errors.As(err, &problems):
		v.Problems = append(v.Problems, problems...)
	case err != nil:
		v.Problems = append(v.Problems, settings.Problem{Message: err.Error()})
	}
	if f != nil && err == nil {
		v.Valid = true
		for _, name := range slices.Sorted(maps.Keys(f.Pipelines)) {
			v.Pipelines = append(v.Pipelines, name)
			v.Warnings = append(v.Warnings, f.Pipelines[name].Warnings()...)
		}
		for _, shared := range config.SharedPlaces(files) {
			v.Notes = append(v.Notes, shared.Note())
		}
	}
	c.printJSON(v)
	if !v.Valid {
		return exitUsage
	}
	return exitOK
}

// derived says, as YAML comments after --print, what run derives from the
// file without a broker: the instance's identity, where a new group starts,
// and where the offload threshold comes from.
func derived(p *config.Pipeline) string {
	var b strings.Builder
	b.WriteString("# derived by run:\n")
	fmt.Fprintf(&b, "#   transactional.id and group.instance.id: %s\n", p.TransactionalID())
	fmt.Fprintf(&b, "#   a new group starts at: %s\n", p.Source.Start())
	thresholds := transforms.Thresholds(daemon.Steps(p))
	for _, i := range slices.Sorted(maps.Keys(thresholds)) {
		if th := thresholds[i]; th.IsAuto() {
			fmt.Fprintf(&b, "#   transforms[%d] threshold: auto, the slim topic's limit (the lower of its max.message.bytes and the producer's message.max.bytes) less %s; offloader check shows the figure\n", i, transforms.AutoThresholdHeadroom)
		} else {
			fmt.Fprintf(&b, "#   transforms[%d] threshold: %s, as set\n", i, th)
		}
	}
	return b.String()
}

// loadFile loads and validates the pipeline file, printing every problem. It
// returns false with the exit code when the command must stop.
func (c *cli) loadFile(cmd string, src pipelineSource) (*config.File, int, bool) {
	f, err := c.load(src)
	if errors.Is(err, errNoFile) {
		fmt.Fprintf(c.stderr, "offloader %s: %v\n", cmd, err)
		return nil, exitUsage, false
	}
	if err != nil {
		c.reportConfigError(*src.file, err)
		return nil, exitUsage, false
	}
	return f, exitOK, true
}

// errNoFile: a command that reads a pipeline file was given none.
var errNoFile = errors.New("-F FILE is required: the pipeline file (--config FILE)")

// load loads and validates the pipeline file. The Kafka client properties
// are checked as the bundled librdkafka reads them, with the file's other
// rules: a typo fails here with its path, not at run time, and beside every
// other problem.
func (c *cli) load(src pipelineSource) (*config.File, error) {
	if *src.file == "" {
		return nil, errNoFile
	}
	return config.Load(*src.file, config.Options{Pipeline: *src.name, Environ: c.environ,
		CheckKafka: func(path string, p *config.Pipeline) settings.Problems {
			return client.CheckProperties(path, daemon.KafkaClient(p))
		}})
}

// loadPipeline loads the file and selects the pipeline --pipeline names (or the
// file's only one), reporting problems as loadFile does.
func (c *cli) loadPipeline(cmd string, src pipelineSource) (*config.Pipeline, int, bool) {
	f, code, ok := c.loadFile(cmd, src)
	if !ok {
		return nil, code, false
	}
	p, err := f.Select(*src.name)
	if err != nil {
		fmt.Fprintf(c.stderr, "%s: %v\n", *src.file, err)
		return nil, exitUsage, false
	}
	return p, exitOK, true
}

// reportConfigError prints every problem of a pipeline file, one per line.
func (c *cli) reportConfigError(file string, err error) {
	var problems settings.Problems
	if errors.As(err, &problems) {
		fmt.Fprintf(c.stderr, "%s: %d problem%s:\n", file, len(problems), plural(len(problems)))
		shown, more := problems.Shown()
		for _, p := range shown {
			fmt.Fprintf(c.stderr, "  %s\n", p)
		}
		if more > 0 {
			fmt.Fprintf(c.stderr, "  (and %d more: fix these first)\n", more)
		}
		return
	}
	fmt.Fprintf(c.stderr, "%s: %v\n", file, err)
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

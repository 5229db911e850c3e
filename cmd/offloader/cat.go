package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/term"

	"github.com/offloader/offloader/cat"
	"github.com/offloader/offloader/config"
	"github.com/offloader/offloader/internal/kafka"
	"github.com/offloader/offloader/resolver"
	"github.com/offloader/offloader/settings"
	"github.com/offloader/offloader/stores"
)

func catCommand() *command {
	return &command{
		name:    "cat",
		summary: "print a topic's records with pointers resolved and verified, like kcat for slim topics",
		usage:   "[-F FILE] [-b BROKERS] -t TOPIC [-p N] [-o START] [-c COUNT] [-f FORMAT] [--meta] [--store NAME=TYPE:SPEC]",
		help: `
Reads a topic (read_committed, without joining a consumer group or committing
anything) and prints each record with pointers resolved: the payload fetched
from its store, its size and SHA-256 verified, the codec undone.

Where to read, with kcat's flags:
  -b BROKERS      bootstrap servers (default: the pipeline file's)
  -X PROP=VALUE   a librdkafka consumer property (security.protocol, sasl.*), repeatable
  -t TOPIC        the topic (default: the pipeline file's slim topic)
  -p N            only partition N (repeatable; default: every partition)
  -o START        beginning (default), end (only new records: keeps reading),
                  N (offset N in each partition), -N (the last N records of
                  each partition), @TIME (the first record at or after TIME:
                  RFC 3339 such as @2026-11-29T10:00:00Z, or milliseconds
                  since the epoch such as @1764410400000)
  -c COUNT        stop after COUNT records (as -c FILE, a pipeline file)
  --follow        keep reading at the end until interrupted
Without --follow it stops once it has reached the end of every partition.

Where the payloads are, either or both:
  -F FILE [--pipeline NAME]   the pipeline file: brokers, client settings, stores
  --store NAME=TYPE:SPEC      a store by the name pointers use, repeatable:
                              blob=azblob:CONNECTION_STRING|CONTAINER
                              local=filesystem:/var/lib/offloader/payloads

What to print:
  --format json   (default) one JSON object per line: topic, partition,
                  offset, timestamp, key, headers, value, size, sha256, and
                  the pointer the value came from. Text is a JSON string; a
                  key, header value or value that is not UTF-8 is base64 with
                  "key_encoding", "value_encoding": "base64" beside it.
  --format raw    the values alone, each followed by a newline.
  -f FORMAT       kcat's format string: %t topic, %p partition, %o offset,
                  %T timestamp (ms), %k key, %K key size, %s value, %S value
                  size, %h headers (name=value,...), %P pointer (store/key, or
                  nothing), %% a percent sign; \n \t \r \\ escapes. Keys and
                  headers are printed escaped (\xNN for a byte that is not
                  printable text, \\ for a backslash), so that nothing is mangled.
  --meta          metadata only: pointer fields and sizes, no payload is
                  fetched and no store is needed.
  --payload-dir DIR
                  write each value over --inline-max or not UTF-8 to a file in
                  DIR (named TOPIC-PARTITION-OFFSET) and print its path
                  instead; without it values are printed whole (use --meta
                  to see sizes and pointers without payloads).

A record whose pointer cannot be resolved (missing object, wrong checksum,
forged pointer, a store not given) does not stop the listing: in json it is
printed with its stored value and an "error" member, otherwise the error goes
to stderr. --no-resolve prints every record as stored, pointers as their JSON.

Exit 1 when a record could not be resolved (after printing the rest; use
--not-found skip or pointer to accept missing objects) or Kafka failed, 2 on
bad flags.

Examples:
  offloader cat -b 127.0.0.1:19092 -t payments.slim --meta -o -5
  offloader cat -F pipeline.yaml -p 0 -o 120 -c 10 -f '%o %k %S\n'
  offloader cat -b HOST:9092 -t payments.slim --store payloads=filesystem:./payloads --payload-dir out/`,
		run: func(c *cli, args []string) int {
			fs := c.flags(find("cat"))
			o := catOptions{props: map[string]string{}}
			var file, pipelineName, from, format, notFound, maxSize, inlineMax, fmtString string
			var count countOrFile
			fs.StringVar(&file, "F", "", "pipeline `FILE` (YAML): brokers, client settings, stores")
			fs.Var(&count, "c", "stop after `COUNT` records (a value that is not a number is a pipeline FILE, as for the other commands)")
			fs.StringVar(&pipelineName, "pipeline", "", "pipeline `NAME`; optional when the file defines one")
			fs.StringVar(&o.bootstrap, "b", "", "bootstrap `BROKERS` (default: the pipeline file's)")
			fs.Func("X", "librdkafka consumer `PROP=VALUE`, repeatable", func(s string) error {
				k, v, ok := strings.Cut(s, "=")
				if !ok || k == "" {
					return fmt.Errorf("want PROP=VALUE, got %q", s)
				}
				o.props[k] = v
				return nil
			})
			fs.StringVar(&o.topic, "t", "", "`TOPIC` to read (default: the pipeline's slim topic)")
			fs.StringVar(&o.topic, "topic", "", "the same as -t")
			fs.Func("p", "only partition `N`, repeatable", func(s string) error {
				n, err := strconv.ParseInt(s, 10, 32)
				if err != nil || n < 0 {
					return fmt.Errorf("want a partition number, got %q", s)
				}
				o.partitions = append(o.partitions, int32(n))
				return nil
			})
			fs.StringVar(&from, "o", "beginning", "`START`: beginning, end, N, -N or @TIME")
			fs.StringVar(&from, "from", "beginning", "the same as -o (also offset:N and time:RFC3339)")
			fs.IntVar(&o.count, "count", 0, "the same as -c COUNT (0: no limit)")
			fs.StringVar(&format, "format", "json", "json or raw")
			fs.StringVar(&fmtString, "f", "", "kcat `FORMAT` string, such as '%t[%p]@%o %k %S\\n'")
			fs.BoolVar(&o.follow, "follow", false, "keep reading at the end of the topic until interrupted")
			fs.BoolVar(&o.meta, "meta", false, "metadata only: pointer fields and sizes, fetch no payload")
			fs.StringVar(&notFound, "not-found", "error", "a missing object: error, skip (leave the record out) or pointer (print the pointer)")
			fs.BoolVar(&o.noResolve, "no-resolve", false, "print records as stored, pointers unresolved")
			fs.Func("store", "a payload store `NAME=TYPE:SPEC`, repeatable (blob=azblob:CONNSTR|CONTAINER, local=filesystem:DIR)", func(s string) error {
				name, rest, ok := strings.Cut(s, "=")
				typ, spec, ok2 := strings.Cut(rest, ":")
				if !ok || !ok2 || name == "" {
					return fmt.Errorf("want NAME=TYPE:SPEC such as blob=azblob:CONNSTR|CONTAINER, got a value without %s", map[bool]string{true: "TYPE:", false: "NAME="}[ok])
				}
				cfg, err := stores.FromSpec("--store "+name, typ, spec)
				if err != nil {
					return err
				}
				o.stores = append(o.stores, givenStore{name, typ, cfg})
				return nil
			})
			fs.StringVar(&o.payloadDir, "payload-dir", "", "write large or binary values to files in `DIR`")
			fs.StringVar(&inlineMax, "inline-max", "64KiB", "with --payload-dir: the largest value printed in place")
			fs.StringVar(&maxSize, "max-size", "64MiB", "refuse payloads larger than this")
			if code, ok := c.parse(fs, args); !ok {
				return code
			}
			if count.file != "" {
				file = count.file
			} else if count.set {
				o.count = count.n
			}
			policy, ok := map[string]resolver.NotFound{"error": resolver.NotFoundError, "skip": resolver.NotFoundSkip, "pointer": resolver.NotFoundKeepPointer}[notFound]
			size, sizeErr := settings.ParseSize(maxSize)
			inline, inlineErr := settings.ParseSize(inlineMax)
			start, fromErr := parseStart(from)
			var err error
			switch {
			case !ok:
				return c.usageError(fs, "--not-found must be error, skip or pointer, got %q", notFound)
			case sizeErr != nil:
				return c.usageError(fs, "--max-size: %v", sizeErr)
			case inlineErr != nil:
				return c.usageError(fs, "--inline-max: %v", inlineErr)
			case fromErr != nil:
				return c.usageError(fs, "-o: %v", fromErr)
			case format != "json" && format != "raw":
				return c.usageError(fs, "--format must be json or raw, got %q", format)
			case o.count < 0:
				return c.usageError(fs, "-c must not be negative")
			case o.meta && (format == "raw" || strings.Contains(fmtString, "%s")):
				return c.usageError(fs, "--meta prints no values: it does not go with --format raw or %%s")
			}
			if problems := kafka.CheckClientProperties("-X", "consumer", o.props); len(problems) > 0 {
				return c.usageError(fs, "%v", problems.Err())
			}
			if o.printer, err = cat.NewPrinter(format, fmtString, c.recordsOut()); err != nil {
				return c.usageError(fs, "-f: %v", err)
			}
			o.from, o.inlineMax = start, int(inline)
			if file == "" && o.bootstrap == "" {
				return c.usageError(fs, "say where to read: -b BROKERS -t TOPIC, or -F FILE (a pipeline file)")
			}
			var p *config.Pipeline
			if file != "" {
				var code int
				if p, code, ok = c.loadPipeline(fs.Name(), pipelineSource{file: &file, name: &pipelineName}); !ok {
					return code
				}
				if o.bootstrap == "" {
					o.bootstrap = p.Kafka.BootstrapServers
				}
				if o.topic == "" {
					o.topic = p.SlimTopic
				}
				for k, v := range p.Kafka.Consumer {
					if _, given := o.props[k]; !given {
						o.props[k] = v
					}
				}
			}
			if o.topic == "" {
				return c.usageError(fs, "-t TOPIC is required without a pipeline file")
			}
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			var res *resolver.Resolver
			if !o.noResolve && !o.meta {
				open, err := openCatStores(ctx, p, o.stores)
				if err != nil {
					fmt.Fprintf(c.stderr, "offloader cat: %v\n", err)
					return exitFailure
				}
				res = resolver.New(resolver.Options{Stores: open, MaxSize: int64(size), NotFound: policy})
				defer res.Close()
			}
			if err := catTopic(ctx, res, o, c.stderr); err != nil {
				fmt.Fprintf(c.stderr, "offloader cat: %v\n", err)
				return exitFailure
			}
			return exitOK
		},
	}
}

type catOptions struct {
	bootstrap, topic        string
	props                   map[string]string
	partitions              []int32
	from                    kafka.Start
	count                   int
	follow, noResolve, meta bool
	stores                  []givenStore // from --store
	printer                 cat.Printer
	payloadDir              string
	inlineMax               int
}

// givenStore is a store given with --store.
type givenStore struct {
	name, typ string
	config    any
}

// countOrFile is cat's -c: kcat's record count, or, when it is not a
// number, the pipeline file that -c names for every other command.
type countOrFile struct {
	n    int
	file string
	set  bool
}

func (c *countOrFile) String() string { return "" }

func (c *countOrFile) Set(s string) error {
	c.set = true
	if n, err := strconv.Atoi(s); err == nil {
		if n < 0 {
			return fmt.Errorf("a count must not be negative, got %d", n)
		}
		c.n = n
		return nil
	}
	c.file = s
	return nil
}

// usageError reports a bad flag value with exit code 2.
func (c *cli) usageError(fs *flag.FlagSet, format string, args ...any) int {
	fmt.Fprintf(c.stderr, "offloader %s: %s\n", fs.Name(), fmt.Sprintf(format, args...))
	return exitUsage
}

// parseStart reads -o (and the older --from forms offset:N and time:T).
func parseStart(s string) (kafka.Start, error) {
	switch {
	case s == "beginning":
		return kafka.Start{Offset: kafka.Beginning}, nil
	case s == "end":
		return kafka.Start{Offset: kafka.End}, nil
	case strings.HasPrefix(s, "offset:"):
		return parseStart(strings.TrimPrefix(s, "offset:"))
	case strings.HasPrefix(s, "time:"):
		return parseStart("@" + strings.TrimPrefix(s, "time:"))
	case strings.HasPrefix(s, "@"), strings.HasPrefix(s, "s@"):
		at := s[strings.Index(s, "@")+1:]
		if ms, err := strconv.ParseInt(at, 10, 64); err == nil && ms >= 0 {
			return kafka.Start{Time: time.UnixMilli(ms)}, nil
		}
		t, err := time.Parse(time.RFC3339, at)
		if err != nil {
			return kafka.Start{}, fmt.Errorf("@TIME needs an RFC 3339 time such as @2026-11-29T10:00:00Z or milliseconds since the epoch, got %q", s)
		}
		return kafka.Start{Time: t}, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	switch {
	case err != nil:
		return kafka.Start{}, fmt.Errorf("want beginning, end, N, -N or @TIME, got %q", s)
	case n < 0:
		return kafka.Start{Tail: -n}, nil
	}
	return kafka.Start{Offset: n}, nil
}

// openCatStores opens the pipeline file's stores and those given with
// --store (which win on a name both have).
func openCatStores(ctx context.Context, p *config.Pipeline, given []givenStore) (map[string]stores.Store, error) {
	open := map[string]stores.Store{}
	if p != nil {
		var err error
		if open, err = p.OpenStores(ctx); err != nil {
			return nil, err
		}
	}
	for _, spec := range given {
		name := spec.name
		s, err := stores.Open(ctx, name, spec.typ, spec.config)
		if err != nil {
			for _, o := range open {
				o.Close()
			}
			return nil, fmt.Errorf("--store %s: %w", name, err)
		}
		if old, ok := open[name]; ok {
			old.Close()
		}
		open[name] = s
	}
	return open, nil
}

// catTopic prints the topic's records (cat.Print) as they are read from
// the cluster.
func catTopic(ctx context.Context, res *resolver.Resolver, o catOptions, errOut io.Writer) error {
	r, err := kafka.OpenReader(kafka.ReaderOptions{
		Bootstrap: o.bootstrap, Properties: o.props, Topic: o.topic,
		Partitions: o.partitions, From: o.from, Follow: o.follow,
	})
	if err != nil {
		return err
	}
	defer r.Close()
	return cat.Print(ctx, r, res, cat.Options{Topic: o.topic, End: kafka.ErrEnd, Count: o.count, Meta: o.meta,
		PayloadDir: o.payloadDir, InlineMax: o.inlineMax, Printer: o.printer}, errOut)
}

// isTerminal reports whether w is a terminal, through the writers that
// wrap it (redact.Writer).
func isTerminal(w io.Writer) bool {
	for {
		switch v := w.(type) {
		case *os.File:
			return term.IsTerminal(int(v.Fd()))
		case interface{ Unwrap() io.Writer }:
			w = v.Unwrap()
		default:
			return false
		}
	}
}

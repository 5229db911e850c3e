package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"golang.org/x/term"

	"github.com/offloader/offloader/cat"
	"github.com/offloader/offloader/config"
	"github.com/offloader/offloader/daemon"
	"github.com/offloader/offloader/internal/kafka/client"
	"github.com/offloader/offloader/internal/kafka/reader"
	"github.com/offloader/offloader/resolver"
	"github.com/offloader/offloader/settings"
	"github.com/offloader/offloader/stores"
)

func catCommand() *command {
	return &command{
		name:      "cat",
		summary:   "print a topic's records with pointers resolved and verified, like kcat for slim topics",
		usage:     "[-F FILE] [-b BROKERS] -t TOPIC [-p N] [-o START] [-c COUNT] [-e | --follow] [-f FORMAT | -J | --format json|raw] [--meta] [--store NAME=TYPE:SPEC]",
		exclusive: [][]string{{"exit", "follow"}, {"format", "format-string", "json-envelope"}},
		help: `
Reads a topic (read_committed, without joining a consumer group or committing
anything) and prints each record with pointers resolved: the payload fetched
from its store, its size and SHA-256 verified, the codec undone.

Where to read, with kcat's flags:
  -b, --brokers BROKERS     bootstrap servers (default: the pipeline file's)
  -X PROP=VALUE             a librdkafka consumer property (security.protocol, sasl.*), repeatable;
                            isolation.level=read_uncommitted reads open and aborted
                            transactions' records too (read_committed by default);
                            the properties cat sets itself (group.id, auto.offset.reset,
                            enable.auto.commit, enable.partition.eof) are refused
  -t, --topic TOPIC         the topic (default: the pipeline file's slim topic)
  -p, --partition N         only partition N (repeatable; default: every partition)
  -o, --offset START        beginning (default), end (only new records: keeps
                            reading), N (offset N in each partition), -N (the
                            last N records of each partition, found from the end
                            offsets without reading the rest), @TIME or s@TIME
                            (the first record at or after TIME: RFC 3339 such as
                            @2026-11-29T10:00:00Z, or milliseconds since the
                            epoch such as @1764410400000)
  -c, --count COUNT         stop after COUNT records
  -e, --exit                stop at the end of every partition: the default,
                            except from -o end (only new records), which
                            keeps reading unless -e is given
  --follow                  keep reading at the end until interrupted
  -C                        consumer mode: accepted as kcat takes it (cat only consumes)
  -q, --quiet               no informational messages on stderr ("% Reached end of topic")

Where the payloads are, either or both:
  -F, --config FILE [--pipeline NAME]
                              the pipeline file: brokers, client settings, stores
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
  -J, --json-envelope
                  kcat's JSON envelope: topic, partition, offset, tstype, ts,
                  broker (-1: not known), headers (a flat name, value list),
                  key, payload (the resolved value) and, for a value that did
                  not resolve, error. As in kcat, bytes are written as a JSON
                  string: a byte that is not UTF-8 becomes U+FFFD, so a binary
                  key, header value or payload is garbled. With --base64 they
                  are written in base64 (standard, padded), byte for byte.
  -f, --format-string FORMAT
                  kcat's format string: %t topic, %p partition, %o offset,
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

A whole-record dead-letter entry (a record whose key or headers alone did not
fit the dead-letter topic, stored whole: header offloader-record: v1) prints as
the record it stands for, its original key, value and headers; in json a
"dead_letter" member beside them holds the original's topic, partition,
offset and timestamp and the dead-letter record's own headers (the failure).

A record whose pointer cannot be resolved (missing object, wrong checksum,
forged pointer, a store not given) does not stop the listing: in json it is
printed with its stored value and an "error" member, otherwise the error goes
to stderr. --no-resolve prints every record as stored, pointers as their JSON.

Exit 1 when a record could not be resolved (after printing the rest; use
--not-found skip or pointer to accept missing objects) or Kafka failed, 2 on
bad flags.`,
		example: `offloader cat -b 127.0.0.1:19092 -t payments.slim --meta -o -5
offloader cat -F pipeline.yaml -p 0 -o 120 -c 10 -f '%o %k %S\n'
offloader cat -b HOST:9092 -t payments.slim --store payloads=filesystem:./payloads --payload-dir out/`,
		setup: func(c *cli, fs *pflag.FlagSet) func() int {
			o := catOptions{props: map[string]string{}}
			var file, pipelineName, from, format, notFound, maxSize, inlineMax, fmtString string
			var quiet bool
			fs.StringVarP(&file, "config", "F", "", "pipeline `FILE` (YAML): brokers, client settings, stores")
			fs.StringVar(&pipelineName, "pipeline", "", "pipeline `NAME`; optional when the file defines one")
			fs.StringVarP(&o.bootstrap, "brokers", "b", "", "bootstrap `BROKERS` (default: the pipeline file's)")
			propertyFlag(fs, "consumer", o.props)
			fs.StringVarP(&o.topic, "topic", "t", "", "`TOPIC` to read (default: the pipeline's slim topic)")
			partitionFlag(fs, &o.partitions)
			fs.StringVarP(&from, "offset", "o", "beginning", "`START`: beginning, end, N, -N (the last N of each partition) or @TIME")
			fs.IntVarP(&o.count, "count", "c", 0, "stop after `COUNT` records (0: no limit)")
			fs.BoolVarP(&o.stopAtEnd, "exit", "e", false, "stop at the end of every partition (kcat's -e; the default, except from -o end)")
			fs.BoolVar(&o.follow, "follow", false, "keep reading at the end of the topic until interrupted")
			fs.BoolP("consume", "C", false, "consumer mode (kcat's -C; cat only consumes)")
			fs.StringVar(&format, "format", "json", "`FORMAT`: json or raw")
			fs.StringVarP(&fmtString, "format-string", "f", "", "kcat `FORMAT` string, such as '%t[%p]@%o %k %S\\n'")
			fs.BoolVarP(&o.kcatJSON, "json-envelope", "J", false, "kcat's JSON envelope, one object per record")
			fs.BoolVar(&o.base64, "base64", false, "with -J: keys, header values and payloads in base64, byte for byte")
			fs.BoolVarP(&quiet, "quiet", "q", false, "print no informational messages on stderr (kcat's -q)")
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
			return func() int {
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
				if problems := client.CheckReaderProperties("-X", o.props, true); len(problems) > 0 {
					return c.usageError(fs, "%v", problems.Err())
				}
				if o.uncommitted, err = client.ReaderIsolation(o.props); err != nil {
					return c.usageError(fs, "-X %v", err)
				}
				if problems := client.CheckClientProperties("-X", "consumer", o.props); len(problems) > 0 {
					return c.usageError(fs, "%v", problems.Err())
				}
				switch {
				case o.base64 && !o.kcatJSON:
					return c.usageError(fs, "--base64 is the encoding of -J's envelope; --format json gives a binary value in base64 by itself")
				case o.kcatJSON && o.base64:
					format = "kcat-json-base64"
				case o.kcatJSON:
					format = "kcat-json"
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
				if !quiet && !o.follow && ctx.Err() == nil {
					fmt.Fprintf(c.stderr, "%% Reached end of topic %s: exiting\n", o.topic)
				}
				return exitOK
			}
		},
	}
}

type catOptions struct {
	bootstrap, topic        string
	props                   map[string]string
	partitions              []int32
	from                    reader.Start
	count                   int
	follow, noResolve, meta bool
	kcatJSON, base64        bool         // -J, --base64
	uncommitted             bool         // -X isolation.level=read_uncommitted
	stopAtEnd               bool         // -e: stop at the end, even from -o end
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

// parseStart reads -o (and the older --from forms offset:N and time:T).
func parseStart(s string) (reader.Start, error) {
	switch {
	case s == "beginning":
		return reader.Start{Offset: reader.Beginning}, nil
	case s == "end":
		return reader.Start{Offset: reader.End}, nil
	case strings.HasPrefix(s, "offset:"):
		return parseStart(strings.TrimPrefix(s, "offset:"))
	case strings.HasPrefix(s, "time:"):
		return parseStart("@" + strings.TrimPrefix(s, "time:"))
	case strings.HasPrefix(s, "@"), strings.HasPrefix(s, "s@"):
		at := s[strings.Index(s, "@")+1:]
		if ms, err := strconv.ParseInt(at, 10, 64); err == nil && ms >= 0 {
			return reader.Start{Time: time.UnixMilli(ms)}, nil
		}
		t, err := time.Parse(time.RFC3339, at)
		if err != nil {
			return reader.Start{}, fmt.Errorf("@TIME needs an RFC 3339 time such as @2026-11-29T10:00:00Z or milliseconds since the epoch, got %q", s)
		}
		return reader.Start{Time: t}, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	switch {
	case err != nil:
		return reader.Start{}, fmt.Errorf("want beginning, end, N, -N or @TIME, got %q", s)
	case n < 0:
		return reader.Start{Tail: -n}, nil
	}
	return reader.Start{Offset: n}, nil
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

// catTopic prints the topic's records (daemon.Cat) as they are read from
// the cluster.
func catTopic(ctx context.Context, res *resolver.Resolver, o catOptions, errOut io.Writer) error {
	return daemon.Cat(ctx, res, daemon.CatOptions{Bootstrap: o.bootstrap, Properties: o.props, Topic: o.topic,
		Partitions: o.partitions, From: o.from, Follow: o.follow, StopAtEnd: o.stopAtEnd, Uncommitted: o.uncommitted,
		List: cat.Options{Count: o.count, Meta: o.meta, PayloadDir: o.payloadDir, InlineMax: o.inlineMax, Printer: o.printer}}, errOut)
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

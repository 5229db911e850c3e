package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/offloader/offloader/config"
	"github.com/offloader/offloader/internal/kafkaedge"
	"github.com/offloader/offloader/pipeline"
	"github.com/offloader/offloader/pointer"
	"github.com/offloader/offloader/resolver"
	"github.com/offloader/offloader/settings"
)

func catCommand() *command {
	return &command{
		name:    "cat",
		summary: "print a topic's records with pointers resolved, like kcat for slim topics",
		usage:   "-c FILE [--pipeline NAME] [--topic T] [--from beginning|end|offset:N|time:RFC3339] [--count N] [--format json|raw] [--no-resolve]",
		help: `
Reads a topic (read_committed, without joining a consumer group or committing
anything) and prints each record with pointers resolved through the pipeline's
stores: sizes and SHA-256 verified, codecs undone. The pipeline file gives the
bootstrap servers, the client settings and the store definitions; --topic
defaults to the pipeline's slim topic; give the dead-letter topic's name to
look at failures (a dead-letter record whose key or headers were too large
points to the whole original record, printed as its JSON: see
docs/pointer-format.md).

A record whose pointer cannot be resolved (missing object, wrong checksum,
forged pointer) does not stop the listing: in json it is printed with its
stored value and an "error" member, in raw the error goes to stderr. --no-resolve
prints every record as stored, pointers as their JSON, and needs no store.

--from: beginning (default), end (only new records; implies --follow),
offset:N (each partition from offset N), time:2026-11-29T10:00:00Z.
Without --follow it stops once it has reached the end of every partition.

--format json (default): one JSON object per line with topic, partition,
offset, timestamp, key, headers, value (UTF-8 text, or base64 with
"value_encoding":"base64"), size and the pointer it came from. raw: the values
alone, each followed by a newline.

Exit 1 when a record could not be resolved (after printing the rest; use
--not-found skip or pointer to accept missing objects) or Kafka failed, 2 on
bad flags.`,
		run: func(c *cli, args []string) int {
			fs := c.flags(find("cat"))
			src := c.pipelineFlags(fs)
			o := catOptions{}
			fs.StringVar(&o.topic, "topic", "", "topic to read (default: the pipeline's slim topic)")
			fs.StringVar(&o.from, "from", "beginning", "where to start: beginning, end, offset:N or time:RFC3339")
			fs.IntVar(&o.count, "count", 0, "stop after this many records (0: no limit)")
			fs.StringVar(&o.format, "format", "json", "json or raw")
			fs.BoolVar(&o.follow, "follow", false, "keep reading at the end of the topic until interrupted")
			fs.StringVar(&o.notFound, "not-found", "error", "a missing object: error, skip (leave the record out) or pointer (print the pointer)")
			fs.BoolVar(&o.noResolve, "no-resolve", false, "print records as stored, pointers unresolved")
			maxSize := fs.String("max-size", "64MiB", "refuse payloads larger than this")
			if code, ok := c.parse(fs, args); !ok {
				return code
			}
			policy, ok := map[string]resolver.NotFound{"error": resolver.NotFoundError, "skip": resolver.NotFoundSkip, "pointer": resolver.NotFoundKeepPointer}[o.notFound]
			size, err := settings.ParseSize(*maxSize)
			switch {
			case !ok:
				return c.usageError(fs, "--not-found must be error, skip or pointer, got %q", o.notFound)
			case err != nil:
				return c.usageError(fs, "--max-size: %v", err)
			case o.format != "json" && o.format != "raw":
				return c.usageError(fs, "--format must be json or raw, got %q", o.format)
			case o.count < 0:
				return c.usageError(fs, "--count must not be negative")
			}
			if _, err := parseFrom(o.from); err != nil {
				return c.usageError(fs, "--from: %v", err)
			}
			p, code, ok := c.loadPipeline(fs.Name(), src)
			if !ok {
				return code
			}
			if o.topic == "" {
				o.topic = p.SlimTopic
			}
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			var res *resolver.Resolver
			if !o.noResolve {
				open, err := p.OpenStores(ctx)
				if err != nil {
					fmt.Fprintf(c.stderr, "offloader cat: %v\n", err)
					return exitFailure
				}
				res = resolver.New(resolver.Options{Stores: open, MaxSize: int64(size), NotFound: policy})
				defer res.Close()
			}
			if err := catTopic(ctx, p, res, o, c.stdout, c.stderr); err != nil {
				fmt.Fprintf(c.stderr, "offloader cat: %v\n", err)
				return exitFailure
			}
			return exitOK
		},
	}
}

type catOptions struct {
	topic, from, format, notFound string
	count                         int
	follow, noResolve             bool
}

// usageError reports a bad flag value with exit code 2.
func (c *cli) usageError(fs *flag.FlagSet, format string, args ...any) int {
	fmt.Fprintf(c.stderr, "offloader %s: %s\n", fs.Name(), fmt.Sprintf(format, args...))
	return exitUsage
}

func parseFrom(s string) (kafkaedge.Start, error) {
	switch {
	case s == "beginning":
		return kafkaedge.Start{Offset: kafkaedge.Beginning}, nil
	case s == "end":
		return kafkaedge.Start{Offset: kafkaedge.End}, nil
	case strings.HasPrefix(s, "offset:"):
		n, err := strconv.ParseInt(strings.TrimPrefix(s, "offset:"), 10, 64)
		if err != nil || n < 0 {
			return kafkaedge.Start{}, fmt.Errorf("offset:N needs a non-negative number, got %q", s)
		}
		return kafkaedge.Start{Offset: n}, nil
	case strings.HasPrefix(s, "time:"):
		t, err := time.Parse(time.RFC3339, strings.TrimPrefix(s, "time:"))
		if err != nil {
			return kafkaedge.Start{}, fmt.Errorf("time: needs an RFC 3339 time such as 2026-11-29T10:00:00Z, got %q", s)
		}
		return kafkaedge.Start{Time: t}, nil
	}
	return kafkaedge.Start{}, fmt.Errorf("want beginning, end, offset:N or time:RFC3339, got %q", s)
}

// catTopic prints the topic's records, resolved through res (nil: as stored).
// A record that does not resolve is printed with its error and the listing
// goes on; the error returned then counts them.
func catTopic(ctx context.Context, p *config.Pipeline, res *resolver.Resolver, o catOptions, out, errOut io.Writer) error {
	from, _ := parseFrom(o.from)
	r, err := kafkaedge.OpenReader(p.Kafka.BootstrapServers, p.Kafka.Consumer, o.topic, from, o.follow)
	if err != nil {
		return err
	}
	defer r.Close()
	printed, failed := 0, 0
	enc := json.NewEncoder(out)
	for o.count == 0 || printed < o.count {
		rec, err := r.Next(ctx, 200*time.Millisecond)
		if errors.Is(err, kafkaedge.ErrEnd) || (err != nil && ctx.Err() != nil) {
			break
		}
		if err != nil {
			return err
		}
		if rec == nil {
			continue
		}
		result := resolver.Result{Value: rec.Value}
		var resolveErr error
		if res != nil {
			result, resolveErr = res.Resolve(ctx, rec.Value, rec.Header)
		}
		if resolveErr != nil {
			failed++
			result = resolver.Result{Value: rec.Value}
			fmt.Fprintf(errOut, "offloader cat: %s[%d]@%d: %v\n", o.topic, rec.Partition, rec.Offset, resolveErr)
		}
		if result.Skipped {
			continue
		}
		if resolveErr == nil || o.format == "json" {
			if err := printRecord(out, enc, o.format, rec, result, resolveErr); err != nil {
				return err
			}
		}
		printed++
	}
	if failed > 0 {
		return fmt.Errorf("%d record%s could not be resolved (each is printed with its error)", failed, plural(failed))
	}
	return nil
}

type catRecord struct {
	Topic         string           `json:"topic"`
	Partition     int32            `json:"partition"`
	Offset        int64            `json:"offset"`
	Timestamp     int64            `json:"timestamp"`
	Key           *string          `json:"key"`
	Headers       []catHeader      `json:"headers"`
	Value         *string          `json:"value"`
	ValueEncoding string           `json:"value_encoding,omitempty"`
	Size          int              `json:"size"`
	Pointer       *pointer.Pointer `json:"pointer,omitempty"`
	Codec         string           `json:"inline_codec,omitempty"`
	// Error says why the value could not be resolved; Value is then the
	// stored one.
	Error string `json:"error,omitempty"`
}

type catHeader struct {
	Key   string  `json:"key"`
	Value *string `json:"value"`
}

func text(b []byte) *string {
	if b == nil {
		return nil
	}
	s := string(b)
	return &s
}

func printRecord(out io.Writer, enc *json.Encoder, format string, m *pipeline.Record, r resolver.Result, resolveErr error) error {
	if format == "raw" {
		if _, err := out.Write(r.Value); err != nil {
			return err
		}
		_, err := out.Write([]byte("\n"))
		return err
	}
	rec := catRecord{Topic: m.Topic, Partition: m.Partition, Offset: m.Offset,
		Timestamp: m.Timestamp.UnixMilli(), Key: text(m.Key), Size: len(r.Value), Pointer: r.Pointer, Codec: r.Codec, Headers: []catHeader{}}
	for _, h := range m.Headers {
		rec.Headers = append(rec.Headers, catHeader{Key: h.Key, Value: text(h.Value)})
	}
	if resolveErr != nil {
		rec.Error = resolveErr.Error()
	}
	switch {
	case r.Value == nil:
	case utf8.Valid(r.Value):
		rec.Value = text(r.Value)
	default:
		v := base64.StdEncoding.EncodeToString(r.Value)
		rec.Value, rec.ValueEncoding = &v, "base64"
	}
	return enc.Encode(rec)
}

// Package cat prints a topic's records for people and tools, as kcat does:
// a JSON object per record, raw values, or a kcat format string (-f), each
// value resolved through its pointer, or what the pointer says (--meta), or
// as stored; large and binary values may go to files of their own.
// offloader cat reads the records through internal/kafka/reader's Reader.
package cat

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/offloader/offloader/pointer"
	"github.com/offloader/offloader/resolver"
	"github.com/offloader/offloader/topiclog"
)

// Options shape a listing.
type Options struct {
	// Topic names the topic in errors.
	Topic string
	// End is the error src returns at the end of its partitions.
	End error
	// Count stops after that many records (0: all).
	Count int
	// Meta prints what a pointer says without fetching its payload.
	Meta bool
	// PayloadDir, when set, holds each value over InlineMax bytes or not
	// UTF-8, written to a file of its own instead of printed.
	PayloadDir string
	InlineMax  int
	Printer    Printer
}

// Print prints the records of src, resolved through res (nil: as stored).
// A record that does not resolve is printed with its error, said on errOut,
// and the listing goes on; the error returned then counts them.
func Print(ctx context.Context, src topiclog.Source, res *resolver.Resolver, o Options, errOut io.Writer) error {
	if o.PayloadDir != "" {
		if err := os.MkdirAll(o.PayloadDir, 0o750); err != nil {
			return err
		}
	}
	printed, failed := 0, 0
	for o.Count == 0 || printed < o.Count {
		rec, err := src.Next(ctx, 200*time.Millisecond)
		if errors.Is(err, o.End) || (err != nil && ctx.Err() != nil) {
			break
		}
		if err != nil {
			return err
		}
		if rec == nil {
			continue
		}
		shown := shownRecord{Record: rec, value: rec.Value}
		var resolveErr error
		switch {
		case o.Meta:
			shown.pointer, resolveErr = pointerOf(rec.Value, rec.Header)
		case res != nil:
			var result resolver.Result
			result, resolveErr = res.Resolve(ctx, rec.Value, rec.Header)
			if result.Skipped {
				continue
			}
			if resolveErr == nil {
				shown.value, shown.pointer, shown.codec = result.Value, result.Pointer, result.Codec
				resolveErr = shown.unpack()
			}
		}
		if resolveErr != nil {
			failed++
			shown.err = resolveErr
			fmt.Fprintf(errOut, "offloader cat: %s[%d]@%d: %v\n", o.Topic, rec.Partition, rec.Offset, resolveErr)
		}
		if !o.Meta && o.PayloadDir != "" {
			if shown.file, err = o.spill(rec.Topic, rec.Partition, rec.Offset, shown.value); err != nil {
				return err
			}
		}
		shown.meta = o.Meta
		if err := o.Printer.print(shown); err != nil {
			return err
		}
		printed++
	}
	if failed > 0 {
		plural := "s"
		if failed == 1 {
			plural = ""
		}
		return fmt.Errorf("%d record%s could not be resolved (each is printed with its error)", failed, plural)
	}
	return nil
}

// pointerOf decodes a record's pointer without fetching its payload (nil
// for a record that is not a pointer).
func pointerOf(value []byte, header func(string) ([]byte, bool)) (*pointer.Pointer, error) {
	if !pointer.IsPointer(header) {
		return nil, nil
	}
	if err := pointer.CheckVersion(header); err != nil {
		return nil, err
	}
	p, err := pointer.Decode(value)
	if err != nil {
		return nil, err
	}
	return &p, nil
}

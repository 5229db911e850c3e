package demo

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"time"

	"github.com/offloader/offloader/pipeline"
	"github.com/offloader/offloader/resolver"
	"github.com/offloader/offloader/settings"
)

// demoReport checks that every record arrived once, in order, resolving to its
// original bytes, and prints what happened.
func demoReport(out io.Writer, recs []demoRecord, got []*pipeline.Record, res *resolver.Resolver, rawBytes int64, elapsed time.Duration, next, binary string, inProcess bool) error {
	byKey := make(map[string]int, len(recs))
	for i, r := range recs {
		byKey[r.key] = i
	}
	seen := make([]bool, len(recs))
	last := map[int32]int{}
	var slimBytes, offloadedBytes int64
	var offloaded, inline, tombstones int
	var example *pipeline.Record
	var problems []string
	for _, m := range got {
		i, ok := byKey[string(m.Key)]
		if !ok || seen[i] {
			problems = append(problems, fmt.Sprintf("unexpected or duplicated key %q", m.Key))
			continue
		}
		seen[i] = true
		part := m.Partition
		if prev, ok := last[part]; ok && prev > i {
			problems = append(problems, fmt.Sprintf("%s out of order in partition %d", m.Key, part))
		}
		last[part] = i
		slimBytes += int64(len(m.Key) + len(m.Value))
		r, err := res.Resolve(context.Background(), m.Value, m.Header)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", m.Key, err))
			continue
		}
		value := r.Value
		switch {
		case r.Pointer != nil:
			offloaded++
			offloadedBytes += int64(len(value))
			if example == nil {
				example = m
			}
		case m.Value == nil:
			tombstones++
		default:
			inline++
		}
		if (value == nil) != (recs[i].value == nil) || sha256.Sum256(value) != sha256.Sum256(recs[i].value) {
			problems = append(problems, fmt.Sprintf("%s: resolves to %d bytes that differ from the %d produced", m.Key, len(value), len(recs[i].value)))
		}
	}
	for i, ok := range seen {
		if !ok {
			problems = append(problems, fmt.Sprintf("%s is missing from the slim topic", recs[i].key))
		}
	}

	fmt.Fprintf(out, "pipeline    caught up in %s\n\n", elapsed.Round(time.Millisecond))
	fmt.Fprintf(out, "records     in %d, out %d\n", len(recs), len(got))
	fmt.Fprintf(out, "  offloaded %d (%s moved to the payload store)\n", offloaded, settings.Size(offloadedBytes).Approx())
	fmt.Fprintf(out, "  inline    %d, tombstones %d\n", inline, tombstones)
	fmt.Fprintf(out, "bytes       raw topic %s, slim topic %s (%.1f%%), keys and values\n",
		settings.Size(rawBytes).Approx(), settings.Size(slimBytes).Approx(), 100*float64(slimBytes)/float64(max(rawBytes, 1)))
	if example != nil {
		fmt.Fprintf(out, "\none pointer record (partition %d, offset %d, key %s):\n", example.Partition, example.Offset, example.Key)
		for _, h := range example.Headers {
			fmt.Fprintf(out, "  header %s: %s\n", h.Key, h.Value)
		}
		fmt.Fprintf(out, "  value  %s\n", bytes.TrimSpace(example.Value))
	}
	if len(problems) > 0 {
		for _, p := range problems[:min(len(problems), 10)] {
			fmt.Fprintf(out, "  problem: %s\n", p)
		}
		return fmt.Errorf("%d problems in the round trip (first ones above)", len(problems))
	}
	fmt.Fprintf(out, "\nround trip  %d of %d records arrived once, in partition order; every value (pointers resolved) matches its SHA-256\n", len(got), len(recs))
	fmt.Fprintf(out, "\nnext        %s validate -F %s --print\n"+
		"              the pipeline this demo ran, every default filled in\n", binary, next)
	if inProcess {
		fmt.Fprintf(out, "            %s demo --brokers 127.0.0.1:19092\n"+
			"              the same against a broker that stays (scripts/services.sh start runs one here);\n"+
			"              the in-process broker of this run is gone, and the file's topics with it\n", binary)
	} else {
		fmt.Fprintf(out, "            %[1]s cat -F %[2]s -o -2 --meta\n"+
			"              the slim topic's last records per partition, pointers shown, nothing fetched\n"+
			"            %[1]s run -F %[2]s\n"+
			"              runs the pipeline again on this broker: records you add to the raw topic flow through\n", binary, next)
	}
	fmt.Fprintf(out, "            docs/getting-started.md\n"+
		"              from here to your own topic pair\n")
	return nil
}

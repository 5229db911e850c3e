package demo

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/offloader/offloader/internal/kafka/kadmin"
	"github.com/offloader/offloader/pipeline"
	"github.com/offloader/offloader/settings"
)

// Producing shapes ProduceTo.
type Producing struct {
	Bootstrap, Topic string
	Records          int
	// Sizes, when set, are the values' sizes in turn (else the demo's mix).
	Sizes []int
	// Properties are librdkafka producer properties (security, SASL).
	Properties map[string]string
}

// ProduceTo writes test records to a topic of the user's cluster: the
// demo's mix, or values of o.Sizes in turn, keyed, with headers and a
// tombstone every 50th record, and says what it wrote to out.
func ProduceTo(out io.Writer, o Producing) error {
	recs := demoMix(o.Records)
	if o.Sizes != nil {
		recs = sizedRecords(o.Records, o.Sizes)
	}
	msgs := make([]*pipeline.Record, len(recs))
	var total int64
	largest, tombstones := 0, 0
	for i, r := range recs {
		msgs[i] = &pipeline.Record{Topic: o.Topic, Partition: kadmin.AnyPartition, Key: []byte(r.key), Value: r.value, Headers: r.headers}
		total += int64(len(r.key) + len(r.value))
		largest = max(largest, len(r.value))
		if r.value == nil {
			tombstones++
		}
	}
	started := time.Now()
	err := kadmin.Produce(o.Bootstrap, o.Properties, msgs, 16<<20, 5*time.Minute)
	switch {
	case errors.Is(err, kadmin.ErrUnknownTopic):
		return fmt.Errorf("producing to %s: %w\n  fix: create it: kafka-topics.sh --bootstrap-server %s --create --topic %[1]s --partitions 3 --config max.message.bytes=16777216",
			o.Topic, err, o.Bootstrap)
	case errors.Is(err, kadmin.ErrRecordTooLarge):
		return fmt.Errorf("producing to %s: %w\n  fix: raise the topic's limit (kafka-configs.sh --bootstrap-server %s --alter --entity-type topics --entity-name %[1]s --add-config max.message.bytes=16777216) or give smaller --sizes",
			o.Topic, err, o.Bootstrap)
	case err != nil:
		return fmt.Errorf("producing to %s: %w", o.Topic, err)
	}
	fmt.Fprintf(out, "produced %d records (%s, the largest value %s, %d tombstones) to %s in %s\n",
		len(recs), settings.Size(total).Approx(), settings.Size(largest).Approx(), tombstones, o.Topic, time.Since(started).Round(time.Millisecond))
	return nil
}

// sizedRecords returns n records whose values take the sizes in turn
// (random bytes: they do not compress), every 50th a tombstone. The values
// are windows of one buffer, each starting elsewhere: n records of 4 MiB do
// not take n times 4 MiB of memory.
func sizedRecords(n int, sizes []int) []demoRecord {
	largest := slices.Max(sizes)
	buf := randomBytes(rand.New(rand.NewPCG(1159, 782)), 2*largest)
	recs := make([]demoRecord, n)
	for i := range recs {
		r := demoRecord{partition: kadmin.AnyPartition, key: fmt.Sprintf("order-%05d", i),
			headers: []pipeline.Header{{Key: "source", Value: []byte("offloader-demo")}}}
		if i%50 != 49 {
			size := sizes[i%len(sizes)]
			start := (i * 7919) % (largest + 1)
			r.value = buf[start : start+size]
			r.headers = append(r.headers,
				pipeline.Header{Key: "content-type", Value: []byte("application/octet-stream")},
				pipeline.Header{Key: "size", Value: []byte(settings.Size(size).String())})
		}
		recs[i] = r
	}
	return recs
}

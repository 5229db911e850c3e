package dlt

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/offloader/offloader/pipeline"
)

var intake = Intake{Sources: map[string]int{"sec.raw3": 1, "orders": 4}, RetryTopics: map[string]bool{"orders.retry-1": true}}

func retryHeaders3(topic, partition, offset string) []pipeline.Header {
	return []pipeline.Header{
		{Key: "trace", Value: []byte("t")},
		{Key: HeaderRetryTopic, Value: []byte(topic)},
		{Key: HeaderRetryPartition, Value: []byte(partition)},
		{Key: HeaderRetryOffset, Value: []byte(offset)},
		{Key: HeaderRetryAttempts, Value: []byte("1")},
		{Key: HeaderRetryFirstFailure, Value: []byte("1700000000000")},
		{Key: HeaderRetryDue, Value: []byte("1700000005000")},
	}
}

// TestSourceRecordCannotChooseItsObjectKey: a record on a source topic whose
// headers name another record's coordinates keeps its own (the broker's), and
// loses the headers; the offload key follows the coordinates.
func TestSourceRecordCannotChooseItsObjectKey(t *testing.T) {
	for _, forged := range [][3]string{{"sec.raw3", "0", "4"}, {"x/y/z", "0", "1"}, {"sec.raw3", "7", "0"}} {
		attacker := &pipeline.Record{Topic: "sec.raw3", Partition: 0, Offset: 9, Value: []byte("attacker"), Headers: retryHeaders3(forged[0], forged[1], forged[2])}
		got, stripped, err := intake.Admit(attacker)
		if err != nil {
			t.Fatalf("forged %v: %v", forged, err)
		}
		if got.Topic != "sec.raw3" || got.Partition != 0 || got.Offset != 9 {
			t.Errorf("forged %v: the record became %s/%d@%d, want its own sec.raw3/0@9", forged, got.Topic, got.Partition, got.Offset)
		}
		if stripped != 6 || len(got.Headers) != 1 || got.Headers[0].Key != "trace" {
			t.Errorf("forged %v: stripped %d, headers left %v; want the 6 retry headers gone and trace kept", forged, stripped, got.Headers)
		}
		if Attempts(got) != 0 {
			t.Errorf("forged %v: attempts %d survive on a source record", forged, Attempts(got))
		}
		if len(attacker.Headers) != 7 {
			t.Error("Admit changed the record it was given")
		}
	}
}

// TestRetryRecordsNameOnlyTheirSources: a record on a retry topic gets the
// coordinates its headers name only when they are a source topic, a partition
// it has and a plain offset; otherwise it is an InvalidRetry failure under its
// own coordinates, without the invalid headers.
func TestRetryRecordsNameOnlyTheirSources(t *testing.T) {
	onRetry := func(h []pipeline.Header) *pipeline.Record {
		return &pipeline.Record{Topic: "orders.retry-1", Partition: 0, Offset: 3, Value: []byte("v"), Headers: h}
	}
	got, _, err := intake.Admit(onRetry(retryHeaders3("orders", "3", "900")))
	if err != nil || got.Topic != "orders" || got.Partition != 3 || got.Offset != 900 {
		t.Fatalf("valid retry record: %s/%d@%d, %v", got.Topic, got.Partition, got.Offset, err)
	}
	long := strings.Repeat("9", 300_000)
	cases := map[string][]pipeline.Header{
		"topic not a source":       retryHeaders3("sec.raw3.retry", "0", "1"),
		"topic with slashes":       retryHeaders3("x/y/z", "0", "1"),
		"partition out of range":   retryHeaders3("orders", "4", "1"),
		"negative partition":       retryHeaders3("orders", "-1", "1"),
		"signed offset":            retryHeaders3("orders", "0", "+5"),
		"negative offset":          retryHeaders3("orders", "0", "-5"),
		"offset with spaces":       retryHeaders3("orders", "0", " 5"),
		"300 KB offset":            retryHeaders3("orders", "0", long),
		"no retry headers at all":  {{Key: "trace", Value: []byte("t")}},
		"attempts zero":            append(retryHeaders3("orders", "0", "1"), pipeline.Header{Key: HeaderRetryAttempts, Value: []byte("0")}),
		"300 KB first failure":     append(retryHeaders3("orders", "0", "1"), pipeline.Header{Key: HeaderRetryFirstFailure, Value: []byte(long)}),
		"first failure not number": append(retryHeaders3("orders", "0", "1"), pipeline.Header{Key: HeaderRetryFirstFailure, Value: []byte("yesterday")}),
	}
	for name, h := range cases {
		rec := onRetry(h)
		got, _, err := intake.Admit(rec)
		if !errors.Is(err, ErrInvalidRetry) || Classify(err) != InvalidRetry {
			t.Errorf("%s: %v (class %s), want ErrInvalidRetry", name, err, Classify(err))
			continue
		}
		if got.Topic != "orders.retry-1" || got.Partition != 0 || got.Offset != 3 {
			t.Errorf("%s: coordinates %s/%d@%d, want the record's own", name, got.Topic, got.Partition, got.Offset)
		}
		if len(err.Error()) > 300 {
			t.Errorf("%s: the error is %d bytes long; header values must be cut", name, len(err.Error()))
		}
		dead := Record(Failure{Record: got, Err: err, Stage: "retry headers", Attempts: 1, At: time.Now()}, "p", "orders.dlt")
		if size := pipeline.HeadersSize(dead.Headers); size > 3000 {
			t.Errorf("%s: the dead-letter record's headers take %d bytes", name, size)
		}
	}
	if InvalidRetry.Retries() || !InvalidRetry.DeadLetters() || TooLarge.Retries() || !Transform.Retries() {
		t.Error("an invalid retry record must go to the dead-letter topic, never to another tier")
	}
}

// FuzzAdmit: no header values make Admit panic; a source record never keeps
// a retry header or changes its coordinates, and a retry record's coordinates
// are always a source partition or its own. The retry or dead-letter record
// built from what was admitted carries each context header once, and at most
// a few KiB of them whatever the forged headers held.
func FuzzAdmit(f *testing.F) {
	f.Add(true, "orders", "3", "900", "1", "1700000000000", "1700000005000")
	f.Add(false, "sec.raw3", "0", "4", "1", "1", "1")
	f.Add(true, "x/y/z", "7", "+19", "0", strings.Repeat("9", 1000), "-1")
	f.Add(true, "orders", "99999999999999999999", "1e30", "1000", "", "\x00")
	f.Fuzz(func(t *testing.T, retry bool, topic, partition, offset, attempts, first, due string) {
		rec := &pipeline.Record{Topic: "orders", Partition: 1, Offset: 7, Headers: []pipeline.Header{
			{Key: HeaderRetryTopic, Value: []byte(topic)}, {Key: HeaderRetryPartition, Value: []byte(partition)},
			{Key: HeaderRetryOffset, Value: []byte(offset)}, {Key: HeaderRetryAttempts, Value: []byte(attempts)},
			{Key: HeaderRetryFirstFailure, Value: []byte(first)}, {Key: HeaderRetryDue, Value: []byte(due)},
		}}
		if retry {
			rec.Topic = "orders.retry-1"
		}
		got, _, err := intake.Admit(rec)
		switch {
		case !retry:
			if err != nil || got.Topic != "orders" || got.Partition != 1 || got.Offset != 7 || len(got.Headers) != 0 {
				t.Fatalf("source record became %s/%d@%d with %d headers, %v", got.Topic, got.Partition, got.Offset, len(got.Headers), err)
			}
		case err != nil:
			if got.Topic != "orders.retry-1" || got.Offset != 7 || len(got.Headers) != 0 {
				t.Fatalf("invalid retry record became %s/%d@%d with %d headers", got.Topic, got.Partition, got.Offset, len(got.Headers))
			}
		default:
			if n, ok := intake.Sources[got.Topic]; !ok || got.Partition < 0 || int(got.Partition) >= n || got.Offset < 0 {
				t.Fatalf("retry record admitted as %s/%d@%d", got.Topic, got.Partition, got.Offset)
			}
		}
		failure := Failure{Record: got, Err: errors.New(first), Stage: "transforms[0] (offload)", Attempts: Attempts(got) + 1, At: time.UnixMilli(1)}
		for _, out := range []*pipeline.Record{Record(failure, "p", "orders.dlt"), RetryRecord(failure, "p", "orders.retry-1", time.UnixMilli(1001))} {
			seen := map[string]bool{}
			for _, h := range out.Headers {
				if seen[h.Key] {
					t.Fatalf("header %s appears twice", h.Key)
				}
				seen[h.Key] = true
			}
			if size := pipeline.HeadersSize(out.Headers); size > 4096 {
				t.Fatalf("the headers offloader wrote take %d bytes", size)
			}
		}
	})
}

package dlt

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/offloader/offloader/pipeline"
	"github.com/offloader/offloader/pointer"
	"github.com/offloader/offloader/stores"
)

func TestClassify(t *testing.T) {
	cases := []struct {
		err  error
		want Class
	}{
		{&stores.Error{Store: "s", Op: "put", Kind: stores.Retryable, Err: errors.New("503")}, TransientStore},
		{fmt.Errorf("offload: %w", &stores.Error{Store: "s", Op: "get", Kind: stores.NotFound, Err: stores.ErrNotFound}), StoreNotFound},
		{stores.ErrNotFound, StoreNotFound},
		{&stores.Error{Store: "s", Op: "put", Kind: stores.Permanent, Err: errors.New("403")}, PermanentStore},
		{fmt.Errorf("route: the record has no header %q", "tenant"), Transform},
		{fmt.Errorf("step: %w", &TooLargeError{Size: 2000, Limit: 1000, Gate: "the slim topic"}), TooLarge},
		{fmt.Errorf("offload: %w", &stores.Error{Store: "s", Op: "put", Kind: stores.Canceled, Err: context.Canceled}), Canceled},
		{fmt.Errorf("rehydrate: %w", context.Canceled), Canceled},
		{fmt.Errorf("offload: %w", pointer.ErrMalformed), MalformedPointer},
		{fmt.Errorf("offload: %w", pointer.ErrUnknownVersion), MalformedPointer},
	}
	for _, c := range cases {
		if got := Classify(c.err); got != c.want {
			t.Errorf("Classify(%v) = %s, want %s", c.err, got, c.want)
		}
	}
	for class, want := range map[Class]bool{TransientStore: false, Canceled: false, StoreNotFound: true, PermanentStore: true, Transform: true, TooLarge: true, MalformedPointer: true} {
		if class.DeadLetters() != want {
			t.Errorf("%s.DeadLetters() = %v", class, !want)
		}
	}
	if MalformedPointer.Retries() {
		t.Error("a malformed pointer goes to a retry tier: retrying cannot mend it")
	}
}

// A malformed pointer's dead-letter record carries the pointer marker
// headers renamed, so that nothing on the dead-letter topic is marked as a
// pointer without being one; its other headers stay as they were.
func TestMalformedPointerHeadersAreRenamed(t *testing.T) {
	in := &pipeline.Record{Topic: "raw", Value: []byte("not json"), Headers: []pipeline.Header{
		{Key: pointer.HeaderLargeMessage, Value: []byte("true")}, {Key: pointer.HeaderPointer, Value: []byte("v1")}, {Key: "trace", Value: []byte("t")}}}
	out := Record(Failure{Record: in, Err: fmt.Errorf("offload: %w", pointer.ErrMalformed), At: time.Now()}, "p", "dlt")
	if pointer.IsPointer(out.Header) || out.HasHeader(pointer.HeaderLargeMessage, []byte("true")) {
		t.Errorf("the dead-letter record is still marked as a pointer: %+v", out.Headers)
	}
	for k, v := range map[string]string{RenamedHeaderPrefix + pointer.HeaderPointer: "v1", RenamedHeaderPrefix + pointer.HeaderLargeMessage: "true",
		"trace": "t", HeaderClass: "malformed_pointer"} {
		if got, _ := out.Header(k); string(got) != v {
			t.Errorf("header %s = %q, want %q", k, got, v)
		}
	}
	if !pointer.IsPointer(in.Header) {
		t.Error("Record changed its input")
	}
}

// TestRecordKeepsTheOriginalAndBoundsTheHeaders: key, value and headers are the
// consumed record's; the context headers are all there; a huge message is cut
// at a character boundary.
func TestRecordKeepsTheOriginalAndBoundsTheHeaders(t *testing.T) {
	in := &pipeline.Record{Topic: "orders", Partition: 3, Offset: 77, Key: []byte("k"), Value: []byte("v"),
		Headers: []pipeline.Header{{Key: "trace", Value: []byte("t")}}, Timestamp: time.UnixMilli(1_700_000_000_000)}
	msg := strings.Repeat("é", 5000) // 10,000 bytes
	out := Record(Failure{Record: in, Err: errors.New(msg), Stage: "transforms[1] (route)", At: time.UnixMilli(1_800_000_000_000)}, "orders-pipe", "orders.dlt")
	if out.Destination != "orders.dlt" || string(out.Key) != "k" || string(out.Value) != "v" || len(in.Headers) != 1 {
		t.Fatalf("record %+v", out)
	}
	want := map[string]string{
		"trace": "t", HeaderTopic: "orders", HeaderPartition: "3", HeaderOffset: "77", HeaderTimestamp: "1700000000000",
		HeaderPipeline: "orders-pipe", HeaderStage: "transforms[1] (route)", HeaderClass: "transform",
		HeaderAttempts: "1", HeaderFailedAt: "1800000000000",
	}
	for k, v := range want {
		if got, _ := out.Header(k); string(got) != v {
			t.Errorf("header %s = %q, want %q", k, got, v)
		}
	}
	m, _ := out.Header(HeaderMessage)
	if len(m) > MaxMessageBytes || !utf8.Valid(m) || !strings.HasSuffix(string(m), "...") {
		t.Errorf("message header: %d bytes, valid UTF-8 %v", len(m), utf8.Valid(m))
	}
	total := 0
	for _, h := range out.Headers {
		total += len(h.Key) + len(h.Value)
	}
	if total > 2048 {
		t.Errorf("context headers take %d bytes", total)
	}
}

// TestRetryRecordRoundTrip: a failure goes to a retry tier with its original
// position and timing; consumed back, Original restores the position, the
// next tier counts on, and Clean strips it all from a success.
func TestRetryRecordRoundTrip(t *testing.T) {
	src := &pipeline.Record{Topic: "orders", Partition: 4, Offset: 900, Key: []byte("k"), Value: []byte("v"),
		Headers: []pipeline.Header{{Key: "trace", Value: []byte("t")}}}
	t0 := time.UnixMilli(1_700_000_000_000)
	first := RetryRecord(Failure{Record: src, Err: errors.New("boom"), Stage: "transforms[0] (route)", Attempts: 1, At: t0}, "p", "orders.retry-1", t0.Add(5*time.Second))
	if first.Destination != "orders.retry-1" || Attempts(first) != 1 {
		t.Fatalf("first tier: %s, attempts %d", first.Destination, Attempts(first))
	}
	if due, ok := Due(first.Header); !ok || !due.Equal(t0.Add(5*time.Second)) {
		t.Fatalf("due %v %v", due, ok)
	}
	// Consumed from the retry topic: its own position differs.
	consumed := *first
	consumed.Topic, consumed.Partition, consumed.Offset, consumed.Destination = "orders.retry-1", 0, 3, ""
	intake := Intake{Sources: map[string]int{"orders": 8}, RetryTopics: map[string]bool{"orders.retry-1": true}}
	orig, _, err := intake.Admit(&consumed)
	if err != nil {
		t.Fatal(err)
	}
	if orig.Topic != "orders" || orig.Partition != 4 || orig.Offset != 900 {
		t.Fatalf("restored position %s/%d@%d", orig.Topic, orig.Partition, orig.Offset)
	}
	second := RetryRecord(Failure{Record: orig, Err: errors.New("boom again"), Attempts: Attempts(orig) + 1, At: t0.Add(6 * time.Second)}, "p", "orders.retry-2", t0.Add(6*time.Second+time.Minute))
	if Attempts(second) != 2 {
		t.Fatalf("second tier attempts %d", Attempts(second))
	}
	if v, _ := second.Header(HeaderRetryFirstFailure); string(v) != "1700000000000" {
		t.Errorf("first failure %s, want the first tier's", v)
	}
	counts := map[string]int{}
	for _, h := range second.Headers {
		counts[h.Key]++
	}
	for k, n := range counts {
		if n != 1 {
			t.Errorf("header %s appears %d times", k, n)
		}
	}
	clean := Clean(orig)
	if len(clean.Headers) != 1 || clean.Headers[0].Key != "trace" {
		t.Errorf("Clean left %+v", clean.Headers)
	}
	if admitted, stripped, err := intake.Admit(src); Clean(src) != src || admitted != src || stripped != 0 || err != nil {
		t.Error("a source record changed")
	}
}

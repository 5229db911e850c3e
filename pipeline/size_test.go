package pipeline

import (
	"bytes"
	"testing"
)

// TestEstimateSizeMatchesKafkaProducer pins the estimate to the figures the Java
// producer printed on Kafka 4.3 (seed 002): "The message is 65630 bytes when
// serialized" for a 65,536-byte value with key "k-65536", and 1,048,673 for a
// 1 MiB value with key "k-1048576". The threshold and the limit checks rest on it.
func TestEstimateSizeMatchesKafkaProducer(t *testing.T) {
	cases := []struct {
		key   string
		value int
		want  int
	}{
		{"k-65536", 65536, 65630},
		{"k-1048576", 1048576, 1048673},
		{"k-2097152", 2097152, 2097249},
	}
	for _, c := range cases {
		got := EstimateSize([]byte(c.key), bytes.Repeat([]byte{'x'}, c.value), nil)
		if got != c.want {
			t.Errorf("EstimateSize(key %q, %d-byte value) = %d, want %d", c.key, c.value, got, c.want)
		}
	}
}

// TestEstimateSizeCountsHeadersAndNulls: headers count toward the gate, and null
// keys, values and header values are framed as -1 lengths.
func TestEstimateSizeCountsHeadersAndNulls(t *testing.T) {
	base := EstimateSize(nil, nil, nil)
	if base != BatchOverhead+RecordOverheadMax+1+1+1 {
		t.Errorf("empty record = %d", base)
	}
	withHeader := EstimateSize(nil, nil, []Header{{Key: "trace", Value: []byte("abc")}})
	if want := base + 1 + 5 + 1 + 3; withHeader != want {
		t.Errorf("one header = %d, want %d", withHeader, want)
	}
	nullHeader := EstimateSize(nil, nil, []Header{{Key: "trace"}})
	if want := base + 1 + 5 + 1; nullHeader != want {
		t.Errorf("null header value = %d, want %d", nullHeader, want)
	}
}

// TestRecordCloneDoesNotShareHeaders: transforms must never change their input.
func TestRecordCloneDoesNotShareHeaders(t *testing.T) {
	in := &Record{Value: []byte("v"), Headers: []Header{{Key: "a", Value: []byte("1")}}}
	out := in.WithHeader("b", []byte("2"))
	out.Headers[0].Key = "changed"
	if len(in.Headers) != 1 || in.Headers[0].Key != "a" {
		t.Fatalf("input headers changed: %+v", in.Headers)
	}
	if v, ok := out.Header("b"); !ok || string(v) != "2" {
		t.Errorf("Header(b) = %q, %v", v, ok)
	}
}

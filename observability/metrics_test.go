package observability

import (
	"slices"
	"testing"
)

// The store latency histogram separates 50, 100, 150, 250 and 500 ms, so
// that the percentiles of an upload of a few hundred milliseconds fall in
// buckets of their own.
func TestStoreLatencyBucketsSeparateTheUploadPercentiles(t *testing.T) {
	for _, bound := range []float64{0.05, 0.1, 0.15, 0.25, 0.5} {
		if !slices.Contains(StoreLatencyBuckets, bound) {
			t.Errorf("no bucket bound at %v s", bound)
		}
	}
	if !slices.IsSorted(StoreLatencyBuckets) {
		t.Error("the bounds are not in order")
	}
}

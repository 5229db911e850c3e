package memory

import "testing"

const mib = 1 << 20

// TestSplitGivesEachPlaceAQuarter: the default budget's shares, and what they
// add up to: the consumer's prefetch (its queue, overshot by one fetch
// response per broker, of MaxFetch at most), the batch, the uploads and the
// produce queue stay within the budget.
func TestSplitGivesEachPlaceAQuarter(t *testing.T) {
	p := Split(256*mib, 1, 16, 1_000_000)
	want := Plan{InFlight: 256 * mib, PrefetchQueue: 32 * mib, PrefetchMessages: 16384, Fetch: MaxFetch, Batch: 64 * mib,
		Uploads: 64 * mib, MaxUploads: 16, ProduceQueue: 16 * mib, ProduceMessages: 8192}
	if p != want {
		t.Fatalf("Split(256MiB, 1 broker) = %+v, want %+v", p, want)
	}
	if h := HeapLimit(p.InFlight, true); h != 160*mib {
		t.Errorf("HeapLimit(256MiB, encoding) = %d, want the batch's and the uploads' quarters plus HeapOverhead, 160 MiB", h)
	}
	if h := HeapLimit(p.InFlight, false); h != 96*mib {
		t.Errorf("HeapLimit(256MiB, not encoding) = %d, want the batch's quarter plus HeapOverhead, 96 MiB", h)
	}
	if total := p.PrefetchQueue + p.Fetch + p.Batch + p.Uploads + p.ProduceQueue; total != p.InFlight-24*mib-48*mib {
		t.Fatalf("the shares add up to %d, want the budget %d less the 24 MiB of the fetch share over MaxFetch and the 48 MiB of the produce queue's quarter it leaves", total, p.InFlight)
	}
}

// TestSplitDividesTheFetchAmongBrokers: a consumer fetches from every broker
// leading one of its partitions at once, so the fetch share is divided among
// the cluster's brokers and the prefetch stays within its quarter however the
// partitions are spread; librdkafka's floor (MinFetch) wins over the division,
// and a response stays below glibc's fresh mappings (MaxFetch).
func TestSplitDividesTheFetchAmongBrokers(t *testing.T) {
	for _, c := range []struct {
		budget    int64
		brokers   int
		wantFetch int64
	}{
		{256 * mib, 1, MaxFetch},
		{256 * mib, 3, MaxFetch},
		{128 * mib, 3, 16 * mib / 3},
		{256 * mib, 0, MaxFetch}, // no broker seen: as one
		{256 * mib, 64, MinFetch},
		{16 * mib, 1, 2 * mib},
		{16 * mib, 5, MinFetch},
	} {
		p := Split(c.budget, c.brokers, 8, 1_000_000)
		if p.Fetch != c.wantFetch {
			t.Errorf("Split(%d MiB, %d brokers).Fetch = %d, want %d", c.budget/mib, c.brokers, p.Fetch, c.wantFetch)
		}
		if prefetch := p.PrefetchQueue + p.Fetch*int64(max(1, c.brokers)); p.Fetch > MinFetch && prefetch > c.budget/4 {
			t.Errorf("Split(%d MiB, %d brokers): prefetch %d over its quarter %d", c.budget/mib, c.brokers, prefetch, c.budget/4)
		}
	}
}

// TestSplitProduceQueueHoldsTheLargestRecord: a produce queue smaller than a
// record would refuse it for good (librdkafka's queue full), so it holds two
// of the largest the topics take, even above its sixteenth.
func TestSplitProduceQueueHoldsTheLargestRecord(t *testing.T) {
	if p := Split(16*mib, 1, 4, 8*mib); p.ProduceQueue != 16*mib {
		t.Fatalf("ProduceQueue = %d, want two 8 MiB records", p.ProduceQueue)
	}
	if p := Split(64*mib, 1, 0, 1_000_000); p.ProduceQueue != 4*mib || p.MaxUploads != 1 {
		t.Fatalf("ProduceQueue = %d and MaxUploads %d, want the 4 MiB sixteenth and at least 1 upload", p.ProduceQueue, p.MaxUploads)
	}
}

// The prefetch is bounded by count for the largest record the source takes:
// records made large by their headers, which librdkafka does not count in
// bytes, cannot take it past its share; never under MinPrefetchMessages,
// never over the count the byte share gives.
func TestBoundPrefetchCountsTheLargestRecord(t *testing.T) {
	plan := Split(32<<20, 1, 8, 1<<20)
	for _, c := range []struct{ largest, want int }{
		{0, plan.PrefetchMessages},
		{1 << 10, plan.PrefetchMessages},
		{64 << 10, 64},
		{1 << 20, MinPrefetchMessages},
	} {
		if got := plan.BoundPrefetch(c.largest).PrefetchMessages; got != c.want {
			t.Errorf("largest record %d: %d messages, want %d (share %d bytes)", c.largest, got, c.want, plan.PrefetchQueue)
		}
	}
}

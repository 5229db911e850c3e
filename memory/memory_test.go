package memory

import "testing"

const mib = 1 << 20

// TestSplitGivesEachPlaceAQuarter: the default budget's shares, and what they
// add up to: the consumer's prefetch (its queue, overshot by one fetch
// response per broker, of MaxFetch at most), the batch, the uploads and the
// produce queue stay within the budget.
func TestSplitGivesEachPlaceAQuarter(t *testing.T) {
	p := Split(256*mib, 1, 16, 1_000_000)
	want := Plan{InFlight: 256 * mib, PrefetchQueue: 56 * mib, PrefetchMessages: 28672, Fetch: MaxFetch, Batch: 64 * mib,
		Uploads: 64 * mib, MaxUploads: 16, ProduceQueue: 64 * mib, ProduceMessages: 32768,
		ClientHeap: 56*mib + MaxFetch + 64*mib + ClientOverhead}
	if p != want {
		t.Fatalf("Split(256MiB, 1 broker) = %+v, want %+v", p, want)
	}
	if h := HeapLimit(p.InFlight); h != 224*mib {
		t.Errorf("HeapLimit(256MiB) = %d, want the batch's and the uploads' quarters, half as much for garbage, plus HeapOverhead: 224 MiB", h)
	}
	if total := p.PrefetchQueue + p.Fetch + p.Batch + p.Uploads + p.ProduceQueue; total != p.InFlight {
		t.Fatalf("the shares add up to %d, want the budget %d: the queue takes what the fetch response leaves of its quarter", total, p.InFlight)
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
		wantQueue int64
	}{
		{256 * mib, 1, MaxFetch, 56 * mib},
		{256 * mib, 3, MaxFetch, 40 * mib},
		{128 * mib, 1, MaxFetch, 24 * mib},
		{128 * mib, 3, 16 * mib / 3, 32*mib - 3*(16*mib/3)}, // a byte over the half, the division's remainder
		{256 * mib, 0, MaxFetch, 56 * mib},                  // no broker seen: as one
		{256 * mib, 64, MinFetch, 32 * mib},                 // the responses fill the quarter: half of it still
		{16 * mib, 1, 2 * mib, 2 * mib},
		{16 * mib, 5, MinFetch, 2 * mib},
	} {
		p := Split(c.budget, c.brokers, 8, 1_000_000)
		if p.Fetch != c.wantFetch {
			t.Errorf("Split(%d MiB, %d brokers).Fetch = %d, want %d", c.budget/mib, c.brokers, p.Fetch, c.wantFetch)
		}
		if p.PrefetchQueue != c.wantQueue {
			t.Errorf("Split(%d MiB, %d brokers).PrefetchQueue = %d, want %d", c.budget/mib, c.brokers, p.PrefetchQueue, c.wantQueue)
		}
		if prefetch := p.PrefetchQueue + p.Fetch*int64(max(1, c.brokers)); p.Fetch > MinFetch && prefetch > c.budget/4 {
			t.Errorf("Split(%d MiB, %d brokers): prefetch %d over its quarter %d", c.budget/mib, c.brokers, prefetch, c.budget/4)
		}
	}
}

// TestSplitProduceQueueHoldsTheLargestRecord: a produce queue smaller than a
// record would refuse it for good (librdkafka's queue full), so it holds two
// of the largest the topics take, even above its quarter.
func TestSplitProduceQueueHoldsTheLargestRecord(t *testing.T) {
	if p := Split(16*mib, 1, 4, 8*mib); p.ProduceQueue != 16*mib {
		t.Fatalf("ProduceQueue = %d, want two 8 MiB records", p.ProduceQueue)
	}
	if p := Split(64*mib, 1, 0, 1_000_000); p.ProduceQueue != 16*mib || p.MaxUploads != 1 {
		t.Fatalf("ProduceQueue = %d and MaxUploads %d, want the 16 MiB quarter and at least 1 upload", p.ProduceQueue, p.MaxUploads)
	}
}

// The prefetch's count bound never falls below its bytes over MessageSlot,
// whatever the records the source topics take: librdkafka compares it with
// the length of the queue every partition shares, and a few records of one
// partition then made every partition unfetchable.
func TestThePrefetchCountNeverStarvesPartitions(t *testing.T) {
	for _, budget := range []int64{16 * mib, 32 * mib, 128 * mib, 1 << 30} {
		p := Split(budget, 3, 16, 8*mib)
		if want := int(p.PrefetchQueue / MessageSlot); p.PrefetchMessages != want {
			t.Errorf("Split(%d MiB): queued.min.messages %d, want %d", budget/mib, p.PrefetchMessages, want)
		}
	}
}

// The gauge says full once the clients hold more than its limit on two
// readings running, the second more than the first, and not full again
// until under three quarters of it; memory over the limit that does not
// grow (a response being consumed) is not full.
func TestTheGaugeSaysFullWhileTheClientsKeepFetchingPastTheLimit(t *testing.T) {
	var inUse int64
	g := &Gauge{InUse: func() int64 { return inUse }, Limit: 100 * mib}
	for _, c := range []struct {
		inUse int64
		want  bool
	}{
		{10 * mib, false}, {100 * mib, false}, {400 * mib, false}, // one response decompressed: over, but not growing yet
		{390 * mib, false}, {300 * mib, false}, // consumed
		{80 * mib, false}, {101 * mib, false}, {120 * mib, true}, // growing past the limit
		{90 * mib, true}, {76 * mib, true}, {75 * mib, false}, {99 * mib, false}, {200 * mib, false}, {250 * mib, true},
	} {
		inUse = c.inUse
		if got := g.Full(); got != c.want {
			t.Errorf("at %d MiB in use: full %v, want %v", c.inUse/mib, got, c.want)
		}
	}
}

// Growth counts only between readings one ask apart: after an ask the
// engine let pass, a reading over the limit is the first of a new series,
// even over one from before.
func TestTheGaugeStartsAgainAfterAnAskLetPass(t *testing.T) {
	var inUse int64
	g := &Gauge{InUse: func() int64 { return inUse }, Limit: 100 * mib}
	inUse = 110 * mib
	if g.Full() {
		t.Fatal("full at the first reading")
	}
	g.Unasked()
	inUse = 150 * mib
	if g.Full() {
		t.Error("full at the first reading after an ask let pass, against the reading before it")
	}
	inUse = 160 * mib
	if !g.Full() {
		t.Error("not full at the second reading of a series growing past the limit")
	}
}

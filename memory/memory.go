// Package memory splits a pipeline's memory budget (memory.in_flight) among
// the four places that hold records in flight, so that one figure bounds them
// all and none of them grows with the number of partitions (the goal of
// KIP-782: memory follows the traffic, not batch size x partitions):
//
//   - the consumer's prefetch: librdkafka's one queue for every partition of
//     the high-level consumer (queued.max.messages.kbytes), which a fetch
//     response may overshoot, plus the fetch responses in flight, one per
//     broker (fetch.max.bytes caps a response over all its partitions, and
//     each partition may fill it: max.partition.fetch.bytes);
//   - the batch in hand: its input and the outputs waiting to be produced
//     (commit.max_bytes, lowered to its share);
//   - the uploads in progress: the encoded payloads on their way to a store;
//   - the producer's queue (queue.buffering.max.kbytes), which holds what
//     was produced until the broker acknowledges it.
//
// Each takes a quarter (the producer's queue at least two of the largest
// records it may be given): a produce queue of a sixteenth held some 50 MiB
// less with 1 KiB records, and with the prefetch's count bound of the time
// ran them at 0.87 of the release before (docs/benchmarks.md, "The release
// guard"). What librdkafka's bounds do not count is bounded by Gauge. Peak RSS
// is then a fixed overhead (the Go runtime,
// librdkafka's threads and buffers, the stores' clients) plus the budget,
// whatever the partitions. A record larger than a share still goes through,
// alone: librdkafka returns a partition's first record even over
// fetch.max.bytes, and an upload larger than its share waits until it is the
// only one.
package memory

// Plan is a budget's split, in bytes.
type Plan struct {
	// InFlight is the whole budget.
	InFlight int64
	// PrefetchQueue is librdkafka's queued.max.messages.kbytes (in bytes),
	// and PrefetchMessages its queued.min.messages.
	PrefetchQueue    int64
	PrefetchMessages int
	// Fetch is fetch.max.bytes and max.partition.fetch.bytes: the largest
	// fetch response, of which one per broker may be in flight.
	Fetch int64
	// Batch bounds a batch's input, below commit.max_bytes.
	Batch int64
	// Uploads bounds the bytes being uploaded at once, and MaxUploads the
	// uploads at once.
	Uploads    int64
	MaxUploads int
	// ProduceQueue is queue.buffering.max.kbytes (in bytes), and
	// ProduceMessages queue.buffering.max.messages.
	ProduceQueue    int64
	ProduceMessages int
	// ClientHeap is what librdkafka may hold in the C heap: the prefetch
	// queue, a fetch response per broker, the produce queue and
	// ClientOverhead. Past it the source pauses (Gauge).
	ClientHeap int64
}

// HeapOverhead is what the Go heap holds besides records: the clients of
// Kafka and the stores, metrics, logs.
const HeapOverhead = 32 << 20

// HeapLimit is the Go heap a budget of inFlight allows: the batch's share
// and the uploads' share, half as much again for the garbage of records
// already produced, plus HeapOverhead; the prefetch and the produce queue
// are librdkafka's, in C. Collecting when the heap reaches the limit
// (GOGC=off, GOMEMLIMIT at it) keeps that garbage within the budget too,
// and makes collections as rare as the budget allows. At the two shares
// alone (96 MiB at the 128 MiB default) a heap holding them live had little
// room for garbage: W2 (1 MiB values) ran 47 collections per 2,000 values
// against the release before's 19, and 1.21 of its CPU and 0.87 of its rate
// on a busy machine; with the garbage's share it runs 28, at 0.95 of the CPU
// and 1.27 of the rate (docs/benchmarks.md, "The release guard").
func HeapLimit(inFlight int64) int64 { return inFlight*3/4 + HeapOverhead }

// MessageSlot is the share of a queue one message is counted at, at least:
// librdkafka counts a queued message by its key and value alone, but keeps
// some 400 bytes of its own for each, so a queue of small records bounded by
// bytes alone would hold a third more than its share. The queues are also
// bounded by count, their bytes over MessageSlot.
//
// The prefetch's count is never bounded lower than that: librdkafka compares
// it with the length of the one queue every partition of the high-level
// consumer forwards to, so a count of a few records (once 16, to bound
// records made large by their headers) let any partition's few records make
// every other partition "not fetchable" (a partition left unconsumed for
// minutes after its leader moved, on a 3-node cluster), and kept too few 1
// KiB records in hand to keep the loop busy (0.87 of the release before).
// What the byte bound does not count (headers, keys, a compressed fetch
// decompressed whole), ClientHeap bounds, by pausing the source as a whole
// (Gauge).
const MessageSlot = 2 << 10

// ClientOverhead is what librdkafka's two clients hold besides the records
// in their queues and the fetch responses in flight: per-broker buffers,
// metadata, the produce batches being built, and the allocator's slack. At
// the default budget the clients' C heap peaked at 41 MiB with 1 KiB records
// and 33 MiB with 1 MiB records (offloader_kafka_client_heap_bytes), under
// the 80 MiB this makes their share.
const ClientOverhead = 16 << 20

// MinFetch is the smallest fetch.max.bytes librdkafka takes: its consumer's
// message.max.bytes (1,000,000 by default), rounded up to a MiB.
const MinFetch = 1 << 20

// MaxFetch caps the fetch share. librdkafka receives each fetch response
// into one buffer of its size, and glibc's malloc maps a request of 32 MiB
// or more (its largest mmap threshold) afresh and unmaps it when freed: the
// kernel then faults in and zeroes every page of every response. With
// responses of 32 MiB that was about 340,000 page faults per GB consumed
// (about 100,000 with 8 MiB, and 150,000 for a loop on librdkafka's defaults,
// 1 MiB per partition); the kernel's share of a profile of the daemon was
// 13%. Below the threshold the allocator reuses the buffers.
const MaxFetch = 8 << 20

// Split divides inFlight. brokers is the number of brokers of the cluster:
// the most brokers the partitions of any assignment can be led by, each of
// which the consumer fetches from at once, so the fetch share is divided among
// them (MinFetch at least, MaxFetch at most). maxUploads caps the uploads at
// once. largestOutput is the largest record the producer may be given (the
// largest of the slim, retry and dead-letter topics' limits): the produce
// queue always holds one.
func Split(inFlight int64, brokers, maxUploads, largestOutput int) Plan {
	quarter := inFlight / 4
	p := Plan{
		InFlight:        inFlight,
		Fetch:           max(MinFetch, min(MaxFetch, quarter/2/int64(max(1, brokers)))),
		Batch:           quarter,
		Uploads:         quarter,
		MaxUploads:      max(1, maxUploads),
		ProduceQueue:    max(quarter, 2*int64(largestOutput)),
		ProduceMessages: int(quarter / MessageSlot),
	}
	// The queue takes what the responses in flight leave of the quarter, half
	// of it at least: MaxFetch caps a response below the half, and a queue
	// of two responses (16 MiB at the default budget, with one broker) made
	// the consumer's thread spend 1.6 times the CPU per GB of 1 MiB records
	// of one of three (24 MiB): BenchmarkRelease, W2 on Azurite, 1.19 of the
	// release before's CPU per record against 0.99.
	responses := int64(max(1, brokers)) * p.Fetch
	p.PrefetchQueue = max(quarter/2, quarter-responses)
	p.PrefetchMessages = int(p.PrefetchQueue / MessageSlot)
	p.ClientHeap = p.PrefetchQueue + responses + p.ProduceQueue + ClientOverhead
	return p
}

// Gauge is the engine's bound of the prefetch (engine.PrefetchBound) over
// readings of what the Kafka clients hold (InUse). It says full once a
// reading is over Limit and over the one before it, which was over Limit
// too: the consumer keeps fetching past its share (records large by their
// headers or keys, which librdkafka's byte bound does not count, until its
// count bound). Memory over Limit that does not grow is a fetch response
// being consumed (a compressed batch decompressed whole, which librdkafka's
// byte bound stops the next fetch after): pausing would drop it, to fetch
// and decompress it again. Once full, it says so until a reading is under
// three quarters of Limit, so that the source does not pause and resume on
// every fetch.
type Gauge struct {
	InUse func() int64
	Limit int64
	full  bool
	last  int64
}

// Full reports whether the clients hold more than their share, and more
// with each reading.
func (g *Gauge) Full() bool {
	n := g.InUse()
	if g.full {
		g.full = n > g.Limit/4*3
	} else {
		g.full = n > g.Limit && g.last > g.Limit && n > g.last
	}
	g.last = n
	return g.full
}

// Unasked starts the series again: the next reading is the first, so that
// growth is always between readings one ask apart, never against one left
// from before a run of records the engine did not ask for.
func (g *Gauge) Unasked() { g.last = 0 }

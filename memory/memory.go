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
// Each takes a quarter, but for the producer's queue: a sixteenth (at least
// two of the largest record it may be given) kept the same rate, as the
// commit every commit.interval drains it anyway, and with 1 KiB records
// librdkafka held some 50 MiB more for a queue of a quarter of 128 MiB than
// for one of a sixteenth (docs/benchmarks.md, "The produce queue"). Peak RSS
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
}

// HeapOverhead is what the Go heap holds besides records: the clients of
// Kafka and the stores, metrics, logs.
const HeapOverhead = 32 << 20

// HeapLimit is the Go heap a budget of inFlight allows: the batch's share,
// plus the uploads' share when encodes (the steps make new buffers of values:
// an offload that compresses, inline compression, rehydration), plus
// HeapOverhead; the prefetch and the produce queue are librdkafka's, in C.
// An uncompressed value on its way to a store is the record's own, in the
// batch's share. Collecting when the heap reaches the limit (GOGC=off,
// GOMEMLIMIT at it) keeps the garbage of records already produced within the
// budget too, and makes collections as rare as the budget allows.
func HeapLimit(inFlight int64, encodes bool) int64 {
	limit := inFlight/4 + HeapOverhead
	if encodes {
		limit += inFlight / 4
	}
	return limit
}

// MessageSlot is the share of a queue one message is counted at, at least:
// librdkafka counts a queued message by its key and value alone, but keeps
// some 400 bytes of its own for each, so a queue of small records bounded by
// bytes alone would hold a third more than its share. The queues are also
// bounded by count, their bytes over MessageSlot.
const MessageSlot = 2 << 10

// MinPrefetchMessages is the fewest records the prefetch is let hold by
// count (BoundPrefetch).
const MinPrefetchMessages = 16

// BoundPrefetch bounds the prefetch by record count as well, for records up
// to largestInput bytes (the largest the source topics take): librdkafka
// counts a queued record's key and value against queued.max.messages.kbytes,
// not its headers, so records made large by their headers would fill memory
// far past the byte bound (3,000 records of 400 KB headers each took a 32 MiB
// budget to 1 GB). At most PrefetchQueue / largestInput records are queued,
// and MinPrefetchMessages; each fetch response is bounded by Fetch whatever
// its records hold.
func (p Plan) BoundPrefetch(largestInput int) Plan {
	if largestInput > 0 {
		p.PrefetchMessages = max(MinPrefetchMessages, min(p.PrefetchMessages, int(p.PrefetchQueue/int64(largestInput))))
	}
	return p
}

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
	return Plan{
		InFlight:         inFlight,
		PrefetchQueue:    quarter / 2,
		PrefetchMessages: int(quarter / 2 / MessageSlot),
		Fetch:            max(MinFetch, min(MaxFetch, quarter/2/int64(max(1, brokers)))),
		Batch:            quarter,
		Uploads:          quarter,
		MaxUploads:       max(1, maxUploads),
		ProduceQueue:     max(inFlight/16, 2*int64(largestOutput)),
		ProduceMessages:  int(inFlight / 16 / MessageSlot),
	}
}

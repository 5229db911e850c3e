package pipeline

// Record size estimates, the way Kafka's producer gate computes them. The Java
// producer rejects a record whose estimated upper bound exceeds max.request.size
// before compression (KafkaProducer.ensureValidRecordSize, using
// DefaultRecordBatch.estimateBatchSizeUpperBound); librdkafka checks the same
// uncompressed key+value+headers against its message.max.bytes. Measured on Kafka
// 4.3: a 65,536-byte value estimates to 65,630 bytes and a 1 MiB one to 1,048,673.

const (
	// BatchOverhead is the v2 record batch header (DefaultRecordBatch.RECORD_BATCH_OVERHEAD).
	BatchOverhead = 61
	// RecordOverheadMax is the largest per-record framing: attributes, timestamp and
	// offset deltas and the length varint (DefaultRecord.MAX_RECORD_OVERHEAD).
	RecordOverheadMax = 21
)

// EstimateSize returns the upper bound of the record's serialized size as one
// uncompressed batch: what the producer compares with its request size limit and
// the broker with message.max.bytes when compression does not help.
func EstimateSize(key, value []byte, headers []Header) int {
	return BatchOverhead + RecordOverheadMax + bodySize(key, value, headers)
}

// EstimateRecordSize is EstimateSize for a Record.
func EstimateRecordSize(r *Record) int {
	return EstimateSize(r.Key, r.Value, r.Headers)
}

// HeadersSize is the serialized size of a header list inside a record.
func HeadersSize(headers []Header) int {
	n := varintSize(len(headers))
	for _, h := range headers {
		n += varintSize(len(h.Key)) + len(h.Key)
		if h.Value == nil {
			n += varintSize(-1)
		} else {
			n += varintSize(len(h.Value)) + len(h.Value)
		}
	}
	return n
}

func bodySize(key, value []byte, headers []Header) int {
	return nullableSize(key) + nullableSize(value) + HeadersSize(headers)
}

func nullableSize(b []byte) int {
	if b == nil {
		return varintSize(-1)
	}
	return varintSize(len(b)) + len(b)
}

// varintSize is the length of v as a zig-zag varint (Kafka's ByteUtils.sizeOfVarint).
func varintSize(v int) int {
	u := uint64((int64(v) << 1) ^ (int64(v) >> 63))
	n := 1
	for u >= 0x80 {
		u >>= 7
		n++
	}
	return n
}

"""A confluent-kafka-python consumer whose records come back resolved, their
payloads fetched several at once: a consumer of a slim topic reads at the
store's bandwidth, not at one object's latency per record."""

from typing import Any, Dict, List, Mapping, Optional, Tuple

from .errors import NotFound
from .resolver import DEFAULT_PREFETCH_BYTES, DEFAULT_PREFETCH_OBJECTS, Resolved, Resolver


class Consumer:
    """Wraps a confluent_kafka.Consumer made from config, which must set
    enable.auto.offset.store to false.

    consume() returns (message, Resolved) pairs, each partition's records in
    order, their payloads fetched at most `objects` at once and verified by size
    and SHA-256. The records one call returns hold at most `max_bytes` of
    payloads (a larger payload comes alone): records Kafka gave that do not fit
    are sought back and come first in the next call. A record that does not
    resolve carries its PointerError in Resolved.error and fails alone; with
    skip_not_found a record whose object is gone has value None and no error.

    The offsets of the records returned, and only those, are stored (this is why
    the consumer must not store them itself: it would store the offsets of the
    records sought back). Commit them with auto-commit or consumer.commit(); the
    wrapper keeps no record between calls, so a rebalance finds nothing held.
    Subscribe, commit, seek and the rest are the consumer's own: self.consumer.
    Messages carrying an error (message.error()) come back with an empty
    Resolved, as confluent-kafka gave them."""

    def __init__(self, config: Mapping[str, Any], resolver: Resolver, objects: int = DEFAULT_PREFETCH_OBJECTS,
                 max_bytes: int = DEFAULT_PREFETCH_BYTES, skip_not_found: bool = False):
        if str(config.get("enable.auto.offset.store", "true")).lower() not in ("false", "0"):
            raise ValueError("set enable.auto.offset.store to false: this Consumer stores the offset of each record it "
                             "returns, and Kafka's own store would also cover the records it seeks back, committing them unread")
        if objects < 1 or max_bytes < 1:
            raise ValueError(f"objects {objects} and max_bytes {max_bytes} must be at least 1")
        from confluent_kafka import Consumer as KafkaConsumer
        self.consumer = KafkaConsumer(dict(config))
        self.resolver, self.objects, self.max_bytes, self.skip_not_found = resolver, objects, max_bytes, skip_not_found

    def consume(self, num_messages: int = 500, timeout: float = -1) -> List[Tuple[Any, Resolved]]:
        """Up to num_messages records, resolved; waits up to timeout seconds for
        the first (-1: forever)."""
        from confluent_kafka import TopicPartition
        messages = self.consumer.consume(num_messages, timeout)
        out: List[Tuple[Any, Resolved]] = [(m, Resolved(None, None)) for m in messages if m.error()]
        taken, left = self._take([m for m in messages if not m.error()])
        for tp, offset in left.items():
            self.consumer.seek(TopicPartition(tp[0], tp[1], offset))
        outcomes = self.resolver.prefetch(((m.value(), m.headers()) for m in taken), self.objects, self.max_bytes)
        stored: Dict[Tuple[str, int], int] = {}
        for m, r in zip(taken, outcomes):
            if self.skip_not_found and isinstance(r.error, NotFound):
                r = Resolved(None, None)
            out.append((m, r))
            stored[(m.topic(), m.partition())] = m.offset() + 1
        if stored:
            self.consumer.store_offsets(offsets=[TopicPartition(t, p, o) for (t, p), o in stored.items()])
        return out

    def _take(self, messages: List[Any]) -> Tuple[List[Any], Dict[Tuple[str, int], int]]:
        """The records whose payloads fit max_bytes, taken a record of each
        partition in turn so that none starves, and for each partition with
        records left over, the offset of the first."""
        queues: Dict[Tuple[str, int], List[Any]] = {}
        for m in messages:
            queues.setdefault((m.topic(), m.partition()), []).append(m)
        taken: List[Any] = []
        held, i, full = 0, 0, False
        while not full:
            row = [q[i] for q in queues.values() if i < len(q)]
            for m in row:
                size = self.resolver.claim(m.value(), m.headers()) or len(m.value() or b"")
                if taken and held + size > self.max_bytes:
                    full = True
                    break
                held += size
                taken.append(m)
            full = full or not row
            i += 1
        counts: Dict[Tuple[str, int], int] = {}
        for m in taken:
            counts[(m.topic(), m.partition())] = counts.get((m.topic(), m.partition()), 0) + 1
        left = {tp: q[counts.get(tp, 0)].offset() for tp, q in queues.items() if counts.get(tp, 0) < len(q)}
        return taken, left

    def close(self) -> None:
        """Closes the consumer (committing, with auto-commit)."""
        self.consumer.close()

    def __enter__(self) -> "Consumer":
        return self

    def __exit__(self, *exc: Optional[BaseException]) -> None:
        self.close()

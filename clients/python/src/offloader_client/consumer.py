"""A confluent-kafka-python consumer whose records come back resolved, their
payloads fetched several at once: a consumer of a slim topic reads at the
store's bandwidth, not at one object's latency per record."""

from typing import Any, Callable, Dict, List, Mapping, Optional, Set, Tuple

from .errors import NotFound
from .resolver import DEFAULT_PREFETCH_BYTES, DEFAULT_PREFETCH_OBJECTS, Resolved, Resolver


class Consumer:
    """Wraps a confluent_kafka.Consumer made from config, which must set
    enable.auto.offset.store to false.

    consume() returns (message, Resolved) pairs, each partition's records in
    order, their payloads fetched at most `objects` at once and verified by size
    and SHA-256. The records one call returns hold at most `max_bytes` of
    payloads (a larger payload comes alone): records Kafka gave that do not fit
    wait in the wrapper, pointers only, and come first in the next call. A
    record that does not resolve carries its PointerError in Resolved.error and
    fails alone; with skip_not_found a record whose object is gone has value
    None and no error.

    The offsets of the records returned, and only those, are stored (this is why
    the consumer must not store them itself: it would store the offsets of the
    records waiting); auto-commit and consumer.commit() commit those. Subscribe
    and seek through this wrapper: a rebalance, or a seek, drops the records
    waiting of the partitions concerned before your on_revoke or on_lost runs,
    so a callback that commits commits only what was returned. Commit, pause and
    the rest are the consumer's own: self.consumer. Messages carrying an error
    (message.error()) come back with an empty Resolved, as confluent-kafka gave
    them."""

    def __init__(self, config: Mapping[str, Any], resolver: Resolver, objects: int = DEFAULT_PREFETCH_OBJECTS,
                 max_bytes: int = DEFAULT_PREFETCH_BYTES, skip_not_found: bool = False):
        if str(config.get("enable.auto.offset.store", "true")).lower() not in ("false", "0"):
            raise ValueError("set enable.auto.offset.store to false: this Consumer stores the offset of each record it "
                             "returns, and Kafka's own store would also cover the records waiting in it, committing them unread")
        if objects < 1 or max_bytes < 1:
            raise ValueError(f"objects {objects} and max_bytes {max_bytes} must be at least 1")
        from confluent_kafka import Consumer as KafkaConsumer
        self.consumer = KafkaConsumer(dict(config))
        self.resolver, self.objects, self.max_bytes, self.skip_not_found = resolver, objects, max_bytes, skip_not_found
        self._waiting: List[Any] = []  # polled, not returned, in the order polled

    def subscribe(self, topics: List[str], on_assign: Optional[Callable[..., None]] = None,
                  on_revoke: Optional[Callable[..., None]] = None, on_lost: Optional[Callable[..., None]] = None) -> None:
        """consumer.subscribe, dropping the records waiting of partitions
        revoked or lost before on_revoke or on_lost runs."""
        def dropping(then: Optional[Callable[..., None]]) -> Callable[..., None]:
            def cb(consumer: Any, partitions: List[Any]) -> None:
                self._drop({(tp.topic, tp.partition) for tp in partitions})
                if then is not None:
                    then(consumer, partitions)
            return cb
        kw: Dict[str, Any] = {"on_revoke": dropping(on_revoke), "on_lost": dropping(on_lost)}
        if on_assign is not None:
            kw["on_assign"] = on_assign
        self.consumer.subscribe(topics, **kw)

    def seek(self, partition: Any) -> None:
        """consumer.seek, dropping the records waiting of that partition."""
        self._drop({(partition.topic, partition.partition)})
        self.consumer.seek(partition)

    def consume(self, num_messages: int = 500, timeout: float = -1) -> List[Tuple[Any, Resolved]]:
        """Up to num_messages records, resolved: those waiting first, then what
        the consumer gives, waiting up to timeout seconds (-1: forever) only
        when none is waiting."""
        from confluent_kafka import TopicPartition
        waiting = self._waiting
        messages, rest = waiting[:num_messages], waiting[num_messages:]
        more = num_messages - len(messages)  # rest is empty unless more is 0
        polled = self.consumer.consume(more, 0 if messages else timeout) if more > 0 else []
        if self._waiting is not waiting:
            # A rebalance ran inside consume and dropped the records of the
            # partitions it took away: none of them may be returned.
            still = {id(m) for m in self._waiting}
            messages, rest = [m for m in messages if id(m) in still], [m for m in rest if id(m) in still]
        out: List[Tuple[Any, Resolved]] = [(m, Resolved(None, None)) for m in polled if m.error()]
        messages += [m for m in polled if not m.error()]
        taken = self._take(messages)
        kept = {id(m) for m in taken}
        self._waiting = [m for m in messages if id(m) not in kept] + rest
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

    def _take(self, messages: List[Any]) -> List[Any]:
        """The records whose payloads fit max_bytes, taken a record of each
        partition in turn so that none starves, each partition's in order."""
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
        return taken

    def _drop(self, partitions: Set[Tuple[str, int]]) -> None:
        self._waiting = [m for m in self._waiting if (m.topic(), m.partition()) not in partitions]

    def close(self) -> None:
        """Closes the consumer (committing, with auto-commit)."""
        self._waiting = []
        self.consumer.close()

    def __enter__(self) -> "Consumer":
        return self

    def __exit__(self, *exc: Optional[BaseException]) -> None:
        self.close()

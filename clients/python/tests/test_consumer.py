"""The prefetching Consumer on the real broker and Azurite (make test sets
TEST_KAFKA_BOOTSTRAP and TEST_AZURE_CONNECTION_STRING): each partition's order,
the byte bound of a call, failures on their own records, stored offsets."""

import hashlib
import os
import time
import uuid

import pytest
from conftest import azure_store, live


from offloader_client import Checksum, Consumer, NotFound, Resolver, Serializer, parse


def deadline(seconds):
    """seconds from now, TEST_SLOWDOWN times longer on a loaded machine (make test sets it)."""
    return time.monotonic() + seconds * max(1.0, float(os.environ.get("TEST_SLOWDOWN") or 1))


def produce(bootstrap, store, values, partitions):
    """Produces values through the Serializer (over 16 KiB: to the store) to
    partition i % partitions, keyed by i; returns the topic and the pointers
    (None: inline)."""
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    topic = "py-consumer-" + uuid.uuid4().hex[:12]
    admin = AdminClient({"bootstrap.servers": bootstrap})  # kept: a dropped client ends its calls
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(30)
    serializer = Serializer(store, store_name="blob", threshold=16 << 10, prefix="py-consumer")
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    pointers = []
    for i, v in enumerate(values):
        headers = []
        data = serializer(v, type("Ctx", (), {"headers": headers, "topic": topic})())
        pointers.append(parse(data) if headers else None)
        producer.produce(topic, key=str(i).encode(), value=data, headers=headers, partition=i % partitions)
    assert producer.flush(30) == 0
    return topic, pointers


def consumer(bootstrap, topic, store, group=None, on_revoke=None, **kw):
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group or "g-" + uuid.uuid4().hex, "auto.offset.reset": "earliest",
                  "enable.auto.offset.store": False, "enable.auto.commit": False}, Resolver({"blob": store}), **kw)
    if on_revoke is not None:
        c.subscribe([topic], on_revoke=on_revoke)
        return c
    c.subscribe([topic])
    return c


def test_partition_order_the_byte_bound_and_stored_offsets():
    from confluent_kafka import TopicPartition

    bootstrap, store = live("TEST_KAFKA_BOOTSTRAP"), azure_store()
    # Interleaved sizes: every third value 1 MiB and offloaded, the others 1 KiB and inline.
    values = [os.urandom((1 << 20) + i if i % 3 == 0 else 1024) for i in range(60)]
    topic, _ = produce(bootstrap, store, values, 2)
    bound = 3 << 20
    offsets = {0: [], 1: []}
    with consumer(bootstrap, topic, store, max_bytes=bound) as c:
        end = deadline(120)
        while sum(map(len, offsets.values())) < len(values):
            assert time.monotonic() < end, f"read {offsets}"
            got = c.consume(500, 0.5)
            held = 0
            for m, r in got:
                assert m.error() is None and r.error is None, (m.error(), r.error)
                assert r.value == values[int(m.key())], f"record {m.key()}"
                offsets[m.partition()].append(m.offset())
                held += len(r.value)
            assert held <= bound, f"one call returned {held} bytes of values, over {bound}"
            if got:
                c.consumer.commit(asynchronous=False)
        committed = c.consumer.committed([TopicPartition(topic, 0), TopicPartition(topic, 1)], 30)
        assert [tp.offset for tp in committed] == [30, 30]
    assert offsets == {0: list(range(30)), 1: list(range(30))}


def test_a_missing_or_corrupt_object_fails_its_record_alone():
    bootstrap, store = live("TEST_KAFKA_BOOTSTRAP"), azure_store()
    values = [os.urandom(100 << 10) for _ in range(10)]
    topic, pointers = produce(bootstrap, store, values, 1)
    store.container.delete_blob(pointers[3].key)
    wrong = bytearray(values[6])
    wrong[0] ^= 1
    store.put(pointers[6].key, bytes(wrong), {})
    for skip in (False, True):
        outcomes = {}
        with consumer(bootstrap, topic, store, skip_not_found=skip) as c:
            end = deadline(120)
            while len(outcomes) < len(values):
                assert time.monotonic() < end, f"read {sorted(outcomes)}"
                for m, r in c.consume(500, 0.5):
                    outcomes[int(m.key())] = r
        for i, r in outcomes.items():
            if i == 3 and not skip:
                assert isinstance(r.error, NotFound) and r.value is None
            elif i == 3:
                assert r.error is None and r.value is None
            elif i == 6:
                assert isinstance(r.error, Checksum) and r.value is None
            else:
                assert r.error is None and hashlib.sha256(r.value).digest() == hashlib.sha256(values[i]).digest(), i


def test_a_rebalance_neither_loses_nor_duplicates_for_a_committing_consumer():
    from confluent_kafka import KafkaError, KafkaException

    bootstrap, store = live("TEST_KAFKA_BOOTSTRAP"), azure_store()
    values = [os.urandom(20 << 10) for _ in range(200)]
    topic, _ = produce(bootstrap, store, values, 4)
    group, seen, by = "g-" + uuid.uuid4().hex, {}, {"a": 0, "b": 0}

    def commit(kc, partitions):  # what was returned, before the partitions go
        try:
            kc.commit(asynchronous=False)
        except KafkaException as e:
            if e.args[0].code() != KafkaError._NO_OFFSET:
                raise

    def drain(name, c):
        got = c.consume(30, 0.2)  # at most 10 fit: the others wait in the wrapper
        for m, r in got:
            assert r.error is None and r.value == values[int(m.key())], m.key()
            seen[m.key()] = seen.get(m.key(), 0) + 1
        by[name] += len(got)
        if got:
            c.consumer.commit(asynchronous=False)

    # 200 KiB a call: 10 records, the others of a consume wait in the wrapper.
    with consumer(bootstrap, topic, store, group, on_revoke=commit, max_bytes=200 << 10) as a:
        end = deadline(120)
        while len(seen) < 40:
            assert time.monotonic() < end, f"a read {len(seen)}"
            drain("a", a)
        # a stops taking new records, so that b joins while records are left for both.
        a.consumer.pause(a.consumer.assignment())
        with consumer(bootstrap, topic, store, group, on_revoke=commit, max_bytes=200 << 10) as b:
            while not b.consumer.assignment():
                assert time.monotonic() < end, "b got no partition"
                drain("a", a)  # it takes part in the rebalance
                drain("b", b)
            a.consumer.resume(a.consumer.assignment())
            while len(seen) < len(values):
                assert time.monotonic() < end, f"read {len(seen)} of {len(values)}"
                drain("a", a)
                drain("b", b)
    assert by["b"] > 0, "b read nothing after the rebalance"
    assert {k: n for k, n in seen.items() if n != 1} == {}, "records read twice"
    assert len(seen) == len(values)


def test_kafkas_own_offset_store_is_refused():
    with pytest.raises(ValueError, match="enable.auto.offset.store"):
        Consumer({"bootstrap.servers": "127.0.0.1:1", "group.id": "g"}, Resolver({}))


def test_sixty_four_payloads_of_16_mib_come_within_the_bound():
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    bootstrap, store = live("TEST_KAFKA_BOOTSTRAP"), azure_store()
    payload = os.urandom(16 << 20)
    headers = []
    pointer = Serializer(store, store_name="blob", threshold=16 << 10, prefix="py-consumer")(
        payload, type("Ctx", (), {"headers": headers, "topic": "t"})())
    # 64 pointers to one 16 MiB object: 1 GiB of payloads, which one call of the consumer gets at once.
    topic = "py-consumer-" + uuid.uuid4().hex[:12]
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(64):
        producer.produce(topic, key=str(i).encode(), value=pointer, headers=headers)
    assert producer.flush(30) == 0
    digest, read = hashlib.sha256(payload).digest(), 0
    del payload
    with consumer(bootstrap, topic, store) as c:
        end = deadline(180)
        while read < 64:
            assert time.monotonic() < end, f"read {read} of 64"
            got = c.consume(500, 0.5)
            assert len(got) <= 4, f"one call returned {len(got)} payloads of 16 MiB, over the 64 MiB bound"
            for m, r in got:
                assert m.key() == str(read).encode() and r.error is None, (m.key(), r.error)
                assert hashlib.sha256(r.value).digest() == digest
                read += 1


class FakeMessage:
    def __init__(self, topic, partition, offset, value):
        self._t, self._p, self._o, self._v = topic, partition, offset, value

    def topic(self):
        return self._t

    def partition(self):
        return self._p

    def offset(self):
        return self._o

    def value(self):
        return self._v

    def headers(self):
        return None

    def error(self):
        return None


class RevokingConsumer:
    """A confluent_kafka.Consumer that hands out its messages, and at its
    second consume call revokes partition 0 before returning."""

    def __init__(self, config):
        self.messages = [FakeMessage("t", i % 2, i // 2, b"v" * 100) for i in range(40)]
        self.calls, self.stored, self.on_revoke = 0, [], None

    def subscribe(self, topics, on_revoke=None, **_):
        self.on_revoke = on_revoke

    def consume(self, n, timeout):
        from confluent_kafka import TopicPartition
        self.calls += 1
        if self.calls == 2:
            self.on_revoke(self, [TopicPartition("t", 0)])
        out, self.messages = self.messages[:n], self.messages[n:]
        return out

    def store_offsets(self, offsets):
        self.stored += [(tp.partition, tp.offset) for tp in offsets]

    def close(self):
        pass


def test_records_waiting_of_a_revoked_partition_are_never_returned(monkeypatch):
    import confluent_kafka

    monkeypatch.setattr(confluent_kafka, "Consumer", RevokingConsumer)
    c = Consumer({"enable.auto.offset.store": False}, Resolver({}), max_bytes=400)  # 4 records of 100 bytes a call
    c.subscribe(["t"])
    first = c.consume(40, 0)
    assert [(m.partition(), m.offset()) for m, _ in first] == [(0, 0), (1, 0), (0, 1), (1, 1)]
    # The second call's consume revokes partition 0: its 18 records waiting go, unread.
    second = c.consume(40, 0)
    assert second and all(m.partition() == 1 for m, _ in second), [(m.partition(), m.offset()) for m, _ in second]
    assert [o for p, o in c.consumer.stored if p == 0] == [2], "an offset was stored for the revoked partition"

"""Times the Python readers of a slim topic for the readers' benchmark
(integration/bench_readers_test.go):

    time_readers.py BOOTSTRAP TOPIC N sequential|prefetch azblob CONNECTION_STRING CONTAINER
    time_readers.py BOOTSTRAP TOPIC N sequential|prefetch http URL TOKEN

sequential reads N records through a DeserializingConsumer with the
Deserializer (one payload at a time), prefetch through the prefetching
Consumer; each record's value must come back. Both read the topic's
partitions assigned from their beginning (no group join). It prints
{"seconds": S, "peak_rss_mib": M}: S from the first poll to the last record
resolved, M the process's VmHWM. Pointers name the store "payloads"."""

import json
import sys
import time
import uuid

from offloader_client import AzureBlobStore, Consumer, Deserializer, HttpStore, Resolver


def main(bootstrap, topic, n, mode, kind, *store_args):
    n = int(n)
    store = AzureBlobStore(container=store_args[1], connection_string=store_args[0]) if kind == "azblob" else \
        HttpStore(store_args[0], token=store_args[1])
    resolver = Resolver({"payloads": store})
    config = {"bootstrap.servers": bootstrap, "group.id": "reader-timer-" + uuid.uuid4().hex, "auto.offset.reset": "earliest",
              "isolation.level": "read_committed", "enable.auto.commit": False}
    got, deadline = 0, time.monotonic() + 600
    if mode == "prefetch":
        with Consumer(dict(config, **{"enable.auto.offset.store": False}), resolver) as c:
            assign_all(c.consumer, topic)
            start = time.monotonic()
            while got < n:
                if time.monotonic() > deadline:
                    raise SystemExit(f"read {got} of {n} records in 10 minutes")
                for m, r in c.consume(500, 0.5):
                    if m.error() or r.error or not r.value:
                        raise SystemExit(f"record {m.key()}: {m.error() or r.error or 'no value'}")
                    got += 1
    else:
        from confluent_kafka import DeserializingConsumer
        c = DeserializingConsumer(dict(config, **{"value.deserializer": Deserializer(resolver)}))
        assign_all(c, topic)
        start = time.monotonic()
        try:
            while got < n:
                if time.monotonic() > deadline:
                    raise SystemExit(f"read {got} of {n} records in 10 minutes")
                m = c.poll(0.5)
                if m is None:
                    continue
                if m.error() or not m.value():
                    raise SystemExit(f"record {m.key()}: {m.error() or 'no value'}")
                got += 1
        finally:
            c.close()
    print(json.dumps({"seconds": round(time.monotonic() - start, 3), "peak_rss_mib": peak_rss_mib()}))


def assign_all(consumer, topic):
    from confluent_kafka import OFFSET_BEGINNING, TopicPartition
    partitions = consumer.list_topics(topic, timeout=30).topics[topic].partitions
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in partitions])


def peak_rss_mib():
    """VmHWM of /proc/self/status: the peak RSS of this process since its exec."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return round(int(line.split()[1]) / 1024, 1)
    raise SystemExit("no VmHWM in /proc/self/status")


if __name__ == "__main__":
    main(*sys.argv[1:])

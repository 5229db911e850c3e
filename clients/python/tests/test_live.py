"""The Serializer and Deserializer on the real broker, Azurite and the S3 emulator
(make test sets TEST_KAFKA_BOOTSTRAP, TEST_AZURE_CONNECTION_STRING and TEST_S3_ENDPOINT)."""

import hashlib
import os
import uuid

import pytest
from conftest import azure_store, live

from offloader_client import Deserializer, NotFound, Pointer, Resolver, S3Store, Serializer, parse
from offloader_client.pointer import HEADER_POINTER


def s3_store():
    import boto3

    endpoint = live("TEST_S3_ENDPOINT")
    client = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1", aws_access_key_id="test", aws_secret_access_key="test")
    bucket = "py-" + uuid.uuid4().hex[:12]
    client.create_bucket(Bucket=bucket)
    return S3Store(bucket, client=client)


def records():
    out = []
    for i in range(12):
        if i % 5 == 4:
            out.append((str(i).encode(), None))
        elif i % 3 == 0:
            out.append((str(i).encode(), os.urandom(300_000 + i)))
        else:
            out.append((str(i).encode(), f"small {i}".encode()))
    return out


@pytest.mark.parametrize("make_store", [azure_store, s3_store], ids=["azblob", "s3"])
def test_a_round_trip_through_the_broker(make_store):
    from confluent_kafka import DeserializingConsumer, SerializingProducer
    from confluent_kafka.admin import AdminClient, NewTopic

    bootstrap = live("TEST_KAFKA_BOOTSTRAP")
    store = make_store()
    topic = "py-" + uuid.uuid4().hex[:12]
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
    producer = SerializingProducer({"bootstrap.servers": bootstrap, "enable.idempotence": True,
                                    "value.serializer": Serializer(store, store_name="blob", threshold=65536, prefix="py-live")})
    recs = records()
    for key, value in recs:
        producer.produce(topic, key=key, value=value, headers=[])
    assert producer.flush(30) == 0

    consumer = DeserializingConsumer({"bootstrap.servers": bootstrap, "group.id": topic, "auto.offset.reset": "earliest",
                                      "value.deserializer": Deserializer(Resolver({"blob": store}))})
    consumer.subscribe([topic])
    got = []
    try:
        while len(got) < len(recs):
            msg = consumer.poll(1.0)
            if msg is None:
                continue
            assert msg.error() is None, msg.error()
            got.append((msg.key(), msg.value()))
    finally:
        consumer.close()
    assert [(k, None if v is None else hashlib.sha256(v).hexdigest()) for k, v in got] == \
        [(k, None if v is None else hashlib.sha256(v).hexdigest()) for k, v in recs]


@pytest.mark.parametrize("make_store", [azure_store, s3_store], ids=["azblob", "s3"])
def test_a_missing_object_is_not_found_on_the_real_store(make_store):
    store = make_store()
    headers = []
    pointer = Serializer(store, threshold=4096, prefix="py-live")(b"z" * 10_000, type("Ctx", (), {"headers": headers, "topic": "t"})())
    assert headers[-1] == (HEADER_POINTER, b"v1")
    p = parse(pointer)
    other = Pointer("payloads", p.key.replace("sha256/", "sha256/0"), p.size, p.sha256, p.codec, p.stored_size)
    with pytest.raises(NotFound):
        Resolver({"payloads": store}).resolve(other.encode(), headers)


@pytest.mark.parametrize("make_store", [azure_store, s3_store], ids=["azblob", "s3"])
def test_an_object_larger_than_its_pointer_is_refused_and_an_empty_one_reads(make_store):
    import hashlib as h

    from offloader_client import Checksum

    store = make_store()
    store.put("big/one", b"b" * (4 << 20), {})
    forged = Pointer("payloads", "big/one", 10, h.sha256(b"b" * 10).hexdigest(), "none", 10).encode()
    with pytest.raises(Checksum):
        Resolver({"payloads": store}).resolve(forged, [(HEADER_POINTER, b"v1")])
    store.put("empty/one", b"", {})
    empty = Pointer("payloads", "empty/one", 0, h.sha256(b"").hexdigest(), "none", 0).encode()
    assert Resolver({"payloads": store}).resolve(empty, [(HEADER_POINTER, b"v1")]) == b""
    claims = Pointer("payloads", "empty/one", 5, h.sha256(b"12345").hexdigest(), "none", 5).encode()
    with pytest.raises(Checksum):
        Resolver({"payloads": store}).resolve(claims, [(HEADER_POINTER, b"v1")])

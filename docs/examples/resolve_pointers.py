"""Print the records of an offloader slim topic with pointers resolved, using only
the documented pointer format (docs/pointer-format.md).

    python resolve_pointers.py BOOTSTRAP TOPIC NAME=azblob:CONTAINER NAME=s3:BUCKET NAME=file:ROOT ...

Azure Blob stores read the connection string from AZURE_STORAGE_CONNECTION_STRING;
S3 stores take boto3's credentials and region (AWS_ENDPOINT_URL for an
S3-compatible store, AWS_S3_ADDRESSING_STYLE=path where it needs that).
Prints one JSON object per record: partition, offset, key, size and sha256 of the
original value. Needs confluent-kafka, azure-storage-blob and boto3 from PyPI.
"""
import hashlib
import json
import os
import re
import stat
import sys
import zlib

from azure.storage.blob import BlobServiceClient
from confluent_kafka import Consumer, KafkaError, TopicPartition

MAX_SIZE = 64 << 20
FIELDS = {"v": int, "store": str, "key": str, "size": int, "sha256": str, "codec": str, "stored_size": int}
CODECS = {"none", "zstd", "gzip", "lz4", "snappy"}  # the format's; this example decodes none and gzip
SHA256 = re.compile(r"^[0-9a-f]{64}$")
DECIMAL = re.compile(rb"^[0-9]{1,18}$")


def check_key(key):
    """Refuse keys that could leave a store (rule 3 of the format)."""
    segments = key.split("/")
    if (not key or len(key.encode()) > 1024 or key.startswith("/") or "\\" in key
            or any(ord(c) < 0x20 or ord(c) == 0x7F for c in key)
            or any(s in ("", ".", "..") for s in segments)):
        raise ValueError(f"forged key {key!r}")


def read_file(root, key, limit):
    """A regular file under root, no symlink followed, at most limit bytes."""
    path = os.path.join(root, *key.split("/"))
    if os.path.realpath(path) != os.path.abspath(path):
        raise FileNotFoundError(key)  # a symlink somewhere below the root
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise FileNotFoundError(key)
        if st.st_size > limit:
            raise ValueError("stored object is larger than stored_size")
        return f.read(limit + 1)


def read_blob(container, key, limit):
    blob = container.get_blob_client(key)
    if blob.get_blob_properties().size > limit:
        raise ValueError("stored object is larger than stored_size")
    return blob.download_blob().readall()


def read_s3(client, bucket, key, limit):
    if client.head_object(Bucket=bucket, Key=key)["ContentLength"] > limit:
        raise ValueError("stored object is larger than stored_size")
    return client.get_object(Bucket=bucket, Key=key)["Body"].read(limit + 1)


def open_stores(specs):
    """NAME=azblob:CONTAINER, NAME=s3:BUCKET or NAME=file:ROOT -> {name: fetch(key, limit) -> bytes}."""
    stores = {}
    for spec in specs:
        name, _, where = spec.partition("=")
        kind, _, arg = where.partition(":")
        if kind == "azblob":
            service = BlobServiceClient.from_connection_string(os.environ["AZURE_STORAGE_CONNECTION_STRING"])
            container = service.get_container_client(arg)
            stores[name] = lambda key, limit, c=container: read_blob(c, key, limit)
        elif kind == "s3":
            import boto3
            from botocore.config import Config
            style = os.environ.get("AWS_S3_ADDRESSING_STYLE", "auto")
            client = boto3.client("s3", config=Config(s3={"addressing_style": style}))
            stores[name] = lambda key, limit, c=client, b=arg: read_s3(c, b, key, limit)
        elif kind == "file":
            stores[name] = lambda key, limit, root=arg: read_file(root, key, limit)
        else:
            raise ValueError(f"unknown store kind in {spec!r}")
    return stores


def decompress(codec, data, size):
    if codec == "none":
        return data
    if codec == "gzip":
        d = zlib.decompressobj(wbits=31)  # a gzip member, never more than size+1 bytes out
        return d.decompress(data, size + 1)
    raise ValueError(f"codec {codec!r} is not supported by this example")


def exact_members(pairs):
    """The pointer's JSON members, each once and spelled exactly."""
    names = [k for k, _ in pairs]
    if len(names) != len(set(names)):
        raise ValueError("a pointer member appears twice")
    return dict(pairs)


def resolve(value, headers, stores):
    h = {k: v for k, v in (headers or [])}  # the last header of a name wins
    if "offloader-pointer" in h:  # a pointer record, whatever else it carries
        if h["offloader-pointer"] != b"v1":
            raise ValueError(f"unknown pointer version {h['offloader-pointer']!r}")
        if len(value) > 4096:
            raise ValueError("malformed pointer: over 4096 bytes")
        p = json.loads(value, object_pairs_hook=exact_members)
        if (not isinstance(p, dict) or set(p) != set(FIELDS)
                or any(type(p[k]) is not t for k, t in FIELDS.items())
                or p["v"] != 1 or not SHA256.match(p["sha256"]) or p["size"] < 0 or p["stored_size"] < 0
                or p["codec"] not in CODECS or (p["codec"] == "none" and p["size"] != p["stored_size"])):
            raise ValueError(f"malformed pointer {value[:200]!r}")
        if p["store"] not in stores:
            raise ValueError(f"unknown store {p['store']!r}")
        check_key(p["key"])
        if p["size"] > MAX_SIZE or p["stored_size"] > MAX_SIZE:
            raise ValueError("payload too large")
        stored = stores[p["store"]](p["key"], p["stored_size"])
        if len(stored) != p["stored_size"]:
            raise ValueError("stored_size mismatch")
        data = decompress(p["codec"], stored, p["size"])
        if len(data) != p["size"] or hashlib.sha256(data).hexdigest() != p["sha256"]:
            raise ValueError("payload does not match the pointer")
        return data
    if "offloader-codec" in h:
        if not DECIMAL.match(h.get("offloader-size") or b""):
            raise ValueError("offloader-size is not a decimal size")
        size = int(h["offloader-size"])
        if size > MAX_SIZE:
            raise ValueError("inline value too large")
        data = decompress(h["offloader-codec"].decode(), value, size)
        if len(data) != size:
            raise ValueError("inline size mismatch")
        return data
    return value


def main():
    bootstrap, topic, specs = sys.argv[1], sys.argv[2], sys.argv[3:]
    stores = open_stores(specs)
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "resolve-pointers-example",
                         "enable.auto.commit": False, "isolation.level": "read_committed",
                         "enable.partition.eof": True})
    partitions = consumer.list_topics(topic, timeout=10).topics[topic].partitions
    consumer.assign([TopicPartition(topic, p, -2) for p in partitions])  # -2: from the beginning
    remaining = set(partitions)
    while remaining:
        msg = consumer.poll(1.0)
        if msg is None:
            continue
        if msg.error():
            if msg.error().code() == KafkaError._PARTITION_EOF:
                remaining.discard(msg.partition())
                continue
            raise RuntimeError(msg.error())
        value = resolve(msg.value(), msg.headers(), stores)
        print(json.dumps({"partition": msg.partition(), "offset": msg.offset(),
                          "key": msg.key().decode() if msg.key() is not None else None,
                          "size": None if value is None else len(value),
                          "sha256": None if value is None else hashlib.sha256(value).hexdigest()}))
    consumer.close()


if __name__ == "__main__":
    main()

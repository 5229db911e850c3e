"""Print the records of an offloader slim topic with pointers resolved, using only
the documented pointer format (docs/pointer-format.md): a minimal reader to port
to another language. In Python, use the package instead (clients/python,
docs/examples/resolve_pointers.py).

    python minimal_reader.py BOOTSTRAP TOPIC NAME=azblob:CONTAINER NAME=s3:BUCKET NAME=file:ROOT ...

Azure Blob stores read the connection string from AZURE_STORAGE_CONNECTION_STRING;
S3 stores take boto3's credentials and region (AWS_ENDPOINT_URL for an
S3-compatible store, AWS_S3_ADDRESSING_STYLE=path where it needs that).
Prints one JSON object per record: partition, offset, key, size and sha256 of the
original value. Needs confluent-kafka, azure-storage-blob and boto3 from PyPI.
A record it refuses raises a PointerError whose reason is one of the format's
classes; no other exception comes out of resolve().
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


class PointerError(Exception):
    """A record this reader refuses; reason names the format's class."""
    reason = "malformed"


class Malformed(PointerError):
    reason = "malformed"


class UnknownVersion(PointerError):
    reason = "unknown_version"


class UnknownStore(PointerError):
    reason = "unknown_store"


class NotFound(PointerError):
    reason = "not_found"


class Checksum(PointerError):
    reason = "checksum"


class TooLarge(PointerError):
    reason = "too_large"


class Unavailable(PointerError):
    reason = "unavailable"


def well_formed(text):
    """No lone surrogate (an escaped one decodes to it) and no U+FFFD."""
    return not any(0xD800 <= ord(c) <= 0xDFFF or c == "\ufffd" for c in text)


def check_key(key):
    """Refuse keys that could leave a store (rule 3 of the format)."""
    segments = key.split("/")
    if (not key or not well_formed(key) or len(key.encode()) > 1024 or key.startswith("/") or "\\" in key
            or any(ord(c) < 0x20 or ord(c) == 0x7F for c in key)
            or any(s in ("", ".", "..") for s in segments)):
        raise Malformed(f"forged key {key!r}")


def read_file(root, key, limit):
    """A regular file under root, no symlink followed, at most limit bytes."""
    path = os.path.join(root, *key.split("/"))
    if os.path.realpath(path) != os.path.abspath(path):
        raise NotFound(key)  # a symlink somewhere below the root
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError) as e:
        raise NotFound(key) from e
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise NotFound(key)
        if st.st_size > limit:
            raise Checksum("stored object is larger than stored_size")
        return f.read(limit + 1)


def read_blob(container, key, limit):
    blob = container.get_blob_client(key)
    if blob.get_blob_properties().size > limit:
        raise Checksum("stored object is larger than stored_size")
    return blob.download_blob().readall()


def read_s3(client, bucket, key, limit):
    if client.head_object(Bucket=bucket, Key=key)["ContentLength"] > limit:
        raise Checksum("stored object is larger than stored_size")
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


def fetch(stores, name, key, limit):
    """An object's bytes; a store's own failures become the format's classes."""
    try:
        return stores[name](key, limit)
    except PointerError:
        raise
    except OSError as e:
        raise Unavailable(f"store {name!r}: {e}") from e
    except Exception as e:  # the SDKs' errors: not found, or the store's refusal
        status = getattr(e, "status_code", None) or getattr(e, "response", {}).get("ResponseMetadata", {}).get("HTTPStatusCode")
        if status == 404 or type(e).__name__ in ("ResourceNotFoundError", "NoSuchKey"):
            raise NotFound(f"store {name!r} key {key}") from e
        raise Unavailable(f"store {name!r}: {e}") from e


def decompress(codec, data, size):
    if codec == "none":
        return data
    if codec == "gzip":
        try:
            d = zlib.decompressobj(wbits=31)  # a gzip member, never more than size+1 bytes out
            return d.decompress(data, size + 1)
        except zlib.error as e:
            raise Checksum(f"the stored bytes do not decode: {e}") from e
    raise Malformed(f"codec {codec!r} is not supported by this example")


def flat_object(text):
    """Refuse nesting without recursing: a pointer is one flat object."""
    depth, in_string, escaped = 0, False, False
    for c in text:
        if in_string:
            in_string = escaped or c != '"'
            escaped = not escaped and c == "\\"
        elif c == '"':
            in_string = True
        elif c in "{[":
            depth += 1
            if depth > 1:
                raise Malformed("malformed pointer: nested JSON")
        elif c in "}]":
            depth -= 1


def exact_members(pairs):
    """The pointer's JSON members, each once and spelled exactly."""
    names = [k for k, _ in pairs]
    if len(names) != len(set(names)):
        raise Malformed("a pointer member appears twice")
    return dict(pairs)


def parse_pointer(value):
    """A pointer value: at most 4096 bytes of UTF-8 (never 16 or 32), one flat object."""
    if len(value) > 4096:
        raise Malformed("malformed pointer: over 4096 bytes")
    try:
        text = value.decode("utf-8")
    except UnicodeDecodeError as e:
        raise Malformed("malformed pointer: not UTF-8") from e
    flat_object(text)
    try:
        return json.loads(text, object_pairs_hook=exact_members)
    except ValueError as e:
        raise Malformed(f"malformed pointer: {e}") from e


def resolve(value, headers, stores):
    h = {k: v for k, v in (headers or [])}  # the last header of a name wins
    if "offloader-pointer" in h:  # a pointer record, whatever else it carries
        if h["offloader-pointer"] != b"v1":
            raise UnknownVersion(f"unknown pointer version {h['offloader-pointer']!r}")
        p = parse_pointer(value or b"")
        if (not isinstance(p, dict) or set(p) != set(FIELDS)
                or any(type(p[k]) is not t for k, t in FIELDS.items())
                or p["v"] != 1 or not SHA256.match(p["sha256"]) or p["size"] < 0 or p["stored_size"] < 0
                or p["codec"] not in CODECS or (p["codec"] == "none" and p["size"] != p["stored_size"])):
            raise Malformed(f"malformed pointer {value[:200]!r}")
        if not well_formed(p["store"]):
            raise Malformed("malformed pointer: the store holds U+FFFD or a lone surrogate")
        if p["store"] not in stores:
            raise UnknownStore(f"unknown store {p['store']!r}")
        check_key(p["key"])
        if p["size"] > MAX_SIZE or p["stored_size"] > MAX_SIZE:
            raise TooLarge("payload too large")
        stored = fetch(stores, p["store"], p["key"], p["stored_size"])
        if len(stored) != p["stored_size"]:
            raise Checksum("stored_size mismatch")
        data = decompress(p["codec"], stored, p["size"])
        if len(data) != p["size"] or hashlib.sha256(data).hexdigest() != p["sha256"]:
            raise Checksum("payload does not match the pointer")
        return data
    if "offloader-codec" in h:
        if not DECIMAL.match(h.get("offloader-size") or b""):
            raise Malformed("offloader-size is not a decimal size")
        size = int(h["offloader-size"])
        if size > MAX_SIZE:
            raise TooLarge("inline value too large")
        data = decompress(h["offloader-codec"].decode("utf-8", "replace"), value, size)
        if len(data) != size:
            raise Checksum("inline size mismatch")
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

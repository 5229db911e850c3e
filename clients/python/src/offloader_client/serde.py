"""A Serializer and a Deserializer for confluent-kafka-python's
SerializingProducer and DeserializingConsumer (any callable (value, ctx)
works: ctx is a SerializationContext with topic and headers).

Chain a schema-registry serde around them as KIP-1159's chain does: the
Serializer runs its inner serializer first and stores the bytes it made; the
Deserializer resolves first and hands the original bytes, magic byte and
schema id intact, to its inner deserializer. Never give a pointer to a
schema-registry deserializer: it would read the pointer's JSON as Avro."""

from datetime import datetime, timezone
from typing import Any, Callable, Optional

from . import codecs
from .errors import NotFound
from .estimate import record_size
from .pointer import (CODECS, HEADER_INLINE_CODEC, HEADER_INLINE_SIZE, HEADER_LARGE_MESSAGE, HEADER_POINTER, VERSION_1,
                      Pointer, check_key, header_list, is_pointer, sha256_hex)
from .resolver import Resolver
from .stores import Store

DEFAULT_THRESHOLD = 1_048_576 - 4_096


class Deserializer:
    """Resolves a record's value (ctx.headers mark a pointer); inner, if given,
    deserializes the original bytes. skip_not_found: a record whose object is
    gone deserializes to None instead of raising NotFound (KIP-1159's policy)."""

    def __init__(self, resolver: Resolver, inner: Optional[Callable[[Any, Any], Any]] = None, skip_not_found: bool = False):
        self.resolver, self.inner, self.skip_not_found = resolver, inner, skip_not_found

    def __call__(self, value: Optional[bytes], ctx: Any = None) -> Any:
        try:
            data = self.resolver.resolve(value, getattr(ctx, "headers", None))
        except NotFound:
            if self.skip_not_found:
                return None
            raise
        if self.inner is None or data is None:
            return data
        return self.inner(data, ctx)


class Serializer:
    """Stores a value whose record (value and headers: a value serializer does not
    see the key, leave it room) is estimated over threshold, and writes a pointer
    with the headers large-message: true and offloader-pointer: v1 instead.
    Objects are keyed by content: PREFIX/sha256/HEX. With a codec, the value is
    compressed first and kept inline (headers offloader-codec, offloader-size)
    when it then fits. inner, if given, makes the bytes first.

    The producer must pass a headers list (or dict) for the serializer to mark a
    pointer in: SerializingProducer.produce(topic, value=v, headers=[])."""

    def __init__(self, store: Store, store_name: str = "payloads", threshold: int = DEFAULT_THRESHOLD, prefix: str = "producer",
                 codec: str = codecs.NONE, inner: Optional[Callable[[Any, Any], Optional[bytes]]] = None):
        if threshold < 1024:
            raise ValueError(f"threshold {threshold} must be at least 1024: a pointer record alone is a few hundred bytes")
        if codec not in CODECS:
            raise ValueError(f"codec {codec!r} must be one of {', '.join(CODECS)}")
        check_key(prefix + "/sha256/x")
        self.store, self.store_name, self.threshold, self.prefix, self.codec, self.inner = store, store_name, threshold, prefix, codec, inner

    def __call__(self, obj: Any, ctx: Any = None) -> Optional[bytes]:
        data = self.inner(obj, ctx) if self.inner is not None else obj
        if data is None:
            return None
        if not isinstance(data, (bytes, bytearray)):
            raise TypeError(f"the value is {type(data).__name__}: give bytes, or an inner serializer that makes them")
        data = bytes(data)
        headers = getattr(ctx, "headers", None)
        if is_pointer(headers) or record_size(None, data, headers) <= self.threshold:
            return data
        if headers is None:
            raise ValueError(f"a {len(data)}-byte value is over the threshold, and without the record's headers it cannot be "
                             "marked as a pointer: pass headers=[] to produce()")
        topic = getattr(ctx, "topic", "")
        stored = data
        if self.codec != codecs.NONE:
            stored = codecs.encode(self.codec, data)
            inline = [(HEADER_INLINE_CODEC, self.codec.encode()), (HEADER_INLINE_SIZE, str(len(data)).encode())]
            if record_size(None, stored, header_list(headers) + inline) <= self.threshold:
                _add(headers, inline)
                return stored
        digest = sha256_hex(data)
        key = f"{self.prefix}/sha256/{digest}"
        self.store.put(key, stored, {"source_topic": topic or "", "pipeline": self.prefix, "sha256": digest, "codec": self.codec,
                                     "created": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")})
        _add(headers, [(HEADER_LARGE_MESSAGE, b"true"), (HEADER_POINTER, VERSION_1.encode())])
        return Pointer(self.store_name, key, len(data), digest, self.codec, len(stored)).encode()


def _add(headers: Any, pairs: Any) -> None:
    if isinstance(headers, dict):
        headers.update(pairs)
    else:
        headers.extend(pairs)

"""The upper bound of a record's serialized size as one uncompressed batch, as
Kafka's producer estimates it (and offloader's daemon, Go and Java
serializers do): the threshold compares with this."""

from typing import Optional

from .pointer import Headers, header_list

_BATCH_OVERHEAD = 61
_RECORD_OVERHEAD_MAX = 21


def _varint(v: int) -> int:
    u = ((v << 1) ^ (v >> 63)) & 0xFFFFFFFFFFFFFFFF
    n = 1
    while u >= 0x80:
        u >>= 7
        n += 1
    return n


def _nullable(b: Optional[bytes]) -> int:
    return _varint(-1) if b is None else _varint(len(b)) + len(b)


def record_size(key: Optional[bytes], value: Optional[bytes], headers: Headers) -> int:
    """The estimate of a record with key, value and headers."""
    pairs = header_list(headers)
    body = sum(_varint(len(k.encode("utf-8"))) + len(k.encode("utf-8")) + _nullable(v) for k, v in pairs)
    return _BATCH_OVERHEAD + _RECORD_OVERHEAD_MAX + _nullable(key) + _nullable(value) + _varint(len(pairs)) + body

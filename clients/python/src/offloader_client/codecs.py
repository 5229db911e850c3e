"""The codecs of pointer v1: none, zstd (a frame), gzip (a member), lz4 (a
frame) and snappy (a raw block). Decoding never makes more than size + 1
bytes, so a forged size cannot make it allocate more. zstd, lz4 and snappy
need the extras of the same name (zstandard, lz4, cramjam)."""

import gzip as _gzip
import zlib

from .errors import Checksum, Malformed

NONE = "none"


def decode(codec: str, data: bytes, size: int) -> bytes:
    """The bytes data decodes to, at most size + 1 of them (a longer result fails the size check after)."""
    try:
        if codec == NONE:
            return data
        if codec == "gzip":
            return zlib.decompressobj(wbits=31).decompress(data, size + 1)
        if codec == "zstd":
            import io

            import zstandard
            with zstandard.ZstdDecompressor().stream_reader(io.BytesIO(data)) as r:
                return r.read(size + 1)
        if codec == "lz4":
            import lz4.frame
            d = lz4.frame.LZ4FrameDecompressor()
            return d.decompress(data, max_length=size + 1)
        if codec == "snappy":
            import cramjam
            if _snappy_length(data) > size:
                raise Checksum(f"the snappy block says more than the {size} bytes the pointer claims")
            return bytes(cramjam.snappy.decompress_raw(data))
    except ImportError as e:
        raise Malformed(f"codec {codec!r} needs the package {e.name}: pip install 'offloader-client[{codec}]'") from e
    except Checksum:
        raise
    except Exception as e:  # the libraries' own errors: the bytes do not decode
        raise Checksum(f"the {codec} bytes do not decode: {e}") from e
    raise Malformed(f"unknown codec {codec!r} (known: none, zstd, gzip, lz4, snappy)")


def encode(codec: str, data: bytes) -> bytes:
    if codec == NONE:
        return data
    if codec == "gzip":
        return _gzip.compress(data)
    try:
        if codec == "zstd":
            import zstandard
            return zstandard.ZstdCompressor().compress(data)
        if codec == "lz4":
            import lz4.frame
            return lz4.frame.compress(data)
        if codec == "snappy":
            import cramjam
            return bytes(cramjam.snappy.compress_raw(data))
    except ImportError as e:
        raise ValueError(f"codec {codec!r} needs the package {e.name}: pip install 'offloader-client[{codec}]'") from e
    raise ValueError(f"unknown codec {codec!r} (known: none, zstd, gzip, lz4, snappy)")


def _snappy_length(data: bytes) -> int:
    """The uncompressed length a snappy block starts with (a varint)."""
    n, shift = 0, 0
    for b in data[:10]:
        n |= (b & 0x7F) << shift
        if b < 0x80:
            return n
        shift += 7
    raise Checksum("the snappy block has no length")

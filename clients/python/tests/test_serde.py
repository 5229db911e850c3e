"""The Serializer and Deserializer on the filesystem store, every codec, and the failures they raise."""

import hashlib
import os

import pytest

from offloader_client import (Checksum, Deserializer, FilesystemStore, Malformed, NotFound, Pointer, Resolver, Serializer,
                              UnknownStore, parse, record_size)
from offloader_client.pointer import HEADER_INLINE_CODEC, HEADER_LARGE_MESSAGE, HEADER_POINTER


class Ctx:
    def __init__(self, headers, topic="orders"):
        self.headers, self.topic = headers, topic


def pair(tmp_path, **kw):
    store = FilesystemStore(str(tmp_path))
    return store, Serializer(store, threshold=4096, prefix="py-svc", **kw), Deserializer(Resolver({"payloads": store}))


def test_a_value_over_the_threshold_is_stored_and_read_back(tmp_path):
    store, ser, de = pair(tmp_path)
    value = os.urandom(100_000)
    headers = [("trace", b"t1")]
    out = ser(value, Ctx(headers))
    p = parse(out)
    assert p.key == "py-svc/sha256/" + hashlib.sha256(value).hexdigest()
    assert (p.size, p.stored_size, p.codec, p.store) == (100_000, 100_000, "none", "payloads")
    assert headers == [("trace", b"t1"), (HEADER_LARGE_MESSAGE, b"true"), (HEADER_POINTER, b"v1")]
    assert (tmp_path / "py-svc" / "sha256" / hashlib.sha256(value).hexdigest()).read_bytes() == value
    assert de(out, Ctx(headers)) == value


def test_the_threshold_counts_the_headers_as_the_producer_does(tmp_path):
    _, ser, _ = pair(tmp_path)
    value = b"x" * (4096 - record_size(None, b"", [("h", b"")]) - 1)
    headers = [("h", b"")]
    assert record_size(None, value, headers) <= 4096
    assert ser(value, Ctx(headers)) == value and len(headers) == 1
    big = [("h", b"y" * 100)]
    assert ser(value, Ctx(big)) != value and big[-1] == (HEADER_POINTER, b"v1")


def test_small_values_tombstones_and_pointers_pass_as_they_are(tmp_path):
    _, ser, de = pair(tmp_path)
    assert ser(b"small", Ctx([])) == b"small"
    assert ser(None, Ctx([])) is None and de(None, Ctx([])) is None
    already = [(HEADER_POINTER, b"v1")]
    assert ser(b"p" * 10_000, Ctx(already)) == b"p" * 10_000 and len(already) == 1
    assert de(b"plain", Ctx(None)) == b"plain"


def test_dict_headers_are_marked_too(tmp_path):
    _, ser, de = pair(tmp_path)
    headers = {"trace": "t1"}
    out = ser(b"v" * 10_000, Ctx(headers))
    assert headers[HEADER_POINTER] == b"v1" and headers[HEADER_LARGE_MESSAGE] == b"true"
    assert de(out, Ctx(list(headers.items()))) == b"v" * 10_000


def test_without_headers_a_large_value_is_refused_with_what_to_change(tmp_path):
    _, ser, _ = pair(tmp_path)
    with pytest.raises(ValueError, match=r"headers=\[\]"):
        ser(b"v" * 10_000, Ctx(None))


@pytest.mark.parametrize("codec", ["gzip", "zstd", "lz4", "snappy"])
def test_every_codec_inline_and_stored(tmp_path, codec):
    _, ser, de = pair(tmp_path, codec=codec)
    compressible = b"abc" * 10_000
    headers = []
    out = ser(compressible, Ctx(headers))
    assert dict(headers)[HEADER_INLINE_CODEC] == codec.encode() and len(out) < 4096
    assert de(out, Ctx(headers)) == compressible
    noise = os.urandom(50_000)
    headers = []
    out = ser(noise, Ctx(headers))
    p = parse(out)
    assert p.codec == codec and p.size == 50_000
    assert de(out, Ctx(headers)) == noise


def test_a_missing_object_raises_or_is_none_when_skipped(tmp_path):
    store, ser, de = pair(tmp_path)
    headers = []
    out = ser(b"m" * 10_000, Ctx(headers))
    os.remove(tmp_path / parse(out).key)
    with pytest.raises(NotFound):
        de(out, Ctx(headers))
    assert Deserializer(Resolver({"payloads": store}), skip_not_found=True)(out, Ctx(headers)) is None


def test_forged_pointers_are_refused(tmp_path):
    store, ser, de = pair(tmp_path)
    headers = []
    p = parse(ser(b"f" * 10_000, Ctx(headers)))
    wrong_size = Pointer(p.store, p.key, p.size + 1, p.sha256, p.codec, p.stored_size + 1).encode()
    with pytest.raises(Checksum):
        de(wrong_size, Ctx(headers))
    with pytest.raises(UnknownStore):
        de(Pointer("elsewhere", p.key, p.size, p.sha256, p.codec, p.stored_size).encode(), Ctx(headers))
    with pytest.raises(Malformed):
        de(Pointer(p.store, "../" + p.key, p.size, p.sha256, p.codec, p.stored_size).encode(), Ctx(headers))
    (tmp_path / "link").symlink_to(tmp_path / p.key)
    with pytest.raises(NotFound):
        de(Pointer(p.store, "link", p.size, p.sha256, p.codec, p.stored_size).encode(), Ctx(headers))


@pytest.mark.parametrize("codec", ["gzip", "zstd", "lz4"])
def test_a_decompression_bomb_stops_at_the_claimed_size(tmp_path, codec):
    from offloader_client import codecs

    bomb = codecs.encode(codec, b"\0" * (32 << 20))
    assert len(codecs.decode(codec, bomb, 10)) == 11  # size + 1: enough to see it is too long, no more
    store = FilesystemStore(str(tmp_path))
    store.put("bomb", bomb, {})
    forged = Pointer("payloads", "bomb", 10, hashlib.sha256(b"\0" * 10).hexdigest(), codec, len(bomb)).encode()
    with pytest.raises(Checksum):
        Resolver({"payloads": store}).resolve(forged, [(HEADER_POINTER, b"v1")])


def test_a_snappy_block_claiming_more_than_the_pointer_is_refused_before_decoding():
    from offloader_client import codecs

    with pytest.raises(Checksum, match="more than"):
        codecs.decode("snappy", codecs.encode("snappy", b"\0" * (1 << 20)), 10)


def test_an_inner_serializer_chains_as_kip_1159s_does(tmp_path):
    store = FilesystemStore(str(tmp_path))
    ser = Serializer(store, threshold=4096, inner=lambda obj, ctx: obj.encode())
    de = Deserializer(Resolver({"payloads": store}), inner=lambda data, ctx: data.decode())
    headers = []
    text = "é" * 10_000
    out = ser(text, Ctx(headers))
    assert parse(out).size == len(text.encode())
    assert de(out, Ctx(headers)) == text


def test_settings_are_checked(tmp_path):
    store = FilesystemStore(str(tmp_path))
    with pytest.raises(ValueError, match="at least 1024"):
        Serializer(store, threshold=100)
    with pytest.raises(ValueError, match="codec"):
        Serializer(store, codec="brotli")
    with pytest.raises(Malformed):
        Serializer(store, prefix="../x")


def test_a_root_that_is_a_symlink_still_reads(tmp_path):
    (tmp_path / "real").mkdir()
    (tmp_path / "alias").symlink_to(tmp_path / "real")
    store = FilesystemStore(str(tmp_path / "alias"))
    store.put("k/v", b"payload", {})
    assert store.get("k/v", 7) == b"payload"
    with pytest.raises(Checksum):
        store.get("k/v", 6)

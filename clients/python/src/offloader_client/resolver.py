"""Gives a record's original value back, following docs/pointer-format.md step
by step: a pointer is resolved only through the store given under its name,
its key checked, the object read no larger than the pointer claims, the codec
undone, and the size and SHA-256 verified; an inline-compressed value is
decompressed; any other value comes back as it is."""

import re
import threading
from collections import OrderedDict, deque
from concurrent.futures import ThreadPoolExecutor
from typing import Deque, Dict, Iterable, Iterator, Mapping, NamedTuple, Optional, Tuple

from . import codecs
from .errors import Checksum, Malformed, PointerError, TooLarge, Unavailable, UnknownStore, UnknownVersion
from .pointer import (CODECS, HEADER_INLINE_CODEC, HEADER_INLINE_SIZE, HEADER_POINTER, VERSION_1, Headers, Pointer,
                      check_key, header_list, parse, sha256_hex)
from .stores import Store

DEFAULT_MAX_BYTES = 64 << 20
DEFAULT_PREFETCH_OBJECTS = 16
DEFAULT_PREFETCH_BYTES = 64 << 20
DEFAULT_PREFETCH_AHEAD = 500
_DECIMAL = re.compile(rb"^[0-9]{1,18}$")


class Resolved(NamedTuple):
    """A record's outcome: its original value, or the PointerError it failed with."""
    value: Optional[bytes]
    error: Optional[PointerError]


class Resolver:
    """Resolves pointers through stores, by the names pointers give them.

    max_bytes is the largest payload it accepts (64 MiB by default): a pointer
    claiming more is refused before anything is read, and no read makes more
    than the pointer's stored_size plus one byte.

    cache_bytes keeps that many bytes of verified payloads in memory, by store,
    key and SHA-256, least recently used out first (0, the default: none), as
    the Java deserializer's large.message.cache.bytes: records that point at
    the same object (a value produced again, a topic read twice) read it once.
    """

    def __init__(self, stores: Mapping[str, Store], max_bytes: int = DEFAULT_MAX_BYTES, cache_bytes: int = 0):
        if cache_bytes < 0:
            raise ValueError(f"cache_bytes {cache_bytes} must be 0 (no cache) or more")
        self.stores: Dict[str, Store] = dict(stores)
        self.max_bytes = max_bytes
        self._cache = _Cache(cache_bytes) if cache_bytes else None

    def resolve(self, value: Optional[bytes], headers: Headers) -> Optional[bytes]:
        """The record's original value (None for a tombstone). Raises a PointerError
        whose reason names the format's class; nothing else comes out."""
        try:
            return self._resolve(value, headers)
        except PointerError:
            raise
        except Exception as e:  # a store that broke its contract: a failure that may pass
            raise Unavailable(f"resolving: {type(e).__name__}: {e}") from e

    def _resolve(self, value: Optional[bytes], headers: Headers) -> Optional[bytes]:
        h = dict(header_list(headers))  # the last header of a name wins
        if HEADER_POINTER in h:
            if h[HEADER_POINTER] != VERSION_1.encode():
                raise UnknownVersion(f"unknown pointer version {h[HEADER_POINTER]!r}: this reader knows 'v1'")
            return self.resolve_pointer(parse(value))
        if HEADER_INLINE_CODEC not in h or value is None:
            return value
        codec, size = h[HEADER_INLINE_CODEC], h.get(HEADER_INLINE_SIZE) or b""
        if not _DECIMAL.match(size):
            raise Malformed(f"an inline-compressed value whose {HEADER_INLINE_SIZE} is not a decimal size")
        n = int(size)
        if n > self.max_bytes:
            raise TooLarge(f"an inline value of {n} bytes, more than {self.max_bytes}")
        name = (codec or b"").decode("utf-8", "replace")
        if name not in CODECS or name == codecs.NONE:
            raise Malformed(f"an inline value compressed with unknown codec {name[:200]!r}")
        data = codecs.decode(name, value, n)
        if len(data) != n:
            raise Checksum(f"the inline value decodes to {len(data)} bytes, {HEADER_INLINE_SIZE} says {n}")
        return data

    def resolve_pointer(self, p: Pointer) -> bytes:
        """The verified payload of a parsed pointer."""
        store = self.stores.get(p.store)
        if store is None:
            raise UnknownStore(f"unknown store {p.store[:200]!r}: this reader has {sorted(self.stores)}")
        check_key(p.key)
        if p.size > self.max_bytes or p.stored_size > self.max_bytes:
            raise TooLarge(f"a payload of {max(p.size, p.stored_size)} bytes, more than max_bytes {self.max_bytes}")
        cached = self._cache.get((p.store, p.key, p.sha256)) if self._cache else None
        if cached is not None:
            return cached
        stored = store.get(p.key, p.stored_size)
        if len(stored) != p.stored_size:
            raise Checksum(f"the object {p.key} holds {len(stored)} bytes, the pointer says {p.stored_size}")
        data = codecs.decode(p.codec, stored, p.size)
        if len(data) != p.size or sha256_hex(data) != p.sha256:
            raise Checksum(f"the payload of {p.key} does not match the pointer's size and SHA-256")
        if self._cache:
            self._cache.put((p.store, p.key, p.sha256), data)
        return data

    def prefetch(self, records: Iterable[Tuple[Optional[bytes], Headers]], objects: int = DEFAULT_PREFETCH_OBJECTS,
                 max_bytes: int = DEFAULT_PREFETCH_BYTES, ahead: int = DEFAULT_PREFETCH_AHEAD) -> Iterator[Resolved]:
        """Resolves (value, headers) records several at once and yields their
        outcomes in the records' order, each failure on its own record: a
        consumer reads at the store's bandwidth, not at one object's latency per
        record. At most `objects` payloads are fetched at once, and at most
        `max_bytes` (by what the pointers claim: see claim) are fetching or
        fetched and not yet yielded; a larger payload is fetched alone. At most
        `ahead` records are taken from `records` before their outcomes are
        yielded."""
        pending: Deque[Tuple[object, int]] = deque()
        held = 0
        with ThreadPoolExecutor(max_workers=max(1, objects)) as pool:
            try:
                for value, headers in records:
                    size = self.claim(value, headers)
                    while pending and (held + size > max_bytes or len(pending) >= ahead):
                        future, claimed = pending.popleft()
                        held -= claimed
                        yield future.result()
                    pending.append((pool.submit(self._outcome, value, headers), size))
                    held += size
                while pending:
                    future, _ = pending.popleft()
                    yield future.result()
            finally:
                for future, _ in pending:
                    future.cancel()

    def resolve_batch(self, records: Iterable[Tuple[Optional[bytes], Headers]], objects: int = DEFAULT_PREFETCH_OBJECTS,
                      max_bytes: int = DEFAULT_PREFETCH_BYTES) -> "list[Resolved]":
        """prefetch's outcomes as a list, in the records' order (all values held at once)."""
        return list(self.prefetch(records, objects, max_bytes))  # ahead: the default, as the list holds all

    def _outcome(self, value: Optional[bytes], headers: Headers) -> Resolved:
        try:
            return Resolved(self.resolve(value, headers), None)
        except PointerError as e:
            return Resolved(None, e)

    def claim(self, value: Optional[bytes], headers: Headers) -> int:
        """The bytes a record's payload holds while fetched and once resolved:
        its pointer's size, plus its stored_size when a codec was used (0 for a
        record that is no pointer, or a pointer refused before any read)."""
        h = dict(header_list(headers))
        if h.get(HEADER_POINTER) != VERSION_1.encode():
            return 0
        try:
            p = parse(value)
        except PointerError:
            return 0
        if p.size > self.max_bytes or p.stored_size > self.max_bytes:
            return 0
        return p.size + (p.stored_size if p.codec != codecs.NONE else 0)

class _Cache:
    """Verified payloads by (store, key, SHA-256), at most capacity bytes, least
    recently used out first; safe from the prefetch threads."""

    def __init__(self, capacity: int):
        self.capacity, self.held = capacity, 0
        self.entries: "OrderedDict[Tuple[str, str, str], bytes]" = OrderedDict()
        self.lock = threading.Lock()

    def get(self, key: Tuple[str, str, str]) -> Optional[bytes]:
        with self.lock:
            data = self.entries.get(key)
            if data is not None:
                self.entries.move_to_end(key)
            return data

    def put(self, key: Tuple[str, str, str], data: bytes) -> None:
        if len(data) > self.capacity:
            return
        with self.lock:
            if key in self.entries:
                return
            self.entries[key] = data
            self.held += len(data)
            while self.held > self.capacity:
                _, old = self.entries.popitem(last=False)
                self.held -= len(old)

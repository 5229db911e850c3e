"""Resolver.prefetch and resolve_batch: outcomes in order, several payloads
fetched at once within their bounds, each failure on its own record, and the
shared vectors resolved alike."""

import base64
import hashlib
import threading
import time

from offloader_client import Checksum, NotFound, Pointer, Resolver

POINTER_HEADERS = [("large-message", b"true"), ("offloader-pointer", b"v1")]


class SlowStore:
    """An in-memory store whose reads take a while, counting those at once."""

    def __init__(self):
        self.objects, self.lock = {}, threading.Lock()
        self.now = self.most = 0
        self.held = self.most_held = 0

    def get(self, key, limit):
        with self.lock:
            self.now += 1
            self.most = max(self.most, self.now)
        time.sleep(0.02)
        with self.lock:
            self.now -= 1
        if key not in self.objects:
            raise NotFound(f"no object {key}")
        return self.objects[key]


def pointer_to(store, key, payload):
    store.objects[key] = payload
    return Pointer(store="mem", key=key, size=len(payload), sha256=hashlib.sha256(payload).hexdigest(), codec="none",
                   stored_size=len(payload)).encode()


def records(store, n):
    out, want = [], []
    for i in range(n):
        payload = bytes([i % 256]) * (1000 + i)
        out.append((pointer_to(store, f"p/{i}", payload), POINTER_HEADERS))
        want.append(payload)
        out.append((f"inline {i}".encode(), []))
        want.append(f"inline {i}".encode())
    return out, want


def test_outcomes_come_in_order_while_payloads_are_fetched_at_once():
    store = SlowStore()
    recs, want = records(store, 40)
    got = Resolver({"mem": store}).resolve_batch(recs, objects=4)
    assert [r.value for r in got] == want and all(r.error is None for r in got)
    assert store.most == 4, f"at most {store.most} reads at once, want 4"


def test_the_byte_bound_holds():
    store = SlowStore()
    recs, want = records(store, 20)  # payloads of 1,000 to 1,019 bytes
    got = list(Resolver({"mem": store}).prefetch(recs, objects=16, max_bytes=2100))
    assert [r.value for r in got] == want
    assert store.most == 2, f"{store.most} reads at once within 2,100 bytes, want 2"


def test_a_failure_is_its_own_records():
    store = SlowStore()
    recs, want = records(store, 9)
    del store.objects["p/3"]
    store.objects["p/6"] = b"x" * len(store.objects["p/6"])
    got = Resolver({"mem": store}).resolve_batch(recs, objects=3)
    for i, r in enumerate(got):
        if i == 2 * 3:
            assert isinstance(r.error, NotFound) and r.value is None
        elif i == 2 * 6:
            assert isinstance(r.error, Checksum) and r.value is None
        else:
            assert r.error is None and r.value == want[i], i


def test_the_vectors_resolve_alike_through_prefetch(vectors, vectors_resolver):
    resolver = vectors_resolver
    cases = vectors["cases"] + vectors["filesystem"]["cases"]
    recs = [(base64.b64decode(c["value_base64"]) if "value_base64" in c else c["value"].encode(),
             [(k, v.encode()) for k, v in c["headers"]]) for c in cases]
    for case, r in zip(cases, resolver.resolve_batch(recs)):
        if r.error is not None:
            assert r.error.reason == case.get("reject"), f"{case['name']}: refused as {r.error.reason}, want {case.get('reject')}"
        else:
            assert "reject" not in case, case["name"]
            assert hashlib.sha256(r.value).hexdigest() == case["sha256"], case["name"]


class CountingStore(SlowStore):
    """SlowStore counting its reads by key."""

    def __init__(self):
        super().__init__()
        self.reads = {}

    def get(self, key, limit):
        with self.lock:
            self.reads[key] = self.reads.get(key, 0) + 1
        return super().get(key, limit)


def test_the_cache_reads_an_object_once_within_its_bytes():
    store = CountingStore()
    a, b, c = (pointer_to(store, k, bytes([n]) * 1000) for n, k in enumerate(["a", "b", "c"]))
    resolver = Resolver({"mem": store}, cache_bytes=2000)
    for p in (a, a, b, a, c, b, a):
        resolver.resolve(p, POINTER_HEADERS)
    # a and b fit; a's hit makes b the least recently used, which c pushes
    # out; b, read again, pushes out a, read again last.
    assert store.reads == {"a": 2, "b": 2, "c": 1}, store.reads
    assert Resolver({"mem": store}).resolve(a, POINTER_HEADERS) == b"\x00" * 1000
    assert store.reads["a"] == 3  # no cache by default


def test_the_cache_keeps_only_verified_payloads():
    store = CountingStore()
    good = pointer_to(store, "k", b"g" * 100)
    resolver = Resolver({"mem": store}, cache_bytes=1 << 20)
    store.objects["k"] = b"x" * 100  # corrupt before the first read
    for _ in range(2):
        try:
            resolver.resolve(good, POINTER_HEADERS)
        except Checksum:
            pass
        else:
            raise AssertionError("a corrupt object resolved")
    assert store.reads == {"k": 2}, "a failed read was cached"

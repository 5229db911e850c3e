"""Pointer format v1 (docs/pointer-format.md): parsing, strictly, and encoding."""

import hashlib
import json
import re
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

from .errors import Malformed

HEADER_LARGE_MESSAGE = "large-message"
HEADER_POINTER = "offloader-pointer"
VERSION_1 = "v1"
HEADER_INLINE_CODEC = "offloader-codec"
HEADER_INLINE_SIZE = "offloader-size"

CODECS = ("none", "zstd", "gzip", "lz4", "snappy")
MAX_ENCODED = 4096
MAX_KEY_BYTES = 1024
_INT64 = (1 << 63) - 1
_FIELDS = {"v": int, "store": str, "key": str, "size": int, "sha256": str, "codec": str, "stored_size": int}
_SHA256 = re.compile(r"^[0-9a-f]{64}$")

# Headers as confluent-kafka-python gives them: a list of (name, value) pairs,
# or a dict; values are bytes, str or None.
Headers = Union[Sequence[Tuple[str, Any]], Dict[str, Any], None]


@dataclass(frozen=True)
class Pointer:
    """A stored value: where it is (store, key) and what it must be (size, sha256)."""

    store: str
    key: str
    size: int
    sha256: str
    codec: str
    stored_size: int

    def encode(self) -> bytes:
        """The pointer's value: compact JSON, the version first, members in the documented order."""
        return json.dumps({"v": 1, "store": self.store, "key": self.key, "size": self.size, "sha256": self.sha256,
                           "codec": self.codec, "stored_size": self.stored_size},
                          separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def header_list(headers: Headers) -> List[Tuple[str, Optional[bytes]]]:
    """Headers as (name, bytes or None) pairs, in order."""
    if headers is None:
        return []
    items = headers.items() if isinstance(headers, dict) else headers
    out = []
    for name, value in items:
        if isinstance(value, str):
            value = value.encode("utf-8")
        out.append((name, value))
    return out


def is_pointer(headers: Headers) -> bool:
    """Whether the headers mark a pointer record (an offloader-pointer header, whatever its value)."""
    return any(name == HEADER_POINTER for name, _ in header_list(headers))


def well_formed(text: str) -> bool:
    """No lone surrogate (an escaped one decodes to it) and no U+FFFD."""
    return not any(0xD800 <= ord(c) <= 0xDFFF or c == "\ufffd" for c in text)


def check_key(key: str) -> None:
    """Refuse keys that could leave a store (rule 3 of the format)."""
    segments = key.split("/")
    if (not key or not well_formed(key) or len(key.encode("utf-8")) > MAX_KEY_BYTES or key.startswith("/") or "\\" in key
            or any(ord(c) < 0x20 or ord(c) == 0x7F for c in key)
            or any(s in ("", ".", "..") for s in segments)):
        raise Malformed(f"malformed pointer: forged key {_cut(key)!r}")


def _cut(s: str) -> str:
    return s if len(s) <= 200 else s[:200] + "..."


def _flat_object(text: str) -> None:
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


def _exact_members(pairs: List[Tuple[str, Any]]) -> Dict[str, Any]:
    names = [k for k, _ in pairs]
    if len(names) != len(set(names)):
        raise Malformed("malformed pointer: a member appears twice")
    return dict(pairs)


def parse(value: Optional[bytes]) -> Pointer:
    """A pointer value: at most 4096 bytes of UTF-8, one flat JSON object with exactly the seven members."""
    value = value or b""
    if len(value) > MAX_ENCODED:
        raise Malformed(f"malformed pointer: {len(value)} bytes, over {MAX_ENCODED}")
    try:
        text = value.decode("utf-8")
    except UnicodeDecodeError as e:
        raise Malformed("malformed pointer: not UTF-8") from e
    _flat_object(text)
    try:
        p = json.loads(text, object_pairs_hook=_exact_members)
    except ValueError as e:
        raise Malformed(f"malformed pointer: {e}") from e
    if not isinstance(p, dict) or set(p) != set(_FIELDS):
        raise Malformed(f"malformed pointer: members {sorted(p) if isinstance(p, dict) else type(p).__name__}, want {sorted(_FIELDS)}")
    for k, t in _FIELDS.items():
        if type(p[k]) is not t:
            raise Malformed(f"malformed pointer: {k} is {type(p[k]).__name__}, want {t.__name__}")
    if p["v"] != 1:
        raise Malformed(f"malformed pointer: v is {p['v']}, want 1")
    if not _SHA256.match(p["sha256"]):
        raise Malformed("malformed pointer: sha256 is not 64 lower-case hex digits")
    for k in ("size", "stored_size"):
        if not 0 <= p[k] <= _INT64:
            raise Malformed(f"malformed pointer: {k} {p[k]} is out of range")
    if p["codec"] not in CODECS:
        raise Malformed(f"malformed pointer: unknown codec {_cut(p['codec'])!r}")
    if p["codec"] == "none" and p["size"] != p["stored_size"]:
        raise Malformed("malformed pointer: codec none with a stored_size other than size")
    if not well_formed(p["store"]):
        raise Malformed("malformed pointer: the store holds U+FFFD or a lone surrogate")
    return Pointer(p["store"], p["key"], p["size"], p["sha256"], p["codec"], p["stored_size"])


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()

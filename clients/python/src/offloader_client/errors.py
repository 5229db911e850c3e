"""The classes of refusal of pointer format v1 (docs/pointer-format.md).

Every failure the resolver raises is a PointerError whose ``reason`` names its
class, the same class the Go resolver and the Java deserializer give for the
same record (pointer/testdata/vectors.json holds the shared cases).
"""


class PointerError(Exception):
    """A record this reader refuses; ``reason`` names the format's class."""

    reason = "malformed"


class Malformed(PointerError):
    """Not a well-formed pointer: bad JSON, a forged key, an unknown codec."""

    reason = "malformed"


class UnknownVersion(PointerError):
    """A pointer marker other than v1."""

    reason = "unknown_version"


class UnknownStore(PointerError):
    """The pointer names a store this reader was not given."""

    reason = "unknown_store"


class NotFound(PointerError):
    """The pointer's object is gone (or never was)."""

    reason = "not_found"


class Checksum(PointerError):
    """The stored bytes do not match the pointer's size or SHA-256."""

    reason = "checksum"


class TooLarge(PointerError):
    """A payload over the reader's largest (max_bytes)."""

    reason = "too_large"


class StoreError(PointerError):
    """The store failed. ``retriable`` says whether trying again may help."""

    reason = "unavailable"
    retriable = True


class Unavailable(StoreError):
    """The store did not answer, or answered with a failure that may pass (5xx, 429, a timeout)."""

    reason = "unavailable"
    retriable = True


class Refused(StoreError):
    """The store refused the call for good (401, 403, a redirect, a bad request): fix the settings."""

    reason = "refused"
    retriable = False

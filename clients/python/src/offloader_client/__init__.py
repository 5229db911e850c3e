"""offloader's pointer format v1 from Python: a Resolver over the filesystem,
Azure Blob, S3 and HTTP stores, and a Serializer, Deserializer and
prefetching Consumer for confluent-kafka-python. See docs/clients.md."""

from .consumer import Consumer
from .errors import (Checksum, Malformed, NotFound, PointerError, Refused, StoreError, TooLarge, Unavailable,
                     UnknownStore, UnknownVersion)
from .estimate import record_size
from .pointer import Pointer, is_pointer, parse
from .resolver import DEFAULT_MAX_BYTES, DEFAULT_PREFETCH_BYTES, DEFAULT_PREFETCH_OBJECTS, Resolved, Resolver
from .serde import DEFAULT_THRESHOLD, Deserializer, Serializer
from .stores import AzureBlobStore, FilesystemStore, HttpStore, S3Store, Store

__all__ = [
    "AzureBlobStore", "Checksum", "Consumer", "DEFAULT_MAX_BYTES", "DEFAULT_THRESHOLD", "Deserializer", "FilesystemStore", "HttpStore",
    "DEFAULT_PREFETCH_BYTES", "DEFAULT_PREFETCH_OBJECTS", "Malformed", "NotFound", "Pointer", "PointerError", "Refused", "Resolved", "Resolver", "S3Store", "Serializer", "Store", "StoreError",
    "TooLarge", "Unavailable", "UnknownStore", "UnknownVersion", "is_pointer", "parse", "record_size",
]

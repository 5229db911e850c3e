"""The payload stores a pointer can name: a directory, Azure Blob Storage, S3
(or a store that speaks its API) and an HTTP server that follows offloader's
HTTP store contract (docs/http-store.md). Each reads an object no larger than
the limit it is given, and turns its SDK's failures into the format's classes:
NotFound, Refused (for good: fix the settings) or Unavailable (may pass)."""

import errno
import os
import stat
import tempfile
import urllib.error
import urllib.parse
import urllib.request
from typing import Any, Callable, Dict, Optional, Protocol, TypeVar

from .errors import Checksum, Malformed, NotFound, PointerError, Refused, Unavailable
from .pointer import check_key, sha256_hex

T = TypeVar("T")


class Store(Protocol):
    """A payload store: get(key, limit) reads at most limit bytes (more is a Checksum
    failure); put(key, data, metadata) writes an object."""

    def get(self, key: str, limit: int) -> bytes: ...

    def put(self, key: str, data: bytes, metadata: Dict[str, str]) -> None: ...


def _status_error(name: str, op: str, key: str, status: Optional[int], cause: Any) -> PointerError:
    if status == 404 and op == "get":
        return NotFound(f"{name}: no object {key}")
    if status is not None and (status in (408, 429) or (status >= 500 and status != 501)):
        return Unavailable(f"{name}: {op} {key}: HTTP {status}: {cause}")
    if status is not None:
        return Refused(f"{name}: {op} {key}: HTTP {status}: {cause}")
    return Unavailable(f"{name}: {op} {key}: {cause}")


# META_DIR holds the objects' metadata under a filesystem store's root (as
# offloader's own filesystem store lays it out): no key reaches into it.
META_DIR = ".offloader-meta"


class FilesystemStore:
    """Objects as files under root, the key's segments as directories; the
    metadata of each in META_DIR, which no key may name. Only regular files
    are objects: a directory, a FIFO or a symlink (even one that stays under
    the root) is NotFound, as in the Go and Java readers."""

    def __init__(self, root: str):
        self.root = os.path.realpath(root)  # a root that is itself a symlink is followed once, here

    def _path(self, key: str) -> str:
        check_key(key)
        if key == META_DIR or key.startswith(META_DIR + "/"):
            raise Malformed(f"malformed pointer: key {key!r} is inside the filesystem store's metadata directory {META_DIR}")
        return os.path.join(self.root, *key.split("/"))

    def get(self, key: str, limit: int) -> bytes:
        path = self._path(key)
        if os.path.realpath(path) != path:
            raise NotFound(f"filesystem store: {key} is not a regular file under the root")  # a symlink below the root
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError) as e:
            raise NotFound(f"filesystem store: no object {key}") from e
        except PermissionError as e:
            raise Refused(f"filesystem store: get {key}: {e}") from e
        except OSError as e:
            if e.errno == errno.ELOOP:  # O_NOFOLLOW met a symlink
                raise NotFound(f"filesystem store: {key} is not a regular file") from e
            raise Unavailable(f"filesystem store: get {key}: {e}") from e
        st = os.fstat(fd)  # before fdopen, which refuses a directory with its own error
        if not stat.S_ISREG(st.st_mode):
            os.close(fd)
            raise NotFound(f"filesystem store: {key} is not a regular file")
        with os.fdopen(fd, "rb") as f:
            if st.st_size > limit:
                raise Checksum(f"filesystem store: {key} holds {st.st_size} bytes, more than the {limit} expected")
            return f.read(limit + 1)

    def put(self, key: str, data: bytes, metadata: Dict[str, str]) -> None:
        path = self._path(key)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".tmp-")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise


class AzureBlobStore:
    """Blobs of one container (azure-storage-blob): from a connection string, or
    a ContainerClient you built (an account URL with a credential)."""

    def __init__(self, container: str = "", connection_string: str = "", client: Any = None):
        if client is None:
            from azure.storage.blob import BlobServiceClient
            if not connection_string or not container:
                raise ValueError("azure blob store: give a connection string and a container, or a ContainerClient")
            client = BlobServiceClient.from_connection_string(connection_string).get_container_client(container)
        self.container = client

    def _error(self, op: str, key: str, e: Exception) -> PointerError:
        status = getattr(e, "status_code", None)
        if type(e).__name__ == "ResourceNotFoundError" and op == "get":
            return NotFound(f"azure blob store: no object {key}")
        return _status_error("azure blob store", op, key, status, e)

    def get(self, key: str, limit: int) -> bytes:
        check_key(key)
        blob = self.container.get_blob_client(key)
        try:
            # A range of limit + 1 bytes at most: a larger object shows as one
            # byte too many, never as more in memory.
            data = blob.download_blob(offset=0, length=limit + 1).readall() if limit > 0 else blob.download_blob().readall()
        except Exception as e:
            if getattr(e, "status_code", None) == 416:  # a range of an empty object
                raise Checksum(f"azure blob store: {key} holds 0 bytes, the pointer says {limit}") from e
            raise self._error("get", key, e) from e
        if len(data) > limit:
            raise Checksum(f"azure blob store: {key} holds more than the {limit} bytes expected")
        return data

    def put(self, key: str, data: bytes, metadata: Dict[str, str]) -> None:
        check_key(key)
        try:
            self.container.get_blob_client(key).upload_blob(data, overwrite=True, metadata=metadata)
        except Exception as e:
            raise self._error("put", key, e) from e


class S3Store:
    """Objects of one bucket (boto3): give a client, or boto3.client's keyword
    arguments (endpoint_url for an S3-compatible store)."""

    def __init__(self, bucket: str, client: Any = None, **client_args: Any):
        if client is None:
            import boto3
            client = boto3.client("s3", **client_args)
        self.bucket, self.client = bucket, client

    def _error(self, op: str, key: str, e: Exception) -> PointerError:
        response = getattr(e, "response", None) or {}
        code = response.get("Error", {}).get("Code")
        status = response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        if op == "get" and (code in ("NoSuchKey", "404") or status == 404):
            return NotFound(f"s3 store: no object {key}")
        return _status_error("s3 store", op, key, status, e)

    def get(self, key: str, limit: int) -> bytes:
        check_key(key)
        try:
            obj = self.client.get_object(Bucket=self.bucket, Key=key)
            if obj["ContentLength"] > limit:
                obj["Body"].close()
                raise Checksum(f"s3 store: {key} holds {obj['ContentLength']} bytes, more than the {limit} expected")
            return obj["Body"].read(limit + 1)
        except PointerError:
            raise
        except Exception as e:
            raise self._error("get", key, e) from e

    def put(self, key: str, data: bytes, metadata: Dict[str, str]) -> None:
        check_key(key)
        try:
            self.client.put_object(Bucket=self.bucket, Key=key, Body=data, Metadata=metadata)
        except Exception as e:
            raise self._error("put", key, e) from e


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, req, fp, code, msg, headers, newurl):  # type: ignore[no-untyped-def]
        return None  # a redirect is an answer, never followed: the store would be somewhere else


class HttpStore:
    """An HTTP server that follows offloader's HTTP store contract: PUT and GET
    of <url>/<key>, the token in auth_header as "<scheme> <token>". Redirects are
    refused, not followed."""

    def __init__(self, url: str, token: str = "", auth_header: str = "Authorization", scheme: str = "Bearer", timeout: float = 30.0):
        self.base = url.rstrip("/")
        self.auth = (auth_header, f"{scheme} {token}" if scheme else token) if token else None
        self.timeout = timeout
        self.opener = urllib.request.build_opener(_NoRedirects)

    def _request(self, method: str, key: str, data: Optional[bytes] = None) -> urllib.request.Request:
        check_key(key)
        path = "/".join(urllib.parse.quote(s, safe="") for s in key.split("/"))
        req = urllib.request.Request(f"{self.base}/{path}", data=data, method=method)
        if self.auth:
            req.add_header(*self.auth)
        return req

    def _open(self, op: str, key: str, req: urllib.request.Request, read: Callable[[Any], T]) -> T:
        """read of the response to req; the store's failures as the format's classes."""
        try:
            with self.opener.open(req, timeout=self.timeout) as resp:  # a status other than 2xx raises HTTPError
                return read(resp)
        except PointerError:
            raise
        except urllib.error.HTTPError as e:
            raise _status_error("http store", op, key, e.code, e.reason) from e
        except (urllib.error.URLError, OSError) as e:
            raise Unavailable(f"http store: {op} {key}: {e}") from e

    def get(self, key: str, limit: int) -> bytes:
        def read(resp: Any) -> bytes:
            length = resp.headers.get("Content-Length")
            if length is not None and int(length) > limit:
                raise Checksum(f"http store: {key} holds {length} bytes, more than the {limit} expected")
            data: bytes = resp.read(limit + 1)
            if length is not None and len(data) != int(length):
                raise Unavailable(f"http store: get {key}: the body has {len(data)} bytes, Content-Length said {length}")
            want = resp.headers.get("X-Offloader-Sha256")
            if want is not None and want != sha256_hex(data):
                raise Unavailable(f"http store: get {key}: the body does not match the server's X-Offloader-Sha256")
            return data
        return self._open("get", key, self._request("GET", key), read)

    def put(self, key: str, data: bytes, metadata: Dict[str, str]) -> None:
        req = self._request("PUT", key, data)
        req.add_header("Content-Type", "application/octet-stream")
        req.add_header("X-Offloader-Sha256", sha256_hex(data))
        for k, v in metadata.items():
            req.add_header("X-Offloader-Meta-" + k, v)
        self._open("put", key, req, lambda resp: None)

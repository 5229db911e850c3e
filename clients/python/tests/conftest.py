import base64
import json
import os
import pathlib
import uuid

import pytest

VECTORS = pathlib.Path(__file__).resolve().parents[3] / "pointer" / "testdata" / "vectors.json"


@pytest.fixture(scope="session")
def vectors():
    return json.loads(VECTORS.read_text())


def live(name):
    """A setting of the real services (make test passes them); tests that need one skip without it."""
    value = os.environ.get(name, "")
    if not value:
        pytest.skip(f"{name} is not set: the real broker and stores are needed (make test starts them)")
    return value


def azure_store():
    """An AzureBlobStore over a new container of the real Azurite."""
    from azure.storage.blob import BlobServiceClient

    from offloader_client import AzureBlobStore
    conn = live("TEST_AZURE_CONNECTION_STRING")
    container = "py-" + uuid.uuid4().hex[:12]
    BlobServiceClient.from_connection_string(conn).create_container(container)
    return AzureBlobStore(container=container, connection_string=conn)


def lay_out(layout, root):
    """Makes a filesystem store's layout of the shared vectors in root (a
    directory of its own: outside goes to its parent)."""
    for base, files in ((root, layout["files"]), (root.parent, layout["outside"])):
        for name, b64 in files.items():
            path = base.joinpath(*name.split("/"))
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(base64.b64decode(b64))
    for name in layout["directories"]:
        root.joinpath(*name.split("/")).mkdir(parents=True, exist_ok=True)
    for name in layout["fifos"]:
        os.mkfifo(root.joinpath(*name.split("/")))
    for link, target in layout["symlinks"].items():
        os.symlink(target, root.joinpath(*link.split("/")))


@pytest.fixture
def vectors_resolver(vectors, tmp_path):
    """A Resolver over a filesystem store holding the vectors' objects and layout."""
    from offloader_client import FilesystemStore, Resolver
    root = tmp_path / "root"
    store = FilesystemStore(str(root))
    for key, data in vectors["objects"].items():
        store.put(key, base64.b64decode(data), {})
    lay_out(vectors["filesystem"]["layout"], root)
    return Resolver({"payloads": store}, max_bytes=64 << 20)

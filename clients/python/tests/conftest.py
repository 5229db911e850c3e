import json
import os
import pathlib

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

"""The shared pointer vectors: the same value, or the same class of refusal, as the Go resolver and the Java deserializer."""

import base64
import hashlib

from offloader_client import PointerError


def test_every_vector_resolves_or_is_refused_in_its_class(vectors, vectors_resolver):
    resolver = vectors_resolver
    assert len(vectors["cases"]) > 40 and len(vectors["filesystem"]["cases"]) >= 8
    for case in vectors["cases"] + vectors["filesystem"]["cases"]:
        value = base64.b64decode(case["value_base64"]) if "value_base64" in case else case["value"].encode()
        headers = [(k, v.encode()) for k, v in case["headers"]]
        try:
            got = resolver.resolve(value, headers)
        except PointerError as e:
            assert e.reason == case.get("reject"), f"{case['name']}: refused as {e.reason} ({e}), want {case.get('reject') or 'the value'}"
            continue
        assert "reject" not in case, f"{case['name']}: resolved, want a refusal as {case['reject']}"
        assert hashlib.sha256(got).hexdigest() == case["sha256"], case["name"]

"""The compiled schema check accepts only what jsonschema accepts; a document it does not accept gets jsonschema's error."""

from __future__ import annotations

import math
import random
from collections import OrderedDict
from decimal import Decimal
from typing import Any

import pytest

from statekit.documents import load_schema, schema_dir, validator
from statekit.errors import SourceError
from statekit.legacy_readers._fast_schema import compile_schema, compiled, validate_fast

SCALARS: list[Any] = [None, True, False, 0, 1, -7, 2**70, 1.5, math.nan, math.inf, -0.0, "", "x", "é", Decimal("1.5"), 3.0]


def value(rng: random.Random, depth: int = 0) -> Any:
    pick = rng.random()
    if depth > 2 or pick < 0.6:
        return rng.choice(SCALARS)
    if pick < 0.75:
        return [value(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    if pick < 0.8:
        return OrderedDict(a=value(rng, depth + 1))
    return {rng.choice(NAMES): value(rng, depth + 1) for _ in range(rng.randint(0, 4))}


NAMES = ["sessionId", "updatedAt", "lastTo", "origin", "groupChannel", "compactionCheckpoints", "other", "status", "chatType"]


def entry(rng: random.Random) -> dict[str, Any]:
    """A session-index-like entry: mostly well typed, sometimes not."""
    good = {"sessionId": "s-1", "updatedAt": 1767225600000, "chatType": "direct", "origin": {"a": 1}, "lastTo": 5,
            "compactionCheckpoints": [], "room": [1], "status": None}
    out = {k: v for k, v in good.items() if rng.random() < 0.7}
    if rng.random() < 0.3:
        out[rng.choice(NAMES)] = value(rng)
    return out


def compiling_schemas() -> list[str]:
    """The reader schemas the compiled check covers (the others are validated by jsonschema alone)."""
    names = sorted(p.name.removesuffix(".schema.json") for p in schema_dir().glob("*.schema.json"))
    return [name for name in names if compiled(name) is not None]


def test_the_session_index_schema_compiles() -> None:
    assert compiled("session-index") is not None


@pytest.mark.parametrize("name", compiling_schemas())
def test_compiled_check_never_accepts_what_jsonschema_rejects(name: str) -> None:
    check = compiled(name)
    assert check is not None
    rng = random.Random(name)
    accepted = 0
    for _ in range(3000):
        document: Any = {f"k{i}": entry(rng) for i in range(rng.randint(0, 3))} if rng.random() < 0.7 else value(rng)
        if check(document):
            accepted += 1
            assert validator(name).is_valid(document), document
    if name == "session-index":
        assert accepted > 500  # the well-typed documents do take the fast path


def test_unsupported_keywords_do_not_compile() -> None:
    assert compile_schema({"type": "object", "required": ["a"]}) is None
    assert compile_schema({"type": "object", "properties": {"a": {"enum": [1]}}}) is None
    assert compile_schema({"type": ["string", "nope"]}) is None
    assert compile_schema({"additionalProperties": False}) is None


def test_a_rejected_document_gets_jsonschemas_error() -> None:
    document = {"agent:main:x": {"sessionId": "s", "updatedAt": "yesterday"}}
    with pytest.raises(SourceError) as fast:
        validate_fast(document, "session-index", "agents/main/sessions/sessions.json")
    from statekit.documents import validate

    with pytest.raises(SourceError) as slow:
        validate(document, "session-index", "agents/main/sessions/sessions.json")
    assert str(fast.value) == str(slow.value)
    assert "updatedAt" in str(fast.value) and "expected number or null, found string" in str(fast.value)
    assert load_schema("session-index")["type"] == "object"

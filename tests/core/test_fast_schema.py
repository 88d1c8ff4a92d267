"""The compiled schema check (statekit.fast_schema, fastjsonschema) accepts only what jsonschema accepts.

Every shipped schema (the reader schemas, the backup manifest, the plan) is given 3,000 generated documents,
mostly well typed, sometimes not (every JSON type, NaN, 2**70, Decimal, OrderedDict); a document the compiled
check accepts must be valid for jsonschema. A document it does not accept gets jsonschema's error."""

from __future__ import annotations

import math
import random
from collections import OrderedDict
from decimal import Decimal
from typing import Any

import pytest

from statekit.documents import accepted_fast, fast_check, load_schema, schema_dir, validate, validator
from statekit.errors import SourceError
from statekit.fast_schema import compile_check, unsupported_keywords

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


def schema_names() -> list[str]:
    return sorted(p.name.removesuffix(".schema.json") for p in schema_dir().glob("*.schema.json"))


def test_every_shipped_reader_schema_compiles() -> None:
    """Every reader schema uses only keywords the compiled check handles as jsonschema does (or stricter)."""
    assert {name: unsupported_keywords(load_schema(name)) for name in schema_names() if fast_check(name) is None} == {}


@pytest.mark.parametrize("name", schema_names())
def test_compiled_check_never_accepts_what_jsonschema_rejects(name: str) -> None:
    check = fast_check(name)
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


def test_keywords_outside_the_checked_set_do_not_compile() -> None:
    assert compile_check({"type": "array", "uniqueItems": True}) is None
    assert compile_check({"type": "object", "unevaluatedProperties": False}) is None  # fastjsonschema would ignore it
    assert compile_check({"type": "array", "prefixItems": [{"type": "string"}]}) is None
    assert compile_check({"properties": {"a": {"$ref": "other.json#/x"}}}) is None
    assert compile_check({"type": "object", "properties": {"a": {"enum": [1]}}, "required": ["a"]}) is not None


def test_the_compiled_check_tells_true_from_one_and_reads_dollar_strictly() -> None:
    check = compile_check({"type": "object", "properties": {"n": {"const": 1}, "s": {"type": "string", "pattern": "^abc$"}}})
    assert check is not None
    assert check({"n": 1, "s": "abc"})
    assert not check({"n": True})           # jsonschema rejects it too
    assert not check({"s": "abc\n"})        # stricter than jsonschema (which accepts it): jsonschema decides


def test_a_rejected_document_gets_jsonschemas_error() -> None:
    document = {"agent:main:x": {"sessionId": "s", "updatedAt": "yesterday"}}
    assert not accepted_fast(document, "session-index")
    with pytest.raises(SourceError) as caught:
        validate(document, "session-index", "agents/main/sessions/sessions.json")
    assert "updatedAt" in str(caught.value) and "expected number or null, found string" in str(caught.value)
    assert load_schema("session-index")["type"] == "object"

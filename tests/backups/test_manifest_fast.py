"""The fast manifest check (fastjsonschema) only ever says "valid" where jsonschema says so too.

``schema_problems`` asks the compiled check first and jsonschema only for a document the check does not
accept, so a check looser than the schema would let a manifest through that the schema rejects. Every field
of a real manifest (top level, one asset of each kind, a skipped entry) is replaced by values of every JSON
type, removed, or joined by an unknown key; each mutant gets the same answer from both, or is accepted by
neither. The errors a caller sees are always jsonschema's.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import pytest

from statekit.backup import manifest as manifest_module
from statekit.backup.create import create_backup
from statekit.backup.manifest import Manifest, ManifestError, encode, schema_problems

ODD_VALUES: list[Any] = [None, True, False, 0, 1, -1, 1.5, 2**70, "", "x", "../escape", "/abs", [], {}, ["x"], {"k": 1}]


def _small(document: dict[str, Any]) -> dict[str, Any]:
    """The manifest with one asset of each kind (and one skipped entry): every asset shape, few mutants."""
    kept, seen = [], set()
    for asset in document["assets"]:
        if asset["kind"] not in seen:
            seen.add(asset["kind"])
            kept.append(asset)
    return {**document, "assets": kept, "skipped": document["skipped"][:1] or [{"source_path": "/x", "reason": "socket"}]}


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    if isinstance(value, dict):
        for key, item in value.items():
            yield (*prefix, key)
            yield from _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield (*prefix, index)
            yield from _paths(item, (*prefix, index))


def _mutants(document: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for path in list(_paths(document)):
        for value in [*ODD_VALUES, "<drop>", "<extra>"]:
            mutant = copy.deepcopy(document)
            holder = mutant
            for step in path[:-1]:
                holder = holder[step]
            last = path[-1]
            if value == "<drop>":
                if isinstance(holder, dict):
                    del holder[last]
                else:
                    holder.pop(last)
            elif value == "<extra>":
                if not isinstance(holder, dict):
                    continue
                holder["unexpected_field"] = 1
            else:
                holder[last] = value
            yield mutant


def _jsonschema_accepts(document: Any) -> bool:
    return not any(True for _ in manifest_module._validator().iter_errors(document))


def _fast_accepts(document: Any) -> bool:
    check = manifest_module._fast_check()
    assert check is not None, "the manifest schema compiles"
    return check(document)


def _document(result_manifest: dict[str, Any]) -> dict[str, Any]:
    """The manifest as a reader gets it back: a plain JSON document (``BackupResult.manifest`` holds its assets as a view)."""
    return manifest_module.decode(encode(result_manifest))


def test_the_fast_check_never_accepts_what_jsonschema_rejects(state_tree, tmp_path) -> None:
    document = _small(_document(create_backup(state_tree.root, tmp_path / "out", record=False).manifest))
    assert _fast_accepts(document) and _jsonschema_accepts(document)
    tried = rejected = 0
    for mutant in _mutants(document):
        tried += 1
        fast, slow = _fast_accepts(mutant), _jsonschema_accepts(mutant)
        assert not (fast and not slow), f"fast check accepts a manifest jsonschema rejects: {schema_problems(mutant)}"
        if not slow:
            rejected += 1
            assert schema_problems(mutant), "a rejected manifest must come with jsonschema's reasons"
    assert tried > 1000 and rejected > tried // 2, (tried, rejected)


def test_a_manifest_the_fast_check_accepts_needs_no_jsonschema(state_tree, tmp_path, monkeypatch) -> None:
    document = _document(create_backup(state_tree.root, tmp_path / "out", record=False).manifest)

    def refuse() -> None:
        raise AssertionError("jsonschema ran on a manifest the fast check accepts")

    monkeypatch.setattr(manifest_module, "_validator", refuse)
    monkeypatch.setattr(manifest_module, "_asset_validator", refuse)
    assert schema_problems(document) == []
    assert Manifest.parse(encode(document)).to_json() == document  # read one asset at a time: the compiled checks alone


def test_reading_one_asset_at_a_time_accepts_exactly_what_the_schema_accepts(state_tree, tmp_path) -> None:
    """``Manifest.parse`` checks each asset on its own and the rest of the document once: every mutant of every
    field is refused by it exactly when jsonschema refuses the whole document, with jsonschema's reasons."""
    document = _small(_document(create_backup(state_tree.root, tmp_path / "out", record=False).manifest))
    tried = 0
    for mutant in _mutants(document):
        tried += 1
        whole = schema_problems(mutant)
        if whole:
            with pytest.raises(ManifestError) as caught:
                Manifest.parse(encode(mutant))
            assert caught.value.problems[0].startswith("manifest fails its schema at "), caught.value.problems
            assert {line.split(": ", 1)[0] for line in caught.value.problems} <= {line.split(": ", 1)[0] for line in whole} | {
                line.split(": ", 1)[0] for line in caught.value.problems if "more places" in line}
        else:
            assert Manifest.parse(encode(mutant)).to_json()["assets"] == mutant["assets"]
    assert tried > 1000

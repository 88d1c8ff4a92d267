"""The reader registry: packages scanned, depends_on sorted, declarations checked at load."""

from __future__ import annotations

import ast
import json
import shutil
import types
from pathlib import Path
from typing import Any

import pytest

from helpers import FIXTURES, REPO
from statekit import legacy_readers
from statekit.legacy_readers import RegistryError, load_readers, plan_order
from statekit.legacy_readers.base import Reader
from statekit.migrate.plan import build_plan

OLD = json.loads((Path(__file__).parent / "data" / "plan_order_f3f7114.json").read_text())


def _after(kind: str) -> set[str]:
    """Every kind ``kind`` depends on, transitively."""
    seen: set[str] = set()
    stack = list(legacy_readers.by_kind(kind).depends_on)
    while stack:
        dep = stack.pop()
        if dep not in seen:
            seen.add(dep)
            stack.extend(legacy_readers.by_kind(dep).depends_on)
    return seen


# --- the order against the one captured from the integer `order` registry --------------------


def test_same_readers_as_before_and_every_dependency_kept_its_old_direction() -> None:
    kinds = [r.kind for r in legacy_readers.all_readers()]
    assert sorted(kinds) == sorted(OLD["readers"])
    old_position = {kind: i for i, kind in enumerate(OLD["readers"])}
    for kind in kinds:
        for dep in _after(kind):
            assert old_position[dep] < old_position[kind], (dep, kind)  # the declaration says what the integers meant


def test_every_family_plan_keeps_the_old_order_where_it_matters(tmp_path: Path) -> None:
    state = tmp_path / ".openclaw"
    shutil.copytree(FIXTURES / "every-family" / ".openclaw", state, symlinks=True)
    new = [(s.reader.kind if s.reader else None, s.rel) for s in build_plan(state).sources]
    old = [tuple(item) for item in OLD["every_family_plan"]]
    assert sorted(new, key=str) == sorted(old, key=str)  # the same files, each claimed by the same reader
    old_index = {item: i for i, item in enumerate(old)}
    new_index = {item: i for i, item in enumerate(new)}
    for a in old:
        for b in old:
            related = a[0] == b[0] or (a[0] and b[0] and (a[0] in _after(b[0]) or b[0] in _after(a[0])))
            if related and old_index[a] < old_index[b]:
                assert new_index[a] < new_index[b], (a, b)  # within a reader, and along depends_on


# --- properties -------------------------------------------------------------------------------


def test_each_reader_comes_after_what_it_depends_on_and_order_is_its_position() -> None:
    readers = legacy_readers.all_readers()
    position = {r.kind: i for i, r in enumerate(readers)}
    for i, reader in enumerate(readers):
        assert reader.order == i
        for dep in reader.depends_on:
            assert position[dep] < i, (dep, reader.kind)


def test_a_path_two_readers_claim_goes_to_the_one_the_other_depends_on(tmp_path: Path) -> None:
    readers = legacy_readers.all_readers()
    rels = {rel for _, rel in OLD["every_family_plan"]}
    rels |= {"debug-proxy/capture.sqlite-wal", "debug-proxy/blobs/ab.bin.gz"}
    for rel in sorted(rels):
        claimants = [r.kind for r in readers if r.claims(rel)]
        for later in claimants[1:]:
            assert claimants[0] in _after(later), (rel, claimants)


def test_families_may_be_packages() -> None:
    modules = {type(r).__module__ for r in legacy_readers.all_readers()}
    assert any(name.count(".") >= 3 for name in modules), sorted(modules)  # statekit.legacy_readers.<pkg>.<module>


def test_no_reader_declares_an_integer_order() -> None:
    """Plan order comes from depends_on; a shared integer ``order = N`` must not come back."""
    offenders = []
    for path in sorted((REPO / "legacy_readers").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef) and path.name != "base.py":
                for item in node.body:
                    targets = item.targets if isinstance(item, ast.Assign) else [item.target] if isinstance(item, ast.AnnAssign) else []
                    if any(isinstance(t, ast.Name) and t.id == "order" for t in targets):
                        offenders.append(f"{path.relative_to(REPO)}:{item.lineno} {node.name}")
    assert offenders == []


# --- declarations checked at load ------------------------------------------------------------------


def _module(*classes: type[Reader]) -> types.ModuleType:
    module = types.ModuleType("fake_readers")
    for cls in classes:
        cls.__module__ = module.__name__
        setattr(module, cls.__name__, cls)
    return module


def _reader(kind: str, **attrs: Any) -> type[Reader]:
    base = {"patterns": (f"{kind}.json",), "target_tables": ("global.t",), "action": "import"}
    return type(f"R_{kind.replace('-', '_')}", (Reader,), {"kind": kind, **base, **attrs})


def test_a_valid_set_loads_in_dependency_order_with_stable_ties() -> None:
    readers = load_readers([_module(_reader("c", depends_on=("b",)), _reader("a"), _reader("b"), _reader("d"))])
    assert [r.kind for r in readers] == ["a", "b", "c", "d"]
    readers = load_readers([_module(_reader("z"), _reader("y"), _reader("x"))])
    assert [r.kind for r in readers] == ["z", "y", "x"]  # no dependency: registry order, not sorted by name


@pytest.mark.parametrize(
    ("classes", "message"),
    [
        (lambda: [_reader("a", depends_on=("nope",))], "depends_on names unknown kind 'nope'"),
        (lambda: [_reader("a", depends_on=("b",)), _reader("b", depends_on=("a",))], "cycle among readers a, b"),
        (lambda: [_reader("a", depends_on=("a",))], "depends_on names the reader itself"),
        (lambda: [_reader("a"), type("Other", (Reader,), {"kind": "a", "patterns": ("x",)})], "kind is also declared by"),
        (lambda: [_reader("a", patterns=())], "patterns must be a non-empty tuple"),
        (lambda: [_reader("a", action="import-maybe")], "action 'import-maybe' is not one of"),
        (lambda: [_reader("a", schema_name="no-such-schema")], "schemas/no-such-schema.schema.json does not exist"),
        (lambda: [_reader("a", target_tables=("sessions",))], "target_tables must be a tuple of 'global.<table>'"),
        (lambda: [_reader("a", action="drop", target_tables=(), reason=None)], "needs a reason"),
        (lambda: [_reader("a", action="retain", reason="kept")], "writes no rows but target_tables is declared"),
        (lambda: [_reader("Bad Kind")], "kind must be lower-case"),
    ],
)
def test_bad_declarations_fail_at_load_naming_the_reader(classes: Any, message: str) -> None:
    with pytest.raises(RegistryError, match=message.replace("(", r"\(").replace(".", r"\.")) as excinfo:
        load_readers([_module(*classes())])
    assert "fake_readers" in str(excinfo.value) or "cycle" in str(excinfo.value)


def test_plan_order_alone_reports_a_cycle() -> None:
    a, b = _reader("a", depends_on=("b",))(), _reader("b", depends_on=("a",))()
    with pytest.raises(RegistryError, match="cycle"):
        plan_order([a, b])

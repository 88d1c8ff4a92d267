"""Actions and statuses come from statekit.states: same strings as ever, and no bare copies in the modules that use them."""

from __future__ import annotations

import ast
import json
from enum import StrEnum
from pathlib import Path

import pytest

from statekit import states
from statekit.legacy_readers.base import ACTIONS

ROOT = Path(__file__).resolve().parents[2]
ENUMS = [v for v in vars(states).values() if isinstance(v, type) and issubclass(v, StrEnum) and v is not StrEnum]
# Modules converted to the enums: a status or action written as a bare string here is a regression.
CONVERTED = [
    "migrate/receipts.py",
    "backup/runs.py",
    "backup/create.py",
    "backup/restore.py",
    "backup/journal.py",
    "maintenance/recover.py",
    *sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "maintenance" / "sessions").glob("*.py")),
]
WORDS = {member.value for enum in ENUMS for member in enum}
FIELDS = {"status", "action", "run_status"}


def test_values_are_the_strings_statekit_always_wrote() -> None:
    assert ACTIONS == ("import", "import+archive", "drop", "deferred", "retain")
    assert [m.value for m in states.RunStatus] == ["running", "completed", "warning", "failed", "nothing-to-do"]
    assert [m.value for m in states.ReceiptStatus] == ["completed", "failed"]
    assert [m.value for m in states.BackupRunStatus] == ["ok", "failed"]
    for enum in ENUMS:
        for member in enum:
            assert member == member.value and f"{member}" == member.value
            assert json.dumps({member: [member]}) == json.dumps({member.value: [member.value]})


def _field_name(node: ast.AST) -> str | None:
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str):
        return node.slice.value
    return None


def bare_words(source: str) -> list[str]:
    """``x.status == "failed"``, ``status="ok"``, ``item.status = "missing"``, ``receipt["status"] = "pending"``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        pairs: list[tuple[str | None, ast.AST]] = []
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            names = [_field_name(s) for s in sides]
            pairs += [(name, side) for name in names if name for side in sides]
        elif isinstance(node, ast.keyword):
            pairs.append((node.arg, node.value))
        elif isinstance(node, ast.Assign):
            pairs += [(_field_name(t), node.value) for t in node.targets]
        for name, value in pairs:
            if name in FIELDS and isinstance(value, ast.Constant) and value.value in WORDS:
                found.append(f"line {node.lineno}: {name} ~ {value.value!r}")
    return sorted(found, key=lambda line: int(line.split(":")[0].split()[1]))


@pytest.mark.parametrize("rel", CONVERTED)
def test_no_bare_status_or_action_strings(rel: str) -> None:
    assert bare_words((ROOT / rel).read_text(encoding="utf-8")) == [], rel


def test_the_scan_sees_a_bare_word() -> None:
    assert bare_words('if r.status == "failed":\n    pass\nitem.status = "missing"\nf(status="ok")\n') == [
        "line 1: status ~ 'failed'", "line 3: status ~ 'missing'", "line 4: status ~ 'ok'"]

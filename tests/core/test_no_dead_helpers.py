"""No dead helpers in the core, backup, maintenance and migrate step modules.

Every module-level function and class there is used somewhere: by name, attribute, import or string (``getattr``,
registries) in the product, the tests, ``scripts/`` or ``benchmarks/`` — a listing in ``__all__`` does not count.
The readers and the apply loop (``legacy_readers/``, ``migrate/{apply,plan,discover}.py``) are left to their own
checks.
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path

from helpers import REPO
from product_source import SourceFile, product_files

SCANNED = re.compile(r"^statekit(\.(cli|schema|backup|maintenance)(\..*)?|\.migrate\.(steps|relocate|receipts|retire|config_\w+)|\.(?!migrate|legacy_readers|backup|maintenance|cli|schema)\w+)?$")
USERS = ("statekit", "migrate", "backup", "maintenance", "legacy_readers", "tests", "scripts", "benchmarks")
IDENTIFIER = re.compile(r"[A-Za-z_]\w*")


def _dunder_all_strings(tree: ast.AST) -> set[int]:
    ids: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets) and node.value is not None:
                ids |= {id(n) for n in ast.walk(node.value) if isinstance(n, ast.Constant)}
    return ids


def references(tree: ast.AST) -> Iterable[str]:
    skip = _dunder_all_strings(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            yield node.id
        elif isinstance(node, ast.Attribute):
            yield node.attr
        elif isinstance(node, ast.alias):
            yield node.name.rpartition(".")[2]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip:
            yield from IDENTIFIER.findall(node.value) if len(node.value) <= 200 else ()


@lru_cache(maxsize=1)
def _used_names() -> Counter[str]:
    used: Counter[str] = Counter()
    for folder in USERS:
        for path in (REPO / folder).rglob("*.py"):
            if ".venv" not in path.parts:
                used.update(references(ast.parse(path.read_text(encoding="utf-8"), str(path))))
    return used


def defined(source: SourceFile) -> list[tuple[int, str]]:
    return [(node.lineno, node.name) for node in source.tree.body
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and not node.name.startswith("__")]


def test_the_scanned_modules_are_the_intended_ones() -> None:
    scanned = {s.module for s in product_files() if SCANNED.match(s.module)}
    assert {"statekit.db", "statekit.fsutil", "statekit.cli.common", "statekit.schema", "statekit.backup.archive",
            "statekit.maintenance.sessions", "statekit.migrate.steps", "statekit.migrate.config_openclaw96"} <= scanned
    assert not {m for m in scanned if m.startswith("statekit.legacy_readers") or m in (
        "statekit.migrate.apply", "statekit.migrate.plan", "statekit.migrate.discover")}


def test_every_helper_is_used_somewhere() -> None:
    used = _used_names()
    dead = [f"{s.module}:{line} {name}" for s in product_files() if SCANNED.match(s.module)
            for line, name in defined(s) if used[name] == 0]
    assert dead == []


def test_the_scan_sees_a_dead_helper() -> None:
    tree = ast.parse('def live(): pass\ndef dead(): pass\nlive()\n__all__ = ["live", "dead"]\n')
    names = Counter(references(tree))
    assert names["live"] == 1 and names["dead"] == 0

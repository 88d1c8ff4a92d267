"""backup/ keeps one module per archive format; create/verify/restore hold the shared machinery and dispatch."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from statekit.backup import openclaw_format, statekit_format

ROOT = Path(__file__).resolve().parents[2]
DISPATCHERS = ["backup/create.py", "backup/verify.py", "backup/restore.py", "backup/checks.py", "backup/restore_steps.py"]


def defined(rel: str) -> list[str]:
    tree = ast.parse((ROOT / rel).read_text(encoding="utf-8"))
    return [n.name for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.ClassDef))]


@pytest.mark.parametrize("rel", DISPATCHERS)
def test_no_format_specific_code_in_the_shared_modules(rel: str) -> None:
    specific = [name for name in defined(rel) if "openclaw" in name.lower() or name.lower().startswith(("_oc", "oc_"))
                or "statekit_" in name.lower() or name.startswith("_verify_")]
    assert specific == [], f"{rel}: {specific} belong in statekit_format.py / openclaw_format.py"


def test_each_format_module_verifies_and_plans_a_restore() -> None:
    for module in (statekit_format, openclaw_format):
        assert callable(getattr(module, "restore_steps"))
    assert callable(statekit_format.verify_statekit) and callable(openclaw_format.verify_openclaw)
    assert callable(openclaw_format.build_manifest_of)

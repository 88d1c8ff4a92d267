"""The type checker's settings stay strict: no statekit module is exempted from mypy.

``scripts/check.sh`` runs mypy over every statekit module with ``disallow_untyped_defs`` and
``check_untyped_defs``; an override that switches errors off (``ignore_errors``) or lets a module
keep unannotated functions would quietly take a module out of that check. Third-party modules
without type information may still be listed (``ignore_missing_imports``).
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"

# Settings an override may not relax for a statekit module, with the value that relaxes them.
RELAXING = {
    "ignore_errors": True,
    "disallow_untyped_defs": False,
    "check_untyped_defs": False,
    "disable_error_code": None,  # any list of codes
}


def _mypy() -> dict[str, Any]:
    return tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["tool"]["mypy"]


def _modules(override: dict[str, Any]) -> list[str]:
    module = override.get("module", [])
    return [module] if isinstance(module, str) else list(module)


def relaxed_statekit_overrides(mypy: dict[str, Any]) -> list[str]:
    """``module: setting`` for every override that relaxes a setting for a statekit module."""
    found = []
    for override in mypy.get("overrides", []):
        ours = [m for m in _modules(override) if m == "statekit" or m.startswith("statekit.")]
        for setting, relaxing in RELAXING.items():
            if setting in override and (relaxing is None or override[setting] == relaxing):
                found.extend(f"{module}: {setting}" for module in ours)
    return found


def test_global_settings_are_strict() -> None:
    mypy = _mypy()
    assert mypy["packages"] == ["statekit"]
    assert mypy["disallow_untyped_defs"] is True
    assert mypy["check_untyped_defs"] is True
    assert "ignore_errors" not in mypy


def test_no_statekit_module_is_exempted() -> None:
    assert relaxed_statekit_overrides(_mypy()) == []


def test_the_rule_sees_an_exemption() -> None:
    mypy = {"overrides": [{"module": ["statekit.legacy_readers.*"], "ignore_errors": True},
                          {"module": "statekit.fsutil", "disallow_untyped_defs": False},
                          {"module": ["json5"], "ignore_missing_imports": True}]}
    assert relaxed_statekit_overrides(mypy) == ["statekit.legacy_readers.*: ignore_errors", "statekit.fsutil: disallow_untyped_defs"]

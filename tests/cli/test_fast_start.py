"""Issue 16 "fast start": `statekit --help` and `plan` of an empty dir load only what they use.

Run in a fresh subprocess each (sys.modules of a new interpreter). Fails on 308a7ed: every command
module and the library behind it (jsonschema, zstandard, the backup code, all readers) were imported
at start.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from cli_helpers import clean_env

HEAVY = ("jsonschema", "zstandard", "cryptography", "pydantic", "rich", "apsw", "statekit.backup.create", "statekit.backup.verify",
         "statekit.migrate.apply", "statekit.maintenance")
PROBE = """
import json, sys
from statekit.cli import main
try:
    code = main(sys.argv[1:])
except SystemExit as exc:
    code = exc.code
sys.stdout.flush()
print("\\n" + json.dumps(sorted(sys.modules)), file=sys.stderr)
"""


def loaded_modules(*args: str, cwd: Path) -> set[str]:
    result = subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True, text=True, env=clean_env(), cwd=cwd, timeout=300)
    return set(json.loads(result.stderr.strip().splitlines()[-1]))


def heavy_in(modules: set[str], names: tuple[str, ...]) -> list[str]:
    return sorted(m for m in modules if any(m == n or m.startswith(n + ".") for n in names))


@pytest.mark.parametrize("args", [("--help",), ("backup", "--help"), ("migrate", "--help"), ("--version",)])
def test_help_loads_no_library(args: tuple[str, ...], tmp_path: Path) -> None:
    modules = loaded_modules(*args, cwd=tmp_path)
    assert heavy_in(modules, (*HEAVY, "statekit.legacy_readers", "statekit.migrate", "statekit.backup", "statekit.db")) == [] \
        or args == ("--version",) and heavy_in(modules, HEAVY) == ["apsw"]  # --version names the SQLite engine


def test_plan_of_an_empty_dir_loads_no_reader_and_no_schema_library(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    modules = loaded_modules("plan", "--state-dir", str(empty), cwd=tmp_path)
    readers = sorted(m for m in modules if m.startswith("statekit.legacy_readers.") and m != "statekit.legacy_readers.base")
    assert readers == []
    assert heavy_in(modules, tuple(n for n in HEAVY if n != "apsw")) == []
    assert "statekit.migrate.config_openclaw96" not in modules  # 9.6's config rules load only when there is a config

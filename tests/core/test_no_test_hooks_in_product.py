"""The fault layer lives under tests/: importing statekit changes no process-wide function, reads no fault variable.

statekit keeps one no-op seam (``statekit.seams.checkpoint``); the kill points, kill timer and I/O faults are
installed only by test code (``tests/faultkit``). These tests keep it that way.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import faultkit
from product_source import PACKAGES, product_files
from statekit import seams

FAULT_ENV = {"STATEKIT_CRASHPOINT": "*:1,trace=TRACE", "STATEKIT_KILL_AFTER_MS": "1", "STATEKIT_IOFAULT": "*:EIO:1+"}
WATCHED = ("builtins.open", "io.open", "io.open_code", "os.open", "os.write", "os.read", "os.fsync", "os.fdatasync",
           "os.rename", "os.replace", "os.link", "os.symlink", "os.mkdir", "os.makedirs", "os.unlink", "os.remove",
           "os.rmdir", "os.chmod", "os.copy_file_range", "os.sendfile", "os.kill", "os.truncate", "os.ftruncate",
           "shutil.copyfile", "shutil.move", "signal.signal", "threading.Thread.start")
PATCHABLE_MODULES = {"os", "io", "builtins", "shutil", "signal", "sys", "threading", "posix"}

# A fresh interpreter (this one has imported statekit long ago): note every watched function, import every
# statekit module, reach a checkpoint, give a kill timer time to fire, and report what changed.
PROBE = r"""
import builtins, importlib, io, json, os, pkgutil, shutil, signal, sys, threading, time

def lookup(dotted):
    owner, _, attr = dotted.rpartition(".")
    obj = {"builtins": builtins, "io": io, "os": os, "shutil": shutil, "signal": signal, "threading": threading}[owner.split(".")[0]]
    for part in owner.split(".")[1:]:
        obj = getattr(obj, part)
    return getattr(obj, attr, None)

watched = json.loads(sys.argv[1])
before = {name: id(lookup(name)) for name in watched}
handlers = {int(s): signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGALRM)}
threads = {t.name for t in threading.enumerate()}
imported = []
for package_name in json.loads(sys.argv[2]):
    package = importlib.import_module(package_name)
    imported.append(package_name)
    for info in pkgutil.walk_packages(package.__path__, package_name + "."):
        importlib.import_module(info.name)
        imported.append(info.name)
from statekit.seams import checkpoint
checkpoint("run-opened")
time.sleep(0.3)
report = {
    "changed": sorted(name for name in watched if id(lookup(name)) != before[name]),
    "signals": sorted(str(s) for s, h in handlers.items() if signal.getsignal(s) != h),
    "threads": sorted({t.name for t in threading.enumerate()} - threads),
    "imported": imported,
}
os.write(1, json.dumps(report).encode())
"""


def test_importing_every_statekit_module_with_the_fault_variables_set_changes_nothing(tmp_path: Path) -> None:
    env = {**os.environ, **{k: v.replace("TRACE", str(tmp_path / "trace")) for k, v in FAULT_ENV.items()}}
    proc = subprocess.run([sys.executable, "-c", PROBE, json.dumps(WATCHED), json.dumps(PACKAGES)], capture_output=True,
                          text=True, env=env, cwd=tmp_path, timeout=300)
    assert proc.returncode == 0, f"the import probe died ({proc.returncode}): the fault variables armed something\n{proc.stderr[-2000:]}"
    report = json.loads(proc.stdout)
    assert report["changed"] == [], "importing statekit replaced process-wide functions"
    assert report["signals"] == [] and report["threads"] == []
    assert not (tmp_path / "trace").exists(), "a checkpoint read STATEKIT_CRASHPOINT"
    assert {"statekit.seams", "statekit.migrate.apply", "statekit.backup.create", "statekit.backup.restore",
            "statekit.maintenance.sessions", "statekit.cli.migrate_cmd"} <= set(report["imported"])


def test_the_product_source_never_names_the_fault_variables_or_a_fault_module() -> None:
    files = product_files()
    assert len(files) > 50
    named = [f"{f.module}: {var}" for f in files for var in (*faultkit.FAULT_ENV, "faultkit", "statekit.faults") if var in f.text]
    assert named == []
    assert not [f.module for f in files if f.path.stem in ("faults", "faultkit", "crashpoints", "iofaults")]


def _patches(tree: ast.AST) -> list[str]:
    """Assignments to (or ``setattr`` on) an attribute of os/io/builtins/shutil/signal/sys/threading."""

    def owner(node: ast.expr) -> str | None:
        while isinstance(node, ast.Attribute):
            node = node.value
        return node.id if isinstance(node, ast.Name) and node.id in PATCHABLE_MODULES else None

    found: list[str] = []
    for node in ast.walk(tree):
        targets: list[ast.expr] = []
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        for target in targets:
            if isinstance(target, ast.Attribute) and owner(target) and ast.unparse(target) not in ("sys.stdout", "sys.stderr"):
                found.append(f"line {node.lineno}: {ast.unparse(target)} = ...")
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "setattr" and node.args:
            if owner(node.args[0]) or (isinstance(node.args[0], ast.Name) and node.args[0].id in PATCHABLE_MODULES):
                found.append(f"line {node.lineno}: setattr({ast.unparse(node.args[0])}, ...)")
    return found


def test_the_product_patches_no_process_wide_function() -> None:
    patches = {f.module: found for f in product_files() if (found := _patches(f.tree))}
    assert patches == {}


def test_the_patch_scan_sees_a_patch() -> None:
    assert sorted(_patches(ast.parse("import os\nos.write = print\nsetattr(os, 'fsync', print)\nbuiltins.open = open\n"))) == [
        "line 2: os.write = ...", "line 3: setattr(os, ...)", "line 4: builtins.open = ..."]
    assert _patches(ast.parse("sys.stdout = x\nself.write = y\n")) == []


def test_the_seam_is_a_no_op_until_code_installs_a_hook(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STATEKIT_CRASHPOINT", "*:1")
    seams.checkpoint("run-opened")  # no hook installed: nothing happens, whatever the environment says
    seen: list[str] = []
    previous = seams.install_checkpoint_hook(seen.append)
    try:
        assert previous is None
        seams.checkpoint("run-opened")
        seams.checkpoint("after-commit")
    finally:
        assert seams.install_checkpoint_hook(previous) == seen.append
    seams.checkpoint("before-close-run")
    assert seen == ["run-opened", "after-commit"]

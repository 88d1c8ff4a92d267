"""Build the real wheel of this checkout and install it as pipx would: its own venv, the command in ~/.local/bin.

Offline and quick: the wheel is built without build isolation (setuptools and wheel come from the
test extra), and the venv reaches the runtime dependencies through one ``.pth`` line naming the test
venv's site-packages (a path entry only: the test venv's editable-install hook is not loaded, so
``statekit`` is imported from the wheel that was installed, package data and all).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path

from helpers import REPO

SKIP = {".git", ".venv", "build", "dist", "demo-run", "__pycache__", ".mypy_cache", ".pytest_cache", ".hypothesis"}


@dataclass(frozen=True)
class Installed:
    home: Path  # a HOME with .local/bin/statekit, as `pipx install` leaves it
    venv: Path
    python: Path

    @property
    def command(self) -> Path:
        return self.home / ".local" / "bin" / "statekit"


def _copy_source(dest: Path) -> Path:
    def ignore(_dir: str, names: list[str]) -> set[str]:
        return {n for n in names if n in SKIP or n.endswith(".egg-info")}

    shutil.copytree(REPO, dest, ignore=ignore, symlinks=True)
    return dest


def build_wheel(work: Path) -> Path:
    source = _copy_source(work / "src")
    out = work / "wheel"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-q", "-w", str(out), str(source)],
        check=True, capture_output=True, text=True, timeout=600,
    )
    (wheel,) = out.glob("openclaw_statekit-*.whl")
    return wheel


def install_like_pipx(work: Path) -> Installed:
    wheel = build_wheel(work)
    home = work / "home"
    venv = home / ".local" / "share" / "pipx" / "venvs" / "openclaw-statekit"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    purelib = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                                  check=True, capture_output=True, text=True).stdout.strip())
    (purelib / "statekit-test-deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n", encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "PIP_REQUIRE"))}
    subprocess.run([str(python), "-m", "pip", "install", "--no-deps", "--no-index", "--ignore-installed", "-q", str(wheel)],
                   check=True, capture_output=True, text=True, timeout=600, env=env)
    bin_dir = home / ".local" / "bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "statekit").symlink_to(venv / "bin" / "statekit")
    return Installed(home, venv, python)

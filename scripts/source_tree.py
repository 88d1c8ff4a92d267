"""Lay the installed package out as a tree of links, for the static checkers.

The folders migrate/, backup/, maintenance/ and legacy_readers/ install as statekit.* through
pyproject's [tool.setuptools.package-dir]; the editable install resolves that with an import hook that
mypy and import-linter cannot see. This script mirrors the mapping into build/source-tree/: real
directories, one symlink per file, rebuilt on every run (so new and deleted files are picked up).

    python3 scripts/source_tree.py            # prints the tree's root
"""

from __future__ import annotations

import shutil
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TREE = ROOT / "build" / "source-tree"
SKIP_DIRS = {"__pycache__"}


def package_dirs(pyproject: Path) -> dict[str, Path]:
    """Package name -> folder, for statekit and every package-dir mapping."""
    config = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    mapping = config["tool"]["setuptools"].get("package-dir", {})
    dirs = {"statekit": ROOT / "statekit"}
    dirs.update({name: ROOT / folder for name, folder in mapping.items()})
    return dirs


def link_folder(source: Path, target: Path) -> None:
    target.mkdir(parents=True, exist_ok=True)
    for entry in sorted(source.iterdir()):
        if entry.is_dir():
            if entry.name not in SKIP_DIRS:
                link_folder(entry, target / entry.name)
        elif entry.suffix in {".py", ".pyi"} or entry.name == "py.typed":
            (target / entry.name).symlink_to(entry)


def build(tree: Path = TREE) -> Path:
    if tree.exists():
        shutil.rmtree(tree)
    # Parents before children, so statekit/ exists before statekit/migrate/ is laid into it.
    for name, folder in sorted(package_dirs(ROOT / "pyproject.toml").items(), key=lambda item: item[0].count(".")):
        link_folder(folder, tree.joinpath(*name.split(".")))
    return tree


if __name__ == "__main__":
    print(build())
    sys.exit(0)

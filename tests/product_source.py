"""The product's source files (the five statekit packages), for tests that scan them (AST or text)."""

from __future__ import annotations

import ast
import importlib
import importlib.util
import pkgutil
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property, lru_cache
from pathlib import Path

PACKAGES = ("statekit", "statekit.migrate", "statekit.backup", "statekit.maintenance", "statekit.legacy_readers")


@dataclass(frozen=True)
class SourceFile:
    module: str  # "statekit.migrate.apply"
    path: Path

    @cached_property
    def text(self) -> str:
        return self.path.read_text(encoding="utf-8")

    @cached_property
    def tree(self) -> ast.Module:
        return ast.parse(self.text, str(self.path))

    def strings(self, *, docstrings: bool = True) -> Iterator[tuple[int, str]]:
        """Every string literal (f-string parts too) with its line; ``docstrings=False`` leaves docstrings out."""
        skip: set[int] = set()
        if not docstrings:
            for node in ast.walk(self.tree):
                if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
                    first = node.body[0]
                    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
                        skip.add(id(first.value))
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip:
                yield node.lineno, node.value


def _modules(package: str) -> Iterator[str]:
    root = importlib.import_module(package)
    yield package
    for info in pkgutil.walk_packages(root.__path__, package + "."):
        yield info.name


@lru_cache(maxsize=1)
def product_files() -> tuple[SourceFile, ...]:
    """Every module of the five packages, by module name (the folders install as statekit.*)."""
    found: dict[str, SourceFile] = {}
    for package in PACKAGES:
        for name in _modules(package):
            spec = importlib.util.find_spec(name)
            if spec is not None and spec.origin and spec.origin.endswith(".py"):
                found[name] = SourceFile(name, Path(spec.origin))
    return tuple(found[name] for name in sorted(found))

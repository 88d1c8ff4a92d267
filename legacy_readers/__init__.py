"""Readers for OpenClaw's legacy state files: one module per source family.

Every module in this package that defines :class:`~legacy_readers.base.Reader`
subclasses with a ``kind`` is picked up by :func:`all_readers`, in plan order.
"""

from __future__ import annotations

import importlib
import pkgutil
from functools import lru_cache

from statekit.legacy_readers.base import Reader

_SKIP = {"base"}


@lru_cache(maxsize=1)
def all_readers() -> tuple[Reader, ...]:
    found: dict[str, Reader] = {}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if info.name in _SKIP or info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        for value in vars(module).values():
            if isinstance(value, type) and issubclass(value, Reader) and value is not Reader and getattr(value, "kind", None):
                if value.__module__ != module.__name__:
                    continue
                if value.kind in found:
                    raise AssertionError(f"two readers declare kind {value.kind!r}")
                found[value.kind] = value()
    return tuple(sorted(found.values(), key=lambda r: (r.order, r.kind)))


def reader_for(rel: str) -> Reader | None:
    """The reader that claims ``rel`` (first in plan order), or None."""
    for reader in all_readers():
        if reader.claims(rel):
            return reader
    return None


def by_kind(kind: str) -> Reader:
    for reader in all_readers():
        if reader.kind == kind:
            return reader
    raise KeyError(kind)

"""Readers for OpenClaw's legacy state files: one module (or package) per source family.

Every module in this package or its subpackages (names starting with ``_``
and ``base`` are skipped) that defines :class:`~legacy_readers.base.Reader`
subclasses with a ``kind`` is picked up by :func:`all_readers`, in plan order.

Plan order: a reader comes after every reader it names in ``depends_on``
(kinds whose rows or receipts it reads, or whose files it must let claim a
path first); otherwise readers keep registry order -- modules by dotted
name, readers in the order their module defines them. Each reader class's
``order`` is set to its position in that order.

Declarations are checked when the registry loads: a bad one raises
:class:`RegistryError` naming the reader and the problem.
"""

from __future__ import annotations

import heapq
import importlib
import pkgutil
import re
from collections.abc import Iterable, Iterator, Sequence
from functools import lru_cache
from types import ModuleType

from statekit.documents import schema_path
from statekit.legacy_readers.base import ACTIONS, Reader, pattern_regex

_SKIP = {"base"}
_KIND = re.compile(r"^[a-z0-9][a-z0-9-]*$")
_TARGET = re.compile(r"^(global|agent)\.[A-Za-z_][A-Za-z0-9_]*$")
_IMPORTING = ("import", "import+archive")


class RegistryError(Exception):
    """A reader declaration is invalid (raised when the registry loads)."""


def _reader_modules(path: Iterable[str], prefix: str) -> Iterator[ModuleType]:
    """Every reader module under ``path``, subpackages included, sorted by dotted name."""
    names = []
    for info in pkgutil.walk_packages(list(path), prefix):
        parts = info.name[len(prefix):].split(".")
        if parts[-1] in _SKIP or any(part.startswith("_") for part in parts):
            continue
        names.append(info.name)
    for name in sorted(names):
        yield importlib.import_module(name)


def _declared_readers(module: ModuleType) -> list[type[Reader]]:
    """Reader classes with a ``kind`` defined in ``module`` itself, in definition order."""
    found: list[type[Reader]] = []
    for value in vars(module).values():  # a module's names are bound in definition order
        if (isinstance(value, type) and issubclass(value, Reader) and value is not Reader and value not in found
                and value.__module__ == module.__name__ and getattr(value, "kind", None)):
            found.append(value)
    return found


def _schema_exists(name: str) -> bool:
    return schema_path(name).is_file()


def check_declaration(cls: type[Reader]) -> list[str]:
    """What is wrong with one reader's declaration (empty when nothing)."""
    problems: list[str] = []
    kind = getattr(cls, "kind", "")
    if not isinstance(kind, str) or not _KIND.match(kind):
        problems.append("kind must be lower-case letters, digits and dashes")
    patterns = cls.patterns
    if not isinstance(patterns, tuple) or not patterns or not all(isinstance(p, str) and p for p in patterns):
        problems.append("patterns must be a non-empty tuple of glob strings")
    if cls.action not in ACTIONS:
        problems.append(f"action {cls.action!r} is not one of {', '.join(ACTIONS)}")
    targets = cls.target_tables
    if not isinstance(targets, tuple) or not all(isinstance(t, str) and _TARGET.match(t) for t in targets):
        problems.append("target_tables must be a tuple of 'global.<table>' / 'agent.<table>' names")
    elif targets and cls.action not in _IMPORTING:
        problems.append(f"action {cls.action!r} writes no rows but target_tables is declared")
    if cls.action not in _IMPORTING and cls.action in ACTIONS and not cls.reason:
        problems.append(f"action {cls.action!r} needs a reason (why the file is not imported)")
    if cls.schema_name is not None and not _schema_exists(cls.schema_name):
        problems.append(f"schema file schemas/{cls.schema_name}.schema.json does not exist")
    depends_on = getattr(cls, "depends_on", ())
    if not isinstance(depends_on, tuple) or not all(isinstance(d, str) for d in depends_on):
        problems.append("depends_on must be a tuple of reader kinds")
    elif kind in depends_on:
        problems.append("depends_on names the reader itself")
    return problems


def plan_order(readers: Sequence[Reader]) -> list[Reader]:
    """``readers`` (in registry order) sorted so each comes after its ``depends_on``; ties keep registry order.

    Raises RegistryError for an unknown kind in ``depends_on`` or a cycle.
    """
    position = {reader.kind: index for index, reader in enumerate(readers)}
    dependents: dict[str, list[str]] = {reader.kind: [] for reader in readers}
    waiting: dict[str, int] = {}
    for reader in readers:
        needs = tuple(dict.fromkeys(getattr(reader, "depends_on", ())))
        for kind in needs:
            if kind not in position:
                raise RegistryError(f"reader {reader.kind!r} ({type(reader).__module__}): depends_on names unknown kind {kind!r}")
            dependents[kind].append(reader.kind)
        waiting[reader.kind] = len(needs)
    ready = [position[kind] for kind, count in waiting.items() if count == 0]
    heapq.heapify(ready)
    ordered: list[Reader] = []
    while ready:
        reader = readers[heapq.heappop(ready)]
        ordered.append(reader)
        for kind in dependents[reader.kind]:
            waiting[kind] -= 1
            if waiting[kind] == 0:
                heapq.heappush(ready, position[kind])
    if len(ordered) < len(readers):
        stuck = sorted(kind for kind, count in waiting.items() if count > 0)
        raise RegistryError(f"depends_on has a cycle among readers {', '.join(stuck)}")
    return ordered


def load_readers(modules: Iterable[ModuleType]) -> tuple[Reader, ...]:
    """Instantiate, validate and order the readers the modules declare."""
    found: dict[str, Reader] = {}
    problems: list[str] = []
    for module in modules:
        for cls in _declared_readers(module):
            where = f"reader {getattr(cls, 'kind', '?')!r} ({module.__name__}.{cls.__name__})"
            problems += [f"{where}: {problem}" for problem in check_declaration(cls)]
            if cls.kind in found:
                other = type(found[cls.kind])
                problems.append(f"{where}: kind is also declared by {other.__module__}.{other.__name__}")
                continue
            found[cls.kind] = cls()
    if problems:
        raise RegistryError("invalid reader declaration(s):\n  " + "\n  ".join(problems))
    ordered = plan_order(list(found.values()))
    for index, reader in enumerate(ordered):
        type(reader).order = index  # the position in plan order (each reader class declares one kind)
    return tuple(ordered)


@lru_cache(maxsize=1)
def all_readers() -> tuple[Reader, ...]:
    return load_readers(_reader_modules(__path__, f"{__name__}."))


def _segment_matches(glob: str, segment: str) -> bool:
    return re.fullmatch(pattern_regex(glob), segment) is not None


def could_match_in(pattern: str, directory: tuple[str, ...]) -> bool:
    """Whether ``pattern`` can match some file directly in ``directory`` (its path segments).

    Before a segment holding ``**`` every segment of a pattern matches exactly one path segment
    (``*`` and ``?`` never cross a ``/``), so those must match the directory's segments one by one,
    and a pattern without ``**`` must have exactly one segment more than the directory.
    """
    segments = pattern.split("/")
    deep = next((i for i, segment in enumerate(segments) if "**" in segment), None)
    if deep is None and len(segments) != len(directory) + 1:
        return False
    fixed = segments[: deep if deep is not None else len(segments) - 1]
    return all(_segment_matches(glob, part) for glob, part in zip(fixed, directory))


@lru_cache(maxsize=4096)
def _claim_index(directory: str) -> tuple[re.Pattern[str], tuple[Reader, ...]] | None:
    """The patterns that can match a file in ``directory`` in one expression, one named group per reader (plan order).

    An alternation tries its branches in order, so the group that matches is the first reader (in
    plan order) with a pattern matching the whole path and no exclude pattern matching it (a negative
    lookahead at the start of its branch): what trying each reader's ``claims`` in turn finds. None
    when no pattern can match there.
    """
    parts = tuple(directory.split("/")) if directory else ()
    readers = all_readers()
    branches = []
    for index, reader in enumerate(readers):
        fitting = [pattern_regex(p) for p in reader.patterns if could_match_in(p, parts)]
        if fitting:
            excluded = f"(?!(?:{'|'.join(pattern_regex(p) for p in reader.exclude)})$)" if reader.exclude else ""
            branches.append(f"(?P<r{index}>{excluded}(?:{'|'.join(fitting)}))")
    if not branches:
        return None
    return re.compile("^(?:" + "|".join(branches) + ")$"), readers


def reader_for(rel: str) -> Reader | None:
    """The reader that claims ``rel`` (first in plan order), or None: one match of the patterns that fit its directory."""
    known = _claim_index(rel.rpartition("/")[0])
    if known is None:
        return None
    index, readers = known
    found = index.match(rel)
    return None if found is None else readers[int((found.lastgroup or "r0")[1:])]


def by_kind(kind: str) -> Reader:
    for reader in all_readers():
        if reader.kind == kind:
            return reader
    raise KeyError(kind)

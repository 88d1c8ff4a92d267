"""Retired config aliases in ``openclaw.json`` (upstream-legacy-formats.md §4.6).

OpenClaw's runtime reads only the canonical keys; the aliases belong to the
doctor's config migration, which statekit carries out as a planned step:

* ``session.idleMinutes`` → ``session.reset.idleMinutes``; when the config had
  neither ``session.reset`` nor ``session.resetByType``, the new
  ``session.reset`` also gets ``mode: "idle"``: that is what a bare
  ``idleMinutes`` meant to the releases that wrote it, while OpenClaw
  2026.9.6 resets a ``session.reset`` without a mode daily;
* ``session.resetByType.dm`` → ``session.resetByType.direct``;
* ``session.writeLock`` is retired: removed;
* ``memorySearch.store.path`` is retired (the memory index lives in the
  agent database): removed wherever a ``memorySearch`` block sits — at the
  top level, in ``agents.defaults``, in each ``agents.list[]`` item and each
  ``agents.entries.<id>`` — and an emptied ``store`` object goes with it.

When the canonical key already holds a value, it wins and the alias is
dropped. A container that is not an object (``session.reset: "idle"``) is
left alone with a note. After a state-dir relocation, string values that
are paths under the old root (absolute, or ``~/.clawdbot/...``) are rebased
onto the new root.

Change lines name JSON paths only, never a value: the config holds secrets
(gateway token, provider API keys).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class ConfigRewrite:
    document: Any
    changes: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    legacy_paths: list[str] = field(default_factory=list)  # JSON paths of the aliases rewritten (OpenClaw 2026.9.6 rejects them)
    # "path: reason" of what OpenClaw 2026.9.6 would refuse and statekit cannot rewrite: the config is then left alone
    blockers: list[str] = field(default_factory=list)
    withheld: list[str] = field(default_factory=list)  # the change lines not applied because of the blockers

    @property
    def changed(self) -> bool:
        return bool(self.changes)


def _move(
    container: dict[str, Any], old: str, parent_path: str, target_key: str, target_field: str, rewrite: ConfigRewrite,
    created: dict[str, Any] | None = None,
) -> None:
    """Move ``container[old]`` to ``container[target_key][target_field]`` (a missing target starts as ``created``)."""
    old_path = f"{parent_path}.{old}"
    new_path = f"{parent_path}.{target_key}.{target_field}"
    target = container.get(target_key)
    if target is None:
        target = container[target_key] = dict(created or {})
    if not isinstance(target, dict):
        rewrite.notes.append(f"{old_path}: not moved, {parent_path}.{target_key} is not an object; left as it is")
        return
    rewrite.legacy_paths.append(old_path)
    value = container.pop(old)
    if target_field in target:
        rewrite.changes.append(f"{old_path} removed ({new_path} is already set and wins)")
    else:
        target[target_field] = value
        rewrite.changes.append(f"{old_path} → {new_path}")


def _rename_in(container: dict[str, Any], old: str, new: str, parent_path: str, rewrite: ConfigRewrite) -> None:
    rewrite.legacy_paths.append(f"{parent_path}.{old}")
    value = container.pop(old)
    if new in container:
        rewrite.changes.append(f"{parent_path}.{old} removed ({parent_path}.{new} is already set and wins)")
        return
    # keep the key's position
    items = list(container.items())
    container.clear()
    container[new] = value
    for key, item in items:
        container[key] = item
    rewrite.changes.append(f"{parent_path}.{old} → {parent_path}.{new}")


def _memory_search_blocks(document: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    block = document.get("memorySearch")
    if isinstance(block, dict):
        yield "memorySearch", block
    agents = document.get("agents")
    if not isinstance(agents, dict):
        return
    defaults = agents.get("defaults")
    if isinstance(defaults, dict) and isinstance(defaults.get("memorySearch"), dict):
        yield "agents.defaults.memorySearch", defaults["memorySearch"]
    listed = agents.get("list")
    if isinstance(listed, list):
        for index, item in enumerate(listed):
            if isinstance(item, dict) and isinstance(item.get("memorySearch"), dict):
                yield f"agents.list[{index}].memorySearch", item["memorySearch"]
    entries = agents.get("entries")
    if isinstance(entries, dict):
        for name, item in entries.items():
            if isinstance(item, dict) and isinstance(item.get("memorySearch"), dict):
                yield f"agents.entries.{name}.memorySearch", item["memorySearch"]


def rewrite_aliases(document: Any) -> ConfigRewrite:
    """Apply the alias moves and retirements to a copy of the parsed config."""
    rewrite = ConfigRewrite(copy.deepcopy(document))
    doc = rewrite.document
    if not isinstance(doc, dict):
        rewrite.notes.append("config top level is not an object; left alone")
        return rewrite
    session = doc.get("session")
    if isinstance(session, dict):
        if "idleMinutes" in session:
            # a bare idleMinutes meant idle resets (no session.reset, no resetByType) to the releases that wrote it
            implied = {"mode": "idle"} if "reset" not in session and "resetByType" not in session else None
            _move(session, "idleMinutes", "session", "reset", "idleMinutes", rewrite, implied)
        by_type = session.get("resetByType")
        if isinstance(by_type, dict) and "dm" in by_type:
            _rename_in(by_type, "dm", "direct", "session.resetByType", rewrite)
        if "writeLock" in session:
            rewrite.legacy_paths.append("session.writeLock")
            session.pop("writeLock")
            rewrite.changes.append("session.writeLock removed (retired)")
    for path, block in _memory_search_blocks(doc):
        store = block.get("store")
        if isinstance(store, dict) and "path" in store:
            rewrite.legacy_paths.append(f"{path}.store.path")
            store.pop("path")
            rewrite.changes.append(f"{path}.store.path removed (retired: the index lives in the agent database)")
            if not store:
                block.pop("store")
    return rewrite


def _path_roots(old_root: Path, home: Path | None) -> list[str]:
    roots = [str(old_root)]
    if home is not None:
        try:
            rel = old_root.relative_to(home)
            roots.append("~/" + rel.as_posix())
        except ValueError:
            pass
    return roots


def rebase_paths(rewrite: ConfigRewrite, old_roots: Sequence[Path], new_root: Path, home: Path | None = None) -> None:
    """Rebase string values under a relocated state dir onto the new one (in place)."""
    pairs: list[tuple[str, str]] = []
    for old in old_roots:
        new_forms = _path_roots(new_root, home)
        for index, form in enumerate(_path_roots(old, home)):
            pairs.append((form, new_forms[min(index, len(new_forms) - 1)]))
    if not pairs:
        return

    def visit(node: Any, path: str) -> Any:
        if isinstance(node, dict):
            for key in list(node):
                node[key] = visit(node[key], f"{path}.{key}" if path else str(key))
            return node
        if isinstance(node, list):
            return [visit(item, f"{path}[{i}]") for i, item in enumerate(node)]
        if isinstance(node, str):
            for old, new in pairs:
                if node == old or node.startswith(old + "/"):
                    rewrite.changes.append(f"{path}: path rebased from {old} to {new}")
                    return new + node[len(old):]
        return node

    rewrite.document = visit(rewrite.document, "")


def render(document: Any) -> bytes:
    """The rewritten config as OpenClaw writes it: 2-space JSON, UTF-8, trailing newline."""
    return (json.dumps(document, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


__all__ = ["ConfigRewrite", "rewrite_aliases", "rebase_paths", "render"]

"""OpenClaw's own backup format (``openclaw backup create``, 2026.9.6): layout, placement, manifest.

An OpenClaw archive is a gzip'd tar with one root directory ``<archiveRoot>/``
holding ``manifest.json`` (``schemaVersion: 1``) and ``payload/`` where every
asset sits under its encoded absolute source path
(``payload/posix/<path without the leading slash>``, ``payload/windows/<DRIVE>/...``).
The manifest names each asset (``kind`` state / config / credentials /
workspace / agent / ...; ``sourcePath``; ``archivePath``) and the install's
``paths`` (``stateDir``, ``configPath``, ``oauthDir``, ``workspaceDirs``,
``agentRoots``). There is no per-file size or digest: statekit adds its own in
a sibling member ``<archiveRoot>/statekit-manifest.json`` when it writes one
(OpenClaw's verifier accepts any entry inside the archive root; only
``<archiveRoot>/manifest.json`` is its manifest).

Restoring such an archive makes a directory *the* state dir (:func:`placements`):
the state asset's contents go to its top, a config kept outside the state dir
becomes ``openclaw.json`` there and a credentials dir outside it becomes
``credentials/`` (each unless the state asset already has that entry), and
whatever else lived outside the state dir (workspaces, agent dirs) goes to
``.statekit/external/<kind>-<name>/`` and is listed, never to the absolute
paths the manifest records.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from statekit.values import datetime_to_iso

MANIFEST_NAME = "manifest.json"
DIGESTS_NAME = "statekit-manifest.json"
DIGESTS_FORMAT = "statekit-openclaw-digests"
ARCHIVE_SUFFIX = ".tar.gz"
ROOT_SUFFIX = "-openclaw-backup"
EXTERNAL_DIR = ".statekit/external"
_SAFE = re.compile(r"[^A-Za-z0-9._-]+")


def encode_openclaw_path(source: str) -> str:
    """OpenClaw's payload encoding of a source path (POSIX absolute, Windows drive, or relative)."""
    normalized = source.replace("\\", "/")
    if len(normalized) > 2 and normalized[1] == ":" and normalized[2] == "/":
        rest = normalized[3:]
        return posixpath.join("windows", normalized[0].upper(), rest) if rest else f"windows/{normalized[0].upper()}"
    if normalized.startswith("/"):
        return posixpath.join("posix", normalized.lstrip("/")) if normalized.strip("/") else "posix"
    return posixpath.join("relative", normalized)


def archive_path_for(archive_root: str, source: str) -> str:
    return posixpath.join(archive_root, "payload", encode_openclaw_path(source))


def archive_root_name(moment: datetime) -> str:
    """``2026-12-01T10-14-57.440+00-00-openclaw-backup``: OpenClaw's root name, at UTC (offset +00-00)."""
    utc = moment.astimezone(timezone.utc)
    return utc.strftime("%Y-%m-%dT%H-%M-%S.") + f"{utc.microsecond // 1000:03d}+00-00{ROOT_SUFFIX}"


iso_ms = datetime_to_iso  # OpenClaw's manifest times: ``toISOString`` form


def is_within(child: str, parent: str) -> bool:
    """``child`` is ``parent`` or below it (archive paths, POSIX, already normalised)."""
    return child == parent or child.startswith(parent.rstrip("/") + "/")


# --------------------------------------------------------------------------- placement on restore


@dataclass(frozen=True)
class Placement:
    """Where one manifest asset goes below the restored state dir."""

    kind: str
    source_path: str
    archive_path: str  # normalised, no trailing slash
    dest_rel: str  # POSIX path below the state dir; "" is the state dir itself
    relocated: bool = False  # it lived outside the state dir: listed for the operator

    def note(self) -> str | None:
        if not self.relocated:
            return None
        return (f"{self.kind} {self.source_path} was outside the state dir: restored to <state>/{self.dest_rel} "
                f"(the config may still name {self.source_path}; move it there or update the path)")


def _label(kind: str, source: str, taken: set[str]) -> str:
    parts = [p for p in re.split(r"[/\\]+", source) if p]
    base = _SAFE.sub("_", parts[-1] if parts else kind) or kind
    prefix = _SAFE.sub("_", kind)
    if kind == "agent" and base == "agent" and len(parts) > 1:  # <root>/agents/<id>/agent: name it by the agent
        base = _SAFE.sub("_", parts[-2]) or base
    name = base if base == prefix or base.startswith(prefix + "-") else f"{prefix}-{base}"
    candidate, n = name, 1
    while candidate in taken:
        n += 1
        candidate = f"{name}-{n}"
    taken.add(candidate)
    return candidate


def placements(manifest: dict[str, Any], member_names: set[str]) -> list[Placement]:
    """Each asset's place below the restored state dir (see the module doc). ``member_names`` are the archive's entries."""
    assets = [a for a in manifest.get("assets") or [] if isinstance(a, dict)]
    state = next((a for a in assets if a.get("kind") == "state"), None)
    state_path = str(state["archivePath"]).rstrip("/") if state else None

    def state_has(rel: str) -> bool:
        if state_path is None:
            return False
        top = f"{state_path}/{rel}"
        return any(is_within(name.rstrip("/"), top) for name in member_names)

    result: list[Placement] = []
    taken: set[str] = set()
    for asset in assets:
        kind, source, where = str(asset.get("kind")), str(asset.get("sourcePath")), str(asset.get("archivePath")).rstrip("/")
        if asset is state:
            result.append(Placement(kind, source, where, ""))
        elif kind == "config" and not state_has("openclaw.json"):
            result.append(Placement(kind, source, where, "openclaw.json"))
        elif kind == "credentials" and not state_has("credentials"):
            result.append(Placement(kind, source, where, "credentials"))
        else:
            result.append(Placement(kind, source, where, f"{EXTERNAL_DIR}/{_label(kind, source, taken)}", relocated=True))
    return result


def place_member(name: str, placed: list[Placement]) -> tuple[Placement, str] | None:
    """The placement holding archive entry ``name`` (the deepest asset path containing it) and its path below the state dir."""
    clean = name.rstrip("/")
    best: Placement | None = None
    for placement in placed:
        if is_within(clean, placement.archive_path) and (best is None or len(placement.archive_path) > len(best.archive_path)):
            best = placement
    if best is None:
        return None
    tail = clean[len(best.archive_path) :].lstrip("/")
    rel = posixpath.join(best.dest_rel, tail) if best.dest_rel and tail else (best.dest_rel or tail)
    return best, rel


def link_is_external(entry: str, linkpath: str, state_source: str | None, state_archive: str | None) -> bool:
    """OpenClaw's rule: a link is external when its target leaves the state asset (absolute targets are read
    against the state dir's source path, relative ones against its archive path)."""
    if state_source is None or state_archive is None:
        return True
    if linkpath.startswith("/"):
        target, base = posixpath.normpath(linkpath), posixpath.normpath(state_source)
    else:
        target, base = posixpath.normpath(posixpath.join(posixpath.dirname(entry), linkpath)), state_archive
    rel = posixpath.relpath(target, base)
    return rel == ".." or rel.startswith("../")


# --------------------------------------------------------------------------- the manifest statekit writes


def build_manifest(
    *,
    archive_root: str,
    created_at: datetime,
    runtime_version: str,
    state_dir: str,
    config_path: str | None,
    oauth_dir: str,
    workspace_dirs: list[str],
    agent_roots: list[tuple[str, str]],
    assets: list[tuple[str, str]],
    skipped: list[dict[str, Any]],
    external_links: list[tuple[str, str]],
    include_workspace: bool,
) -> dict[str, Any]:
    """An OpenClaw 2026.9.6 manifest (``schemaVersion: 1``) for ``assets`` = [(kind, source path)]."""
    return {
        "schemaVersion": 1,
        "createdAt": iso_ms(created_at),
        "archiveRoot": archive_root,
        "runtimeVersion": runtime_version,
        "platform": "linux" if state_dir.startswith("/") else "win32",
        "nodeVersion": "none (written by statekit)",
        "options": {"includeWorkspace": include_workspace, "onlyConfig": False},
        "paths": {
            "stateDir": state_dir,
            "configPath": config_path or posixpath.join(state_dir, "openclaw.json"),
            "oauthDir": oauth_dir,
            "workspaceDirs": workspace_dirs,
            "agentRoots": [{"agentId": agent, "sourcePath": source} for agent, source in agent_roots],
        },
        "assets": [{"kind": kind, "sourcePath": source, "archivePath": archive_path_for(archive_root, source)} for kind, source in assets],
        "skipped": skipped,
        "externalSymbolicLinks": [{"entryPath": entry, "linkpath": target} for entry, target in external_links],
    }

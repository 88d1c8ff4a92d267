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

import hashlib
import json
import os
import posixpath
import re
import tarfile
import unicodedata
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path, PurePosixPath
from typing import Any, BinaryIO

import zstandard

from statekit.backup import manifest as mf
from statekit import __version__
from statekit.backup.assets import AssetPlan, Root, configured_workspaces, credentials_dir, read_config
from statekit.backup.archive import BombError, GZIP_TRAILER_LEN, GZIP_TRAILER_TAG, copy_member, gzip_trailer, members_of, open_tar_stream
from statekit.backup.checks import (
    MANIFEST_MAX, MemberSink, OPENCLAW_MANIFEST_MAX, OPENCLAW_MAX_ENTRIES, OPENCLAW_RATIO, Scratch,
    VerifyReport, beneath_symlink, hash_range, link_escapes, member_path_problem, member_type_problem, oversized_problem,
)
from statekit.backup.restore_steps import RestoreStep, file_mode
from statekit.backup.snapshot import DbFacts, inspect_db
from statekit.db import SQLITE_HEADER
from statekit.progress import ProgressFn, ProgressReader, start_phase
from statekit.fsutil import CHUNK
from statekit.states import RestoreStepAction
from statekit.values import datetime_to_iso, iso_to_ms

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


OPENCLAW_ROOT_KINDS = {"state": "state", "config": "config", "credentials": "credentials"}  # agent-*, workspace-*: by prefix


def asset_kind(root_id: str) -> str:
    """OpenClaw's asset ``kind`` for one of statekit's asset roots."""
    if root_id in OPENCLAW_ROOT_KINDS:
        return OPENCLAW_ROOT_KINDS[root_id]
    return "agent" if root_id.startswith("agent-") else "workspace"


def encode_document(document: dict[str, Any]) -> bytes:
    """OpenClaw's ``manifest.json`` bytes (2-space indent, as OpenClaw writes it)."""
    return mf.json_text_bytes(json.dumps(document, indent=2, ensure_ascii=False) + "\n")


def build_manifest_of(manifest: mf.Manifest, used_roots: list[Root], plan: AssetPlan, root: str,
                      env: Mapping[str, str] | None) -> dict[str, Any]:
    """``--format openclaw``: OpenClaw's ``manifest.json`` for what ``manifest`` archived.

    statekit's digest record goes beside it: statekit's manifest (every entry with size, SHA-256, mode, mtime;
    databases with user_version and role) under the OpenClaw archive paths, format :data:`DIGESTS_FORMAT`, plus the
    SHA-256 of OpenClaw's manifest (``Manifest.encoded(DIGESTS_FORMAT, {"openclaw_manifest_sha256": ...})``).
    """
    state_dir = str(plan.state_dir)
    state_archive = archive_path_for(root, state_dir)
    links = [(a.archive_path, a.link_target or "") for a in manifest.assets if a.kind == "symlink"]
    external = [(entry, target) for entry, target in links if link_is_external(entry, target, state_dir, state_archive)]
    config = read_config(plan.config_file, [])
    workspaces = sorted({str(p) for p in configured_workspaces(config, plan.state_dir).values()})
    skipped = [{"kind": "entry", "sourcePath": s.source_path, "reason": s.reason} for s in manifest.skipped]
    return build_manifest(
        archive_root=root, created_at=manifest.created_at, runtime_version=f"statekit {__version__}", state_dir=state_dir,
        config_path=str(plan.config_file) if plan.config_file is not None else None,
        oauth_dir=str(credentials_dir(plan.state_dir, env if env is not None else os.environ)),
        workspace_dirs=workspaces, agent_roots=[],
        assets=[(asset_kind(r.id), str(r.path)) for r in used_roots],
        skipped=skipped, external_links=external, include_workspace=bool(manifest.options.get("include_workspaces")),
    )


# --------------------------------------------------------------------------- verify


def _openclaw_manifest_problems(data: dict[str, Any], root: str) -> list[str]:
    problems: list[str] = []
    if data.get("schemaVersion") != 1:
        problems.append(f"unsupported OpenClaw manifest schemaVersion {data.get('schemaVersion')!r}")
        return problems
    if data.get("archiveRoot") != root:
        problems.append(f"manifest archiveRoot {data.get('archiveRoot')!r} does not match the archive root {root!r}")
    if iso_to_ms(str(data.get("createdAt", ""))) is None:
        problems.append(f"manifest createdAt {data.get('createdAt')!r} is not a timestamp")
    assets = data.get("assets")
    if not isinstance(assets, list) or not assets:
        problems.append("manifest assets must be a non-empty array")
        return problems
    kinds = {"state", "config", "credentials", "workspace", "agent", "managed skill"}
    seen: set[str] = set()
    for index, asset in enumerate(assets):
        if not isinstance(asset, dict) or asset.get("kind") not in kinds:
            problems.append(f"manifest asset #{index} has an unknown kind")
            continue
        if not isinstance(asset.get("sourcePath"), str) or not isinstance(asset.get("archivePath"), str):
            problems.append(f"manifest asset #{index} lacks sourcePath/archivePath")
            continue
        path = asset["archivePath"].rstrip("/")
        bad = member_path_problem(path, root)
        if bad or not path.startswith(f"{root}/payload/"):
            problems.append(f"manifest asset #{index} archivePath is not under {root}/payload/ ({bad or path})")
        elif path in seen:
            problems.append(f"manifest declares asset {path} twice")
        seen.add(path)
    if sum(1 for a in assets if isinstance(a, dict) and a.get("kind") == "state") > 1:
        problems.append("manifest has more than one state asset")
    links = data.get("externalSymbolicLinks")
    if links is not None and not isinstance(links, list):
        problems.append("manifest externalSymbolicLinks must be an array")
    return problems


def gzip_digest_problem(path: Path, progress: ProgressFn | None = None) -> tuple[str | None, bool]:
    """statekit's gzip digest trailer (see :func:`backup.archive.gzip_trailer`): (problem or None, whether one was found)."""
    size = os.path.getsize(path)
    if size < GZIP_TRAILER_LEN:
        return None, False
    with open(path, "rb") as opened:
        fh: BinaryIO = opened if progress is None else ProgressReader(opened, progress)  # type: ignore[assignment]
        fh.seek(size - GZIP_TRAILER_LEN)
        tail = fh.read()
        start = 10
        if tail[start : start + len(GZIP_TRAILER_TAG)] != GZIP_TRAILER_TAG:
            return None, False  # OpenClaw's own archives have none
        hexdigest = tail[start + len(GZIP_TRAILER_TAG) : start + len(GZIP_TRAILER_TAG) + 64]
        try:
            recorded = bytes.fromhex(hexdigest.decode("ascii"))
        except (UnicodeDecodeError, ValueError):
            return "archive digest trailer is malformed (altered)", True
        if len(recorded) != 32 or tail != gzip_trailer(recorded):
            return "archive digest trailer is malformed (altered)", True
        if hash_range(fh, 0, size - GZIP_TRAILER_LEN) != recorded:
            return "archive bytes do not match the recorded digest (altered)", True
    return None, True


@dataclass(slots=True)  # one per entry of the archive: no __dict__ each
class OcMember:
    """One entry of an OpenClaw archive as verify saw it (restore plans from these)."""

    name: str
    kind: str  # "file" | "dir" | "symlink" | "hardlink"
    mode: int = 0o644
    mtime: float = 0.0
    size: int = 0
    sha256: str | None = None
    linkname: str = ""
    db: DbFacts | None = None


def _oc_read_member(report: VerifyReport, tar: tarfile.TarFile, member: tarfile.TarInfo, entry: OcMember, scratch: Scratch) -> None:
    """Hash a file member (and integrity-check it when it is a SQLite database)."""
    handle = tar.extractfile(member)
    if handle is None:
        return
    head = handle.read(len(SQLITE_HEADER))
    is_db = head == SQLITE_HEADER and not entry.name.endswith(("-wal", "-shm", "-journal"))
    sink = MemberSink(scratch, spill=is_db)
    try:
        sink(head)
        copy_member(handle, sink, member.size - len(head))
        sink.close()
        if sink.size != member.size:
            report.problems.append(f"entry {entry.name} is truncated ({sink.size} of {member.size} bytes)")
        entry.size, entry.sha256 = sink.size, sink.digest.hexdigest()
        if is_db and sink.spilled is not None:
            entry.db = inspect_db(sink.spilled, foreign_keys=True)
    finally:
        sink.discard()


def _case_folded(name: str) -> str:
    return unicodedata.normalize("NFC", name).lower()


def verify_openclaw(report: VerifyReport, scratch: Scratch, max_bytes: int, progress: ProgressFn | None = None) -> None:
    start_phase(progress, "checksum", os.path.getsize(report.path), "bytes")
    trailer_problem, has_trailer = gzip_digest_problem(report.path, progress)
    start_phase(progress, "verify", os.path.getsize(report.path), "bytes")
    if trailer_problem:
        report.problems.append(trailer_problem)
    compressed = os.path.getsize(report.path)
    limit = min(max(compressed * OPENCLAW_RATIO, 1 << 20), max_bytes)
    members: dict[str, OcMember] = {}
    folded: dict[int, str] = {}  # the hash of each name's case-folded form -> that name (not a folded copy of every name)
    manifests: list[tuple[str, bytes]] = []
    digests: list[DigestRecord | str] = []  # statekit's record beside OpenClaw's manifest, or why it cannot be read
    links: set[str] = set()
    root: str | None = None
    try:
        with open_tar_stream(report.path, "gzip", limit, progress) as (tar, counter):
            for member in members_of(tar):
                report.entries += 1
                if report.entries > OPENCLAW_MAX_ENTRIES:
                    report.problems.append(f"archive has more than {OPENCLAW_MAX_ENTRIES} entries")
                    return
                oversized = oversized_problem(member, counter.limit - member.offset_data)
                if oversized:
                    report.problems.append(oversized)
                    return  # refused from its header: not a byte of it is read
                name = member.name.rstrip("/") if member.isdir() else member.name
                root = root or name.split("/", 1)[0]
                problem = member_path_problem(name, root) or member_type_problem(member)
                if problem:
                    report.problems.append(problem)
                    continue
                if name in members:
                    report.problems.append(f"duplicate entry path {name}")
                    continue
                key = _case_folded(name)
                other = folded.get(hash(key))
                if other is not None and _case_folded(other) == key:
                    report.problems.append(f"entries {other} and {name} collide on case-insensitive filesystems")
                folded[hash(key)] = name
                under = beneath_symlink(name, links)
                if under:
                    report.problems.append(f"entry {name} is nested beneath the symlink {under}")
                entry = OcMember(name, "file", member.mode & 0o7777, float(member.mtime))
                members[name] = entry
                if member.islnk():
                    target = members.get(member.linkname.rstrip("/"))
                    if member_path_problem(member.linkname, root) or target is None or target.kind != "file":
                        report.problems.append(f"hard link {name} -> {member.linkname} does not name an earlier file of the archive")
                        continue
                    entry.kind, entry.linkname, entry.size, entry.sha256 = "hardlink", target.name, target.size, target.sha256
                    entry.db = target.db
                    continue
                if member.issym():
                    links.add(name)
                    entry.kind, entry.linkname, entry.mode = "symlink", member.linkname, 0o777
                    continue
                if member.isdir():
                    entry.kind = "dir"
                    continue
                if name.count("/") == 1 and name.endswith("/" + mf.MANIFEST_NAME):
                    if member.size > OPENCLAW_MANIFEST_MAX:
                        report.problems.append(f"manifest {name} is larger than {OPENCLAW_MANIFEST_MAX} bytes")
                        continue
                    handle = tar.extractfile(member)
                    raw = handle.read() if handle is not None else b""
                    manifests.append((name, raw))
                    entry.size, entry.sha256 = len(raw), hashlib.sha256(raw).hexdigest()
                    continue
                if name == f"{root}/{DIGESTS_NAME}":
                    if member.size > MANIFEST_MAX:
                        report.problems.append(f"{name} is larger than {MANIFEST_MAX} bytes")
                        continue
                    handle = tar.extractfile(member)
                    digests.append(read_digest_record(handle.read if handle is not None else _nothing, name, members))
                    continue
                _oc_read_member(report, tar, member, entry, scratch)
            while counter.read(CHUNK):
                pass
            report.decompressed_bytes = counter.count
    except BombError as exc:
        report.problems.append(f"decompression bomb: {exc} ({OPENCLAW_RATIO}:1 bound); stopped reading")
        return
    except (tarfile.TarError, EOFError, OSError, zstandard.ZstdError, zlib.error) as exc:  # zlib.error: a damaged deflate stream
        report.problems.append(f"archive is not a readable OpenClaw backup (corrupt or truncated) after {report.entries} entries: {exc}")
        return
    report.oc_members = members
    if root is None:
        report.problems.append("archive is empty")
        return
    if len(manifests) != 1:
        report.problems.append(f"expected exactly one backup manifest entry, found {len(manifests)}")
        return
    try:
        data = mf.decode(manifests[0][1])
    except ValueError as exc:
        report.problems.append(str(exc))
        return
    report.openclaw_manifest = data
    problems = _openclaw_manifest_problems(data, root)
    report.problems.extend(problems)
    if problems:
        return
    _check_openclaw_assets(report, data, root, members)
    metadata = {f"{root}/{MANIFEST_NAME}", f"{root}/{DIGESTS_NAME}"}
    if not any(m.kind in ("file", "hardlink", "symlink") for name, m in members.items() if name not in metadata):
        report.problems.append("archive holds no state: no file, database or link besides its manifest (an empty or incomplete backup)")
    if digests:
        _check_statekit_digests(report, digests[0], manifests[0][1], root, members)
        if not has_trailer:
            report.problems.append("statekit's digest record is there but the archive digest trailer is not (altered or cut)")
    else:
        report.notes.append("OpenClaw archives record no per-file size or SHA-256: file contents are covered only by gzip's CRC")


def _check_openclaw_assets(report: VerifyReport, data: dict[str, Any], root: str, members: dict[str, OcMember]) -> None:
    names = set(members)
    assets = data["assets"]
    for asset in assets:
        path = asset["archivePath"].rstrip("/")
        nested = any(is_within(n, path) and n != path for n in names)
        if path not in names and not nested:
            report.problems.append(f"missing payload for manifest asset {asset['kind']} {asset['sourcePath']}")
        elif asset["kind"] == "config" and (path not in names or members[path].kind != "file" or nested):
            report.problems.append(f"config asset {path} must be a single regular file entry")
        else:
            report.assets_verified += 1
    asset_paths = [a["archivePath"].rstrip("/") for a in assets]
    metadata = {f"{root}/{mf.MANIFEST_NAME}", f"{root}/{DIGESTS_NAME}"}
    for name in names - metadata:
        if not any(is_within(name, p) for p in asset_paths) and not any(is_within(p, name) for p in asset_paths):
            report.problems.append(f"entry {name} is outside every manifest asset")
    _check_openclaw_links(report, data, root, members, asset_paths)
    _check_openclaw_snapshots(report, data, root, members)


def _check_openclaw_links(report: VerifyReport, data: dict[str, Any], root: str, members: dict[str, OcMember],
                          asset_paths: list[str]) -> None:
    state = next((a for a in data["assets"] if a["kind"] == "state"), None)
    state_source = state["sourcePath"] if state else None
    state_archive = state["archivePath"].rstrip("/") if state else None
    listed_raw = data.get("externalSymbolicLinks")
    listed: dict[str, str] = {}
    for item in listed_raw or []:
        if isinstance(item, dict):
            entry = item.get("entryPath") or item.get("archivePath")
            target = item.get("linkpath") if "linkpath" in item else item.get("target")
            if isinstance(entry, str):
                listed[entry.rstrip("/")] = target if isinstance(target, str) else ""
    external: dict[str, str] = {}
    for entry in members.values():
        if entry.kind != "symlink":
            continue
        if not entry.linkname or "\0" in entry.linkname:
            report.problems.append(f"symlink {entry.name} has no target")
            continue
        if not any(is_within(entry.name, p) for p in asset_paths):
            continue  # reported as outside every asset
        if listed_raw is None:  # OpenClaw's rule without a link report: a relative target inside an asset
            target = posixpath.normpath(posixpath.join(posixpath.dirname(entry.name), entry.linkname))
            if link_escapes(entry.name, entry.linkname, root) or not any(is_within(target, p) for p in asset_paths):
                report.problems.append(f"symlink {entry.name} points outside the archive's assets ({entry.linkname})")
            continue
        if link_is_external(entry.name, entry.linkname, state_source, state_archive):
            external[entry.name] = entry.linkname
    if listed_raw is None:
        return
    for name, target in external.items():
        if name not in listed:
            report.problems.append(f"symlink {name} points outside the state dir ({target}) but the manifest does not list it")
        elif listed[name] and listed[name] != target:
            report.problems.append(f"symlink {name} points to {target!r}, the manifest lists {listed[name]!r}")
        else:
            report.notes.append(f"symlink {name} points outside the archive ({target}); listed as external")
    for name in listed:
        if name not in external:
            report.problems.append(f"manifest lists external symlink {name}, which the archive does not hold as one")


def _registered_archive_path(root: str, state_source: str, registered: str) -> str:
    source = registered if registered.startswith("/") or (len(registered) > 1 and registered[1] == ":") else \
        posixpath.join(state_source, registered)
    return archive_path_for(root, posixpath.normpath(source))


def _check_openclaw_snapshots(report: VerifyReport, data: dict[str, Any], root: str, members: dict[str, OcMember]) -> None:
    """The databases OpenClaw 9.6 itself verifies: the global one (role ``global``) and every agent database its
    registry names (owned by that agent); plus a legacy ``sqliteSnapshots`` inventory when a manifest has one."""
    canonical: dict[str, tuple[str, str | None]] = {}
    state = next((a for a in data["assets"] if a["kind"] == "state"), None)
    state_dir = (data.get("paths") or {}).get("stateDir") if isinstance(data.get("paths"), dict) else None
    state_dir = state_dir if isinstance(state_dir, str) else (state["sourcePath"] if state else None)
    if state_dir:
        global_path = archive_path_for(root, posixpath.join(state_dir, "state/openclaw.sqlite"))
        entry = members.get(global_path)
        if entry is not None:
            canonical[global_path] = ("global", None)
            if entry.db is not None and entry.db.ok:
                for agent_id, registered in entry.db.registry:
                    canonical.setdefault(_registered_archive_path(root, state_dir, registered), ("agent", agent_id))
    snapshots = data.get("sqliteSnapshots")
    if isinstance(snapshots, list):
        for snap in snapshots:
            if not isinstance(snap, dict) or not isinstance(snap.get("sourcePath"), str) or snap.get("role") not in ("global", "agent"):
                report.problems.append("malformed sqliteSnapshots entry in the manifest")
                continue
            path = archive_path_for(root, snap["sourcePath"])
            canonical[path] = (snap["role"], snap.get("agentId"))
            if path not in members or members[path].kind not in ("file", "hardlink"):
                report.problems.append(f"backup lacks verified canonical SQLite coverage for {snap['sourcePath']}")
    elif not canonical:
        report.notes.append("no global database (state/openclaw.sqlite) in the archive: no canonical SQLite coverage to check")
    for path, (role, owner_agent) in canonical.items():
        entry = members.get(path)
        if entry is None:
            continue  # a registered agent database that is not in the archive: OpenClaw 9.6 skips it too
        if entry.kind not in ("file", "hardlink"):
            report.problems.append(f"SQLite snapshot {path} must be a regular archive file")
            continue
        if entry.db is None:
            report.problems.append(f"{path} is a canonical SQLite snapshot but is not a SQLite file")
            continue
        if not entry.db.ok:
            report.problems.append(f"{path} fails integrity_check: {entry.db.integrity}")
        elif entry.db.meta_role is None and role == "global" and not isinstance(snapshots, list):
            report.problems.append(f"{path}: the global database has no schema_meta 'primary' row (OpenClaw 9.6 refuses it)")
        elif entry.db.meta_role and entry.db.meta_role != role:
            report.problems.append(f"{path}: schema_meta role is {entry.db.meta_role!r}, expected {role!r}")
        elif role == "agent" and owner_agent and entry.db.meta_agent_id and entry.db.meta_agent_id != owner_agent:
            report.problems.append(f"{path}: schema_meta agent id {entry.db.meta_agent_id!r} != {owner_agent!r}")
        elif entry.db.foreign_key_violations:
            report.problems.append(f"{path}: {entry.db.foreign_key_violations} foreign_key_check violation(s) "
                                   f"(OpenClaw 9.6's verifier refuses such a snapshot)")
        for suffix in ("-wal", "-shm", "-journal"):
            if path + suffix in members:
                report.problems.append(f"{path}{suffix}: live sidecar archived beside a snapshotted database")
    for entry in members.values():
        if entry.db is not None and entry.kind == "file" and entry.name not in canonical:
            name = PurePosixPath(entry.name).name
            if not entry.db.ok and name in ("openclaw.sqlite", "openclaw-agent.sqlite"):
                report.problems.append(f"{entry.name} fails integrity_check: {entry.db.integrity}")
            elif not entry.db.ok:
                report.notes.append(f"opaque SQLite file {entry.name} fails integrity_check: {entry.db.integrity}")


@dataclass(frozen=True, slots=True)
class DeclaredEntry:
    """One asset of statekit's digest record, as verify compares it with the archive's entry."""

    kind: str
    size: Any
    sha256: Any
    link_target: Any
    schema_version: Any


@dataclass(slots=True)
class DigestRecord:
    """statekit's digest record read one asset at a time (a record of 100,000 assets is ~50 MB of JSON)."""

    header: dict[str, Any]  # every member but the assets
    # By archive path: for an entry the walk had already read (the record is near the archive's end), what comparing
    # them found (None: they agree; the key is the entry's own name object); for any other, the asset to compare later.
    declared: dict[str, DeclaredEntry | str | None]
    malformed: bool  # an asset that is not an object with a str archive_path and a known kind


def _nothing(_size: int) -> bytes:
    return b""


def read_digest_record(read: Callable[[int], bytes], where: str, members: dict[str, OcMember]) -> DigestRecord | str:
    """The record read from ``read`` and compared with the ``members`` read so far, or the line that says why it is
    not one."""
    declared: dict[str, DeclaredEntry | str | None] = {}
    malformed = False

    def take(asset: Any, _index: int) -> None:
        nonlocal malformed
        if malformed or not isinstance(asset, dict) or not isinstance(asset.get("archive_path"), str) or asset.get("kind") not in mf.KINDS:
            malformed = True
            return
        found = DeclaredEntry(asset["kind"], asset.get("size"), asset.get("sha256"), asset.get("link_target"), asset.get("schema_version"))
        entry = members.get(asset["archive_path"])
        if entry is None:
            declared[asset["archive_path"]] = found
        else:
            declared[entry.name] = _digest_problem(entry, found)

    try:
        header = mf.read_document(read, take)
    except ValueError as exc:
        return f"{where}: {exc}"
    return DigestRecord(header, declared, malformed)


def _digest_problem(entry: OcMember, asset: DeclaredEntry) -> str | None:
    """How the archive's ``entry`` differs from what statekit's digest record says of it (None: it does not)."""
    name, kind = entry.name, asset.kind
    if kind == "dir":
        return None if entry.kind == "dir" else f"entry {name} should be a directory"
    if kind == "symlink":
        return None if entry.kind == "symlink" and entry.linkname == asset.link_target else f"symlink {name} differs from the digest record"
    if entry.kind not in ("file", "hardlink"):
        return f"entry {name} should be a regular file"
    if entry.size != asset.size or entry.sha256 != asset.sha256:
        return f"entry {name}: size or sha256 differs from the digest record (content altered)"
    if kind == "sqlite" and (entry.db is None or not entry.db.ok or entry.db.user_version != asset.schema_version):
        return f"sqlite entry {name} fails its checks or its user_version differs from the digest record"
    return None


def _check_statekit_digests(report: VerifyReport, record: DigestRecord | str, manifest_raw: bytes, root: str,
                            members: dict[str, OcMember]) -> None:
    """statekit's own record beside OpenClaw's manifest: size and SHA-256 of every entry, user_version of every database."""
    where = f"{root}/{DIGESTS_NAME}"
    if isinstance(record, str):
        report.problems.append(record)
        return
    data = record.header
    if data.get("format") != DIGESTS_FORMAT or data.get("schema_version") != 1 or not isinstance(data.get("assets"), list):
        report.problems.append(f"{where} is not a statekit digest record of a known version")
        return
    if data.get("openclaw_manifest_sha256") != hashlib.sha256(manifest_raw).hexdigest():
        report.problems.append(f"{root}/{mf.MANIFEST_NAME} does not match the digest statekit recorded for it")
    if record.malformed:
        report.problems.append(f"{where}: malformed asset record")
        return
    declared = record.declared
    checked = 0
    metadata = {f"{root}/{mf.MANIFEST_NAME}", where}
    for name, entry in members.items():
        if name in metadata:
            continue
        if name not in declared:
            if entry.kind != "dir":
                report.problems.append(f"entry {name} is not in {where}")
            continue
        asset = declared[name]
        problem = _digest_problem(entry, asset) if isinstance(asset, DeclaredEntry) else asset
        if problem:
            report.problems.append(problem)
        else:
            checked += 1
    for name in declared:
        if name not in members:
            report.problems.append(f"entry {name} named in {where} is missing from the archive")
    report.assets_verified = checked
    report.digests = True
    report.notes.append(f"statekit digests: {checked} entries checked by size and SHA-256")


# --------------------------------------------------------------------------- restore


def restore_steps(report: VerifyReport, base: Path) -> tuple[list[RestoreStep], list[Placement]]:
    """Every entry of a verified OpenClaw archive, placed below ``base`` (the state dir being restored)."""
    document = report.openclaw_manifest or {}
    root = document["archiveRoot"]
    placed = placements(document, set(report.oc_members))
    metadata = {f"{root}/{MANIFEST_NAME}", f"{root}/{DIGESTS_NAME}"}
    steps: list[RestoreStep] = []
    for name, member in report.oc_members.items():
        if name in metadata:
            continue
        hit = place_member(name, placed)
        if hit is None:
            continue  # an ancestor directory of the asset paths (payload/posix/...): nothing of the install
        placement, rel = hit
        destination = base.joinpath(*PurePosixPath(rel).parts) if rel else base
        private = placement.kind == "credentials" or rel == "credentials" or rel.startswith("credentials/")
        if member.kind == "dir":
            kind, mode = "dir", (member.mode & 0o7777) | 0o700
        elif member.kind == "symlink":
            kind, mode = "symlink", 0o777
        else:
            kind = "sqlite" if member.db is not None else "file"
            mode = file_mode(kind, "credentials" if private else "state", member.mode)
        steps.append(
            RestoreStep(
                archive_path=name,
                destination_text=str(destination),
                kind=kind,
                action=RestoreStepAction.CREATE,
                mode=mode,
                mtime=member.mtime,
                sha256=member.sha256,
                size=member.size,
                link_target=member.linkname if kind == "symlink" else None,
                aside="/".join(("state", rel)) if rel else "state",
                base=base,
                copy_from=member.linkname if member.kind == "hardlink" else None,
            )
        )
    return steps, placed


def relocations(placed: list[Placement], base: Path) -> tuple[list[dict[str, str]], list[str]]:
    moved = [p for p in placed if p.relocated]
    rows = [{"kind": p.kind, "source_path": p.source_path, "destination": str(base.joinpath(*PurePosixPath(p.dest_rel).parts))}
            for p in moved]
    notes = [f"{r['kind']} {r['source_path']} lived outside the state dir: restored to {r['destination']} "
             f"(the config may still name {r['source_path']}; move it there or change the config)" for r in rows]
    for p in placed:
        if not p.relocated and p.kind in ("config", "credentials"):
            notes.append(f"{p.kind} {p.source_path} (outside the state dir in the archive) restored as {base / p.dest_rel}")
    return rows, notes

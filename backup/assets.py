"""Asset planning: which trees a backup covers and every entry inside them.

Roots: the state dir (always), the active config file and the credentials dir
when they live outside it, agent dirs the config places outside it, and
workspaces outside it with ``--include-workspaces``. Paths recorded in
``openclaw.json`` are read relative to where the state dir is *now*
(:func:`statekit.layout.rebase_stale_path`), never at a stale absolute
location. The walk never follows a symlink; what it leaves out (sidecars,
locks, sockets, statekit temp files, the output dir) is listed with a reason.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

import json5

from statekit.backup.manifest import Skipped
from statekit.db import is_sqlite_file
from statekit.errors import StatekitError, UsageError
from statekit.fsutil import read_regular_file, shared_mode
from statekit.layout import (
    AGENT_DB_NAME,
    GLOBAL_DB_REL,
    STATEKIT_DIR_NAME,
    config_path,
    normalize_agent_id,
    rebase_stale_path,
)

SIDECAR_SUFFIXES = ("-wal", "-shm", "-journal")
# OpenClaw 2026.9.6's runtime lock coordinators (``<family>.<hash>.lock.sqlite``, held with SQLite locks while it
# runs; a snapshot of one would wait on its lock) and the memory plugin's transient SQLite files (generation /
# reindex locks, ``.sqlite.backup-<uuid>`` / ``.memory-reindex-<uuid>`` / ``.tmp-<uuid>`` copies being written):
# recreated by OpenClaw, excluded from its own archives too.
OPENCLAW_TRANSIENT_SQLITE = re.compile(
    r"(?:\.lock\.sqlite|\.sqlite\.(?:generation-(?:lock|writer)|reindex-lock)\.sqlite"
    r"|\.sqlite\.(?:backup|memory-reindex|tmp)-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})(?:-wal|-shm|-journal)?$",
    re.IGNORECASE,
)
RESTORE_JOURNAL_REL = ".statekit/restore-journal.json"
STATEKIT_TEMP_MARKERS = (".statekit-tmp-", ".statekit-stage-", ".statekit-restore-", ".statekit-backup-", ".statekit-verify-")
_SAFE_ID = re.compile(r"[^A-Za-z0-9._-]+")


@dataclass(frozen=True)
class Root:
    """One backed-up tree (or single file) and where it goes in the archive."""

    id: str  # "state", "config", "credentials", "agent-<id>", "workspace-<name>"
    role: str  # manifest role given to plain files below it
    path: Path  # absolute source path
    agent_id: str | None = None

    @property
    def prefix(self) -> str:
        return "payload/state" if self.id == "state" else f"payload/external/{self.id}"


@dataclass(slots=True)
class Entry:
    """One filesystem entry to archive (never followed if it is a symlink). Compact (slots, the path as str, only
    the three numbers of its ``lstat`` a backup records): a plan holds one per file."""

    root: Root
    rel: str  # POSIX path below the root; "" is the root itself (a dir root) or its file name
    path: str
    kind: str  # "file" | "dir" | "symlink" | "sqlite"
    role: str
    size: int  # st_size when walked
    mode: int  # st_mode & 0o7777
    mtime: float  # st_mtime
    agent_id: str | None = None
    link_target: str | None = None
    link_scope: str | None = None

    @classmethod
    def of(cls, root: Root, rel: str, path: Path, kind: str, role: str, st: os.stat_result, **extra: str | None) -> Entry:
        return cls(root, rel, str(path), kind, role, st.st_size, shared_mode(st.st_mode & 0o7777), st.st_mtime, **extra)

    @property
    def asset_id(self) -> str:
        return f"{self.root.id}/{self.rel}" if self.rel else self.root.id

    def archive_path(self, archive_root: str) -> str:
        tail = f"/{self.rel}" if self.rel else ""
        return f"{archive_root}/{self.root.prefix}{tail}"


@dataclass
class AssetPlan:
    state_dir: Path
    output_dir: Path
    roots: list[Root]
    entries: list[Entry] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    config_file: Path | None = None


# --------------------------------------------------------------------------- config


def read_config(path: Path | None, warnings: list[str]) -> dict[str, Any]:
    """The parsed config (JSON5), or {} when absent or unreadable (with a warning, no content shown)."""
    if path is None or not path.is_file():
        return {}
    try:
        data = json5.loads(read_regular_file(path).decode("utf-8"))  # bounded, never blocks on a FIFO
    except (OSError, ValueError, UnicodeDecodeError, RecursionError) as exc:  # RecursionError: a 5,000-deep config
        warnings.append(f"{path}: config could not be parsed ({type(exc).__name__}); only the state dir paths are used")
        return {}
    return data if isinstance(data, dict) else {}


def _agent_list(config: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    agents = config.get("agents")
    if not isinstance(agents, Mapping):
        return []
    listed = agents.get("list")
    result = [a for a in listed if isinstance(a, Mapping)] if isinstance(listed, list) else []
    entries = agents.get("entries")
    if isinstance(entries, Mapping):
        result += [{"id": key, **value} for key, value in entries.items() if isinstance(value, Mapping)]
    return result


def configured_agent_dirs(config: Mapping[str, Any], state_dir: Path) -> dict[str, Path]:
    found: dict[str, Path] = {}
    for agent in _agent_list(config):
        raw_id, raw_dir = agent.get("id"), agent.get("agentDir")
        if isinstance(raw_id, str) and isinstance(raw_dir, str) and raw_dir.strip():
            found[normalize_agent_id(raw_id)] = rebase_stale_path(raw_dir.strip(), state_dir)
    return found


def configured_workspaces(config: Mapping[str, Any], state_dir: Path) -> dict[str, Path]:
    found: dict[str, Path] = {}
    agents = config.get("agents")
    defaults = agents.get("defaults") if isinstance(agents, Mapping) else None
    if isinstance(defaults, Mapping) and isinstance(defaults.get("workspace"), str):
        found["default"] = rebase_stale_path(defaults["workspace"].strip(), state_dir)
    for agent in _agent_list(config):
        raw_id, raw_ws = agent.get("id"), agent.get("workspace")
        if isinstance(raw_id, str) and isinstance(raw_ws, str) and raw_ws.strip():
            found[normalize_agent_id(raw_id)] = rebase_stale_path(raw_ws.strip(), state_dir)
    return found


def credentials_dir(state_dir: Path, env: Mapping[str, str]) -> Path:
    raw = (env.get("OPENCLAW_OAUTH_DIR") or "").strip()
    if raw and raw.lower() not in ("undefined", "null"):
        return Path(os.path.abspath(os.path.expanduser(raw)))
    return state_dir / "credentials"


# --------------------------------------------------------------------------- roots


def is_within(path: Path, parent: Path) -> bool:
    """True when ``path`` is ``parent`` or below it (both compared by realpath)."""
    real, top = os.path.realpath(path), os.path.realpath(parent)
    return real == top or real.startswith(top.rstrip(os.sep) + os.sep)


def _root_id(prefix: str, name: str) -> str:
    return f"{prefix}-{_SAFE_ID.sub('_', name) or 'x'}"


def plan_roots(
    state_dir: Path, include_workspaces: bool, env: Mapping[str, str], warnings: list[str], skipped: list[Skipped]
) -> tuple[list[Root], Path | None]:
    """The trees to archive, de-duplicated: a root inside another is recorded as covered."""
    cfg = config_path(state_dir, env)
    config = read_config(cfg, warnings)
    candidates: list[Root] = [Root("state", "state", state_dir)]
    if cfg is not None and cfg.exists():
        real_cfg = Path(os.path.realpath(cfg))
        if not is_within(real_cfg, state_dir):
            candidates.append(Root("config", "config", real_cfg if cfg.is_symlink() else Path(os.path.abspath(cfg))))
    creds = credentials_dir(state_dir, env)
    if creds.is_dir():  # a symlinked credentials dir is backed up as the directory it points to
        candidates.append(Root("credentials", "credentials", Path(os.path.realpath(creds))))
    for agent_id, directory in sorted(configured_agent_dirs(config, state_dir).items()):
        if directory.is_dir():
            candidates.append(Root(_root_id("agent", agent_id), "state", Path(os.path.realpath(directory)), agent_id))
    if include_workspaces:
        for name, directory in sorted(configured_workspaces(config, state_dir).items()):
            if directory.is_dir():
                candidates.append(Root(_root_id("workspace", name), "workspace", directory))
            else:
                skipped.append(Skipped(str(directory), "configured workspace does not exist"))
    roots: list[Root] = []
    for candidate in candidates:
        cover = next((r for r in roots if is_within(candidate.path, r.path)), None)
        if cover is not None:
            if cover.id != "state":  # inside the state dir: archived with it, nothing to report
                skipped.append(Skipped(str(candidate.path), f"{SKIP_COVERED} {cover.id} asset"))
            continue
        roots.append(candidate)
    return roots, cfg


def check_output_dir(output_dir: Path, roots: list[Root]) -> None:
    for root in roots:
        if root.path.is_dir() and is_within(output_dir, root.path):
            raise UsageError(
                f"backup output {output_dir} is inside the backed-up {root.id} tree {root.path}; choose an --output outside it"
            )


# --------------------------------------------------------------------------- walk


# Why an entry is left out. Only statekit's own files and the sidecars of a database the backup snapshots are
# left out silently; every other skipped entry is printed as a warning (``quiet_skip``).
SKIP_TEMP = "statekit temp file"
SKIP_LOCK = "statekit lock file"
SKIP_JOURNAL = "statekit restore journal (an interrupted restore is settled before a backup)"
SKIP_PRE_RESTORE = "statekit pre-restore copies (rollback area of an earlier restore)"
SKIP_SIDECAR = "SQLite -wal/-shm/-journal beside a database this backup snapshots (the snapshot holds every committed row)"
SKIP_COVERED = "covered by the"  # prefix: "covered by the <root> asset" (archived with it)
QUIET_SKIPS = (SKIP_TEMP, SKIP_LOCK, SKIP_JOURNAL, SKIP_PRE_RESTORE, SKIP_SIDECAR)
# Left out by design and printed as a note, not a warning (no exit 3): OpenClaw recreates them and never archives them.
SKIP_OPENCLAW_TRANSIENT = "OpenClaw runtime lock or transient SQLite copy (recreated by OpenClaw, never archived by it either)"
NOTED_SKIPS = (SKIP_OPENCLAW_TRANSIENT,)
STATEKIT_LOCK_REL = f"{STATEKIT_DIR_NAME}/lock"
PRE_RESTORE_REL = f"{STATEKIT_DIR_NAME}/pre-restore"


def noted_skip(reason: str) -> bool:
    """True for the skips made by design that are printed as a note (never a warning)."""
    return reason in NOTED_SKIPS


def quiet_skip(reason: str) -> bool:
    """True for the skips that are statekit's own business (never printed); the noted ones are notes, every other one a warning."""
    return reason in QUIET_SKIPS or reason.startswith(SKIP_COVERED)


def statekit_own(rel: str, name: str) -> str | None:
    """The reason a path below the state dir is statekit's own bookkeeping (never archived), or None."""
    if any(marker in name for marker in STATEKIT_TEMP_MARKERS):
        return SKIP_TEMP
    if rel == STATEKIT_LOCK_REL:
        return SKIP_LOCK
    if rel == RESTORE_JOURNAL_REL:
        return SKIP_JOURNAL
    if rel == PRE_RESTORE_REL:
        return SKIP_PRE_RESTORE
    return None


def skip_reason(rel: str, st: os.stat_result, snapshotted: frozenset[str] = frozenset()) -> str | None:
    """Why an entry below a root is never archived, or None to archive it.

    ``snapshotted``: the names of the databases in the same directory that this backup snapshots: only a
    ``-wal``/``-shm``/``-journal`` beside one of them is left out (``travel-journal`` or a ``-wal`` beside a
    file that is not a database is user data)."""
    name = PurePosixPath(rel).name
    mode = st.st_mode
    if stat.S_ISSOCK(mode):
        return "socket"
    if stat.S_ISFIFO(mode):
        return "FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "device file"
    if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode) or stat.S_ISLNK(mode)):
        return "unsupported file type"
    own = statekit_own(rel, name)
    if own:
        return own
    if OPENCLAW_TRANSIENT_SQLITE.search(name):
        return SKIP_OPENCLAW_TRANSIENT
    if stat.S_ISREG(mode) and sidecar_base(name) in snapshotted:
        return SKIP_SIDECAR
    return None


def sidecar_base(name: str) -> str | None:
    """``x.sqlite`` for ``x.sqlite-wal`` / ``-shm`` / ``-journal``; None for any other name."""
    for suffix in SIDECAR_SUFFIXES:
        if name.endswith(suffix) and len(name) > len(suffix):
            return name[: -len(suffix)]
    return None


def _snapshotted_names(directory: Path, children: list[os.DirEntry[str]]) -> frozenset[str]:
    """Names in ``directory`` that have a sidecar beside them and are SQLite databases (regular files, not followed)."""
    names = {c.name for c in children}
    bases = {b for c in children if (b := sidecar_base(c.name)) is not None and b in names}
    found = set()
    for child in children:
        if child.name in bases:
            try:
                if child.is_file(follow_symlinks=False) and is_sqlite_file(Path(child.path)):
                    found.add(child.name)
            except OSError:
                continue
    return frozenset(found)


def link_scope(rel: str, target: str) -> str:
    """``internal`` when a relative link stays inside its root (lexically), else ``external``."""
    if target.startswith("/") or not target:
        return "external"
    joined = os.path.normpath(os.path.join(os.path.dirname(rel), target))
    return "external" if joined == ".." or joined.startswith("../") or joined.startswith("/") else "internal"


def _role_for(path: Path, root: Root, special: Mapping[str, list[Path]]) -> str:
    if root.id != "state":
        return root.role
    for role in ("config", "credentials", "workspace"):
        for location in special.get(role, []):
            if path == location or location in path.parents:
                return role
    return root.role


def sqlite_role(rel: str, root: Root) -> tuple[str, str | None]:
    """Role and agent id of a database from where it sits (refined later by ``schema_meta``)."""
    parts = PurePosixPath(rel).parts
    if root.id == "state" and rel == GLOBAL_DB_REL:
        return "global", None
    if parts and parts[-1] == AGENT_DB_NAME:
        if root.agent_id:
            return "agent", root.agent_id
        if len(parts) >= 4 and parts[0] == "agents":
            return "agent", normalize_agent_id(parts[1])
        return "agent", None
    return "sqlite", None


def walk_root(root: Root, excluded: list[Path], special: Mapping[str, list[Path]], skipped: list[Skipped]) -> Iterator[Entry]:
    """Every entry below ``root`` in a stable order, parents before children, links never followed."""
    try:
        top = os.lstat(root.path)
    except FileNotFoundError:
        skipped.append(Skipped(str(root.path), "vanished"))
        return
    if not stat.S_ISDIR(top.st_mode):
        name = root.path.name
        kind = "sqlite" if stat.S_ISREG(top.st_mode) and is_sqlite_file(root.path) else "file"
        if stat.S_ISREG(top.st_mode):
            yield Entry.of(root, name, root.path, kind, root.role, top)
        else:
            skipped.append(Skipped(str(root.path), skip_reason(name, top) or "not a regular file"))
        return
    yield Entry.of(root, "", root.path, "dir", root.role, top, agent_id=root.agent_id)
    stack: list[tuple[Path, str]] = [(root.path, "")]
    while stack:
        directory, rel_dir = stack.pop()
        try:
            with os.scandir(directory) as it:
                children = sorted(it, key=lambda d: d.name)
        except FileNotFoundError:
            continue
        except PermissionError as exc:
            raise StatekitError(f"{directory}: cannot read directory ({exc.strerror}); nothing was archived") from None
        subdirs: list[tuple[Path, str]] = []
        snapshotted = _snapshotted_names(directory, children)
        for index, child in enumerate(children):
            children[index] = None  # type: ignore[call-overload]  # each DirEntry (its cached stat) let go of once handled
            path = Path(child.path)
            rel = f"{rel_dir}/{child.name}" if rel_dir else child.name
            try:
                st = child.stat(follow_symlinks=False)
            except FileNotFoundError:
                skipped.append(Skipped(str(path), "vanished"))
                continue
            if any(path == ex for ex in excluded):
                skipped.append(Skipped(str(path), "backup output or staging directory"))
                continue
            reason = skip_reason(rel, st, snapshotted)
            if reason:
                skipped.append(Skipped(str(path), reason))
                continue
            role = _role_for(path, root, special)
            if stat.S_ISLNK(st.st_mode):
                target = os.readlink(path)
                yield Entry.of(root, rel, path, "symlink", role, st, link_target=target, link_scope=link_scope(rel, target))
            elif stat.S_ISDIR(st.st_mode):
                yield Entry.of(root, rel, path, "dir", role, st)
                subdirs.append((path, rel))
            elif is_sqlite_file(path):
                db_role, agent_id = sqlite_role(rel, root)
                yield Entry.of(root, rel, path, "sqlite", db_role, st, agent_id=agent_id)
            else:
                yield Entry.of(root, rel, path, "file", role, st)
        stack.extend(reversed(subdirs))


def plan_assets(
    state_dir: Path, output_dir: Path, *, include_workspaces: bool = False, env: Mapping[str, str] | None = None
) -> AssetPlan:
    """Resolve the roots, refuse an output inside them, and walk every root once."""
    env = os.environ if env is None else env
    warnings: list[str] = []
    skipped: list[Skipped] = []
    roots, cfg = plan_roots(state_dir, include_workspaces, env, warnings, skipped)
    check_output_dir(output_dir, roots)
    plan = AssetPlan(state_dir, output_dir, roots, skipped=skipped, warnings=warnings, config_file=cfg)
    special: dict[str, list[Path]] = {"credentials": [credentials_dir(state_dir, env)]}
    if cfg is not None:
        special["config"] = [Path(os.path.abspath(cfg))]
    if include_workspaces:
        config = read_config(cfg, [])
        special["workspace"] = list(configured_workspaces(config, state_dir).values())
    excluded = [Path(os.path.abspath(output_dir))]
    for root in roots:
        plan.entries.extend(walk_root(root, excluded, special, skipped))
    return plan


# --------------------------------------------------------------------------- completeness


def _real_file_key(path: str, cache: dict[str, str] | None = None) -> str:
    """``realpath(dirname)/basename``: where a file really is, without following the file itself if it is a link."""
    head, tail = os.path.split(path)
    if cache is None:
        return os.path.join(os.path.realpath(head), tail)
    real = cache.get(head)
    if real is None:
        real = cache[head] = os.path.realpath(head)
    return os.path.join(real, tail)


def _is_regular(path: str) -> bool:
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False


def _databases_below(top: str) -> Iterator[str]:
    """Every regular ``*.sqlite`` file below ``top`` (links not followed), statekit's own areas and OpenClaw's transient
    copies left out: the databases a backup of that tree must hold."""
    for directory, dirs, files in os.walk(top, followlinks=False):
        rel_dir = os.path.relpath(directory, top)
        rel_dir = "" if rel_dir == "." else rel_dir.replace(os.sep, "/")
        dirs[:] = [d for d in dirs if statekit_own(f"{rel_dir}/{d}" if rel_dir else d, d) is None]
        for name in files:
            rel = f"{rel_dir}/{name}" if rel_dir else name
            if not name.lower().endswith(".sqlite") or statekit_own(rel, name) or OPENCLAW_TRANSIENT_SQLITE.search(name):
                continue
            path = os.path.join(directory, name)
            if stat.S_ISREG(os.lstat(path).st_mode):
                yield path


def _has_state_content(top: str) -> bool:
    """Whether the state dir holds anything but statekit's own bookkeeping and empty directories."""
    for directory, dirs, files in os.walk(top, followlinks=False):
        rel_dir = os.path.relpath(directory, top)
        rel_dir = "" if rel_dir == "." else rel_dir.replace(os.sep, "/")
        dirs[:] = [d for d in dirs if statekit_own(f"{rel_dir}/{d}" if rel_dir else d, d) is None]
        if any(statekit_own(f"{rel_dir}/{n}" if rel_dir else n, n) is None for n in files):
            return True
        if any(os.path.islink(os.path.join(directory, d)) for d in dirs):
            return True
    return False


def expected_databases(state_dir: Path, env: Mapping[str, str], registry: tuple[tuple[str, str], ...] = ()) -> set[str]:
    """The databases statekit knows for this install, each as :func:`_real_file_key`: every ``*.sqlite`` below the
    state dir, the global and agent databases at their layout paths (through links), the agent databases of the
    agent dirs the config names, and those the global database's registry names (rebased as the config's are)."""
    real_state = os.path.realpath(state_dir)
    found = {_real_file_key(p) for p in _databases_below(real_state)}
    known = [state_dir / GLOBAL_DB_REL]
    agents = state_dir / "agents"
    try:
        known += [agents / name / "agent" / AGENT_DB_NAME for name in sorted(os.listdir(agents))]
    except OSError:
        pass
    config = read_config(config_path(state_dir, env), [])
    known += [directory / AGENT_DB_NAME for directory in configured_agent_dirs(config, state_dir).values()]
    # a registered path is read as the config's agent dirs are: relative to the state dir, and an absolute one inside a
    # state-dir-shaped root (an older release's home) relative to this state dir, not to a copy that may still exist there
    known += [rebase_stale_path(registered.strip(), state_dir) for _agent, registered in registry if registered.strip()]
    found |= {os.path.realpath(p) for p in known if _is_regular(str(p))}
    return found


def completeness_problems(
    state_dir: Path, assets: list[Any], env: Mapping[str, str] | None = None, registry: tuple[tuple[str, str], ...] = ()
) -> list[str]:
    """What a finished archive misses of what exists (each one line): a database statekit knows, the active config,
    any content at all when the state dir has some. Checked against the filesystem again, independently of the walk
    that chose the assets, so a wrong skip rule or a redirected walk fails the backup instead of shipping it."""
    env = os.environ if env is None else env
    archived: set[str] = set()
    content = state_content = 0
    heads: dict[str, str] = {}
    own = os.path.join(os.path.realpath(state_dir), STATEKIT_DIR_NAME) + os.sep
    for asset in assets:
        if asset.kind in ("file", "sqlite"):
            archived.add(_real_file_key(asset.source_path, heads))
        if asset.kind != "dir" and not os.path.realpath(asset.source_path).startswith(own):  # statekit's own files are no state
            content += 1
            state_content += asset.id == "state" or asset.id.startswith("state/")
    problems = []
    for db in sorted(expected_databases(state_dir, env, registry) - archived):
        problems.append(f"{db}: database exists but is not in the archive")
    cfg = config_path(state_dir, env)
    if cfg is not None and _is_regular(str(cfg)) and os.path.realpath(cfg) not in archived and _real_file_key(str(cfg)) not in archived:
        problems.append(f"{cfg}: the active config exists but is not in the archive")
    if content == 0:
        problems.append(f"{state_dir}: the archive would hold no state at all (no file, database or link)")
    elif state_content == 0 and _has_state_content(os.path.realpath(state_dir)):
        problems.append(f"{state_dir}: the state dir has content but the archive holds none of it")
    return problems

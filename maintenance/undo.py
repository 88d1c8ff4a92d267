"""``statekit undo RUN_ID``: put an install back exactly as it was before one migration run.

What goes back, in order (all checked first, under the state-dir lock, with no gateway running):

1. every source the run retired, byte-exact, through the core of ``statekit recover``
   (:func:`statekit.maintenance.recover.put_back`), including the config the run rewrote;
   a source the run deleted (``--remove-sources``) comes back from the pre-migration backup;
2. every database that existed before the run, as the run's pre-migration backup holds it
   (the archive is verified and restored into a private staging dir beside the state dir,
   then each database is renamed into place); every database the run created is removed,
   with its ``-wal``/``-shm``/``-journal``;
3. modes and directories as the backup's manifest recorded them (retired copies are 0600;
   the manifest knows the original modes); the run's empty ``.statekit/migrated/<run_id>/``;
4. a relocation the run recorded (``~/.clawdbot`` → ``~/.openclaw``) is renamed back.

Refused, naming why, before anything is changed: a later statekit or OpenClaw run in
``migration_runs``; a database the run wrote whose content changed since the run finished
(:mod:`statekit.migrate.undo_facts`: a gateway or another tool wrote to it, and those writes
would be lost); a retired copy that is missing or fails its hash; a different file at a
source's original path; a pre-migration backup that is missing while the run wrote into
databases that existed before it.

What stays: the pre-migration backup (outside the state dir), and in ``.statekit/`` the
install id (``install-id``: the install keeps its identity) and the run lock file (``lock``:
removing a lock file other processes may be opening would let two runs hold it).
Nothing is written into the databases: after undo, ``plan`` shows the sources as new.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import stat
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from statekit.backup import restore_archive
from statekit.backup import manifest as mf
from statekit.backup.retention import read_manifest_head
from statekit.maintenance.recover import load_run, put_back, recreate_parents
from statekit.migrate.receipts import Receipt
from statekit.migrate.retire import remove_empty_parents
from statekit.migrate.undo_facts import FACTS_KEY, unchanged_since
from statekit.db import SQLiteError, read_only_view, table_names
from statekit.errors import ExitCode, StatekitError
from statekit.fsutil import ensure_inside, fsync_dir, sha256_file
from statekit.layout import GLOBAL_DB_REL, global_db_path, lock_path, migrated_dir, statekit_dir
from statekit.locking import exclusive_lock, refuse_if_gateway_running
from statekit.states import RecoverStatus, RunStatus

SIDECARS = ("-wal", "-shm", "-journal")
STAGING_PREFIX = ".statekit-undo-"
UNDOABLE = (RunStatus.COMPLETED, RunStatus.WARNING)
RELOCATION_MARKER = ".statekit/relocated.json"  # written just before a relocation, removed by the run: in the backup, not after it
REMAINS = (".statekit/lock", ".statekit/install-id")  # what undo leaves in the state dir on purpose (module doc)


class UndoRefused(StatekitError):
    """The run cannot be undone without losing something (each reason named)."""

    def __init__(self, run_id: str, reasons: list[str]) -> None:
        more = f" (+{len(reasons) - 1} more: see --dry-run)" if len(reasons) > 1 else ""
        super().__init__(f"undo of run {run_id} refused, nothing was changed: {reasons[0]}{more}")
        self.reasons = reasons


@dataclass
class UndoAction:
    action: str  # put-back | put-back-from-backup | restore-database | remove-database | relocate-back
    path: str
    detail: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"action": self.action, "path": self.path, "detail": self.detail}


@dataclass
class UndoPlan:
    state_dir: Path
    run_id: str
    dry_run: bool
    run_status: str | None = None
    backup: Path | None = None
    actions: list[UndoAction] = field(default_factory=list)
    refusals: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    receipts: list[Receipt] = field(default_factory=list)
    databases: dict[str, dict[str, Any]] = field(default_factory=dict)
    relocated: dict[str, str] | None = None
    modes: dict[str, int] = field(default_factory=dict)
    manifest: mf.Manifest | None = None
    final_state_dir: Path | None = None
    differences: list[str] = field(default_factory=list)

    @property
    def exit_code(self) -> ExitCode:
        if self.refusals:
            return ExitCode.FATAL
        return ExitCode.WARNINGS if self.warnings or self.differences else ExitCode.OK

    def to_json(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "run_status": self.run_status,
            "dry_run": self.dry_run,
            "state_dir": str(self.state_dir),
            "final_state_dir": str(self.final_state_dir or self.state_dir),
            "backup": str(self.backup) if self.backup else None,
            "undoable": not self.refusals,
            "refusals": self.refusals,
            "actions": [a.to_json() for a in self.actions],
            "warnings": self.warnings,
            "differences": self.differences,
            "remains": list(REMAINS),
        }


# --------------------------------------------------------------------------- planning (read-only)


def _rel_path(state_dir: Path, rel: str) -> Path | None:
    parts = PurePosixPath(rel).parts
    if not parts or PurePosixPath(rel).is_absolute() or ".." in parts:
        return None
    return state_dir.joinpath(*parts)


def state_assets(manifest: mf.Manifest) -> dict[str, mf.Asset]:
    """The manifest's assets inside the state dir, by relative POSIX path ("" is the state dir itself)."""
    root = manifest.archive_root
    found: dict[str, mf.Asset] = {}
    for asset in manifest.assets:
        split = mf.payload_rel(asset.archive_path, root) if root else None
        if split is not None and split[0] == "state":
            found[split[1]] = asset
    return found


def _later_runs(conn: Any, run_id: str, started_at: int) -> list[str]:
    rows = conn.execute(
        "SELECT id, status, report_json FROM migration_runs WHERE id != ? AND started_at >= ? ORDER BY started_at, id",
        (run_id, started_at),
    ).fetchall()
    found = []
    for other, status, report in rows:
        try:
            kind = json.loads(report).get("kind") if report else None
        except (ValueError, AttributeError):
            kind = None
        found.append(f"{other} ({kind or 'unknown kind'}, {status})")
    return found


def _load_facts(plan: UndoPlan) -> tuple[dict[str, Any], int] | None:
    db = global_db_path(plan.state_dir)
    if not db.is_file():
        raise StatekitError(f"{db}: no global database; there is no migration run to undo")
    try:
        with read_only_view(db) as conn:
            if "migration_runs" not in table_names(conn):
                raise StatekitError(f"{db}: no migration_runs table: this state dir has no statekit migration history")
            plan.run_status, report, receipts = load_run(conn, plan.run_id)
            started = conn.execute("SELECT started_at FROM migration_runs WHERE id = ?", (plan.run_id,)).fetchone()[0]
            later = _later_runs(conn, plan.run_id, int(started or 0))
    except SQLiteError as exc:
        raise StatekitError(f"{db}: cannot read the run history ({exc})") from None
    plan.receipts = receipts
    if report.get("kind") != "legacy-state":
        plan.refusals.append(f"run {plan.run_id} is not a migration run (kind {report.get('kind')!r}); only `migrate` runs can be undone")
        return None
    if plan.run_status not in UNDOABLE:
        plan.refusals.append(f"run {plan.run_id} ended {plan.run_status!r}; only a finished run (completed or warning) can be undone"
                             " (use `statekit recover` for its retired sources)")
    if later:
        plan.refusals.append(f"later runs would be lost: {', '.join(later[:5])}{' ...' if len(later) > 5 else ''}; undo the latest run first")
    facts = report.get(FACTS_KEY)
    if not isinstance(facts, dict) or not isinstance(facts.get("databases"), dict):
        plan.refusals.append(f"run {plan.run_id} recorded no undo facts (an older statekit, or the run did not finish);"
                             " use `statekit recover` and restore its pre-migration backup instead")
        return None
    if isinstance(facts.get("modes"), dict):
        plan.modes = {str(k): int(v) for k, v in facts["modes"].items() if isinstance(v, int)}
    if isinstance(report.get("backup_path"), str):
        plan.backup = plan.backup or Path(report["backup_path"])
    return facts, int(started or 0)


def _check_databases(plan: UndoPlan, facts: dict[str, Any]) -> None:
    for rel, info in sorted(facts["databases"].items()):
        if not isinstance(info, dict):
            continue
        path = _rel_path(plan.state_dir, rel)
        if path is None:
            plan.refusals.append(f"{rel}: the run's record names a path outside the state dir")
            continue
        plan.databases[rel] = info
        if not path.is_file():
            plan.refusals.append(f"{rel}: removed since run {plan.run_id} finished; nothing to compare (restore the backup by hand)")
            continue
        try:
            same = unchanged_since(path, info)
        except (SQLiteError, OSError) as exc:
            plan.refusals.append(f"{rel}: cannot be read to check it ({exc})")
            continue
        if not same:
            plan.refusals.append(f"{rel}: changed since run {plan.run_id} finished (a gateway or another tool wrote to it);"
                                 " undo would lose those writes")
            continue
        if info.get("existed"):
            plan.actions.append(UndoAction("restore-database", rel, "as the pre-migration backup holds it"))
        else:
            plan.actions.append(UndoAction("remove-database", rel, "created by the run"))


def _check_backup(plan: UndoPlan) -> None:
    needed = [rel for rel, info in plan.databases.items() if info.get("existed")]
    if plan.backup is None or not plan.backup.is_file():
        where = f" ({plan.backup})" if plan.backup else ""
        if needed:
            plan.refusals.append(f"the run's pre-migration backup{where} is missing, and the run wrote into databases that existed"
                                 f" before it ({', '.join(needed)}); give its new location with --backup")
        elif plan.backup is not None:
            plan.warnings.append(f"the run's pre-migration backup{where} is missing: the result cannot be checked against it")
        return
    plan.manifest = read_manifest_head(plan.backup)
    if plan.manifest is None:
        plan.refusals.append(f"{plan.backup}: not a statekit archive with a readable manifest")
        return
    assets = state_assets(plan.manifest)
    for rel in needed:
        asset = assets.get(rel)
        if asset is None or asset.kind != "sqlite":
            plan.refusals.append(f"{rel}: not in the pre-migration backup {plan.backup.name}; it cannot be put back")


def _check_sources(plan: UndoPlan) -> None:
    preview = put_back(plan.state_dir, plan.run_id, plan.receipts, dry_run=True)
    assets = state_assets(plan.manifest) if plan.manifest is not None else {}
    for item in preview.items:
        if item.status == RecoverStatus.WOULD_RECOVER:
            plan.actions.append(UndoAction("put-back", item.path, "retired copy"))
        elif item.status == RecoverStatus.ALREADY_IN_PLACE:
            continue
        elif item.status == RecoverStatus.MISSING and item.retired_to is None and item.path in assets:
            plan.actions.append(UndoAction("put-back-from-backup", item.path, "deleted by --remove-sources"))
        else:
            plan.refusals.append(item.message or f"{item.path}: {item.status}")


def _check_relocation(plan: UndoPlan, facts: dict[str, Any]) -> None:
    moved = facts.get("relocated")
    if not isinstance(moved, dict) or not isinstance(moved.get("from"), str) or not isinstance(moved.get("to"), str):
        return
    if os.path.abspath(moved["to"]) != str(plan.state_dir):
        plan.refusals.append(f"the run moved the state dir to {moved['to']}, but it is now at {plan.state_dir}")
        return
    if os.path.lexists(moved["from"]):
        plan.refusals.append(f"the run moved the state dir from {moved['from']}, which exists again; cannot move it back")
        return
    plan.relocated = {"from": moved["from"], "to": moved["to"]}
    plan.actions.append(UndoAction("relocate-back", moved["to"], f"renamed back to {moved['from']}"))


def plan_undo(state_dir: Path, run_id: str, *, backup: Path | None = None, dry_run: bool = True) -> UndoPlan:
    """Everything undo would do, and every reason it would refuse (read-only)."""
    plan = UndoPlan(Path(os.path.abspath(state_dir)), run_id, dry_run, backup=Path(os.path.abspath(backup)) if backup else None)
    loaded = _load_facts(plan)
    if loaded is None:
        return plan
    facts, _started = loaded
    _check_databases(plan, facts)
    _check_backup(plan)
    _check_sources(plan)
    _check_relocation(plan, facts)
    return plan


# --------------------------------------------------------------------------- applying


def _remove_with_sidecars(path: Path) -> None:
    for suffix in SIDECARS:
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    path.unlink(missing_ok=True)
    fsync_dir(path.parent)


def _move_into_place(staged: Path, dest: Path) -> None:
    """Rename ``staged`` over ``dest`` (copy + rename across file systems)."""
    try:
        os.replace(staged, dest)
    except OSError as exc:
        if exc.errno != errno.EXDEV:
            raise
        tmp = dest.with_name(f".{dest.name}.statekit-tmp-{os.getpid()}-undo0000")
        shutil.copy2(staged, tmp)
        os.replace(tmp, dest)
    fsync_dir(dest.parent)


def _stage_backup(plan: UndoPlan) -> Path:
    assert plan.backup is not None
    staging = plan.state_dir.parent / f"{STAGING_PREFIX}{plan.run_id[:8]}-{os.getpid()}"
    if os.path.lexists(staging):
        shutil.rmtree(staging)
    restore_archive(plan.backup, target=staging)
    return staging


def _restore_from_staging(plan: UndoPlan, staging: Path, rel: str, expected_sha: str | None) -> None:
    source = staging / rel
    dest = _rel_path(plan.state_dir, rel)
    assert dest is not None
    if not source.is_file() or (expected_sha is not None and sha256_file(source) != expected_sha):
        raise StatekitError(f"{rel}: the restored copy from {plan.backup} does not match; stopped (run undo again once fixed)")
    ensure_inside(dest, plan.state_dir)  # never out of the state dir through a symlinked directory
    recreate_parents(plan.state_dir, Path(rel), plan.modes)  # exact recorded modes (else 0700), owner kept under root
    _move_into_place(source, dest)


def _ancestors(rel: str) -> list[str]:
    parts = PurePosixPath(rel).parts
    return ["/".join(parts[:depth]) for depth in range(len(parts) - 1, 0, -1)] + [""]


def _apply_modes(plan: UndoPlan, touched: list[str]) -> None:
    """Modes as the run recorded them before retiring (else as the manifest did), for every path put back and every
    directory above a changed path; those directories' mtimes as the manifest recorded them."""
    assets = state_assets(plan.manifest) if plan.manifest is not None else {}
    dirs = {above for rel in touched for above in _ancestors(rel)}
    for rel in touched:
        path = _rel_path(plan.state_dir, rel)
        if path is None or not path.is_file() or path.is_symlink():
            continue
        mode = plan.modes.get(rel, assets[rel].mode if rel in assets else None)
        if mode is not None:
            os.chmod(path, mode)
    for rel in sorted(dirs, key=lambda r: r.count("/") + (1 if r else 0), reverse=True):
        path = plan.state_dir if rel == "" else _rel_path(plan.state_dir, rel)
        if path is None or not path.is_dir() or path.is_symlink():
            continue
        mode = plan.modes.get(rel, assets[rel].mode if rel in assets else None)
        if mode is not None:
            os.chmod(path, mode)
        if rel in assets:
            os.utime(path, (assets[rel].mtime, assets[rel].mtime))


def _remove_created_dirs(plan: UndoPlan, removed: list[str]) -> None:
    """Empty directories the run made (not in the manifest; without one, every empty parent of what was removed)."""
    assets = state_assets(plan.manifest) if plan.manifest is not None else None
    candidates = {PurePosixPath(rel).parent for rel in removed} | {PurePosixPath(".statekit/migrated") / plan.run_id}
    for start in sorted(candidates, key=lambda p: len(p.parts), reverse=True):
        current = start
        while current.parts:
            path = plan.state_dir.joinpath(*current.parts)
            if assets is not None and current.as_posix() in assets:
                break
            try:
                path.rmdir()
            except OSError:
                break
            current = current.parent
    if assets is None:
        for rel in removed:
            db = _rel_path(plan.state_dir, rel)
            if db is not None:
                remove_empty_parents(db.parent, plan.state_dir)


def _compare_with_manifest(plan: UndoPlan, state_dir: Path) -> list[str]:
    """Every difference between the state dir and the pre-migration manifest (kind, mode, bytes of non-database files,
    names), the undo's own check; statekit's remains (``REMAINS``) and what the manifest lists as skipped excepted."""
    if plan.manifest is None:
        return []
    assets = state_assets(plan.manifest)
    skipped = {s.source_path for s in plan.manifest.skipped}
    recorded_root = plan.manifest.state_dir
    differences: list[str] = []
    seen: set[str] = set()
    for directory, dirs, files in os.walk(state_dir):
        for name in [*dirs, *files]:
            path = Path(directory) / name
            rel = path.relative_to(state_dir).as_posix()
            seen.add(rel)
            if rel in REMAINS or rel == RELOCATION_MARKER or os.path.join(recorded_root, rel) in skipped:
                continue
            asset = assets.get(rel)
            if asset is None:
                if not (path.is_dir() and rel == ".statekit"):
                    differences.append(f"{rel}: not in the pre-migration backup")
                continue
            differences.extend(_asset_difference(rel, path, asset))
        dirs[:] = [d for d in dirs if not os.path.islink(os.path.join(directory, d))]
    differences += [f"{rel}: missing" for rel in sorted(set(assets) - seen - {"", RELOCATION_MARKER})]
    return differences


def _asset_difference(rel: str, path: Path, asset: mf.Asset) -> list[str]:
    st = path.lstat()
    kind = "dir" if stat.S_ISDIR(st.st_mode) else "symlink" if stat.S_ISLNK(st.st_mode) else "file"
    recorded = "file" if asset.kind == "sqlite" else asset.kind
    if kind != recorded:
        return [f"{rel}: is a {kind}, was a {recorded}"]
    found = []
    if kind != "symlink" and st.st_mode & 0o7777 != asset.mode:
        found.append(f"{rel}: mode {st.st_mode & 0o7777:04o}, was {asset.mode:04o}")
    if kind == "file" and asset.kind == "file" and asset.sha256 and sha256_file(path) != asset.sha256:
        found.append(f"{rel}: content differs from the pre-migration backup")
    return found


def undo(state_dir: Path, run_id: str, *, backup: Path | None = None, dry_run: bool = False) -> UndoPlan:
    """Undo migration run ``run_id`` (see module doc); with ``dry_run`` only the plan. Raises :class:`UndoRefused`."""
    if dry_run:
        return plan_undo(state_dir, run_id, backup=backup, dry_run=True)
    state_dir = Path(os.path.abspath(state_dir))
    with exclusive_lock(lock_path(state_dir), f"state dir {state_dir}"):
        refuse_if_gateway_running(state_dir)
        plan = plan_undo(state_dir, run_id, backup=backup, dry_run=False)
        if plan.refusals:
            raise UndoRefused(run_id, plan.refusals)
        _apply(plan)
    if plan.relocated is not None:
        os.rename(plan.state_dir, plan.relocated["from"])
        fsync_dir(Path(plan.relocated["from"]).parent)
        plan.final_state_dir = Path(plan.relocated["from"])
    plan.differences = _compare_with_manifest(plan, plan.final_state_dir or plan.state_dir)
    return plan


def _apply(plan: UndoPlan) -> None:
    staging = None
    wanted = any(a.action in ("restore-database", "put-back-from-backup") for a in plan.actions)
    try:
        if wanted:
            staging = _stage_backup(plan)
        touched: list[str] = []
        report = put_back(plan.state_dir, plan.run_id, plan.receipts, dry_run=False)
        problems = [i.message or i.path for i in report.items if i.status not in (RecoverStatus.RECOVERED, RecoverStatus.ALREADY_IN_PLACE,
                                                                                   RecoverStatus.MISSING)]
        if problems:
            raise StatekitError(f"undo of run {plan.run_id} stopped while putting sources back: {problems[0]}; run it again once fixed")
        touched += [i.path for i in report.items if i.status == RecoverStatus.RECOVERED]
        assets = state_assets(plan.manifest) if plan.manifest is not None else {}
        removed: list[str] = []
        # the global database (it holds the run's record and receipts) goes last
        for action in sorted(plan.actions, key=lambda a: a.path == GLOBAL_DB_REL):
            if action.action == "put-back-from-backup":
                assert staging is not None
                _restore_from_staging(plan, staging, action.path, assets[action.path].sha256)
                touched.append(action.path)
            elif action.action == "restore-database":
                assert staging is not None
                dest = _rel_path(plan.state_dir, action.path)
                assert dest is not None
                for suffix in SIDECARS:
                    Path(f"{dest}{suffix}").unlink(missing_ok=True)
                _restore_from_staging(plan, staging, action.path, assets[action.path].sha256)
                touched.append(action.path)
            elif action.action == "remove-database":
                dest = _rel_path(plan.state_dir, action.path)
                assert dest is not None
                _remove_with_sidecars(dest)
                removed.append(action.path)
        _remove_created_dirs(plan, removed)
        migrated = statekit_dir(plan.state_dir) / "migrated"
        if plan.manifest is None or ".statekit/migrated" not in state_assets(plan.manifest):
            try:
                migrated.rmdir()
            except OSError:
                pass
        _apply_modes(plan, touched + removed + [f".statekit/migrated/{plan.run_id}"])
        if migrated_dir(plan.state_dir, plan.run_id).exists():
            plan.warnings.append(f"{migrated_dir(plan.state_dir, plan.run_id)}: still holds files no receipt names; left in place")
    finally:
        if staging is not None:
            shutil.rmtree(staging, ignore_errors=True)


__all__ = ["undo", "plan_undo", "UndoPlan", "UndoAction", "UndoRefused", "state_assets", "REMAINS"]

"""Planned steps that are not legacy sources: state-dir relocation and the config file.

:func:`plan_steps` (read-only) lists them for ``Plan.steps``; ``statekit
plan`` shows each one's ``description``. :func:`apply_steps` carries out
the ones marked ``apply`` at the end of a ``migrate`` run:

``relocate-state-dir``
    ``~/.clawdbot`` (or ``.moldbot``/``.moltbot``) → ``~/.openclaw``; done by
    :func:`migrate.relocate.relocate_state_dir` *before* the run takes its
    lock, so inside a run only ``state-dir-relocated`` remains.
``state-dir-relocated``
    records the move in the run report and removes the marker.
``config``
    renames a legacy config name (``clawdbot.json``/``moldbot.json``/
    ``moltbot.json``) to ``openclaw.json`` when that is absent (found state
    dirs only; ``OPENCLAW_CONFIG_PATH`` is never touched), rewrites retired
    aliases (:mod:`migrate.config_aliases`) and rebases paths under a
    relocated root, then makes it valid for OpenClaw 2026.9.6
    (:mod:`migrate.config_openclaw96`: retired keys, retired enum values, the
    multi-agent default marker). Only when something changes: a
    ``migration_sources`` receipt (kind ``config``, committed first: the rerun
    of a run killed before the new file was written redoes the step under it,
    keeping the copy already made) lets ``statekit recover`` put the old file
    back; the old file is copied
    byte-exact to ``.statekit/migrated/<run_id>/<its name>``, the new one is
    written atomically (0600). A config
    that does not parse, or that 9.6 would still refuse for a key statekit
    cannot rewrite (status ``refused``), is reported (a run warning, exit 3)
    and left byte-identical: never half-rewritten.
"""

from __future__ import annotations

import json
import os
import stat
import time
from pathlib import Path, PurePosixPath
from typing import Any

from statekit.documents import parse_json5_document
from statekit.migrate.config_aliases import ConfigRewrite, rebase_paths, render, rewrite_aliases
from statekit.migrate.receipts import receipt_row, source_key, write_receipts
from statekit.migrate.relocate import marker_path, read_marker, relocation_steps
from statekit.migrate.retire import retired_path
from statekit.seams import checkpoint
from statekit.states import ReceiptStatus
from statekit.db import BUSY_TIMEOUT_MS, Connection, SQLiteError, connect, immediate, read_only_view
from statekit.errors import SourceError
from statekit.fsutil import PRIVATE_FILE_MODE, atomic_write_bytes, ensure_private_dir, fsync_dir, read_regular_file, sha256_bytes, sha256_file
from statekit.layout import (
    CANONICAL_DIR_NAME,
    CONFIG_NAME,
    LEGACY_CONFIG_NAMES,
    LEGACY_DIR_NAMES,
    ResolvedStateDir,
    global_db_path,
    migrated_dir,
    relative_posix,
    statekit_dir,
)

CONFIG_KIND = "config"
FOUND_ORIGINS = ("default", "legacy")


def _explicit_config(env: Any) -> bool:
    env = os.environ if env is None else env
    for name in ("OPENCLAW_CONFIG_PATH", "CLAWDBOT_CONFIG_PATH"):
        value = (env.get(name) or "").strip()
        if value and value.lower() not in ("undefined", "null"):
            return True
    return False


def _config_file(state_dir: Path, config_path: Path | None) -> Path | None:
    """The config inside the state dir that the step works on (None when outside or absent)."""
    if config_path is None:
        return None
    try:
        config_path.relative_to(state_dir)
    except ValueError:
        return None
    return config_path if config_path.is_file() else None


def _old_roots(state_dir: Path, resolved: ResolvedStateDir, marker: dict[str, Any] | None) -> tuple[list[Path], Path]:
    """(roots whose paths get rebased, the root they move to)."""
    if resolved.origin == "legacy":
        return [state_dir], state_dir.parent / CANONICAL_DIR_NAME
    roots: list[Path] = []
    if marker is not None:
        roots.append(Path(marker["from"]))
    return roots, state_dir


def compute_config(state_dir: Path, config: Path, resolved: ResolvedStateDir, env: Any, data: bytes) -> tuple[ConfigRewrite | None, str | None, str]:
    """(rewrite or None, problem or None, target name) for the config bytes ``data``."""
    rel = relative_posix(config, state_dir)
    target = rel
    if (
        resolved.origin in FOUND_ORIGINS
        and not _explicit_config(env)
        and config.parent == state_dir
        and config.name in LEGACY_CONFIG_NAMES
        and not (state_dir / CONFIG_NAME).exists()
    ):
        target = CONFIG_NAME
    try:
        document = parse_json5_document(data, rel)
    except SourceError as exc:
        return None, f"{exc}; config left alone", target
    rewrite = rewrite_aliases(document)
    if isinstance(rewrite.document, dict):
        roots, new_root = _old_roots(state_dir, resolved, read_marker(state_dir))
        home = state_dir.parent if state_dir.name in (CANONICAL_DIR_NAME, *LEGACY_DIR_NAMES) else None
        rebase_paths(rewrite, roots, new_root, home)
    _make_valid_for_openclaw96(rewrite)
    return rewrite, None, target


def _make_valid_for_openclaw96(rewrite: ConfigRewrite) -> None:
    """Add the 2026.9.6 rewrites to ``rewrite``, or record why the config must be left alone."""
    from statekit.migrate.config_openclaw96 import rewrite_for_openclaw96  # 9.6's rules load only when there is a config

    result = rewrite_for_openclaw96(rewrite.document)
    if result.unfixable:
        rewrite.blockers = [f"{p.path}: {p.reason}" for p in result.unfixable]
        rewrite.withheld = rewrite.changes + result.changes
        return
    rewrite.document = result.document
    rewrite.changes.extend(result.changes)


def _refused_step(rel: str, rewrite: ConfigRewrite) -> dict[str, Any]:
    from statekit.migrate.config_openclaw96 import OPENCLAW_RELEASE

    withheld = len(rewrite.withheld)
    also = f"; none of the {withheld} rewrite(s) statekit could do is applied either" if withheld else ""
    return {
        "kind": CONFIG_KIND, "apply": False, "status": "refused", "path": rel, "problems": rewrite.blockers,
        "description": f"config {rel}: OpenClaw {OPENCLAW_RELEASE} would refuse it and statekit cannot rewrite "
        + "; ".join(rewrite.blockers) + f"; config left unchanged{also}",
    }


def _receipt_mtime_ms(st: os.stat_result) -> int:
    """The mtime a config receipt's key records (statekit's own identity rule, as receipts always recorded it)."""
    return st.st_mtime_ns // 1_000_000


def _unfinished_rename(state_dir: Path, config: Path, resolved: ResolvedStateDir, env: Any) -> tuple[Path, Path] | None:
    """A legacy-named config a killed run left beside the ``openclaw.json`` it wrote (killed after the new file, before
    the old name was removed): ``(the legacy file, its retired copy)`` when its own ``completed`` receipt proves it —
    the same bytes and mtime (the receipt's key), ``written_path`` this ``openclaw.json`` holding ``written_sha256``,
    and the retired copy holding the old bytes. Anything else (a user's own second file) is left alone."""
    if (resolved.origin not in FOUND_ORIGINS or _explicit_config(env) or config != state_dir / CONFIG_NAME
            or not global_db_path(state_dir).is_file()):
        return None
    for name in LEGACY_CONFIG_NAMES:
        legacy = state_dir / name
        try:
            st = legacy.lstat()
            if not stat.S_ISREG(st.st_mode):
                continue
            old = read_regular_file(legacy)
        except OSError:
            continue
        sha = sha256_bytes(old)
        key = source_key(CONFIG_KIND, name, (), sha, len(old), _receipt_mtime_ms(st), None)
        try:
            with read_only_view(global_db_path(state_dir)) as conn:
                report = _completed_report(conn, key)
            written = report is not None and report.get("written_path") == CONFIG_NAME \
                and report.get("written_sha256") == sha256_file(config, follow_symlinks=False)
        except (OSError, SQLiteError):
            continue
        copy = _earlier_copy(report, state_dir, statekit_dir(state_dir) / "migrated", sha) if written else None
        if copy is not None:
            return legacy, copy
    return None


def _finish_rename_step(state_dir: Path, legacy: Path, copy: Path) -> dict[str, Any]:
    name, kept = legacy.name, relative_posix(copy, state_dir)
    return {
        "kind": CONFIG_KIND, "apply": True, "status": "planned", "path": name, "target": CONFIG_NAME, "finish_rename": True,
        "changes": [f"remove {name} (an interrupted run renamed it to {CONFIG_NAME}; its bytes are kept at {kept})"],
        "notes": [],
        "description": f"config {name}: an interrupted run wrote {CONFIG_NAME} from it and kept its bytes at {kept}; "
                       f"the old name is removed",
    }


def config_step(state_dir: Path, config_path: Path | None, resolved: ResolvedStateDir, env: Any) -> dict[str, Any] | None:
    config = _config_file(state_dir, config_path)
    if config is not None and (leftover := _unfinished_rename(state_dir, config, resolved, env)) is not None:
        return _finish_rename_step(state_dir, *leftover)
    if config is None:
        if config_path is not None and config_path.is_file():
            return _outside_step(config_path)
        return None
    try:
        data = read_regular_file(config)
    except OSError as exc:
        return {"kind": CONFIG_KIND, "apply": False, "status": "unreadable", "path": config.name,
                "description": f"{config.name}: cannot read ({exc.strerror}); config left alone"}
    rewrite, problem, target = compute_config(state_dir, config, resolved, env, data)
    rel = relative_posix(config, state_dir)
    if problem is not None or rewrite is None:
        return {"kind": CONFIG_KIND, "apply": False, "status": "unparseable", "path": rel, "problem": problem,
                "description": f"config {problem}"}
    if rewrite.blockers:
        return _refused_step(rel, rewrite)
    renamed = target != rel
    if not rewrite.changed and not renamed:
        if rewrite.notes:
            return {"kind": CONFIG_KIND, "apply": False, "status": "unchanged", "path": rel, "changes": [], "notes": rewrite.notes,
                    "description": f"{rel}: no alias to rewrite ({'; '.join(rewrite.notes)})"}
        return None
    changes = ([f"rename {rel} → {target}"] if renamed else []) + rewrite.changes
    return {
        "kind": CONFIG_KIND,
        "apply": True,
        "status": "planned",
        "path": rel,
        "target": target,
        "sha256": sha256_bytes(data),
        "changes": changes,
        "notes": rewrite.notes,
        "description": f"config {rel}: " + "; ".join(changes),
    }


def _outside_step(config_path: Path) -> dict[str, Any] | None:
    from statekit.migrate.config_openclaw96 import OPENCLAW_RELEASE, config_problems

    try:
        document = parse_json5_document(read_regular_file(config_path), config_path.name)
    except (OSError, SourceError):
        return None
    rewrite = rewrite_aliases(document)
    refused = config_problems(document)
    if not rewrite.changed and not refused:
        return None
    what = [f"retired aliases: {'; '.join(rewrite.changes)}"] if rewrite.changed else []
    if refused:
        what.append(f"keys OpenClaw {OPENCLAW_RELEASE} refuses: " + ", ".join(p.path for p in refused))
    return {
        "kind": CONFIG_KIND, "apply": False, "status": "outside-state-dir", "path": str(config_path), "changes": rewrite.changes,
        "problems": [f"{p.path}: {p.reason}" for p in refused],
        "description": f"config {config_path} (OPENCLAW_CONFIG_PATH, outside the state dir) has " + " and ".join(what)
        + "; not rewritten by statekit",
    }


def plan_steps(plan: Any, resolved: ResolvedStateDir | Path, env: Any = None) -> list[dict[str, Any]]:
    """The planned non-source steps for ``plan`` (read-only)."""
    if isinstance(resolved, Path):
        resolved = ResolvedStateDir(resolved, "flag")
    steps = relocation_steps(resolved)
    step = config_step(plan.state_dir, plan.config_path, resolved, env)
    if step is not None:
        steps.append(step)
    return steps


# --- apply --------------------------------------------------------------------


def config_warnings(steps: list[dict[str, Any]]) -> list[str]:
    """The run warnings of config steps that leave the config as it is (unreadable, unparseable, refused by 9.6's rules)."""
    return [str(step.get("description")) for step in steps
            if step.get("kind") == CONFIG_KIND and (step.get("status") in ("unparseable", "unreadable", "refused") or step.get("problems"))]


def apply_steps(plan: Any, state_dir: Path, run_id: str, report: Any) -> None:
    """Carry out the plan's ``apply`` steps at the end of a run; problems become report warnings."""
    origin = getattr(plan, "origin", "flag")
    resolved = ResolvedStateDir(state_dir, origin if origin in ("flag", "env", "default", "legacy") else "flag")
    report.warnings.extend(config_warnings(getattr(plan, "steps", []) or []))
    for step in getattr(plan, "steps", []) or []:
        kind = step.get("kind")
        if not step.get("apply"):
            continue
        try:
            if kind == "state-dir-relocated":
                report.changes.append(f"State dir: {step['from']} → {step['to']} (moved before this run; no alias left behind)")
            elif kind == "relocate-state-dir":
                report.warnings.append(f"{step.get('from')}: relocation to {step.get('to')} was planned but did not run")
            elif kind == CONFIG_KIND:
                apply_config_step(step, state_dir, run_id, report, resolved, None)
        except OSError as exc:
            report.warnings.append(f"{step.get('path') or kind}: {exc.strerror or exc}; left as it was")
    marker = marker_path(state_dir)
    if marker.exists() and any(s.get("kind") == "state-dir-relocated" for s in getattr(plan, "steps", []) or []):
        marker.unlink(missing_ok=True)
        fsync_dir(marker.parent)


def apply_config_step(step: dict[str, Any], state_dir: Path, run_id: str, report: Any, resolved: ResolvedStateDir, env: Any) -> None:
    if step.get("finish_rename"):
        _finish_rename(state_dir, report, resolved, env)
        return
    rel = step["path"]
    config = state_dir / rel
    data = read_regular_file(config)
    rewrite, problem, target = compute_config(state_dir, config, resolved, env, data)
    if problem is not None or rewrite is None:
        report.warnings.append(f"config {problem}")
        return
    if rewrite.blockers:  # the file changed since the plan: same rule, nothing written
        report.warnings.append(str(_refused_step(rel, rewrite)["description"]))
        return
    renamed = target != rel
    if not rewrite.changed and not renamed:
        return
    new_bytes = render(rewrite.document) if rewrite.changed else data
    st = config.stat()
    changes = ([f"renamed {rel} → {target}"] if renamed else []) + rewrite.changes
    # 1. the receipt, before anything changes: a run killed after it leaves the same file (same bytes, same mtime: the
    #    same key) still to rewrite, and the rerun does the step again under that receipt, or finds it done. (Written
    #    after the new file, a kill in between lost it: the rerun found the config rewritten, with nothing to record.)
    retired, made = _record_config_receipt(state_dir, run_id, rel, target, data, new_bytes, _receipt_mtime_ms(st), changes, report)
    # 2. byte-exact copy of the old file in the run's retired folder (kept as it is when a killed run made it)
    if not made:
        ensure_private_dir(retired.parent)
        atomic_write_bytes(retired, data, PRIVATE_FILE_MODE)
    os.utime(retired, ns=(st.st_atime_ns, st.st_mtime_ns))
    checkpoint("config-retired")
    # 3. the new file, atomically (0600)
    dest = state_dir / target
    atomic_write_bytes(dest, new_bytes, PRIVATE_FILE_MODE)
    checkpoint("config-written")
    # 4. a legacy name goes away once openclaw.json holds its content
    if renamed:
        config.unlink()
        fsync_dir(config.parent)
    for line in changes:
        report.changes.append(f"config: {line}")
    report.notices.extend(f"config: {note}" for note in rewrite.notes)


def _finish_rename(state_dir: Path, report: Any, resolved: ResolvedStateDir, env: Any) -> None:
    """Remove the legacy name an interrupted run left, when its receipt still proves it (checked again: the plan was
    made before the pre-migration backup)."""
    leftover = _unfinished_rename(state_dir, state_dir / CONFIG_NAME, resolved, env)
    if leftover is None:
        report.warnings.append("config: a legacy-named config planned for removal no longer matches its receipt; left as it is")
        return
    legacy, copy = leftover
    legacy.unlink()
    fsync_dir(legacy.parent)
    report.changes.append(f"config: renamed {legacy.name} → {CONFIG_NAME} (finished: an interrupted run had written "
                          f"{CONFIG_NAME}; the old bytes are kept at {relative_posix(copy, state_dir)})")


def _record_config_receipt(
    state_dir: Path, run_id: str, rel: str, target: str, old: bytes, new: bytes, mtime_ms: int, changes: list[str], report: Any,
) -> tuple[Path, bool]:
    """Record the rewrite of the config ``old`` (committed before the file is touched); returns where its old bytes are
    kept and whether they are there already: the copy a killed run made for this same key, else this run's retired path."""
    retired = retired_path(state_dir, run_id, rel)
    path = global_db_path(state_dir)
    if not path.is_file():
        return retired, False
    made = False
    conn = connect(path)
    try:
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        conn.execute("PRAGMA foreign_keys = ON")
        sha = sha256_bytes(old)
        key = source_key(CONFIG_KIND, rel, (), sha, len(old), mtime_ms, None)
        with immediate(conn):
            earlier = _earlier_copy(_completed_report(conn, key), state_dir, migrated_dir(state_dir, run_id).parent, sha)
            retired, made = (earlier, True) if earlier is not None else (retired, False)
            write_receipts(conn, [receipt_row(
                key=key, rel=rel, target_tables=(), sha256=sha, size=len(old), record_count=None, run_id=run_id,
                status=ReceiptStatus.COMPLETED, now_ms=int(time.time() * 1000), removed_source=True,
                report={
                    "kind": CONFIG_KIND, "path": rel, "sha256": sha, "size": len(old), "mtime_ms": mtime_ms,
                    "written_path": target, "written_sha256": sha256_bytes(new),
                    "retired_to": relative_posix(retired, state_dir), "changes": changes,
                },
            )])
        checkpoint("config-recorded")
    except SQLiteError as exc:
        report.warnings.append(f"config receipt not recorded ({exc}); the old config is at {relative_posix(retired, state_dir)}")
    finally:
        conn.close()
    return retired, made


def _completed_report(conn: Connection, key: str) -> dict[str, Any] | None:
    """The report of the ``completed`` receipt ``key`` (None: no such receipt, or a report that is not a JSON object)."""
    row = conn.execute("SELECT report_json FROM migration_sources WHERE source_key = ? AND status = ?", (key, ReceiptStatus.COMPLETED)).fetchone()
    try:
        report = json.loads(row[0]) if row and row[0] else None
    except (ValueError, RecursionError):
        return None
    return report if isinstance(report, dict) else None


def _earlier_copy(report: dict[str, Any] | None, state_dir: Path, migrated: Path, sha: str) -> Path | None:
    """The retired copy a ``completed`` receipt's ``report`` names, when it holds the bytes ``sha`` (a run killed in the
    step after its receipt made it; killed before: None), under ``migrated`` (``.statekit/migrated``), not a link."""
    kept = report.get("retired_to") if report is not None else None
    parts = PurePosixPath(kept).parts if isinstance(kept, str) else ()
    copy = state_dir.joinpath(*parts)
    if ".." in parts or copy == migrated or not copy.is_relative_to(migrated):
        return None
    try:
        return copy if sha256_file(copy, follow_symlinks=False) == sha else None
    except OSError:
        return None


__all__ = ["plan_steps", "apply_steps", "config_step", "compute_config", "config_warnings"]

"""The in-place restore journal: a restore killed half-way is finished (or undone) by the next run.

An in-place restore changes many files one rename at a time. Before it
changes anything it writes ``<state>/.statekit/restore-journal.json``
(fsynced, atomically replaced) holding the whole plan: per destination its
staged copy (``.statekit-restore-<token>-<name>`` beside it), where the
current entry goes (``.statekit/pre-restore/<UTC>/...``), the stale
``-wal``/``-shm``/``-journal`` files that go with it, the directories the
restore creates, the non-directories it moves out of the way of a directory
and the directory modes it sets. The phase is recorded as it advances:

* ``staging``: staged copies are being written; nothing of the old state has
  moved (except non-directories in the way of a directory, recorded). A
  restore interrupted here is **rolled back**: staged copies deleted, created
  directories removed, moved entries put back.
* ``swapping``: every staged copy is complete and fsynced; entries are being
  moved aside and staged copies renamed into place. Interrupted here, it is
  **rolled forward**: the remaining moves are made, so the state dir ends up
  exactly as the archive describes (the old entries kept in ``pre-restore/``).
* ``rolling-back``: an undo started (an error, or ``--abort``); it is
  continued, never reversed.

Every step is idempotent and decided from what is on disk (is the staged copy
still there? is the old entry already aside?), so a recovery that is itself
killed is simply run again. The same code finishes every normal restore
(:meth:`RestoreJournal.roll_forward`) and undoes every failed one
(:meth:`RestoreJournal.roll_back`), so the recovery path is the path every
restore takes.

Who recovers: ``statekit backup restore --resume`` / ``--abort``; any
statekit command that writes on that state dir (before it does anything
else); and the next in-place restore. Commands that promise to write nothing
(``inspect``, ``plan``, ``history``, ``sessions list``, any ``--dry-run``) only
say that a restore is pending (:func:`describe_pending`).
"""

from __future__ import annotations

import errno
import json
import functools
import os
import stat
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from statekit.errors import BusyError, StatekitError
from statekit.seams import checkpoint
from statekit.fsutil import (
    PRIVATE_DIR_MODE, atomic_write_bytes, ensure_private_dir, fsync_dir, make_dir, read_regular_file, remove_orphaned_temps,
)
from statekit.backup.journal_file import JOURNAL_NAME, journal_path
from statekit.layout import lock_path, statekit_dir
from statekit.locking import exclusive_lock, is_locked
from statekit.states import RestoreStepAction
from statekit.values import datetime_to_iso

FORMAT = "statekit-restore-journal"
VERSION = 1
STAGE_MARKER = ".statekit-restore-"
PHASES = ("staging", "swapping", "rolling-back")


class JournalError(StatekitError):
    """A restore journal that cannot be read or trusted (exit 1, names the file)."""


@dataclass
class JournalStep:
    """One destination: its staged copy, and where its current entry goes."""

    dest: str
    staged: str
    kind: str  # "file" | "sqlite" | "symlink"
    action: str  # a RestoreStepAction: create | replace
    aside: str | None = None  # set for "replace"
    sidecars: list[list[str]] = field(default_factory=list)  # [live sidecar, its aside] (databases)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> JournalStep:
        return cls(
            dest=str(data["dest"]), staged=str(data["staged"]), kind=str(data["kind"]), action=str(data["action"]),
            aside=None if data.get("aside") is None else str(data["aside"]),
            sidecars=[[str(a), str(b)] for a, b in data.get("sidecars") or []],
        )


@dataclass
class Recovery:
    """What finishing (or undoing) a journal did."""

    direction: str  # "forward" | "back"
    archive: str
    state_dir: str
    phase: str  # the phase found
    placed: int = 0
    restored: int = 0
    problems: list[str] = field(default_factory=list)

    def summary(self) -> str:
        if self.direction == "forward":
            return (f"finished the interrupted restore of {self.archive} into {self.state_dir} "
                    f"(rolled forward, {self.placed} entr{'y' if self.placed == 1 else 'ies'} placed)")
        return (f"undid the interrupted restore of {self.archive} into {self.state_dir} "
                f"(rolled back, {self.restored} entr{'y' if self.restored == 1 else 'ies'} put back)")

    def to_json(self) -> dict[str, Any]:
        return {"direction": self.direction, "archive": self.archive, "state_dir": self.state_dir, "phase": self.phase,
                "placed": self.placed, "restored": self.restored}


Mover = Callable[[Path, Path], None]


def _lexists(path: str | Path) -> bool:
    return os.path.lexists(path)


def _remove(path: str | Path) -> None:
    """Unlink a file or symlink, or remove a directory tree we own (a staged entry, never user data)."""
    p = Path(path)
    if p.is_symlink() or not p.is_dir():
        p.unlink(missing_ok=True)
        return
    for directory, _dirs, _files in os.walk(p):
        os.chmod(directory, PRIVATE_DIR_MODE)
    import shutil

    shutil.rmtree(p)


@dataclass
class RestoreJournal:
    """The plan of one in-place restore, persisted before anything changes (see the module doc)."""

    path: Path
    state_dir: str
    archive: str
    archive_format: str
    token: str
    aside_root: str
    started_at: str
    pid: int
    phase: str = "staging"
    steps: list[JournalStep] = field(default_factory=list)
    dir_swaps: list[list[str]] = field(default_factory=list)  # [destination, aside]: a non-dir moved out of a dir's way
    created_dirs: list[str] = field(default_factory=list)  # parents first
    dir_modes: list[list[Any]] = field(default_factory=list)  # [path, mode before, mode after]
    pre_restore_existed: bool = True
    origin: str = ""  # the archive as the operator named it when ``archive`` is a scratch copy (.age, s3://)

    # ----------------------------------------------------------------- persistence

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "version": VERSION,
            "state_dir": self.state_dir,
            "archive": self.archive,
            "archive_format": self.archive_format,
            "token": self.token,
            "aside_root": self.aside_root,
            "started_at": self.started_at,
            "pid": self.pid,
            "phase": self.phase,
            "pre_restore_existed": self.pre_restore_existed,
            "steps": [asdict(s) for s in self.steps],
            "dir_swaps": self.dir_swaps,
            "created_dirs": self.created_dirs,
            "dir_modes": self.dir_modes,
            "origin": self.origin,
        }

    def save(self) -> None:
        ensure_private_dir(self.path.parent)
        atomic_write_bytes(self.path, (json.dumps(self.to_json(), indent=1) + "\n").encode("utf-8"))

    def set_phase(self, phase: str) -> None:
        self.phase = phase
        self.save()

    def discard(self) -> None:
        """Remove the journal file (the restore is finished or fully undone)."""
        self.path.unlink(missing_ok=True)
        fsync_dir(self.path.parent)

    @classmethod
    def load(cls, path: Path) -> RestoreJournal:
        try:
            data = json.loads(read_regular_file(path).decode("utf-8"))
        except FileNotFoundError:
            raise
        except (OSError, UnicodeDecodeError, ValueError, RecursionError) as exc:
            raise JournalError(f"{path}: restore journal is unreadable ({exc}); move it away after checking the state dir") from None
        try:
            if not isinstance(data, dict) or data.get("format") != FORMAT or data.get("version") != VERSION:
                raise ValueError("not a statekit restore journal of a known version")
            if data.get("phase") not in PHASES:
                raise ValueError(f"unknown phase {data.get('phase')!r}")
            journal = cls(
                path=path, state_dir=str(data["state_dir"]), archive=str(data["archive"]),
                archive_format=str(data.get("archive_format", "statekit")), token=str(data["token"]),
                aside_root=str(data["aside_root"]), started_at=str(data["started_at"]), pid=int(data["pid"]),
                phase=str(data["phase"]), steps=[JournalStep.from_json(s) for s in data["steps"]],
                dir_swaps=[[str(a), str(b)] for a, b in data.get("dir_swaps") or []],
                created_dirs=[str(d) for d in data.get("created_dirs") or []],
                dir_modes=[[str(p), int(old), int(new)] for p, old, new in data.get("dir_modes") or []],
                pre_restore_existed=bool(data.get("pre_restore_existed", True)),
                origin=str(data.get("origin") or ""),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise JournalError(f"{path}: restore journal is malformed ({exc}); move it away after checking the state dir") from None
        journal._check_names()
        return journal

    def _check_names(self) -> None:
        """Staged names must be ours (marker + token): a journal never deletes anything else."""
        marker = f"{STAGE_MARKER}{self.token}-"
        for step in self.steps:
            if not Path(step.staged).name.startswith(marker) or Path(step.staged).parent != Path(step.dest).parent:
                raise JournalError(f"{self.path}: staged path {step.staged} is not a statekit staged copy of {step.dest}")

    # ----------------------------------------------------------------- describing

    def describe(self) -> str:
        direction = "rolled forward" if self.phase == "swapping" else "rolled back"
        return (f"an in-place restore of {self.archive} (started {self.started_at}, pid {self.pid}) was interrupted "
                f"while {self.phase.replace('-', ' ')}: the next statekit command that writes on this state dir will "
                f"finish it ({direction}); or run `statekit backup restore --resume` / `--abort`")

    # ----------------------------------------------------------------- moving

    def _aside_move(self, source: Path, aside: Path, move: Mover) -> None:
        self._aside_parents(aside)
        move(source, aside)
        checkpoint("restore-moved-aside")

    def _aside_parents(self, aside: Path) -> None:
        missing = []
        current = aside.parent
        while not _lexists(current):
            missing.append(current)
            current = current.parent
        for directory in reversed(missing):
            make_dir(directory, PRIVATE_DIR_MODE)

    def make_dirs(self) -> None:
        """Create the planned directories (moving each recorded non-directory out of the way first)."""
        swaps = {dest: aside for dest, aside in self.dir_swaps}
        for directory in self.created_dirs:
            if directory in swaps:
                path = Path(directory)
                if _lexists(path) and not (path.is_dir() and not path.is_symlink()):
                    self._aside_move(path, Path(swaps[directory]), os.rename)
            if not _lexists(directory):
                make_dir(Path(directory), PRIVATE_DIR_MODE)

    def place_step(self, step: JournalStep) -> bool:
        """Finish one step (idempotent): current entry and sidecars aside, staged copy renamed in. True if it moved."""
        staged, dest = Path(step.staged), Path(step.dest)
        if not _lexists(staged):
            return False  # placed already
        if step.action == RestoreStepAction.REPLACE and step.aside and _lexists(dest) and not _lexists(step.aside):
            self._aside_move(dest, Path(step.aside), os.rename)
        elif _lexists(dest) and not (step.action == RestoreStepAction.REPLACE and step.aside and _lexists(step.aside)):
            raise StatekitError(f"{dest}: appeared while the restore ran (not in its plan); nothing more was moved")
        elif _lexists(dest):
            raise StatekitError(f"{dest}: exists although its old entry is already in {step.aside}; resolve by hand")
        for live, aside in step.sidecars:
            if _lexists(live) and not _lexists(aside):
                self._aside_move(Path(live), Path(aside), os.rename)
        os.rename(staged, dest)
        checkpoint("restore-placed")
        return True

    def apply_dir_modes(self) -> None:
        for path, _old, new in sorted(self.dir_modes, key=lambda m: len(Path(m[0]).parts), reverse=True):
            if os.path.isdir(path) and not os.path.islink(path) and stat.S_IMODE(os.stat(path).st_mode) != new:
                os.chmod(path, new)

    def fsync_parents(self) -> None:
        for directory in sorted({str(Path(s.dest).parent) for s in self.steps} | set(self.created_dirs)):
            fsync_dir(Path(directory))

    # ----------------------------------------------------------------- the two directions

    def roll_forward(self, place: Callable[[JournalStep], bool] | None = None) -> Recovery:
        """Make every remaining move (phase ``swapping``); the journal is removed at the end."""
        if self.phase != "swapping":
            raise StatekitError(f"{self.path}: a restore interrupted while {self.phase} cannot be finished, only undone")
        place = place or self.place_step
        recovery = Recovery("forward", self.archive, self.state_dir, self.phase)
        for step in self.steps:
            if place(step):
                recovery.placed += 1
        self.apply_dir_modes()
        self.fsync_parents()
        return recovery

    def roll_back(self) -> Recovery:
        """Undo everything: the state dir as it was before (phase ``staging``, ``swapping`` or ``rolling-back``).

        From ``swapping``, every placed entry first goes back to its staged name and every
        old entry back in place (renames only, so the journal still describes a restore that
        can go either way); only once the phase ``rolling-back`` is on disk are the staged
        copies deleted. Raises OSError (after trying every step) when an undo step failed;
        the journal then stays and the next run continues.
        """
        recovery = Recovery("back", self.archive, self.state_dir, self.phase)
        if self.phase == "swapping":
            for step in reversed(self.steps):
                self._unplace(step, recovery)
            self.set_phase("rolling-back")
        elif self.phase == "staging":
            try:
                self.set_phase("rolling-back")
            except OSError:
                pass  # a full disk: a staging restore is always undone anyway
        failures: list[OSError] = []

        def attempt(action: Callable[[], object]) -> None:
            try:
                action()
            except FileNotFoundError:
                pass
            except OSError as exc:
                failures.append(exc)

        def chmod_dir(path: str, mode: int) -> None:
            if os.path.isdir(path) and not os.path.islink(path):
                os.chmod(path, mode)

        def remove_dir(directory: str) -> None:
            if _lexists(directory):
                os.rmdir(directory)

        for path, old, _new in self.dir_modes:
            attempt(functools.partial(chmod_dir, path, old))
        for step in reversed(self.steps):
            attempt(functools.partial(self._drop_staged, step, recovery))
        for directory in reversed(self.created_dirs):
            attempt(functools.partial(remove_dir, directory))
        for dest, aside in reversed(self.dir_swaps):
            if _lexists(aside) and not _lexists(dest):
                attempt(functools.partial(os.rename, aside, dest))
                recovery.restored += 1
        attempt(self._remove_aside_dirs)
        if failures:
            raise failures[0]
        return recovery

    def _unplace(self, step: JournalStep, recovery: Recovery) -> None:
        """Reverse one step by renames only: the restored entry back to its staged name, the old one back."""
        staged, dest = Path(step.staged), Path(step.dest)
        placed = not _lexists(staged) and _lexists(dest) and (step.action == RestoreStepAction.CREATE or bool(step.aside and _lexists(step.aside)))
        if placed:
            os.rename(dest, staged)
        self._sidecars_back(step)
        if step.aside and _lexists(step.aside) and not _lexists(dest):
            os.rename(step.aside, dest)
            recovery.restored += 1

    def _sidecars_back(self, step: JournalStep) -> None:
        for live, aside in step.sidecars:
            if _lexists(aside):
                if _lexists(live):
                    Path(live).unlink()  # created after the move (the restored database was never opened)
                os.rename(aside, live)

    def _drop_staged(self, step: JournalStep, recovery: Recovery) -> None:
        staged, dest = Path(step.staged), Path(step.dest)
        if _lexists(staged):
            _remove(staged)
        self._sidecars_back(step)
        if step.aside and _lexists(step.aside) and not _lexists(dest):
            os.rename(step.aside, dest)
            recovery.restored += 1

    def _remove_aside_dirs(self) -> None:
        root = Path(self.aside_root)
        if root.is_dir() and not root.is_symlink():
            for directory, _dirs, _files in os.walk(root, topdown=False):
                try:
                    os.rmdir(directory)
                except OSError as exc:
                    if exc.errno not in (errno.ENOTEMPTY, errno.EEXIST):
                        raise
        parent = root.parent
        if not self.pre_restore_existed and parent.is_dir():
            try:
                parent.rmdir()
            except OSError as exc:
                if exc.errno not in (errno.ENOTEMPTY, errno.EEXIST):
                    raise


# --------------------------------------------------------------------------- finding and settling


def pending(state_dir: Path) -> RestoreJournal | None:
    """The journal of an interrupted restore on ``state_dir``, or None (reads only)."""
    path = journal_path(state_dir)
    try:
        return RestoreJournal.load(path)
    except FileNotFoundError:
        return None


def describe_pending(state_dir: Path) -> str | None:
    """One line for read-only commands (``inspect``...): an interrupted restore waits, or one is running now."""
    try:
        journal = pending(state_dir)
    except JournalError as exc:
        return str(exc)
    if journal is None:
        return None
    if is_locked(lock_path(state_dir)):
        return f"an in-place restore of {journal.archive} is running on this state dir now (pid {journal.pid}, {journal.phase})"
    return journal.describe()


def settle(state_dir: Path, direction: str = "auto") -> Recovery | None:
    """Finish (``forward``), undo (``back``) or do what the phase calls for (``auto``) the pending restore.

    The caller holds the state-dir lock. Returns None when nothing is pending.
    """
    remove_orphaned_temps(statekit_dir(state_dir))  # a journal write killed before its rename leaves its temp file
    journal = pending(state_dir)
    if journal is None:
        return None
    if direction == "auto":
        direction = "forward" if journal.phase == "swapping" else "back"
    if direction == "forward":
        if journal.phase != "swapping":
            raise StatekitError(f"{journal.path}: the interrupted restore had not finished staging; it can only be undone "
                                f"(`--abort`), or restored again from its archive (`--resume`)")
        recovery = journal.roll_forward()
    else:
        recovery = journal.roll_back()
    journal.discard()
    return recovery


def settle_locked(state_dir: Path, direction: str = "auto") -> Recovery | None:
    """:func:`settle` under the state-dir lock (BusyError, exit 4, while another run holds it)."""
    if not journal_path(state_dir).exists():
        return None
    with exclusive_lock(lock_path(state_dir), f"state dir {state_dir}"):
        return settle(state_dir, direction)


def now_iso() -> str:
    return datetime_to_iso(datetime.now(timezone.utc))  # the one ISO-8601 writer (statekit.values)


__all__ = [
    "JOURNAL_NAME",
    "JournalError",
    "JournalStep",
    "Recovery",
    "RestoreJournal",
    "BusyError",
    "describe_pending",
    "journal_path",
    "pending",
    "settle",
    "settle_locked",
]

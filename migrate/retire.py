"""Retire an imported source: move it, byte for byte, under ``.statekit/migrated/<run_id>/``."""

from __future__ import annotations

import errno
import os
import shutil
import stat
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path, PurePosixPath
from typing import Generic, TypeVar

from statekit.seams import checkpoint
from statekit.fsutil import (
    PRIVATE_DIR_MODE,
    PRIVATE_FILE_MODE,
    chmod_best_effort,
    create_file,
    ensure_inside,
    ensure_private_dir,
    fsync_dir,
    fsync_file,
    open_regular_file,
    protect_and_hash,
    sha256_file,
)
from statekit.layout import migrated_dir

T = TypeVar("T")


def retired_path(state_dir: Path, run_id: str, rel: str) -> Path:
    return _migrated_dir(state_dir, run_id).joinpath(*PurePosixPath(rel).parts)


@lru_cache(maxsize=8)
def _migrated_dir(state_dir: Path, run_id: str) -> Path:
    """``layout.migrated_dir``, made once per run (every retired path starts with it)."""
    return migrated_dir(state_dir, run_id)


def parent_modes(state_dir: Path, rel: str) -> dict[str, int]:
    """The permission bits of every directory between the state dir and ``rel`` (``{"identity": 0o700}``).

    Recorded in the receipt before the source is retired (retirement removes directories it
    leaves empty), so ``statekit recover`` recreates them as they were, whatever its umask.
    """
    modes: dict[str, int] = {}
    parts = PurePosixPath(rel).parts[:-1]
    for depth in range(1, len(parts) + 1):
        try:
            st = os.lstat(state_dir.joinpath(*parts[:depth]))
        except OSError:
            break
        if not stat.S_ISDIR(st.st_mode):
            break
        modes[PurePosixPath(*parts[:depth]).as_posix()] = stat.S_IMODE(st.st_mode)
    return modes


def _free_destination(dest: Path, sha256: str | None) -> Path:
    """The destination, or a numbered sibling when a different file already sits there."""
    if not dest.exists():
        return dest
    if sha256 and sha256_file(dest) == sha256:
        return dest
    index = 1
    while True:
        candidate = dest.with_name(f"{dest.name}.{index}")
        if not candidate.exists() or (sha256 and sha256_file(candidate) == sha256):
            return candidate
        index += 1


def retire(state_dir: Path, rel: str, run_id: str, sha256: str | None, warnings: list[str] | None = None) -> Path:
    """Move ``rel`` into the run's retired folder (atomic rename; copy+verify across filesystems).

    The retired copy is made 0600 in 0700 directories. Empty directories
    left behind are removed up to (not including) the state dir. Durable when
    it returns (both directories fsynced); :class:`RetireBatch` batches that.
    """
    source, dest = _move(state_dir, rel, run_id, sha256, warnings)
    fsync_dir(dest.parent)
    fsync_dir(source.parent)
    remove_empty_parents(source.parent, state_dir)
    return dest


def _inside(dest: Path, state_dir: Path, checked: dict[Path, None] | None) -> Path:
    """``ensure_inside(dest, state_dir)``; with ``checked`` (the batch's directories already made and found inside),
    only a symlink at ``dest`` itself sends it through the full check again."""
    if checked is not None and dest.parent in checked and not os.path.islink(dest):
        return dest
    return ensure_inside(dest, state_dir)


def _move(
    state_dir: Path, rel: str, run_id: str, sha256: str | None, warnings: list[str] | None, checked: dict[Path, None] | None = None,
    *, protect: bool = True,
) -> tuple[Path, Path]:
    """The rename (or verified copy) of :func:`retire`, without the directory fsyncs: (source, dest).

    ``checked``: retired directories this batch already made and checked (``RetireBatch``), not looked at again.
    ``protect``: make the retired copy 0600 here (``RetireBatch`` does it with its re-hash, through the same open).
    """
    source = state_dir.joinpath(*PurePosixPath(rel).parts)
    dest = retired_path(state_dir, run_id, rel)
    if checked is not None and dest.parent in checked and not os.path.lexists(dest):  # one lstat
        # The common case of a batch: a directory already made and checked, nothing at the destination (what
        # _free_destination, _inside and the exists() below would each stat to find): moved at once.
        _rename(source, dest, sha256)
        checkpoint("retire-moved")
        if protect:
            chmod_best_effort(dest, PRIVATE_FILE_MODE, warnings)
        return source, dest
    dest = _inside(_free_destination(dest, sha256), state_dir, checked)
    if checked is None or dest.parent not in checked:
        ensure_private_dir(dest.parent, warnings)
        ensure_inside(dest.parent, state_dir)
        if checked is not None:
            checked[dest.parent] = None
    if dest.exists():
        # A previous attempt already placed an identical copy: only the original remains to go (if it is still that file).
        if sha256 and sha256_file(source) != sha256:
            raise OSError(errno.EEXIST, "changed since it was imported; left in place")
        source.unlink()
    else:
        _rename(source, dest, sha256)
    checkpoint("retire-moved")
    if protect:
        chmod_best_effort(dest, PRIVATE_FILE_MODE, warnings)
    return source, dest


def _rename(source: Path, dest: Path, sha256: str | None) -> None:
    """``source`` to ``dest``: a rename, or a verified copy and unlink across filesystems."""
    try:
        os.rename(source, dest)
    except OSError as exc:
        if exc.errno != errno.EXDEV:
            raise
        _copy_verified(source, dest, sha256)
        source.unlink()


class ChangedAtRetire(Exception):
    """The moved bytes are not the bytes imported (a writer changed the file after the import): ``moved`` holds them.

    Nothing was queued: the caller puts the file back (or names where it is kept), never deletes it.
    """

    def __init__(self, rel: str, moved: Path) -> None:
        super().__init__(f"{rel}: changed after it was imported")
        self.rel = rel
        self.moved = moved


class RetireBatch(Generic[T]):
    """Retirements whose directory fsyncs are shared: each directory once per batch, not twice per file.

    :meth:`retire` moves the file now, re-hashes the moved bytes (raising :class:`ChangedAtRetire`
    when they are not the imported ones: nothing is queued for them), deletes the verified copy
    with ``remove`` (``--remove-sources``) and queues ``token``. :meth:`flush` fsyncs every
    directory the batch touched (once each), removes the directories left empty, and only then
    hands the tokens to ``durable`` (the apply loop marks the receipts retired there: a receipt
    never says "retired" before the rename is on disk). A crash before the flush leaves sources
    moved but not yet marked: the next run finishes them
    (``Migration._converge_interrupted_retirements``), as after any crash between a move and its
    receipt. The batch flushes itself every ``limit`` files, so memory stays bounded.
    """

    def __init__(self, state_dir: Path, durable: Callable[[list[T]], None], warnings: list[str] | None = None, limit: int = 256) -> None:
        self.state_dir = state_dir
        self.durable = durable
        self.warnings = warnings
        self.limit = limit
        self._dirs: dict[Path, None] = {}  # insertion-ordered set
        self._emptied: dict[Path, None] = {}
        self._checked: dict[Path, None] = {}  # retired directories made and found inside the state dir (this batch)
        self._tokens: list[T] = []

    def retire(self, rel: str, run_id: str, sha256: str | None, token: Callable[[Path | None], T], *, remove: bool = False) -> Path | None:
        """Move ``rel`` to the retired folder and check its bytes; the retired copy (None with ``remove``)."""
        source, dest = _move(self.state_dir, rel, run_id, sha256, self.warnings, self._checked, protect=False)
        # Made 0600 and re-hashed through one open: the bytes moved must be the bytes imported.
        if protect_and_hash(dest, PRIVATE_FILE_MODE, self.warnings) != sha256 and sha256 is not None:
            raise ChangedAtRetire(rel, dest)
        kept: Path | None = dest
        if remove:  # the verified copy goes; its now empty directories with it
            dest.unlink()
            self._emptied[dest.parent] = None
            kept = None
        self._dirs[dest.parent] = None
        self._dirs[source.parent] = None
        self._emptied[source.parent] = None
        self._tokens.append(token(kept))
        if len(self._tokens) >= self.limit:
            self.flush()
        return kept

    def flush(self) -> None:
        if not self._tokens:
            return
        for directory in self._dirs:
            fsync_dir(directory)
        for directory in sorted(self._emptied, key=lambda p: len(p.parts), reverse=True):
            remove_empty_parents(directory, self.state_dir)
        tokens, self._tokens = self._tokens, []
        self._dirs.clear()
        self._emptied.clear()
        self._checked.clear()
        self.durable(tokens)


def _copy_verified(source: Path, dest: Path, sha256: str | None) -> None:
    tmp = dest.with_name(dest.name + ".statekit-partial")
    try:
        tmp.unlink(missing_ok=True)  # a partial copy left by a killed run: ours, made again
        with open_regular_file(source) as src, open(create_file(tmp, PRIVATE_FILE_MODE), "wb") as out:
            shutil.copyfileobj(src, out, 1 << 20)
            out.flush()
            os.fsync(out.fileno())
    except BaseException:
        tmp.unlink(missing_ok=True)  # a half copy is never left for a later run to find
        raise
    if sha256 and sha256_file(tmp) != sha256:
        tmp.unlink(missing_ok=True)
        raise OSError(errno.EIO, f"copy of {source} does not match its hash")
    os.replace(tmp, dest)
    fsync_file(dest)


def remove_empty_parents(directory: Path, state_dir: Path) -> None:
    state_dir = state_dir.resolve() if not state_dir.is_absolute() else state_dir
    current = directory
    while current != state_dir and state_dir in current.parents:
        try:
            current.rmdir()
        except OSError:
            return
        current = current.parent


__all__ = ["ChangedAtRetire", "RetireBatch", "parent_modes", "retire", "retired_path", "remove_empty_parents", "PRIVATE_DIR_MODE"]

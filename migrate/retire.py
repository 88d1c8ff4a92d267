"""Retire an imported source: move it, byte for byte, under ``.statekit/migrated/<run_id>/``."""

from __future__ import annotations

import errno
import os
import shutil
from collections.abc import Callable
from pathlib import Path, PurePosixPath
from typing import Generic, TypeVar

from statekit.seams import checkpoint
from statekit.fsutil import (
    PRIVATE_DIR_MODE,
    PRIVATE_FILE_MODE,
    chmod_best_effort,
    ensure_private_dir,
    fsync_dir,
    fsync_file,
    sha256_file,
)
from statekit.layout import migrated_dir

T = TypeVar("T")


def retired_path(state_dir: Path, run_id: str, rel: str) -> Path:
    return migrated_dir(state_dir, run_id).joinpath(*PurePosixPath(rel).parts)


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


def _move(state_dir: Path, rel: str, run_id: str, sha256: str | None, warnings: list[str] | None) -> tuple[Path, Path]:
    """The rename (or verified copy) of :func:`retire`, without the directory fsyncs: (source, dest)."""
    source = state_dir.joinpath(*PurePosixPath(rel).parts)
    dest = _free_destination(retired_path(state_dir, run_id, rel), sha256)
    ensure_private_dir(dest.parent, warnings)
    if dest.exists():
        # A previous attempt already placed an identical copy: only the original remains to go.
        source.unlink()
    else:
        try:
            os.rename(source, dest)
        except OSError as exc:
            if exc.errno != errno.EXDEV:
                raise
            _copy_verified(source, dest, sha256)
            source.unlink()
    checkpoint("retire-moved")
    chmod_best_effort(dest, PRIVATE_FILE_MODE, warnings)
    return source, dest


class RetireBatch(Generic[T]):
    """Retirements whose directory fsyncs are shared: each directory once per batch, not twice per file.

    :meth:`retire` / :meth:`delete` move or delete the file now and queue ``token``;
    :meth:`flush` fsyncs every directory the batch touched (once each), removes the
    directories left empty, and only then hands the tokens to ``durable`` (the apply loop
    marks the receipts retired there: a receipt never says "retired" before the rename is on
    disk). A crash before the flush leaves sources moved but not yet marked: the next run
    finishes them (``Migration._converge_interrupted_retirements``), as after any crash
    between a move and its receipt. The batch flushes itself every ``limit`` files, so
    memory stays bounded.
    """

    def __init__(self, state_dir: Path, durable: Callable[[list[T]], None], warnings: list[str] | None = None, limit: int = 256) -> None:
        self.state_dir = state_dir
        self.durable = durable
        self.warnings = warnings
        self.limit = limit
        self._dirs: dict[Path, None] = {}  # insertion-ordered set
        self._emptied: dict[Path, None] = {}
        self._tokens: list[T] = []

    def retire(self, rel: str, run_id: str, sha256: str | None, token: Callable[[Path], T]) -> Path:
        source, dest = _move(self.state_dir, rel, run_id, sha256, self.warnings)
        self._queue(source.parent, dest.parent, token(dest))
        return dest

    def delete(self, rel: str, token: T) -> None:
        source = self.state_dir.joinpath(*PurePosixPath(rel).parts)
        source.unlink()
        self._queue(source.parent, None, token)

    def _queue(self, source_dir: Path, dest_dir: Path | None, token: T) -> None:
        if dest_dir is not None:
            self._dirs[dest_dir] = None
        self._dirs[source_dir] = None
        self._emptied[source_dir] = None
        self._tokens.append(token)
        if len(self._tokens) >= self.limit:
            self.flush()

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
        self.durable(tokens)


def _copy_verified(source: Path, dest: Path, sha256: str | None) -> None:
    tmp = dest.with_name(dest.name + ".statekit-partial")
    try:
        with open(source, "rb") as src, open(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, PRIVATE_FILE_MODE), "wb") as out:
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


__all__ = ["RetireBatch", "retire", "retired_path", "remove_empty_parents", "PRIVATE_DIR_MODE"]

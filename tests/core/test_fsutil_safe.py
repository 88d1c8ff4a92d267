"""The safe create/open primitives of ``statekit.fsutil`` and the state-dir resolution of ``statekit.layout``.

Each test fails on 308a7ed (the primitive did not exist, or followed the link / blocked / read without bound).
"""

from __future__ import annotations

import errno
import hashlib
import io
import os
import stat
from pathlib import Path

import pytest

from statekit.fsutil import (
    HashingReader,
    UnsafePathError,
    atomic_write_bytes,
    create_file,
    ensure_inside,
    ensure_private_dir,
    make_dir,
    open_own_file,
    open_regular_file,
    read_prefix,
    read_regular_file,
)
from statekit.layout import ResolvedStateDir, resolve_state_dir
from statekit.locking import exclusive_lock

VICTIM = b"not yours\n"


def _victim(tmp_path: Path) -> Path:
    victim = tmp_path / "victim"
    victim.write_bytes(VICTIM)
    return victim


def test_create_file_never_follows_a_link_and_sets_the_exact_mode(tmp_path: Path) -> None:
    victim = _victim(tmp_path)
    (tmp_path / "link").symlink_to(victim)
    with pytest.raises(FileExistsError):
        create_file(tmp_path / "link")
    assert victim.read_bytes() == VICTIM
    old = os.umask(0o000)
    try:
        os.close(create_file(tmp_path / "new", 0o600))
        make_dir(tmp_path / "dir", 0o700)
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(tmp_path / "new").st_mode) == 0o600
    assert stat.S_IMODE(os.stat(tmp_path / "dir").st_mode) == 0o700


def test_atomic_write_never_writes_through_a_link_at_the_destination(tmp_path: Path) -> None:
    victim = _victim(tmp_path)
    (tmp_path / "out.json").symlink_to(victim)
    atomic_write_bytes(tmp_path / "out.json", b"{}")
    assert victim.read_bytes() == VICTIM and not (tmp_path / "out.json").is_symlink()


@pytest.mark.parametrize("planted", ["symlink", "hardlink", "fifo", "dir"])
def test_open_own_file_refuses_what_statekit_did_not_create(tmp_path: Path, planted: str) -> None:
    victim = _victim(tmp_path)
    path = tmp_path / "lock"
    if planted == "symlink":
        path.symlink_to(victim)
    elif planted == "hardlink":
        os.link(victim, path)
    elif planted == "fifo":
        os.mkfifo(path)
    else:
        path.mkdir()
    with pytest.raises((UnsafePathError, IsADirectoryError)) as caught:
        os.close(open_own_file(path))
    assert str(path) in str(caught.value) or planted == "dir"
    assert victim.read_bytes() == VICTIM


def test_the_lock_refuses_a_planted_link_in_one_line(tmp_path: Path) -> None:
    victim = _victim(tmp_path)
    (tmp_path / ".statekit").mkdir()
    (tmp_path / ".statekit" / "lock").symlink_to(victim)
    with pytest.raises(UnsafePathError, match="symbolic link"):
        with exclusive_lock(tmp_path / ".statekit" / "lock", "test"):
            pass
    assert victim.read_bytes() == VICTIM


def test_ensure_inside_follows_every_link_on_the_way(tmp_path: Path) -> None:
    root, outside = tmp_path / "root", tmp_path / "outside"
    (root / "a").mkdir(parents=True)
    outside.mkdir()
    (root / "a" / "out").symlink_to(outside)
    (root / "a" / "in").symlink_to(root / "a")
    assert ensure_inside(root / "a" / "in" / "x.sqlite", root) == root / "a" / "in" / "x.sqlite"
    with pytest.raises(UnsafePathError, match="leads outside"):
        ensure_inside(root / "a" / "out" / "x.sqlite", root)
    with pytest.raises(UnsafePathError):
        ensure_inside(root / ".." / "outside" / "x", root)
    (root / "a" / "db.sqlite-wal").symlink_to(outside / "wal")
    with pytest.raises(UnsafePathError, match="-wal"):
        ensure_inside(root / "a" / "db.sqlite", root, database=True)


def test_ensure_private_dir_never_chmods_through_a_dangling_link(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere"
    (tmp_path / "d").symlink_to(target)
    with pytest.raises(OSError):  # the dangling link is not a directory: nothing is made where it points
        ensure_private_dir(tmp_path / "d" / "x")
    assert not target.exists()


@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "dir"])
def test_foreign_reads_never_block_and_are_bounded(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "foreign"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "dev-zero":
        path.symlink_to("/dev/zero")
    else:
        path.mkdir()
    for read in (lambda: read_regular_file(path), lambda: read_prefix(path, 16), lambda: open_regular_file(path, follow_symlinks=True)):
        with pytest.raises(OSError):
            read()


def test_whole_file_reads_are_bounded(tmp_path: Path) -> None:
    path = tmp_path / "big.json"
    path.write_bytes(b"x" * 1001)
    with pytest.raises(OSError) as caught:
        read_regular_file(path, limit=1000)
    assert caught.value.errno == errno.EFBIG
    assert read_regular_file(path, limit=1001) == b"x" * 1001


def test_a_symlinked_state_dir_resolves_to_its_directory(tmp_path: Path) -> None:
    real = tmp_path / "data" / "state"
    real.mkdir(parents=True)
    (tmp_path / "home").mkdir()
    link = tmp_path / "home" / ".openclaw"
    link.symlink_to(real)
    for resolved in (resolve_state_dir(link, {"HOME": "/nonexistent"}),
                     resolve_state_dir(None, {"OPENCLAW_STATE_DIR": str(link), "HOME": "/nonexistent"}),
                     resolve_state_dir(None, {"HOME": str(tmp_path / "home")}),
                     ResolvedStateDir(link, "flag")):
        assert resolved.path == real and resolved.named == link and resolved.via_symlink


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs root")
def test_under_root_new_entries_get_their_directorys_owner(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    os.chown(home, 1000, 1000)
    os.close(create_file(home / "f"))
    make_dir(home / "d")
    atomic_write_bytes(home / "d" / "g", b"x")
    ensure_private_dir(home / "d" / "e" / "f")
    for path in (home / "f", home / "d", home / "d" / "g", home / "d" / "e", home / "d" / "e" / "f"):
        st = os.lstat(path)
        assert (st.st_uid, st.st_gid) == (1000, 1000), path


class CountingReads:
    """A file object that counts the reads that reach it."""

    def __init__(self, data: bytes) -> None:
        self.stream = io.BytesIO(data)
        self.reads = 0

    def read(self, n: int = -1) -> bytes:
        self.reads += 1
        return self.stream.read(n)


def test_hashing_reader_reads_no_further_once_it_saw_the_end() -> None:
    """A short read is the end: later reads and finish() issue no read (one system call less per small file)."""
    data = b"x" * 5000
    counting = CountingReads(data)
    reader = HashingReader(counting)  # type: ignore[arg-type]
    assert reader.read(1 << 20) == data
    assert reader.read(1 << 20) == b""
    assert reader.finish() == hashlib.sha256(data).hexdigest() and reader.size == 5000
    assert counting.reads == 1
    drained = CountingReads(data)  # a reader that stopped early: finish() drains the rest into the digest
    partial = HashingReader(drained)  # type: ignore[arg-type]
    assert partial.read(100) == data[:100]
    assert partial.finish() == hashlib.sha256(data).hexdigest() and partial.size == 5000


def test_bytes_appended_after_the_end_was_read_are_not_hashed(tmp_path: Path) -> None:
    """The digest covers the bytes handed out: a file that grew after its end was read no longer matches it."""
    path = tmp_path / "t.jsonl"
    path.write_bytes(b'{"a":1}\n')
    with open_regular_file(path) as raw:
        reader = HashingReader(raw)
        assert reader.read(1 << 20) == b'{"a":1}\n'
        with path.open("ab") as writer:
            writer.write(b'{"b":2}\n')
        digest = reader.finish()
    assert digest == hashlib.sha256(b'{"a":1}\n').hexdigest() and reader.size == 8
    assert digest != hashlib.sha256(path.read_bytes()).hexdigest()

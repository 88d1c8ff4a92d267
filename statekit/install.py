"""The install id: one stable identifier per OpenClaw install, kept in its state dir.

Backups record it so ``backup list``/``prune`` (local or in a bucket) can tell
installs apart. It lives in ``<state>/.statekit/install-id`` as one line of
32 lowercase hex digits (a random UUID4), is created on first need with
mode 0600 (exclusive create, never through a symlink), and travels with the
state dir (a restored or moved install keeps its id). It is not a secret.
"""

from __future__ import annotations

import errno
import os
import re
import stat
import uuid
from pathlib import Path

from statekit.errors import StatekitError
from statekit.fsutil import PRIVATE_FILE_MODE, create_file, ensure_private_dir, fsync_dir
from statekit.layout import statekit_dir

INSTALL_ID_NAME = "install-id"
_INSTALL_ID_RE = re.compile(r"^[0-9a-f]{32}$")
_MAX_BYTES = 256


def install_id_path(state_dir: Path) -> Path:
    return statekit_dir(state_dir) / INSTALL_ID_NAME


def is_install_id(value: str) -> bool:
    return bool(_INSTALL_ID_RE.match(value))


def read_install_id(state_dir: Path) -> str | None:
    """The install's id, or None when it has none yet. A damaged id file is an error, never replaced."""
    path = install_id_path(state_dir)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise StatekitError(f"{path}: is a symlink; statekit keeps its install id in a regular file") from None
        raise StatekitError(f"{path}: cannot read the install id: {exc.strerror}") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise StatekitError(f"{path}: is not a regular file")
        raw = os.read(fd, _MAX_BYTES + 1)
    finally:
        os.close(fd)
    value = raw.decode("ascii", errors="replace").strip()
    if len(raw) > _MAX_BYTES or not is_install_id(value):
        raise StatekitError(f"{path}: is not an install id (32 hex digits); move it aside to get a new one")
    return value


def ensure_install_id(state_dir: Path) -> str:
    """The install's id, created (0600, exclusive, fsynced) when it has none."""
    existing = read_install_id(state_dir)
    if existing is not None:
        return existing
    directory = ensure_private_dir(statekit_dir(state_dir))
    path = install_id_path(state_dir)
    value = uuid.uuid4().hex
    try:
        fd = create_file(path, PRIVATE_FILE_MODE)
    except FileExistsError:
        found = read_install_id(state_dir)  # another run made it first
        if found is None:
            raise StatekitError(f"{path}: appeared and vanished while creating the install id") from None
        return found
    try:
        os.write(fd, (value + "\n").encode("ascii"))
        os.fsync(fd)
    finally:
        os.close(fd)
    fsync_dir(directory)
    return value

"""Shared by the passphrase-mode tests (local and S3): a passphrase file, and the plain ``age`` CLI driven under a pty.

``age`` reads a passphrase only from the terminal, so the recovery test gives it one: :func:`age_decrypt_under_pty`
runs ``age -d -i KEY -o OUT ARCHIVE`` with a pseudo-terminal as its controlling terminal and types the passphrase
at its prompt, exactly as an operator would. Nothing of statekit runs in that recovery.
"""

from __future__ import annotations

import os
import re
import select
import shutil
import subprocess
import time
from pathlib import Path

HAVE_AGE_TOOLS = all(shutil.which(tool) for tool in ("age", "zstd", "tar"))
AGE_TOOLS_REASON = "needs the age, zstd and tar programs (Debian: age, zstd)"
SCRYPT_R = 8  # age's scrypt block size: the work takes 128 * r * 2**logN bytes of memory


def write_passphrase(path: Path, value: str, newline: str = "\n") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    path.write_text(value + newline, encoding="utf-8")
    os.chmod(path, 0o600)
    return path


def scrypt_memory_mb(key_file: Path) -> float:
    """The memory scrypt needs to open ``key_file`` (from the work factor in its stanza), in MB."""
    found = re.search(rb"^-> scrypt \S+ (\d+)$", key_file.read_bytes(), re.MULTILINE)
    assert found, key_file
    return 128 * SCRYPT_R * 2 ** int(found.group(1)) / (1 << 20)


def age_decrypt_under_pty(key_file: Path, archive: Path, out: Path, passphrase: str, timeout: float = 120) -> tuple[int, bytes]:
    """``age -d -i key_file -o out archive`` answering its passphrase prompt on a pty; (exit code, what it printed)."""
    import pty

    pid, fd = pty.fork()
    if pid == 0:  # the child: the pty is its controlling terminal (/dev/tty), where age asks
        try:
            os.execvp("age", ["age", "-d", "-i", str(key_file), "-o", str(out), str(archive)])
        finally:
            os._exit(127)
    shown = b""
    answered = False
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _w, _x = select.select([fd], [], [], 1.0)
            if not ready:
                continue
            try:
                chunk = os.read(fd, 4096)
            except OSError:  # EIO: the child closed the terminal
                break
            if not chunk:
                break
            shown += chunk
            if not answered and b"passphrase" in shown.lower():
                os.write(fd, passphrase.encode("utf-8") + b"\n")
                answered = True
    finally:
        os.close(fd)
    _pid, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), shown


def unpack_with_zstd_and_tar(plain_archive: Path, dest: Path) -> Path:
    """``zstd -d | tar -x`` into ``dest``; the archive's one root folder."""
    dest.mkdir(parents=True, exist_ok=True)
    # tar stops at its end-of-archive blocks, so zstd may get SIGPIPE (141) on the skippable digest frame behind them
    pipeline = (f"zstd -d -q -c '{plain_archive}' | tar -x -C '{dest}'; s=(${{PIPESTATUS[@]}}); "
                f'[ "${{s[1]}}" = 0 ] && {{ [ "${{s[0]}}" = 0 ] || [ "${{s[0]}}" = 141 ]; }}')
    subprocess.run(["bash", "-c", pipeline], check=True)
    (root,) = dest.iterdir()
    return root

"""Every file statekit opens goes through the safe primitives of ``statekit.fsutil`` (issue 11, items 1 and 7).

Creating: ``create_file`` / ``make_dir`` / ``atomic_write_bytes`` / ``ensure_private_dir`` (exclusive,
never through a symlink, exact modes, the directory owner's under root). Reading a file statekit did
not create: ``open_regular_file`` / ``read_regular_file`` / ``read_prefix`` (non-blocking open, then
``fstat``; bounded). This scan fails for a new ``open(``, ``read_text(``, ``write_bytes(``, ``mkdir(``
or ``os.open(... O_CREAT ...)`` anywhere else in the product, unless it is listed below with the
reason it is safe. On 308a7ed it found 27 such lines (gateway lock reads that hung on a FIFO, lock
files opened through planted symlinks, ...).
"""

from __future__ import annotations

import re

from product_source import product_files

PATTERN = re.compile(
    r"\.read_text\(|\.read_bytes\(|(?<![\w.])open\(|\.write_text\(|\.write_bytes\(|\.mkdir\(|os\.mkdir\(|O_CREAT|\.open\("
)

# (module, a snippet of the line) -> why it is safe
ALLOWED: dict[tuple[str, str], str] = {
    ("statekit.schema", "resources.files(__package__)"): "statekit's own package data",
    ("statekit.documents", "schema_path(name).read_text"): "statekit's own package data (JSON Schemas)",
    ("statekit.backup.manifest", "resources.files(__package__)"): "statekit's own package data",
    ("statekit.backup.statekit_format", 'open(path, "rb")'): "an archive verify has checked to be a regular file first",
    ("statekit.backup.openclaw_format", 'open(path, "rb")'): "an archive verify has checked to be a regular file first",
    ("statekit.backup.archive", 'open(payload, "rb")'): "the payload statekit wrote in its private staging dir",
    ("statekit.backup.archive", 'open(path, "rb")'): "an archive verify has checked to be a regular file first",
    ("statekit.backup.create", 'open(item.staged, "rb")'): "a copy statekit made in its private staging dir",
    ("statekit.backup.restore", 'open(source, "rb")'): "a file this restore wrote itself (an OpenClaw hard link's twin)",
    ("statekit.migrate.retire", "open(create_file("): "wraps the fd of create_file",
    ("statekit.maintenance.recover", "open(create_file("): "wraps the fd of create_file",
    ("statekit.legacy_readers._sqlite_source", 'copy.open("wb")'): "a private TemporaryDirectory copy",
    ("statekit.legacy_readers._sqlite_source", "open(str(copy) + suffix"): "a private TemporaryDirectory copy",
    ("statekit.migrate.discover", "os.open(path, os.O_RDONLY | getattr(os, \"O_NOFOLLOW\""): "non-blocking, no-follow open then fstat",
    ("statekit.locking", "os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK"): "non-blocking, no-follow probe of a lock",
    ("statekit.install", "os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)"): "non-blocking, no-follow, then fstat",
    ("statekit.backup.archive", "tarfile.open(fileobj="): "a stream over an archive already open",
    ("statekit.output", "os.open(os.devnull"): "the null device, to silence a closed stdout",
    ("statekit.output", "open(os.devnull"): "the null device, to silence a closed stdout",
    ("statekit.legacy_readers.transcript_worker", "os.open(os.devnull"): "the null device, the forked parse process's stderr",
    ("statekit.schema", "resources.files(__name__)"): "statekit's own package data (the plan schema)",
}

EXEMPT_MODULES = {"statekit.fsutil"}  # the primitives themselves


def _sites() -> list[tuple[str, int, str]]:
    found = []
    for source in product_files():
        if source.module in EXEMPT_MODULES:
            continue
        for number, line in enumerate(source.text.splitlines(), 1):
            stripped = line.strip()
            if stripped.startswith("#") or not PATTERN.search(line):
                continue
            if stripped.startswith(('"""', "'''")) or stripped.endswith('"""'):
                continue  # docstrings
            found.append((source.module, number, stripped))
    return found


def test_every_open_goes_through_the_safe_primitives() -> None:
    unlisted = []
    used: set[tuple[str, str]] = set()
    for module, number, line in _sites():
        key = next((k for k in ALLOWED if k[0] == module and k[1] in line), None)
        if key is None:
            unlisted.append(f"{module}:{number}: {line}")
        else:
            used.add(key)
    assert not unlisted, "open these through statekit.fsutil (or list them here with the reason):\n" + "\n".join(unlisted)
    assert set(ALLOWED) == used, f"stale entries: {sorted(set(ALLOWED) - used)}"

"""Memory per file of backup create (with its verify pass), verify and restore: a state dir of 100,000 small files
must back up and restore in under 200 MB, so what each of them holds per archived file is bounded here.

Measured in a fresh interpreter (what earlier tests left is not counted), as the difference between the traced peaks
of two trees of 200 and 1,200 small files, over the 1,000 files between: object sizes, not the machine or the load.
"""

from __future__ import annotations

import gc
import io
import json
import subprocess
import sys
import tracemalloc
from pathlib import Path

import pytest

from helpers import make_state

SMALL, BIG = 200, 1200


def install(tmp_path: Path, files: int) -> Path:
    """``files`` small transcripts in two agents' session dirs (the shape of an old install of many small files)."""
    return make_state(tmp_path, {f"agents/{('main', 'work')[n % 2]}/sessions/s-{n:06d}.jsonl": f'{{"n": {n}}}\n' for n in range(files)})


MEASURE = """
import gc, json, shutil, sys, tracemalloc
from pathlib import Path
from statekit.backup.create import create_backup
from statekit.backup.restore import restore_archive
from statekit.backup.verify import verify_archive

def peak(call):
    gc.collect()
    tracemalloc.reset_peak()
    start = tracemalloc.get_traced_memory()[0]
    result = call()
    return result, tracemalloc.get_traced_memory()[1] - start

def measure(state, work):
    out = {}
    created, out["create"] = peak(lambda: create_backup(state, work / "out", record=False))
    archive = created.archive_path
    del created
    report, out["verify"] = peak(lambda: verify_archive(archive))
    assert report.ok, report.problems
    del report
    _, out["restore_dry_run"] = peak(lambda: restore_archive(archive, target=work / "dry", dry_run=True))
    _, out["restore_target"] = peak(lambda: restore_archive(archive, target=work / "restored"))
    shutil.rmtree(work / "restored")
    created, out["openclaw_create"] = peak(lambda: create_backup(state, work / "oc", record=False, fmt="openclaw"))
    archive = created.archive_path
    del created
    report, out["openclaw_verify"] = peak(lambda: verify_archive(archive))
    assert report.ok, report.problems
    return out

warm, *pairs = sys.argv[1:]
tracemalloc.start()
measure(Path(warm), Path(warm).parent / "warm-work")  # imports, compiled schema checks and caches before measuring
results = [measure(Path(state), Path(work)) for state, work in zip(pairs[::2], pairs[1::2])]
print(json.dumps(results))
"""


def peaks(tmp_path: Path) -> tuple[dict[str, int], dict[str, int]]:
    warm = install(tmp_path / "warm", 5)
    small, big = install(tmp_path / "small", SMALL), install(tmp_path / "big", BIG)
    argv = [str(warm), str(small), str(tmp_path / "small-work"), str(big), str(tmp_path / "big-work")]
    out = subprocess.run([sys.executable, "-c", MEASURE, *argv], capture_output=True, text=True, check=True).stdout
    first, second = json.loads(out)
    return first, second


# Bytes per file, at most (CPython 3.11 object sizes). 4ab327b: create 6,178, verify and restore --dry-run 1,486,
# restore --target 2,584. This branch: 1,227, 1,070, 1,070, 1,925.
# ``--format openclaw`` (b732dcf: create 3,994, verify 2,788: the digest record as dicts and its text whole three
# times, tarfile's list of every member, a folded copy of every name) after session 4: 2,318 and 1,563.
BOUNDS = {"create": 2000, "verify": 1300, "restore_dry_run": 1300, "restore_target": 2250, "openclaw_create": 3000,
          "openclaw_verify": 2000}


def test_create_verify_and_restore_hold_one_compact_record_per_small_file(tmp_path: Path) -> None:
    """Before (4ab327b) create's peak grew by ~6 KB per file: an Entry with a Path and an ``os.stat_result``, an Asset
    with a ``__dict__``, the planned manifest and the manifest as dicts, its JSON text three times, verify's
    ``json.loads`` of it beside typed copies, tarfile's list of every TarInfo; verify and restore held the parsed
    manifest twice over and a dataclass with a Path per restore step. Now the manifest is written and read one asset
    at a time and each file costs one compact record (and a restore one compact step)."""
    small, big = peaks(tmp_path)
    per_file = {op: (big[op] - small[op]) / (BIG - SMALL) for op in small}
    over = {op: round(value) for op, value in per_file.items() if value >= BOUNDS[op]}
    assert not over, f"bytes per file over {BOUNDS}: {over}"


def test_the_walk_lets_go_of_each_directory_entry_once_it_is_handled(tmp_path: Path) -> None:
    """A directory of 50,000 transcripts was held whole while it was walked: every ``os.DirEntry`` with its cached stat
    (~900 bytes a file above what the plan keeps, 4ab327b-d6decda) until the last one was handled. Each is let go of
    as it is handled, so the walk's peak is what the plan keeps."""
    import tracemalloc

    from statekit.backup.assets import plan_assets

    files = 3000
    state = make_state(tmp_path / "big", {f"agents/main/sessions/s-{n:06d}.jsonl": "{}\n" for n in range(files)})
    plan_assets(install(tmp_path / "warm", 5), tmp_path / "warm-out")  # imports and caches before measuring
    tracemalloc.start()
    try:
        plan = plan_assets(state, tmp_path / "out")
        held, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(plan.entries) >= files
    assert (peak - held) / files < 200, f"the walk peaked {(peak - held) / files:.0f} bytes a file above what it keeps"


ZSTD_RSS = """
import os, re, sys
from pathlib import Path
from statekit.backup.archive import ArchiveWriter

def rss_mb():
    return int(re.search(r"VmRSS:\\s+(\\d+)", Path("/proc/self/status").read_text()).group(1)) / 1024

chunk = os.urandom(1 << 20)  # incompressible: every job is full
before = rss_mb()
writer = ArchiveWriter(Path(sys.argv[1]), threads=2)
for n in range(24):
    writer.add_bytes(f"payload/state/blob-{n}", chunk, mode=0o600, mtime=0)
grown = rss_mb() - before
writer.finish(durable=False)
print(grown)
"""


def test_the_archive_compressor_holds_a_few_megabytes_of_buffers_with_two_workers(tmp_path: Path) -> None:
    """zstd's own job size at level 3 (4x its 2 MiB window, plus the window again as overlap) held ~40 MB of buffers
    over two workers whatever the archive's size, beside everything a backup of 100,000 files holds; 1 MiB jobs hold
    ~8 MB. Measured as the growth of the process's resident memory while 24 MiB go through (Linux)."""
    import pytest

    if not Path("/proc/self/status").exists():
        pytest.skip("reads the resident set size from /proc")
    out = subprocess.run([sys.executable, "-c", ZSTD_RSS, str(tmp_path / "a.tar.zst")], capture_output=True, text=True, check=True)
    assert float(out.stdout) < 20, f"the compressor grew the process by {float(out.stdout):.1f} MB"


def test_backup_list_counts_a_manifest_without_holding_it(tmp_path: Path) -> None:
    """``backup list`` shows each archive's asset count, install and whether it holds content. It parsed the whole
    manifest for that (ef4debf: 64 MB held, 116 MB at the peak, for an archive of 100,000 files); it now reads it
    through, checked as ``Manifest.read`` checks it, keeping no record per asset."""
    from datetime import datetime, timezone

    from statekit.backup.manifest import Asset, Manifest, ManifestError, ManifestSummary, read_summary

    def manifest_text(files: int, dirs: int = 1) -> bytes:
        assets = [Asset("state" + "/d" * n, "dir", "state", "/s", "a/payload/state" + "/d" * n) for n in range(dirs)] + [
            Asset(f"state/{n:06d}.jsonl", "file", "state", f"/s/{n:06d}.jsonl", f"a/payload/state/{n:06d}.jsonl", n, "ab" * 32, 0o644, 1.5)
            for n in range(files)]
        options = {"include_workspaces": False, "level": 3, "verify": True}
        return b"".join(Manifest(datetime(2026, 12, 2, tzinfo=timezone.utc), "/s", options, assets, install_id="f" * 32).encoded())

    text = manifest_text(6_000)
    stream = io.BytesIO(text)

    def read(size: int) -> bytes:  # as a tar member gives it: blocks of 64 KiB (the parser asks for 1 MiB)
        return stream.read(min(size, 64 << 10))

    read_summary(io.BytesIO(manifest_text(1)).read)  # the compiled schema checks, made once per process
    gc.collect()
    tracemalloc.start()
    try:
        summary, peak = read_summary(read), tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert (summary.assets, summary.has_content, summary.install_id) == (6_001, True, "f" * 32)
    assert peak < 1 << 20 < len(text), (len(text), peak)  # a few blocks read, not the text nor a record per asset
    assert read_summary(io.BytesIO(manifest_text(0, dirs=3)).read) == ManifestSummary("f" * 32, 3, False)
    with pytest.raises(ManifestError):  # what Manifest.read refuses, it refuses
        read_summary(io.BytesIO(manifest_text(3).replace(b'"size": 1,', b'"size": -1,')).read)

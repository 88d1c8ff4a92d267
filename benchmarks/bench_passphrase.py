#!/usr/bin/env python3
"""Peak memory and time of the passphrase mode against the key-pair mode, on a state of incompressible data.

A state dir (a copy of ``fixtures/demo-install``) gets ``--size-mb`` of random bytes (so the archive is as large as
the state); then ``backup create``, ``backup verify`` and ``backup restore --target`` run in fresh interpreters, once
with ``--passphrase-file`` and once with ``--recipient``/``--identity``. Each child's own peak RSS (VmHWM) and wall
time are printed, and the scrypt work factor of the wrapped key (``logN``: scrypt needs 128 * 8 * 2**logN bytes).

Usage:  .venv/bin/python benchmarks/bench_passphrase.py [--size-mb 300] [--workdir DIR] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from pyrage import x25519

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
from helpers import run_cli_peak_rss  # noqa: E402  (the tests' own peak-RSS runner: a child's VmHWM)


def measured(*args: object) -> tuple[float, float]:
    """``statekit ARGS`` in a new interpreter: (peak RSS in MB, seconds); a failure stops the benchmark."""
    start = time.monotonic()
    proc, peak_mb = run_cli_peak_rss(*args, timeout=24 * 3600)
    seconds = time.monotonic() - start
    if proc.returncode != 0:
        raise SystemExit(f"statekit {' '.join(map(str, args))} failed ({proc.returncode}): {proc.stderr.strip()[-500:]}")
    return peak_mb, seconds


def make_state(work: Path, size_mb: int) -> Path:
    state = work / "state"
    shutil.copytree(REPO / "fixtures" / "demo-install" / ".openclaw", state, symlinks=True)
    with open(state / "incompressible.bin", "wb") as handle:
        for _ in range(size_mb):
            handle.write(os.urandom(1 << 20))
    return state


def bench_mode(work: Path, state: Path, mode: str) -> dict[str, Any]:
    out = work / f"out-{mode}"
    if mode == "passphrase":
        secret = work / "passphrase.txt"
        secret.write_text(os.urandom(32).hex() + "\n")
        os.chmod(secret, 0o600)
        make, opens = ("--passphrase-file", secret), ("--passphrase-file", secret)
    else:
        identity = x25519.Identity.generate()
        key = work / "identity.txt"
        key.write_text(f"{identity}\n")
        os.chmod(key, 0o600)
        make, opens = ("--recipient", str(identity.to_public())), ("--identity", key)
    result: dict[str, Any] = {"mode": mode}
    result["create_mb"], result["create_s"] = measured("backup", "create", "--state-dir", state, "--output", out, *make, "--quiet")
    (archive,) = out.glob("*.tar.zst.age")
    result["archive_mb"] = archive.stat().st_size / (1 << 20)
    wrapped = archive.with_name(archive.name + ".key")
    if wrapped.exists():
        found = re.search(rb"^-> scrypt \S+ (\d+)$", wrapped.read_bytes(), re.MULTILINE)
        result["scrypt_logn"] = int(found.group(1)) if found else None
        result["key_bytes"] = wrapped.stat().st_size
    result["verify_mb"], result["verify_s"] = measured("backup", "verify", archive, *opens, "--quiet")
    target = work / f"restored-{mode}"
    result["restore_mb"], result["restore_s"] = measured("backup", "restore", archive, *opens, "--target", target, "--yes", "--quiet")
    shutil.rmtree(target, ignore_errors=True)
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size-mb", type=int, default=300)
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--json", type=Path, default=None)
    options = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-passphrase-", dir=options.workdir))
    try:
        state = make_state(work, options.size_mb)
        results = [bench_mode(work, state, mode) for mode in ("passphrase", "recipient")]
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for r in results:
        scrypt = f", scrypt logN {r['scrypt_logn']} ({128 * 8 * 2 ** r['scrypt_logn'] >> 20} MiB), key {r['key_bytes']} B" if "scrypt_logn" in r else ""
        print(f"{r['mode']:<10} archive {r['archive_mb']:.0f} MiB{scrypt}")
        for step in ("create", "verify", "restore"):
            print(f"  {step:<8} peak RSS {r[step + '_mb']:6.0f} MB   {r[step + '_s']:6.1f} s")
    if options.json:
        options.json.write_text(json.dumps(results, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

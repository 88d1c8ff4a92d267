#!/usr/bin/env python3
"""Benchmark statekit's offsite archives against a real S3 endpoint (a moto server on 127.0.0.1, its own process).

1. **Fleet listing and retention**: ``--installs`` installs x ``--archives`` daily archives (tiny objects) in one
   bucket; ``list_remote`` of every install and of one install, then ``prune_remote`` of every install with
   ``--keep-daily 7``: wall time and the HTTP requests sent (counted on the client's ``before-send`` event).
2. **Upload throughput**: the same ``--upload-mb`` bytes uploaded by boto3's own ``upload_file`` (its default
   TransferConfig) and by statekit's ``upload_file`` (ordered parts, bounded in flight, SHA-256 per part, size and
   checksum checked after completion), interleaved for ``--rounds``; the best of each and the ratio.
3. **Memory**: a child process uploads an age-encrypted ``--rss-mb`` object and another downloads it (decrypting
   as it streams, as ``restore`` does into its scratch copy); peak RSS of each child (``os.wait4``), the goal being
   < 200 MB.
4. **Streaming verify**: a real statekit archive of a state holding a ``--verify-mb`` incompressible file (and a
   database), age-encrypted and uploaded; a child runs ``verify_remote`` on it (one forward pass over the
   ``GetObject`` body, decrypted on the fly) under a 64 MiB file-size limit (RLIMIT_FSIZE: any scratch copy of the
   archive would fail with EFBIG): its wall, CPU, peak RSS, bytes written to disk (``/proc/self/io``) and verdict;
   with ``--verify-before PY`` also an earlier statekit's verify of the same object, interleaved, for ``--rounds``.

Usage:  .venv/bin/python benchmarks/bench_s3.py [--installs 1000] [--archives 30] [--upload-mb 256]
            [--rss-mb 2048] [--verify-mb 1024] [--verify-before PY] [--rounds 2] [--json FILE] [--skip fleet,upload,rss,verify]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import boto3

from statekit.backup import manifest as mf
from statekit.backup import remote
from statekit.backup.locations import S3Location

ENV = {"AWS_ACCESS_KEY_ID": "bench", "AWS_SECRET_ACCESS_KEY": "bench-secret", "AWS_DEFAULT_REGION": "us-east-1",
       "AWS_CONFIG_FILE": "/nonexistent", "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent"}


def start_server() -> tuple[subprocess.Popen[bytes], str]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(300):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return proc, f"http://127.0.0.1:{port}"
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise SystemExit("moto server did not start")


class Counter:
    def __init__(self, client: Any) -> None:
        self.count = 0
        client.meta.events.register("before-send.s3.*", self._sent)

    def _sent(self, **_kw: Any) -> None:
        self.count += 1


def bench_fleet(installs: int, archives: int) -> dict[str, Any]:
    client = remote.make_client()
    client.create_bucket(Bucket="fleet")
    loc = S3Location("fleet", "offsite")
    start = datetime(2026, 1, 1, 3, 0, tzinfo=timezone.utc)
    keys = [loc.key(f"{i:032x}", mf.archive_stem(start + timedelta(days=d)) + mf.ARCHIVE_SUFFIX + (".age" if d % 2 else ""))
            for i in range(installs) for d in range(archives)]
    t0 = time.perf_counter()
    with ThreadPoolExecutor(16) as pool:
        list(pool.map(lambda k: client.put_object(Bucket="fleet", Key=k, Body=b"x"), keys))
    seeded = time.perf_counter() - t0
    counter = Counter(client)
    t0, c0 = time.perf_counter(), time.process_time()
    listing = remote.list_remote(client, loc, None)
    list_all, list_all_cpu = time.perf_counter() - t0, time.process_time() - c0
    list_all_requests, counter.count = counter.count, 0
    t0 = time.perf_counter()
    one = remote.list_remote(client, loc, f"{7:032x}", heads=True)
    list_one = time.perf_counter() - t0
    list_one_requests, counter.count = counter.count, 0
    t0, c0 = time.perf_counter(), time.process_time()
    pruned = remote.prune_remote(client, loc, None, {"keep_daily": 7})
    prune_all, prune_all_cpu = time.perf_counter() - t0, time.process_time() - c0
    prune_requests = counter.count
    deleted = sum(not d.keep for _a, d in pruned.decisions)
    left = len(remote.list_remote(client, loc, None).archives)
    assert len(listing.archives) == installs * archives and len(one.archives) == archives
    assert left == installs * 7 and deleted == installs * (archives - 7)
    return {"installs": installs, "archives_per_install": archives, "objects": len(keys), "seed_s": round(seeded, 1),
            "list_all_s": round(list_all, 2), "list_all_client_cpu_s": round(list_all_cpu, 2), "list_all_requests": list_all_requests,
            "list_one_install_with_heads_s": round(list_one, 3), "list_one_install_requests": list_one_requests,
            "prune_all_s": round(prune_all, 2), "prune_all_client_cpu_s": round(prune_all_cpu, 2), "prune_requests": prune_requests, "deleted": deleted, "kept": left}


def _random_file(path: Path, mb: int) -> None:
    block = os.urandom(1 << 20)
    with open(path, "wb") as out:
        for i in range(mb):
            out.write(hashlib.sha256(block + i.to_bytes(4, "little")).digest() * 32768)  # 1 MiB, distinct, incompressible


def bench_upload(workdir: Path, mb: int, rounds: int) -> dict[str, Any]:
    """boto3 ``upload_file`` as shipped (CRC32 part checksums), boto3 ``upload_file`` with SHA-256 part checksums (the
    integrity work statekit does) and statekit's ``upload_file``; the order rotates every round (page cache, server)."""
    client = remote.make_client()
    client.create_bucket(Bucket="speed")
    src = workdir / "upload.bin"
    _random_file(src, mb)
    loc = S3Location("speed")
    runs = {
        "boto3_upload_file": lambda r: boto3.client("s3").upload_file(str(src), "speed", f"boto3-{r}"),
        "boto3_upload_file_sha256": lambda r: boto3.client("s3").upload_file(str(src), "speed", f"boto3s-{r}",
                                                                            ExtraArgs={"ChecksumAlgorithm": "SHA256"}),
        "statekit": lambda r: remote.upload_file(client, loc, f"statekit-{r}", src, {}),
    }
    times: dict[str, list[float]] = {name: [] for name in runs}
    names = list(runs)
    for r in range(rounds):
        for name in names[r % len(names):] + names[: r % len(names)]:
            t0 = time.perf_counter()
            runs[name](r)
            times[name].append(round(time.perf_counter() - t0, 2))
        keys = [k["Key"] for k in client.list_objects_v2(Bucket="speed").get("Contents", [])]
        client.delete_objects(Bucket="speed", Delete={"Objects": [{"Key": k} for k in keys]})
    src.unlink()
    best = {name: min(ts) for name, ts in times.items()}
    return {"mb": mb, "seconds": times, **{f"{name}_mb_per_s": round(mb / t, 1) for name, t in best.items()},
            "ratio_statekit_vs_boto3": round(best["boto3_upload_file"] / best["statekit"], 3),
            "ratio_statekit_vs_boto3_sha256": round(best["boto3_upload_file_sha256"] / best["statekit"], 3),
            "ratio_of_medians_statekit_vs_boto3": round(statistics.median(times["boto3_upload_file"]) / statistics.median(times["statekit"]), 3)}


CHILD = r"""
import resource
import sys
from pathlib import Path
from pyrage import x25519
from statekit.backup import remote
from statekit.backup.encryption import Identities
from statekit.backup.locations import S3Location
mode, path, key_text = sys.argv[1], Path(sys.argv[2]), sys.argv[3]
client = remote.make_client()
if mode == "upload":
    remote.upload_file(client, S3Location("rss"), "big.tar.zst.age", path, {})
else:
    with remote.fetched("s3://rss/big.tar.zst.age", Identities((x25519.Identity.from_str(key_text),)), client=client,
                        parent=path.parent) as plain:
        assert plain.stat().st_size > 0
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


def _child_rss(args: list[str]) -> tuple[float, float]:
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", CHILD, *args], capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"child {args[0]} failed: {done.stderr[-2000:]}")
    return int(done.stdout.split()[-1]) / 1024, time.perf_counter() - t0  # the child's own peak RSS (KiB -> MiB)


def bench_rss(workdir: Path, mb: int) -> dict[str, Any]:
    from pyrage import x25519

    from statekit.backup.encryption import Recipients, encrypt_file

    remote.make_client().create_bucket(Bucket="rss")
    identity = x25519.Identity.generate()
    plain, sealed = workdir / "big.tar.zst", workdir / "big.tar.zst.age"
    _random_file(plain, mb)
    encrypt_file(plain, sealed, Recipients((identity.to_public(),)))
    plain.unlink()
    up_rss, up_s = _child_rss(["upload", str(sealed), ""])
    down_rss, down_s = _child_rss(["download", str(sealed), str(identity)])
    sealed.unlink()
    return {"mb": mb, "upload_peak_rss_mb": round(up_rss, 1), "upload_s": round(up_s, 1),
            "download_decrypt_peak_rss_mb": round(down_rss, 1), "download_s": round(down_s, 1), "goal_mb": 200}


VERIFY_CHILD = r"""
import resource
import sys
from pyrage import x25519
from statekit.backup import remote
from statekit.backup.encryption import Identities
url, key_text = sys.argv[1], sys.argv[2]
report = remote.verify_remote(url, Identities((x25519.Identity.from_str(key_text),)))
usage = resource.getrusage(resource.RUSAGE_SELF)
io = dict(line.split(": ") for line in open("/proc/self/io").read().splitlines())
print(report.ok, usage.ru_maxrss, usage.ru_utime + usage.ru_stime, int(io["write_bytes"]))
"""
FILE_SIZE_LIMIT = 64 << 20


def bench_verify(workdir: Path, mb: int, rounds: int, before: str | None) -> dict[str, Any]:
    import resource

    from pyrage import x25519

    from statekit.backup.create import create_backup
    from statekit.backup.encryption import Recipients
    from statekit.db import connect

    state = workdir / "verify-home" / ".openclaw"
    (state / "media").mkdir(parents=True)
    state.chmod(0o700)
    (state / "openclaw.json").write_text("{}")
    (state / "state").mkdir()
    db = connect(state / "state" / "openclaw.sqlite")
    db.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, body TEXT)")
    db.execute("BEGIN")
    db.executemany("INSERT INTO t(body) VALUES (?)", [(f"row {i} " * 20,) for i in range(20_000)])
    db.execute("COMMIT")
    db.close()
    with open(state / "media" / "big.bin", "wb") as out:  # incompressible: the archive is as large
        for _ in range(mb):
            out.write(os.urandom(1 << 20))
    identity = x25519.Identity.generate()
    t0 = time.perf_counter()
    result = create_backup(state, workdir / "verify-out", record=False, recipients=Recipients((identity.to_public(),)))
    create_s = time.perf_counter() - t0
    archive = result.archive_path
    assert archive is not None
    shutil.rmtree(state.parent)
    client = remote.make_client()
    client.create_bucket(Bucket="verify")
    key = f"{'ab' * 16}/{archive.name}"
    remote.upload_file(client, S3Location("verify"), key, archive, {})
    size = archive.stat().st_size
    archive.unlink()

    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (FILE_SIZE_LIMIT, FILE_SIZE_LIMIT))

    def child(python: str, limit: bool) -> dict[str, Any]:
        t0 = time.perf_counter()
        done = subprocess.run([python, "-c", VERIFY_CHILD, f"s3://verify/{key}", str(identity)], capture_output=True,
                              text=True, preexec_fn=cap if limit else None)
        wall = time.perf_counter() - t0
        if done.returncode != 0:
            raise SystemExit(f"verify child failed: {done.stderr[-2000:]}")
        ok, rss_kb, cpu, written = done.stdout.split()
        return {"ok": ok == "True", "wall_s": round(wall, 1), "cpu_s": round(float(cpu), 1),
                "peak_rss_mb": round(int(rss_kb) / 1024, 1), "disk_write_mb": round(int(written) / 2**20, 1)}

    result = {"archive_mb": round(size / 2**20), "create_s": round(create_s, 1), "file_size_limit_mb": FILE_SIZE_LIMIT >> 20,
              "goal_mb": 200}
    for r in range(rounds):  # interleaved with the earlier statekit (no file-size limit: it writes a copy)
        if before:
            result.setdefault("before", []).append(child(before, limit=False))
        result.setdefault("after", []).append(child(sys.executable, limit=True))
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--installs", type=int, default=1000)
    parser.add_argument("--archives", type=int, default=30)
    parser.add_argument("--upload-mb", type=int, default=256)
    parser.add_argument("--rss-mb", type=int, default=2048)
    parser.add_argument("--verify-mb", type=int, default=1024)
    parser.add_argument("--verify-before", default=None, help="also verify with this interpreter (an earlier statekit)")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--skip", default="")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--workdir", type=Path)
    args = parser.parse_args()
    skip = set(filter(None, args.skip.split(",")))
    proc, endpoint = start_server()
    os.environ.update(ENV, AWS_ENDPOINT_URL=endpoint)
    workdir = Path(tempfile.mkdtemp(prefix="statekit-bench-s3-", dir=args.workdir))
    results: dict[str, Any] = {}
    try:
        if "fleet" not in skip:
            results["fleet"] = bench_fleet(args.installs, args.archives)
            print(json.dumps({"fleet": results["fleet"]}), flush=True)
        if "upload" not in skip:
            results["upload"] = bench_upload(workdir, args.upload_mb, args.rounds)
            print(json.dumps({"upload": results["upload"]}), flush=True)
        if "rss" not in skip:
            results["rss"] = bench_rss(workdir, args.rss_mb)
            print(json.dumps({"rss": results["rss"]}), flush=True)
        if "verify" not in skip:
            results["verify"] = bench_verify(workdir, args.verify_mb, args.rounds, args.verify_before)
            print(json.dumps({"verify": results["verify"]}), flush=True)
    finally:
        proc.kill()
        proc.wait()
        shutil.rmtree(workdir, ignore_errors=True)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

#!/usr/bin/env python3
"""statekit migrate against OpenClaw's own migration (`openclaw doctor --fix`), same tree, same run.

Target: statekit's migrate takes at most half of OpenClaw 2026.9.6's
`doctor --fix` wall time on the same legacy tree. Both run on fresh copies of
the tree at the HOME it was written under (old releases store absolute paths),
interleaved, --repeat times; the table prints the median and range of each and
the ratio of the medians.

    python benchmarks/bench_vs_openclaw.py [--repeat 3] [TREE.tar ...]

Without TREE, the corpus trees under ../shared/corpus/generated are used.
OpenClaw comes from $STATEKIT_OPENCLAW_BIN (+ $STATEKIT_NODE_BIN) or the cache
${STATEKIT_INTEROP_CACHE:-~/.cache/statekit-interop} that tests/interop fills.
statekit is the one installed with this checkout (`python -m statekit`).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CORPUS = (REPO / ".." / "shared" / "corpus" / "generated").resolve()
HOME_RE = re.compile(r"/tmp/gen-[A-Za-z0-9._-]+/home")


def openclaw_bin() -> tuple[Path, Path | None]:
    explicit = os.environ.get("STATEKIT_OPENCLAW_BIN")
    if explicit:
        node = os.environ.get("STATEKIT_NODE_BIN")
        return Path(explicit), Path(node) if node else None
    cache = Path(os.environ.get("STATEKIT_INTEROP_CACHE") or Path.home() / ".cache" / "statekit-interop")
    binary = cache / "openclaw-2026.9.6" / "node_modules" / ".bin" / "openclaw"
    if not binary.exists():
        raise SystemExit(f"OpenClaw 2026.9.6 not found at {binary}: run tests/interop once, or set STATEKIT_OPENCLAW_BIN")
    return binary, cache / "node26" / "node_modules" / ".bin"


def recorded_home(tar: Path) -> Path:
    manifest = tar.with_name(tar.name.replace(".tar", ".MANIFEST.txt"))
    for path in (manifest, tar):
        if path.exists() and path.suffix == ".txt":
            match = HOME_RE.search(path.read_text(encoding="utf-8", errors="replace"))
            if match:
                return Path(match.group(0))
    with tarfile.open(tar) as archive:
        member = archive.extractfile("home/.openclaw/openclaw.json")
        text = member.read().decode("utf-8", "replace") if member else ""
    match = HOME_RE.search(text)
    if not match:
        raise SystemExit(f"{tar}: cannot tell the HOME the tree was written under")
    return Path(match.group(0))


def fresh_copy(tar: Path, home: Path) -> None:
    if home.exists():
        shutil.rmtree(home)
    home.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=home.parent) as tmp:
        with tarfile.open(tar) as archive:
            archive.extractall(tmp, filter="tar")
        os.rename(Path(tmp) / "home", home)


def timed(cmd: list[str], env: dict[str, str]) -> tuple[float, int]:
    start = time.perf_counter()
    result = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    return time.perf_counter() - start, result.returncode


def environment(home: Path, node_bin: Path | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.update(HOME=str(home), OPENCLAW_STATE_DIR=str(home / ".openclaw"), NO_COLOR="1", CI="1", OPENCLAW_NO_UPDATE_CHECK="1")
    if node_bin is not None:
        env["PATH"] = f"{node_bin}{os.pathsep}{env.get('PATH', '')}"
    return env


def bench_tree(tar: Path, repeat: int, oc: Path, node_bin: Path | None) -> tuple[list[float], list[float]]:
    home = recorded_home(tar)
    marker = Path(f"{home}.openclaw-interop")
    if marker.exists():
        raise SystemExit(f"{home} is in use (marker {marker}); try again later")
    marker.write_text(str(os.getpid()))
    try:
        statekit_runs: list[float] = []
        openclaw_runs: list[float] = []
        env = environment(home, node_bin)
        for _ in range(repeat):
            fresh_copy(tar, home)
            seconds, rc = timed([sys.executable, "-m", "statekit", "migrate", "--state-dir", str(home / ".openclaw"), "--yes"], env)
            if rc not in (0, 3):
                raise SystemExit(f"{tar.name}: statekit migrate exited {rc}")
            statekit_runs.append(seconds)
            fresh_copy(tar, home)
            seconds, rc = timed([str(oc), "doctor", "--fix", "--non-interactive", "--yes"], env)
            openclaw_runs.append(seconds)  # rc 1 on hybrid trees (9.6 needs a second pass): the first pass is what is timed
        return statekit_runs, openclaw_runs
    finally:
        shutil.rmtree(home, ignore_errors=True)
        marker.unlink(missing_ok=True)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trees", nargs="*", type=Path)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    trees = args.trees or sorted(CORPUS.glob("*.tar"))
    if not trees:
        raise SystemExit("no tree given and no corpus found")
    oc, node_bin = openclaw_bin()
    print(f"{'tree':32} {'statekit migrate s':>22} {'openclaw doctor --fix s':>24} {'ratio':>6}")
    worst = 0.0
    for tar in trees:
        ours, theirs = bench_tree(tar, args.repeat, oc, node_bin)
        ratio = statistics.median(ours) / statistics.median(theirs)
        worst = max(worst, ratio)
        print(f"{tar.stem:32} {statistics.median(ours):8.2f} ({min(ours):.2f}-{max(ours):.2f}) "
              f"{statistics.median(theirs):10.2f} ({min(theirs):.2f}-{max(theirs):.2f}) {ratio:6.2f}")
    print(f"worst ratio {worst:.2f} (target <= 0.50); load average {os.getloadavg()[0]:.1f}")
    return 0 if worst <= 0.5 else 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

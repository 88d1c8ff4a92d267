"""What the benchmark scripts share: the CPU of a child process, and a fresh copy of an install per round."""

from __future__ import annotations

import resource
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path


def children_cpu() -> float:
    """CPU seconds (user + sys) of this process's waited-for children so far."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def child_cpu(command: list[str]) -> float:
    """CPU seconds of ``command`` run to its end as a child process (it must exit 0)."""
    before = children_cpu()
    subprocess.run(command, check=True)
    return children_cpu() - before


def fresh_copies(state_dir: Path, rounds: int) -> Iterator[tuple[int, Path, Path]]:
    """(round, a fresh copy of ``state_dir``, a scratch dir) for each round; the copy is removed after its round."""
    with tempfile.TemporaryDirectory() as scratch:
        for round_ in range(rounds):
            copy = Path(scratch) / f"state-{round_}"
            shutil.copytree(state_dir, copy, symlinks=True)
            yield round_, copy, Path(scratch)
            shutil.rmtree(copy)

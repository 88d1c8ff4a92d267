"""statekit.heap.release_free_heap: freed C-heap pages go back to the OS (glibc), measured as the process's RSS."""

from __future__ import annotations

import subprocess
import sys

import pytest

from statekit.heap import release_free_heap

# 200 MB of 2 KB blocks (each a malloc of its own, past pymalloc's 512 bytes), every 64th kept: the heap cannot
# shrink from its top, so freeing the rest leaves ~197 MB of free pages resident until they are trimmed.
FRAGMENTED = """
import sys
from statekit.heap import release_free_heap

def rss_mb():
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmRSS:")) // 1024

blocks = [bytes(2048) + n.to_bytes(4, "little") for n in range(100_000)]
kept = blocks[::64]
del blocks
before = rss_mb()
trimmed = release_free_heap()
print(before, rss_mb(), trimmed, len(kept))
"""


def test_it_says_whether_the_platform_can_and_never_fails() -> None:
    assert release_free_heap() in (True, False)
    assert release_free_heap() is release_free_heap()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="VmRSS and malloc_trim are Linux's (glibc)")
def test_freed_blocks_between_live_ones_leave_the_process(tmp_path) -> None:
    out = subprocess.run([sys.executable, "-c", FRAGMENTED], capture_output=True, text=True, check=True).stdout.split()
    before, after, trimmed = int(out[0]), int(out[1]), out[2] == "True"
    if not trimmed:
        pytest.skip("this C library has no malloc_trim (not glibc)")
    assert before > 150 and after < before - 100, (before, after)

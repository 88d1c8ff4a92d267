"""Give the C heap's free pages back to the operating system before a known large allocation.

A migrate run of 100,000 small files frees most of what its pre-migration backup and its imports held, but the C
allocator keeps those pages (freed memory sits between live blocks, so the heap cannot shrink from its top). The
run then stores its report, one TEXT value SQLite holds twice while it writes it (~54 MB at 100,000 sources), in
fresh pages on top: the run's peak RSS was the backup's leftovers plus that. glibc's ``malloc_trim`` returns every
free page of its heap (``MADV_DONTNEED``), whatever lies around it; other C libraries and platforms have no such
call, and there it does nothing.
"""

from __future__ import annotations

import ctypes
import gc
import sys
from functools import lru_cache
from typing import Any


@lru_cache(maxsize=1)
def _malloc_trim() -> Any:
    if not sys.platform.startswith("linux"):
        return None
    try:
        return getattr(ctypes.CDLL(None), "malloc_trim", None)  # glibc; musl has none
    except OSError:
        return None


def release_free_heap() -> bool:
    """Collect garbage, then give the C heap's free pages back to the OS. True when the platform's allocator can."""
    gc.collect()
    trim = _malloc_trim()
    if trim is None:
        return False
    trim(0)
    return True


__all__ = ["release_free_heap"]

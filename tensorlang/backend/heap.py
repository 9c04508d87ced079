"""Temporaries without page faults: glibc's heap keeps freed blocks of up to 32 MB.

A compiled call allocates its intermediate tensors afresh (`np.empty`) and frees them as they
die.  glibc serves a block above its mmap threshold with fresh pages from the kernel and hands
them back on free, and trims freed memory at the top of the heap above its trim threshold; a
block of a few megabytes (a GMM's n x K x D intermediate at n = 1000) was therefore faulted in
page by page, and zeroed by the kernel, on every call: at 1000 points a third to a half of a
GMM gradient's time was system time.  `configure` sets the mmap threshold to 32 MB (glibc's
own upper limit for its dynamic threshold) and the trim threshold to 64 MB, once per process,
before the first kernel module runs: blocks up to 32 MB are then reused from the heap, and at
most 64 MB of freed memory stays at its top.  Larger blocks are mapped and unmapped as before;
the generated modules take those from pool.py, which recycles them between calls.

Nothing is changed when the process is not on glibc, when the user set glibc's own variables
(`MALLOC_MMAP_THRESHOLD_`, `MALLOC_TRIM_THRESHOLD_`, `GLIBC_TUNABLES`), or with
`TENSORLANG_HEAP=0`.
"""
from __future__ import annotations

import os
import sys

M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD = 32 * 2 ** 20
TRIM_THRESHOLD = 64 * 2 ** 20

_DONE = False


def configure() -> bool:
    """Set glibc's thresholds (see the module docstring); True when they were set."""
    global _DONE
    if _DONE:
        return False
    _DONE = True
    if not sys.platform.startswith("linux") or os.environ.get("TENSORLANG_HEAP") == "0":
        return False
    if any(v in os.environ for v in ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_",
                                     "GLIBC_TUNABLES")):
        return False
    try:
        import ctypes
        libc = ctypes.CDLL(None)
        libc.gnu_get_libc_version            # glibc's, not another C library's mallopt
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    return bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(
        mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD))

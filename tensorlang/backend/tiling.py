"""When a kernel runs its loop nest in tiles: a read that strides the innermost loop.

A statement such as `A_bar[k, l] = B[l, k]` (a transpose: the gradient of `trace(A B)`)
writes its output along l but reads B down a column: every read of the inner loop is
on a cache line of its own, and that line is used again only at the next k, after the
whole column has been walked.  That works while the column's lines stay in the
second-level cache, and they do unless the stride maps them onto few of its sets: an
address picks its set from its bits above the line, so reads `stride` bytes apart use
only `L2_WAY / gcd(stride, L2_WAY)` of the sets, `L2_WAYS` lines each.  For a
2048-column matrix of doubles (16 KB rows) that is 4 sets, 64 lines, against the 2048
the column needs: every read misses that cache, and the transpose runs 7x slower than at
2000 columns.  The kernels then run the two indices in `TILE` x `TILE` blocks
(`kernels.tile_plan`), so a block's lines are used up before they are evicted.

Measured on the machine of benchmarks/results/peers_check.md (one 2048^2 transpose, a
standalone Numba loop: untiled 28-38 ms; in blocks of 16 x 16 9-15 ms, 32 x 32 6-9 ms, 64 x 64
9-11 ms, whether or not the arrays sit on huge pages; at 2000 and 2016 columns the untiled loop,
4.2-4.3 ms, beat every blocking by 18 % or more, because the hardware prefetches its strided
walk, and at 2040 the two were within the noise), the blocks are used only where `crowded` says
the walk cannot stay in the cache.
"""
from __future__ import annotations

import math

# Blocks of 32 x 32 doubles: 8 KB of the input and 8 KB of the output, well inside the
# first-level cache, with each output row written in runs of four whole 64-byte lines.
# 32 was the fastest of 16, 32, 64 and 128 at 1024^2 to 4096^2 (see the module docstring).
TILE = 32

# The second-level cache the untiled walk relies on (1 MB: 1024 sets of 16 lines of 64
# bytes, as on the benchmark machine and most current x86 cores): L2_WAY is the span of
# addresses that maps once onto every set.
LINE = 64
L2_WAY = 65536
L2_WAYS = 16
ELEMENT = 8          # bytes of a float64


def crowded(stride: int, count: int) -> bool:
    """Does a walk of `count` reads, `stride` elements apart, need more of the
    second-level cache's lines than the sets its addresses map to hold?  (Each read
    on a line of its own; the lines are needed again when the next outer iteration
    walks the same way one element on.)  The kernels call its compiled form
    (tilejit.py: this module imports no Numba, the code generator reads TILE here)."""
    step = abs(stride) * ELEMENT
    if step < LINE:
        return False             # reads share lines: the walk is nearly contiguous
    sets = min(L2_WAY // LINE, L2_WAY // math.gcd(step, L2_WAY))
    return count > L2_WAYS * sets

"""Shared passes (tensorlang/shared.py) switched off and on in the Numba backend, in one
process.

    NUMBA_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python -m benchmarks.shared_passes [--quick]
        [--only NAME ...] [--rounds R]

As benchmarks/sibling_sums.py measures sibling groups (the same table and method: the
forward and the gradient with respect to every f64 parameter, built with the passes off,
"before", and on, "after", checked against the interpreter and each other, timed
alternately, best CPU time of the rounds), for the gradients whose adjoints evaluate one
softmax weight in several sums.  `passes` counts the shared passes the gradient's module
runs as one kernel; `op ratio` is tl.cost(grad) / tl.cost(f), which charges each shared
factor once per point.
"""
from __future__ import annotations

from benchmarks import sibling_sums
from tensorlang.backend import numba_module, rows

# (program, module of tests/ holding it, sizes measured)
PROGRAMS = [("gridvi", "newuser3_programs", dict(S=5000, A=8, k=40)),
            ("sinkhorn", "newuser_programs", dict(n=400, m=300, K=20))]


def without_passes(build):
    """`build()` with no shared pass in the backend (the program and its cost as they are)."""
    saved = numba_module.shared_passes, rows.shared_passes
    numba_module.shared_passes = rows.shared_passes = lambda prog: ()
    try:
        return build()
    finally:
        numba_module.shared_passes, rows.shared_passes = saved


def pass_count(g) -> int:
    prog = numba_module.prepare(g.optimized_program())
    return len(numba_module.runnable_passes(prog, set(), numba_module.size_facts(prog)))


def main(argv=None):
    sibling_sums.main(argv, PROGRAMS, without_passes, pass_count, "passes")


if __name__ == "__main__":
    main()

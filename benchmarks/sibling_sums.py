"""Sibling groups (backend/siblings.py) switched off and on in one process.

    NUMBA_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python -m benchmarks.sibling_sums [--quick]
        [--only NAME ...] [--rounds R]

For each program (the gradients backend.md section 9.2 names: option, dirmult,
pagerank, sinkhorn, gridvi), the forward and the gradient with respect to every f64
parameter are built with sibling groups off ("before": the backend without them, as on
main) and on ("after"), checked against the NumPy interpreter at the test file's sizes
and against each other at the measured ones, then the four calls are timed alternately
(warm, best of the rounds).  Times are CPU time of the process (`time.process_time`:
every Numba thread's work counts, and a loaded machine disturbs it less than wall
time).  `groups` is the number of sibling groups in the gradient's module; `op ratio` is
tl.cost(grad) / tl.cost(f) at the measured sizes.
"""
from __future__ import annotations

import argparse
import importlib
import os
import sys
import time
from pathlib import Path

import numpy as np

from tensorlang.backend import numba_module

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from benchmarks.kernel_choices import (_close, _gradient, _op_ratio, _sizes_text,  # noqa: E402
                                       builder)

# (program, module of tests/ holding it, sizes measured)
PROGRAMS = [("option", "newuser3_programs", dict(N=1000)),
            ("dirmult", "newuser3_programs", dict(b=20000, K=50, M=64)),
            ("pagerank", "newuser4_programs", dict(n=20000, E=200000, k=20)),
            ("sinkhorn", "newuser_programs", dict(n=400, m=300, K=20)),
            ("gridvi", "newuser3_programs", dict(S=5000, A=8, k=40))]


def without_siblings(build):
    """`build()` with no sibling group (the backend before)."""
    saved = numba_module.PREPARATION, numba_module.sibling_groups
    numba_module.PREPARATION = tuple(p for p in saved[0] if p[1] is not
                                     numba_module.fuse_sibling_sums)
    numba_module.sibling_groups = lambda prog, eligible: []
    try:
        return build()
    finally:
        numba_module.PREPARATION, numba_module.sibling_groups = saved


def group_count(g) -> int:
    prog = numba_module.prepare(g.optimized_program())
    return len(numba_module.sibling_groups(prog, numba_module.sibling_eligible(prog)))


def measure(name, module, sizes, quick, rounds, without=without_siblings, count=None):
    """(sizes text, op ratio, groups, best CPU seconds of the four calls) of one
    program, built with `without` (a function running a build with the feature off)
    and as it is; `count(g)` counts the feature's groups in the gradient's module."""
    from test_newuser_programs import function
    programs = importlib.import_module(module).PROGRAMS
    entry = programs[name]
    at = entry["sizes"] if quick else sizes
    args = entry["make"](np.random.default_rng(0), **at)
    f = function(name, programs)
    g = _gradient(f)
    build = builder(f, g, args)
    after = build()
    before = without(build)
    small = entry["make"](np.random.default_rng(0), **entry["sizes"])
    for fn, side in ((f, 0), (g, 1)):
        want = fn.compile("numpy")(**small)
        _close(before[side](**small), want)
        _close(after[side](**small), want)
    _close(after[1](**args), before[1](**args))
    calls = {"before fwd": before[0], "before grad": before[1],
             "after fwd": after[0], "after grad": after[1]}
    cpu = {k: [] for k in calls}
    for _ in range(rounds):                     # alternate, so all see the same load
        for k, fn in calls.items():
            tic = time.process_time()
            fn(**args)
            cpu[k].append(time.process_time() - tic)
    best = {k: min(v) for k, v in cpu.items()}
    return _sizes_text(at), _op_ratio(f, g, at), (count or group_count)(g), best


def main(argv=None, programs=PROGRAMS, without=without_siblings, count=None,
         column="groups"):
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--only", nargs="*", help="programs to measure (default: all)")
    a = ap.parse_args(argv)
    print(f"NUMBA_NUM_THREADS={os.environ.get('NUMBA_NUM_THREADS', '(unset)')}, "
          f"load average {os.getloadavg()[0]:.2f}; best of {a.rounds} alternating warm "
          "calls, CPU time of the process\n")
    print(f"| program | sizes | {column} | forward before / after | gradient before | "
          "gradient after | grad/fwd before | grad/fwd after | op ratio |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, module, sizes in programs:
        if a.only and name not in a.only:
            continue
        text, ratio, groups, t = measure(name, module, sizes, a.quick, a.rounds, without, count)
        ms = {k: v * 1e3 for k, v in t.items()}
        print(f"| {name} | {text} | {groups} | {ms['before fwd']:.2f} / {ms['after fwd']:.2f} ms | "
              f"{ms['before grad']:.2f} ms | {ms['after grad']:.2f} ms | "
              f"{t['before grad'] / t['before fwd']:.2f} | {t['after grad'] / t['after fwd']:.2f} | "
              f"{ratio:.2f} |", flush=True)


if __name__ == "__main__":
    main()

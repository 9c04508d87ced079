"""Shared passes (tensorlang/shared.py) switched off and on in the Numba backend, in one
process.

    NUMBA_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python -m benchmarks.shared_passes [--quick]
        [--only NAME ...] [--rounds R]
    NUMBA_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python -m benchmarks.shared_passes --split [--quick]

As benchmarks/sibling_sums.py measures sibling groups (the same table and method: the
forward and the gradient with respect to every f64 parameter, built with the passes off,
"before", and on, "after", checked against the interpreter and each other, timed
alternately, best CPU time of the rounds), for the gradients whose adjoints evaluate one
softmax weight in several sums.  `passes` counts the shared passes the gradient's module
runs as one kernel; `op ratio` is tl.cost(grad) / tl.cost(f), which charges each shared
factor once per point.

With --split, the gradients whose terms `shared.split_terms_into_passes` moves into
statements of their own so that they join a pass: derived with the split off ("before",
the passes of whole statements only) and on ("after"), both on the Numba backend, timed
alternately; `op ratio` is tl.cost(grad) / tl.cost(f) before -> after.
"""
from __future__ import annotations

import importlib
import os
import sys
import time
from unittest.mock import patch

import numpy as np

from benchmarks import sibling_sums
from benchmarks.kernel_choices import _close, _gradient, _op_ratio, _sizes_text
from tensorlang import shared
from tensorlang.backend import expproduct, numba_module

# (program, module of tests/ holding it, sizes measured)
PROGRAMS = [("gridvi", "newuser3_programs", dict(S=5000, A=8, k=40)),
            ("sinkhorn", "newuser_programs", dict(n=400, m=300, K=20))]


def without_passes(build):
    """`build()` with no shared pass in the backend (the program and its cost as they are)."""
    with patch.object(numba_module, "passes_as_run", lambda prog: ()), \
            patch.object(expproduct, "passes_as_run", lambda prog: ()):
        return build()


def pass_count(g) -> int:
    prog = numba_module.prepare(g.optimized_program())
    return len(numba_module.runnable_passes(prog, set(), numba_module.size_facts(prog)))


# (program, module of tests/ holding it, sizes measured): gradients with split terms
SPLIT_PROGRAMS = [("uot", "newuser6_programs", dict(m=400, n=300, K=20))]


def without_split(derive):
    """`derive()` with no term split into a pass (the derivative as before the stage)."""
    with patch.object(shared, "split_terms_into_passes", lambda prog: prog):
        return derive()


def measure_split(name, module, sizes, quick, rounds):
    from test_newuser_programs import function
    # derived here, not read from the program cache on disk (progcache.py), whose key
    # is the source: the two derivations differ by a switch it does not know
    os.environ["TENSORLANG_PROGRAM_CACHE"] = "0"
    programs = importlib.import_module(module).PROGRAMS
    entry = programs[name]
    at = entry["sizes"] if quick else sizes
    args = entry["make"](np.random.default_rng(0), **at)
    small = entry["make"](np.random.default_rng(0), **entry["sizes"])
    # a function parsed afresh for each, so that no derivative is remembered across
    before_f, after_f = function(name, programs), function(name, programs)
    before, after = without_split(lambda: _gradient(before_f)), _gradient(after_f)
    assert before.optimized_program() != after.optimized_program(), "nothing was split"
    runs = {"before": before.compile("numba"), "after": after.compile("numba")}
    want = after.compile("numpy")(**small)
    for fn in runs.values():
        _close(fn(**small), want)
    _close(runs["before"](**args), runs["after"](**args))
    cpu = {k: [] for k in runs}
    for _ in range(rounds):                     # alternate, so both see the same load
        for k, fn in runs.items():
            tic = time.process_time()
            fn(**args)
            cpu[k].append(time.process_time() - tic)
    ratios = tuple(_op_ratio(g_f, g, at) for g_f, g in ((before_f, before), (after_f, after)))
    return _sizes_text(at), ratios, {k: min(v) for k, v in cpu.items()}


def main_split(argv):
    quick, rounds = "--quick" in argv, 7
    print(f"NUMBA_NUM_THREADS={os.environ.get('NUMBA_NUM_THREADS', '(unset)')}, "
          f"load average {os.getloadavg()[0]:.2f}; best of {rounds} alternating warm "
          "calls, CPU time of the process\n")
    print("| program | sizes | gradient before | gradient after | after / before | op ratio |")
    print("|---|---|---|---|---|---|")
    for name, module, sizes in SPLIT_PROGRAMS:
        text, (r0, r1), t = measure_split(name, module, sizes, quick, rounds)
        print(f"| {name} | {text} | {t['before'] * 1e3:.2f} ms | {t['after'] * 1e3:.2f} ms | "
              f"{t['after'] / t['before']:.2f} | {r0:.2f} -> {r1:.2f} |", flush=True)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if "--split" in argv:
        return main_split(argv)
    sibling_sums.main(argv, PROGRAMS, without_passes, pass_count, "passes")


if __name__ == "__main__":
    main()

"""Where tensorlang's ADBench programs spend their time, statement by statement.

    python -m benchmarks.adbench.profile gmm ../shared/adbench/gmm/1k/gmm_d10_K5.txt
    python -m benchmarks.adbench.profile gmm ../shared/adbench/gmm/2.5M/gmm_d10_K5.txt --n 250000
    python -m benchmarks.adbench.profile lstm ../shared/adbench/lstm/lstm_l4_c4096.txt

Compiles the objective and the derivative on the Numba backend (one thread), then times every
call of the generated module's kernels (`k<n>`, named by the statement they compute) and of its
NumPy contractions (`tl_contract`, named by the statement they assign), in CPU time of this
process (`time.process_time`: on a shared machine, wall time also counts the other processes).
What is left of a call is the driver's own Python (allocation, dispatch, argument checks).
`--n` keeps the first n points of a GMM instance (a replicate-mode file holds one point).
"""
from __future__ import annotations

import argparse
import collections
import os
import re
import sys
import time

# one thread everywhere (set before NumPy loads OpenBLAS): CPU time is then the call's time
for _var in ("NUMBA_NUM_THREADS", "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
os.environ.setdefault("TENSORLANG_TIERS", "0")

import numpy as np  # noqa: E402


def _statements(module) -> dict:
    """kernel or contraction name -> the statement it computes, from the module's text."""
    text = open(module.__file__).read()
    names = {k: s for k, s in re.findall(r"def (k\d+)\(.*\n\s+# statement (\S+)", text)}
    for k, step in re.findall(r"def (k\d+)_steps\(.*\n\s+for r\d+_t0 in range\(([^,]+)", text):
        names[k] = f"recurrence group {k} ({'reverse' if step.strip().startswith('s') else 'forward'} steps)"
    for k, members in re.findall(r"def (k\d+)_rows\(.*\n\s+# rows of (.*) over ", text):
        names[k + "_rows"] = f"row group ({members})"
    for stmt, spec in re.findall(r"env\['(\w+)'\] = tl_contract\('([^']+)'", text):
        names.setdefault(f"contract {spec}", stmt)
    return names


def profile(fn, args: dict, repeats: int) -> tuple[float, list]:
    """(CPU seconds per call, [(statement, seconds per call)], slowest first)."""
    from tensorlang.backend import numba_backend
    before = set(numba_backend._LOADED)
    fn(**args)                                            # compiles
    t0 = time.process_time()
    for _ in range(repeats):
        fn(**args)
    total = (time.process_time() - t0) / repeats
    new = [numba_backend._LOADED[k] for k in numba_backend._LOADED if k not in before]
    spent: collections.Counter = collections.Counter()
    labels: dict = {}
    originals = []
    for mod in new:
        labels.update(_statements(mod))
        for name in list(vars(mod)):
            obj = getattr(mod, name)
            if re.fullmatch(r"k\d+(_par|_steps)?", name) and callable(obj):
                key = name.split("_")[0]
            elif re.fullmatch(r"k\d+_rows(_par)?", name) and callable(obj):
                key = name.split("_")[0] + "_rows"
            elif name == "tl_contract":
                key = None
            else:
                continue

            def timed(*a, _f=obj, _key=key, **kw):
                t = time.process_time()
                out = _f(*a, **kw)
                k = _key or f"contract {a[0]}"
                spent[k] += time.process_time() - t
                return out
            timed.signatures = getattr(obj, "signatures", None)
            originals.append((mod, name, obj))
            setattr(mod, name, timed)
    try:
        for _ in range(repeats):
            fn(**args)
    finally:
        for mod, name, obj in originals:
            setattr(mod, name, obj)
    rows = sorted(((labels.get(k, k), v / repeats) for k, v in spent.items()), key=lambda r: -r[1])
    return total, rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.adbench.profile")
    ap.add_argument("problem", choices=("gmm", "lstm"))
    ap.add_argument("file")
    ap.add_argument("--n", type=int, help="GMM: keep the first n points")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--top", type=int, default=12)
    args = ap.parse_args(argv)
    import tensorlang as tl

    from . import data, tl_impl
    inst = data.load(args.problem, args.file)
    if args.problem == "gmm":
        call = tl_impl.gmm_arguments(inst)
        if args.n:
            reps = -(-args.n // call["x"].shape[0])
            call["x"] = np.ascontiguousarray(np.tile(call["x"], (reps, 1))[:args.n])
        f, g = tl_impl.gmm_functions("numba")
        source = tl_impl._module("gmm.tl")["gmm_objective"]
        wrt = ("alphas", "means", "icf")
    else:
        call = tl_impl.lstm_arguments(inst)
        f, g = tl_impl.lstm_functions("numba")
        source = tl_impl._module("lstm.tl")["lstm_objective"]
        wrt = ("main", "extra")
    results = {}
    for what, fn in (("objective", f), ("derivative", g)):
        total, rows = profile(fn, call, args.repeats)
        results[what] = total
        print(f"{what}: {total * 1e3:.3f} ms per call (CPU)")
        for stmt, t in rows[:args.top]:
            print(f"  {t * 1e3:10.3f} ms  {100 * t / total:5.1f}%  {stmt}")
        rest = total - sum(t for _, t in rows)
        print(f"  {rest * 1e3:10.3f} ms  {100 * rest / total:5.1f}%  (driver, allocation, checks)")
    print(f"derivative / objective: {results['derivative'] / results['objective']:.2f}")
    print(f"tl.cost objective:  {tl.cost(source)}")
    print(f"tl.cost derivative: {tl.cost(tl.grad(source, wrt=wrt))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The spike GLM's causal history filter under two tensorlang trees, side by side.

    python -m benchmarks.history_filter /work/wt/before . --rounds 3

`spike_glm` of tests/newuser13_programs.py (coupling filters read the counts k + 1 bins
back under [t >= k + 1]): its forward and its gradient with respect to every f64
parameter, compiled with Numba, one thread (NUMBA_NUM_THREADS=1), at T time bins, N
neurons, F stimulus features, H lags and M basis functions.  Each round times both
trees in fresh subprocesses (PYTHONPATH set to the tree), alternating, so both see the
same load; printed: tl.cost of each at the sizes, each tree's median over rounds of its
median warm time, and the median of the per-round ratios second / first.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys

from benchmarks.side_by_side import run_in_tree

_CHILD = r"""
import json, sys, time, warnings
import numpy as np
sys.path.insert(0, "tests")
import tensorlang as tl
from newuser13_programs import PROGRAMS
sizes = json.loads(sys.argv[1]); reps = int(sys.argv[2])
entry = PROGRAMS["spike_glm"]
f = tl.parse(entry["src"], filename="spike_glm.tl")["spike_glm"]
args = entry["make"](np.random.default_rng(0), **sizes)
wrt = tuple(p.name for p in f.program.params if p.elem == "f64")
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    g = tl.grad(f, wrt=wrt)
out = {}
for name, fn in (("forward", f), ("gradient", g)):
    run = fn.compile("numba")
    run(**args)
    ts = []
    for _ in range(reps):
        tic = time.perf_counter()
        run(**args)
        ts.append(time.perf_counter() - tic)
    out[name] = {"median": float(np.median(ts)),
                 "cost": float(tl.cost(fn).evaluate(**sizes))}
print(json.dumps(out))
"""


def time_tree(tree: str, sizes: dict, reps: int) -> dict:
    return run_in_tree(tree, _CHILD, [json.dumps(sizes), str(reps)], "spike_glm",
                       timeout=3600, NUMBA_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1",
                       OMP_NUM_THREADS="1", TENSORLANG_PROGRAM_CACHE="0")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("first")
    ap.add_argument("second")
    ap.add_argument("--sizes", default="T=4096,N=16,F=8,H=32,M=8")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--reps", type=int, default=9)
    a = ap.parse_args(argv)
    sizes = {k: int(v) for k, v in (p.split("=") for p in a.sizes.split(","))}
    rounds = []
    for r in range(a.rounds):
        pair = [time_tree(t, sizes, a.reps) for t in (a.first, a.second)]
        rounds.append(pair)
        print(f"round {r + 1}: load {os.getloadavg()[0]:.2f}", file=sys.stderr, flush=True)
    print(f"sizes {a.sizes}, {a.rounds} rounds, {a.reps} warm calls each, one thread\n")
    print("| function | cost first | cost second | ms first | ms second | second / first |")
    print("|---|---|---|---|---|---|")
    for name in ("forward", "gradient"):
        ms = [statistics.median(p[k][name]["median"] for p in rounds) * 1e3 for k in (0, 1)]
        ratio = statistics.median(p[1][name]["median"] / p[0][name]["median"] for p in rounds)
        costs = [rounds[0][k][name]["cost"] for k in (0, 1)]
        print(f"| {name} | {costs[0]:.3g} | {costs[1]:.3g} | {ms[0]:.3g} | {ms[1]:.3g} | "
              f"{ratio:.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())

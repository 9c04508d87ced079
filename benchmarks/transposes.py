"""Derivatives that are transposes, timed at a commit and in the working tree side by side.

    python -m benchmarks.transposes [--base REV] [--threads 1 2] [--rounds 2]
                                    [--case w5b:1024,2048,4096 w7a:1000,2000,2048]

W5b's gradient (`trace(A B)`: `A_bar = B^T`, `B_bar = A^T`) and W7a's Hessian (`A + A^T`) with
the Numba backend.  Each (case, thread count) runs the base commit (a clean copy of its
tensorlang/ and grammar/) and the working tree alternately, each in a fresh process, `--rounds`
times; a process times each size as the median of 21 calls (7 above n = 2048) after warm-up and
its background compilations, and checks the values exactly.  Prints a line per process and, per
size, the mean of the rounds' medians and the ratio base / working tree.  No file is written:
copy what you need into benchmarks/results/ with the load average.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def worker(case: str, sizes: list[int]) -> dict:
    import numpy as np

    import tensorlang as tl
    if case == "w5b":
        mod = tl.load(ROOT / "benchmarks" / "workloads" / "w05_trace.tl")
        d = tl.grad(mod["trace_product"], wrt=("A", "B")).compile("numba")

        def check(a, r):
            return np.array_equal(r[0], a[1].T) and np.array_equal(r[1], a[0].T)
    else:
        mod = tl.load(ROOT / "benchmarks" / "workloads" / "w07_qform.tl")
        d = tl.hessian(mod["qform"], wrt="x").compile("numba")

        def check(a, r):
            return np.array_equal(r, a[1] + a[1].T)
    from tensorlang.backend.background import wait_for_background
    out = {}
    for n in sizes:
        rng = np.random.default_rng(n)
        a = (rng.standard_normal((n, n)) if case == "w5b" else rng.standard_normal(n),
             rng.standard_normal((n, n)))
        for _ in range(2):
            d(*a)
            wait_for_background()
            d(*a)
        times = []
        for _ in range(21 if n <= 2048 else 7):
            t = time.perf_counter()
            r = d(*a)
            times.append(time.perf_counter() - t)
        if not check(a, r):
            raise SystemExit(f"{case} at n = {n}: wrong values")
        out[n] = float(np.median(times)) * 1e3
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", default="main", help="the commit to compare with (default: main)")
    ap.add_argument("--threads", nargs="+", type=int, default=[1, 2])
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--case", nargs="+", default=["w5b:1024,2048,4096", "w7a:1000,2000,2048"])
    ap.add_argument("--worker", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        case, sizes = args.worker
        print(json.dumps(worker(case, [int(s) for s in sizes.split(",")])))
        return 0
    base = Path(tempfile.mkdtemp(prefix="tl-transposes-"))
    archive = subprocess.run(["git", "archive", args.base, "tensorlang", "grammar"], cwd=ROOT,
                             capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(base)], input=archive, check=True)
    trees = {f"base {args.base}": base, "working tree": ROOT}
    for spec in args.case:
        case, sizes = spec.split(":")
        for threads in args.threads:
            got: dict = {label: {} for label in trees}
            for _ in range(args.rounds):
                for label, tree in trees.items():
                    env = dict(os.environ, NUMBA_NUM_THREADS=str(threads),
                               OMP_NUM_THREADS=str(threads), OPENBLAS_NUM_THREADS=str(threads),
                               PYTHONPATH=os.pathsep.join([str(tree), str(ROOT)]),
                               TENSORLANG_CACHE_DIR=str(base / "cache" / label.split()[0]))
                    load = os.getloadavg()[0]
                    # run as a file, not with -m: -m would put the working directory (this
                    # repository) ahead of the base's copy on sys.path
                    res = json.loads(subprocess.run(
                        [sys.executable, __file__, "--worker", case, sizes], env=env,
                        cwd=base, capture_output=True, text=True, check=True).stdout)
                    print(f"{case} threads={threads} {label:>14} load {load:.2f} "
                          + "  ".join(f"{n}: {ms:.2f} ms" for n, ms in res.items()), flush=True)
                    for n, ms in res.items():
                        got[label].setdefault(n, []).append(ms)
            (b, w) = (got[label] for label in trees)
            for n in b:
                mb, mw = sum(b[n]) / len(b[n]), sum(w[n]) / len(w[n])
                print(f"  {case} n = {n}, {threads} thread(s): base {mb:.2f} ms, working tree "
                      f"{mw:.2f} ms, {mb / mw:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())

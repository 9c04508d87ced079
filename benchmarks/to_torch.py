"""What tl.to_torch adds over calling the tensorlang function directly.

    python -m benchmarks.to_torch [--backend numba|numpy] [--repeats N]

Forward, and forward plus backward, of two workloads at n >= 10^5 elements,
through tl.to_torch (torch tensors in and out, NumPy views of their memory) and
directly (NumPy arrays in, tl.grad / tl.vjp for the backward).  The two sides of
a row are called in turn, round after round, in one process; a row's overhead is
the median over the rounds of (to_torch time / direct time) within a round, so a
burst of other load on the shared machine falls on both sides of the ratios it
touches.  The minor page faults per call are counted on both sides: a side that
faults in fresh memory pays for it in time, and the count says so.  A row at
n = 100 measures the fixed cost per call.  Writes benchmarks/results/to_torch.md.
"""
from __future__ import annotations

import argparse
import os
import resource
import time

import numpy as np

import tensorlang as tl

SRC = """
def energy(x: f64[n], w: f64[n]) -> f64:
    return sum[i]([i + 1 < n] * w[i] * (x[i + 1] - x[i]) ** 2)

def smooth(x: f64[n]) -> f64[n]:
    y[i] = tanh(x[i]) * [i + 1 < n] * x[i + 1]
    return y
"""


def _faults() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def paired_samples(fns, repeats, warmup=3):
    """Per-call times and minor page faults of each of fns, called in turn (one call
    of each per round) after `warmup` rounds."""
    for _ in range(warmup):
        for fn in fns:
            fn()
    times = [[] for _ in fns]
    faults = [[] for _ in fns]
    for _ in range(repeats):
        for fn, ts, fs in zip(fns, times, faults):
            f0 = _faults()
            t = time.perf_counter()
            fn()
            times_t = time.perf_counter() - t
            fs.append(_faults() - f0)
            ts.append(times_t)
    return np.array(times), np.array(faults)


def median_times(fns, repeats):
    """Median time of each of fns, called in turn (see paired_samples)."""
    times, _ = paired_samples(fns, repeats, warmup=1)
    return [float(np.median(t)) for t in times]


def workloads(mod, n, backend, torch):
    """(function, what, direct call, to_torch call) for the two workloads at size n."""
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal(n), rng.standard_normal(n)
    e = mod["energy"].compile(backend)
    ge = tl.grad(e, "x").compile(backend)
    s = mod["smooth"].compile(backend)
    vs = tl.vjp(s, "x").compile(backend)
    E, S = tl.to_torch(e), tl.to_torch(s)
    xt, wt = torch.from_numpy(x), torch.from_numpy(w)
    cot = torch.from_numpy(rng.standard_normal(n))
    xr = torch.from_numpy(x.copy()).requires_grad_(True)

    def torch_energy_fb():
        xr.grad = None
        E(xr, wt).backward()

    def direct_energy_fb():
        e(x, w)
        ge(x, w)

    def torch_smooth_fb():
        xr.grad = None
        S(xr).backward(cot)

    def direct_smooth_fb():
        s(x)
        vs(x, cot.numpy())

    return [("energy", "forward", lambda: e(x, w), lambda: E(xt, wt)),
            ("energy", "forward + backward", direct_energy_fb, torch_energy_fb),
            ("smooth", "forward", lambda: s(x), lambda: S(xt)),
            ("smooth", "forward + backward", direct_smooth_fb, torch_smooth_fb)]


def load_average() -> str:
    try:
        return " ".join(f"{v:.2f}" for v in os.getloadavg())
    except OSError:
        return "unknown"


def main(argv=None):
    import torch
    ap = argparse.ArgumentParser()
    ap.add_argument("--backend", default="numba")
    ap.add_argument("--repeats", type=int, default=61)
    ap.add_argument("--out", default="benchmarks/results/to_torch.md")
    args = ap.parse_args(argv)
    mod = tl.parse(SRC)
    lines = ["# tl.to_torch against calling the tensorlang function directly", "",
             f"`python -m benchmarks.to_torch --backend {args.backend} --repeats {args.repeats}`; "
             f"torch {torch.__version__}, {os.cpu_count()} cores, one process. The two sides of a "
             f"row are called in turn for {args.repeats} rounds; `overhead` is the median over "
             f"the rounds of to_torch time / direct time within the round (a burst of other load "
             f"falls on both calls of a round), the times are each side's median. Load average "
             f"(1, 5, 15 min) at the start: {load_average()}.", "",
             "| function | n | what | direct (ms) | to_torch (ms) | overhead | "
             "page faults per call (direct, to_torch) |",
             "|---|---|---|---|---|---|---|"]
    for n in (100, 10 ** 5, 10 ** 6):
        for name, what, direct, via in workloads(mod, n, args.backend, torch):
            times, faults = paired_samples([direct, via], args.repeats)
            ratio = float(np.median(times[1] / times[0]))
            row = (f"| {name} | {n} | {what} | {1e3 * np.median(times[0]):.3f} | "
                   f"{1e3 * np.median(times[1]):.3f} | {100 * (ratio - 1):+.1f} % | "
                   f"{np.median(faults[0]):.0f}, {np.median(faults[1]):.0f} |")
            print(row, flush=True)
            lines.append(row)
    lines += ["", f"Load average at the end: {load_average()}."]
    with open(args.out, "w") as fh:
        fh.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()

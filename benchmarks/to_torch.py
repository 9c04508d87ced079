"""What tl.to_torch adds over calling the tensorlang function directly.

    python -m benchmarks.to_torch [--backend numba|numpy]

Forward, and forward plus backward, of two workloads at n >= 10^5 elements,
through tl.to_torch (torch tensors in and out, NumPy views of their memory) and
directly (NumPy arrays in, tl.grad for the backward), timed alternately in one
process (median).  Writes benchmarks/results/to_torch.md.
"""
from __future__ import annotations

import argparse
import os
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


def median_time(fn, repeats):
    return median_times([fn], repeats)[0]


def median_times(fns, repeats):
    """Median time of each of fns, called in turn (one call of each per round), so
    that the load of the shared machine falls on all of them alike."""
    for fn in fns:
        fn()
    out = [[] for _ in fns]
    for _ in range(repeats):
        for fn, times in zip(fns, out):
            t = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t)
    return [float(np.median(times)) for times in out]


def main(argv=None):
    import torch
    ap = argparse.ArgumentParser()
    ap.add_argument("--backend", default="numba")
    ap.add_argument("--repeats", type=int, default=21)
    ap.add_argument("--out", default="benchmarks/results/to_torch.md")
    args = ap.parse_args(argv)
    mod = tl.parse(SRC)
    lines = ["# tl.to_torch against calling the tensorlang function directly", "",
             f"`python -m benchmarks.to_torch --backend {args.backend}`; torch {torch.__version__}, "
             f"{os.cpu_count()} cores; median of {args.repeats} calls, alternating, one process.",
             "", "| function | n | what | direct (ms) | to_torch (ms) | overhead |",
             "|---|---|---|---|---|---|"]
    for n in (10 ** 5, 10 ** 6):
        rng = np.random.default_rng(0)
        x, w = rng.standard_normal(n), rng.standard_normal(n)
        e = mod["energy"].compile(args.backend)
        ge = tl.grad(e, "x").compile(args.backend)
        s = mod["smooth"].compile(args.backend)
        vs = tl.vjp(s, "x").compile(args.backend)
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

        cases = [("energy", "forward", lambda: e(x, w), lambda: E(xt, wt)),
                 ("energy", "forward + backward", direct_energy_fb, torch_energy_fb),
                 ("smooth", "forward", lambda: s(x), lambda: S(xt)),
                 ("smooth", "forward + backward", direct_smooth_fb, torch_smooth_fb)]
        for name, what, direct, via in cases:
            td, tt = median_times([direct, via], args.repeats)
            row = (f"| {name} | {n} | {what} | {1e3 * td:.3f} | {1e3 * tt:.3f} | "
                   f"{100 * (tt / td - 1):+.0f} % |")
            print(row, flush=True)
            lines.append(row)
    with open(args.out, "w") as fh:
        fh.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()

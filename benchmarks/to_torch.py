"""What tl.to_torch adds over calling the tensorlang function directly.

    python -m benchmarks.to_torch [--backend numba|numpy] [--repeats N] [--sizes 100,100000,1000000]

Forward, and forward plus backward, of two workloads at n >= 10^5 elements,
through tl.to_torch (torch tensors in and out, NumPy views of their memory) and
directly (NumPy arrays in): the function, then tl.vjp's program for the backward.
to_torch runs the vjp program for the array-valued `smooth`; for the scalar
`energy` its recorded forward runs tl.value_and_grad's program instead, so that
workload has a second forward + backward row whose direct side is one call of
tl.value_and_grad (the fastest direct way to the same numbers), and a third that
puts a bare torch.autograd.Function around that same call (its forward runs the
program on views, its backward hands the gradient over, nothing else) in place
of to_torch: what autograd alone adds at that size, the floor of any wrapper.  The two sides of
a row take turns in one process, a block of calls each per round; a row's overhead
is the median over the rounds of (to_torch time / direct time) within a round, so
a burst of other load on the shared machine falls on both sides of the ratios it
touches.  Calls are timed in blocks because a call right after the other side's
finds the caches holding the other side's buffers (to_torch's gradient lives on in
the leaf's .grad, the direct side's is freed), which moved single interleaved calls
at 10^6 elements by 20 % either way.  The minor page faults per call are counted on both sides: a side that
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


def paired_samples(fns, repeats, warmup=3, block=5):
    """Per-call times and minor page faults of each of fns over `repeats` rounds after
    `warmup` rounds.  In a round each function runs `block` times in a row (a sample is
    the mean of its block), then the next: the calls of a block find the caches and
    the heap as their own previous call left them, as a program calling one of them in
    a loop does, while rounds alternate so that other load falls on all of them."""
    for _ in range(warmup):
        for fn in fns:
            fn()
    times = [[] for _ in fns]
    faults = [[] for _ in fns]
    for _ in range(repeats):
        for fn, ts, fs in zip(fns, times, faults):
            fn()                                # the block starts from fn's own state
            f0 = _faults()
            t = time.perf_counter()
            for _ in range(block):
                fn()
            elapsed = time.perf_counter() - t
            fs.append((_faults() - f0) / block)
            ts.append(elapsed / block)
    return np.array(times), np.array(faults)


def median_times(fns, repeats):
    """Median time of each of fns, called in turn (see paired_samples)."""
    times, _ = paired_samples(fns, repeats, warmup=1, block=1)
    return [float(np.median(t)) for t in times]


def workloads(mod, n, backend, torch):
    """(function, what, direct call, to_torch call) for the two workloads at size n."""
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal(n), rng.standard_normal(n)
    e = mod["energy"].compile(backend)
    # the vjp program, as to_torch's backward runs it (tl.grad's program may take its
    # own thread decisions, which would make the row compare two programs)
    ve = tl.vjp(e, "x").compile(backend)
    vge = tl.value_and_grad(e, "x").compile(backend)
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
        ve(x, w, 1.0)

    def torch_smooth_fb():
        xr.grad = None
        S(xr).backward(cot)

    def direct_smooth_fb():
        s(x)
        vs(x, cot.numpy())

    class Bare(torch.autograd.Function):
        """The least a wrapper can do around the value_and_grad call: run it on views
        (no checks: the plan's path), keep the gradient, hand it to autograd."""
        @staticmethod
        def forward(ctx, xa, wa):
            value, ctx.g = vge.call_arrays([xa.numpy(force=True), wa.numpy(force=True)])
            return torch.from_numpy(np.array(value))

        @staticmethod
        def backward(ctx, _):
            return torch.from_numpy(ctx.g), None

    def bare_energy_fb():
        xr.grad = None
        Bare.apply(xr, wt).backward()

    return [("energy", "forward", lambda: e(x, w), lambda: E(xt, wt)),
            ("energy", "forward + backward", direct_energy_fb, torch_energy_fb),
            ("energy", "forward + backward vs value_and_grad", lambda: vge(x, w),
             torch_energy_fb),
            ("energy", "floor: bare Function vs value_and_grad", lambda: vge(x, w),
             bare_energy_fb),
            ("smooth", "forward", lambda: s(x), lambda: S(xt)),
            ("smooth", "forward + backward", direct_smooth_fb, torch_smooth_fb)]


def autograd_floor(torch, repeats) -> float:
    """Median seconds of a forward + backward through a torch.autograd.Function that
    does no work (a 100-element sum and its broadcast cotangent): what any function
    wrapped for autograd pays per call, whatever it computes."""
    class Nothing(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x.sum()

        @staticmethod
        def backward(ctx, g):
            return g.expand(100)

    x = torch.zeros(100, dtype=torch.float64, requires_grad=True)

    def once():
        x.grad = None
        Nothing.apply(x).backward()

    times, _ = paired_samples([once], repeats)
    return float(np.median(times[0]))


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
    ap.add_argument("--sizes", default="100,100000,1000000",
                    help="comma-separated n (default 100,100000,1000000)")
    ap.add_argument("--out", default="benchmarks/results/to_torch.md")
    args = ap.parse_args(argv)
    mod = tl.parse(SRC)
    lines = ["# tl.to_torch against calling the tensorlang function directly", "",
             f"`python -m benchmarks.to_torch --backend {args.backend} --repeats {args.repeats} "
             f"--sizes {args.sizes}`; "
             f"torch {torch.__version__}, {os.cpu_count()} cores, one process. The two sides of a "
             f"row take turns for {args.repeats} rounds, five calls in a row each; `overhead` is "
             f"the median over the rounds of to_torch time / direct time within the round (a burst of other load "
             f"falls on both calls of a round), the times are each side's median. Load average "
             f"(1, 5, 15 min) at the start: {load_average()}.", "",
             "| function | n | what | direct (ms) | to_torch (ms) | overhead | "
             "page faults per call (direct, to_torch) |",
             "|---|---|---|---|---|---|---|"]
    for n in [int(v) for v in args.sizes.split(",")]:
        for name, what, direct, via in workloads(mod, n, args.backend, torch):
            times, faults = paired_samples([direct, via], args.repeats)
            ratio = float(np.median(times[1] / times[0]))
            row = (f"| {name} | {n} | {what} | {1e3 * np.median(times[0]):.3f} | "
                   f"{1e3 * np.median(times[1]):.3f} | {100 * (ratio - 1):+.1f} % | "
                   f"{np.median(faults[0]):.0f}, {np.median(faults[1]):.0f} |")
            print(row, flush=True)
            lines.append(row)
    floor = autograd_floor(torch, args.repeats)
    lines += ["", f"A torch.autograd.Function that does no work costs {1e6 * floor:.1f} us per "
              f"forward + backward in the same process: a row whose direct forward + backward "
              f"takes less than ten times that cannot stay within +10 % through autograd.",
              "", f"Load average at the end: {load_average()}."]
    with open(args.out, "w") as fh:
        fh.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()

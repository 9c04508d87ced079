"""tensorlang via JAX against hand-written JAX, side by side in one process.

    python -m benchmarks.jax_backend [--sizes full|quick] [--only W1 W7a ...] [--budget S]

For each workload of benchmarks/peers the derivative row of tensorlang (tl.grad,
tl.hessian, tl.hvp of benchmarks/workloads/*.tl) is emitted as JAX code with
tl.to_jax and run under jax.jit; the JAX row is benchmarks/peers/sys_jax.py (the
idiomatic program, differentiated by JAX, under jax.jit).  A third row,
`jax.grad(tl.to_jax(f))`, lets JAX drive the differentiation of the emitted
forward program (its custom_jvp rules are tensorlang's derivatives).  Both are
checked against each other, then timed alternately (median of repeats; a row whose
calls take long, JAX's own Hessians of W8 and W9, gets as many rounds as fit in
--budget seconds, at least one).  The results go to benchmarks/results/jax_backend.md.
"""
from __future__ import annotations

import argparse
import datetime
import os
import sys
import time

os.environ.setdefault("JAX_ENABLE_X64", "1")

import numpy as np  # noqa: E402

from .peers import sys_jax, sys_tl  # noqa: E402
from .peers.spec import CASES, WRT, inputs  # noqa: E402

# the workloads of issue 14: within 1.1x of hand-written JAX (W1, W2, W7b, W10a, W10b, W11,
# W12) and the order gap (W3, W7a, W8, W9)
KEYS = ("W1", "W2", "W3", "W7a", "W7b", "W8", "W9", "W10a", "W10b", "W11", "W12")


def build_tl_jax(key: str, size, inp: dict, drive: bool):
    """jit(to_jax(derivative)) or, with `drive`, jit(jax.grad/hessian(to_jax(f)))."""
    import jax
    import jax.numpy as jnp

    import tensorlang as tl
    _, file, fname, transform, _ = sys_tl.ROWS[key][0][:5]
    f = tl.load(sys_tl.WL / file)[fname.format(k=size)]
    wrt = WRT[key] if len(WRT[key]) > 1 else WRT[key][0]
    if drive:
        F = tl.to_jax(f)
        argnums = tuple(f.params.index(w) for w in WRT[key])
        argnums = argnums if len(argnums) > 1 else argnums[0]
        if transform == "hvp":
            def d(*a):
                k = f.params.index(wrt)
                return jax.jvp(lambda z: jax.grad(F, argnums=k)(*a[:k], z, *a[k + 1:-1]),
                               (a[k],), (a[-1],))[1]
        else:
            d = {"grad": jax.grad, "hessian": jax.hessian}[transform](F, argnums=argnums)
        names = list(f.params) + (["v"] if transform == "hvp" else [])
    else:
        fn = {"grad": tl.grad, "hessian": tl.hessian, "hvp": tl.hvp}[transform](f, wrt=wrt)
        d = tl.to_jax(fn)
        names = [("v" if p == "d_" + str(wrt) else p) for p in fn.params]
    args = [jnp.asarray(inp[n]) for n in names]
    dj = jax.jit(d)
    return lambda: jax.block_until_ready(dj(*args))


def timed_together(fns, repeats: int, budget: float = float("inf")) -> tuple:
    """(median time of each of fns, number of rounds): the fns called in turn round
    after round (the load of the shared machine then falls on all of them alike),
    after one warm-up call each; `repeats` rounds, or as many as the warm-up times
    say fit in `budget` seconds (at least one).  With fewer rounds than `repeats` (a
    slow call: JAX's own Hessians of W8 and W9), a call that takes little of the
    budget is made several times a round, so it still has `repeats` samples, taken
    between the slow calls as before."""
    warm = []
    for fn in fns:
        t = time.perf_counter()
        fn()
        warm.append(time.perf_counter() - t)
    fit = budget / sum(warm)
    rounds = max(1, repeats if fit >= repeats else int(fit))
    calls = [1 if rounds == repeats or w * repeats > 0.25 * budget else -(-repeats // rounds)
             for w in warm]
    times = [[] for _ in fns]
    for _ in range(rounds):
        for fn, ts, k in zip(fns, times, calls):
            for _ in range(k):
                t = time.perf_counter()
                fn()
                ts.append(time.perf_counter() - t)
    return [float(np.median(ts)) for ts in times], rounds


def differences(ref: list, others: list) -> str:
    """'' when every result in `others` equals `ref` to 1e-8, else what differs."""
    for k, got in enumerate(others):
        if len(got) != len(ref):
            return f"result {k + 1} has {len(got)} arrays, not {len(ref)}"
        for a, b in zip(ref, got):
            try:
                np.testing.assert_allclose(np.reshape(b, np.shape(a)), a, rtol=1e-8, atol=1e-8)
            except AssertionError as exc:
                lines = [ln.strip() for ln in str(exc).splitlines() if "Max" in ln]
                return f"result {k + 1}: " + "; ".join(lines)
    return ""


def load_average() -> float:
    return os.getloadavg()[0]


def flat(out):
    if isinstance(out, (tuple, list)):
        return [x for o in out for x in flat(o)]
    return [np.asarray(out)]


def main(argv=None) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", choices=("full", "quick"), default="quick")
    ap.add_argument("--only", nargs="*")
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--budget", type=float, default=40.0,
                    help="seconds of timed rounds per row at most (at least one round)")
    ap.add_argument("--deadline", type=float, default=float("inf"),
                    help="seconds after which no further row is started (benchmarks/gpu.sh)")
    ap.add_argument("--out", default="benchmarks/results/jax_backend.md")
    args = ap.parse_args(argv)
    import jax

    from .backend import machine_facts
    started, load_start = time.perf_counter(), load_average()
    command = "python -m benchmarks.jax_backend " + " ".join(argv if argv is not None
                                                             else sys.argv[1:])
    rows, skipped = [], []
    for key in args.only or KEYS:
        case = CASES[key]
        for size in (case.full if args.sizes == "full" else case.quick):
            if time.perf_counter() - started > args.deadline:
                skipped.append(f"{key} at {case.size_name}={size}")
                continue
            inp = inputs(key, size)
            own = sys_jax.build(key, "jit", size, inp)[1]
            tlj = build_tl_jax(key, size, inp, drive=False)
            drv = build_tl_jax(key, size, inp, drive=True)
            wrong = differences(flat(own()), [flat(tlj()), flat(drv())])
            if wrong:
                # recorded, not raised: a run on a lent machine still times the other rows
                row = (f"| {key} | {case.derivative} | {case.size_name}={size} | "
                       f"WRONG VALUES: {wrong} |")
                print(row, flush=True)
                rows.append(row)
                continue
            (t_own, t_tl, t_drv), rounds = timed_together((own, tlj, drv), args.repeats,
                                                          args.budget)
            row = (f"| {key} | {case.derivative} | {case.size_name}={size} | {1e3 * t_own:.3f} | "
                   f"{1e3 * t_tl:.3f} | {t_tl / t_own:.2f} | {1e3 * t_drv:.3f} | "
                   f"{t_drv / t_own:.2f} | {rounds} | {load_average():.1f} |")
            print(row, flush=True)
            rows.append(row)
    facts = [(k, v) for k, v in machine_facts() if k not in ("kernel cache", "Numba")]
    lines = ["# tensorlang via JAX against hand-written JAX",
             "",
             f"`{command}` on {datetime.date.today()}, took "
             f"{(time.perf_counter() - started) / 60:.1f} min; 1-minute load average "
             f"{load_start:.1f} at the start, {load_average():.1f} at the end.",
             "",
             "| machine | |", "|---|---|"]
    lines += [f"| {k} | {v} |" for k, v in facts]
    lines += [f"| JAX | jax {jax.__version__} on {jax.devices()[0].platform} "
              f"({len(jax.devices())} device(s)), float64 |",
              "",
              f"Protocol: each row's three calls (hand-written JAX under jax.jit, i.e. "
              f"benchmarks/peers/sys_jax.py; tensorlang's derivative emitted by tl.to_jax "
              f"under jax.jit; JAX's transform of tl.to_jax(f) under jax.jit) are checked "
              f"equal (1e-8), called once each to warm up, then timed in turn round after "
              f"round; median of {args.repeats} rounds, or of as many as fit in "
              f"{args.budget:g} s ('rounds'; then a call taking little of that time is made "
              f"several times a round, for {args.repeats} samples or more). 'load' is the "
              f"1-minute load average after the row. Ratios above 1 mean tensorlang via JAX "
              f"is slower.",
              "",
              "| case | derivative | size | hand-written JAX (ms) | tl derivative via to_jax "
              "(ms) | ratio | JAX driving to_jax(f) (ms) | ratio | rounds | load |",
              "|---|---|---|---|---|---|---|---|---|---|"]
    lines += rows
    if skipped:
        lines += ["", f"Not run (past the deadline of {args.deadline:g} s): "
                  + ", ".join(skipped) + "."]
    with open(args.out, "w") as fh:
        fh.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()

"""tensorlang via JAX against hand-written JAX, side by side in one process.

    python -m benchmarks.jax_backend [--sizes full|quick] [--only W1 W7a ...]

For each workload of benchmarks/peers the derivative row of tensorlang (tl.grad,
tl.hessian, tl.hvp of benchmarks/workloads/*.tl) is emitted as JAX code with
tl.to_jax and run under jax.jit; the JAX row is benchmarks/peers/sys_jax.py (the
idiomatic program, differentiated by JAX, under jax.jit).  A third row,
`jax.grad(tl.to_jax(f))`, lets JAX drive the differentiation of the emitted
forward program (its custom_jvp rules are tensorlang's derivatives).  Both are
checked against each other, then timed alternately (median of repeats).  The
results go to benchmarks/results/jax_backend.md.
"""
from __future__ import annotations

import argparse
import os
import platform
import time

os.environ.setdefault("JAX_ENABLE_X64", "1")

import numpy as np  # noqa: E402

from .peers import sys_jax, sys_tl  # noqa: E402
from .peers.spec import CASES, WRT, inputs  # noqa: E402

KEYS = ("W1", "W2", "W3", "W7a", "W7b", "W10a", "W11", "W12")


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


def timed(fn, repeats: int) -> float:
    fn()
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return float(np.median(times))


def timed_together(fns, repeats: int) -> list:
    """Median time of each of fns, called in turn round after round (the load of the
    shared machine then falls on all of them alike)."""
    for fn in fns:
        fn()
    times = [[] for _ in fns]
    for _ in range(repeats):
        for fn, ts in zip(fns, times):
            t = time.perf_counter()
            fn()
            ts.append(time.perf_counter() - t)
    return [float(np.median(ts)) for ts in times]


def flat(out):
    if isinstance(out, (tuple, list)):
        return [x for o in out for x in flat(o)]
    return [np.asarray(out)]


def main(argv=None) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", choices=("full", "quick"), default="quick")
    ap.add_argument("--only", nargs="*")
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--out", default="benchmarks/results/jax_backend.md")
    args = ap.parse_args(argv)
    import jax
    lines = ["# tensorlang via JAX against hand-written JAX",
             "",
             f"`python -m benchmarks.jax_backend --sizes {args.sizes}`; jax {jax.__version__} on "
             f"{jax.devices()[0].platform}, {platform.machine()}, {os.cpu_count()} cores; "
             f"median of {args.repeats} rounds after a warm-up, the three calls of a row "
             f"taken in turn each round.",
             "Ratios above 1 mean tensorlang via JAX is slower.",
             "",
             "| case | derivative | size | hand-written JAX (ms) | tl derivative via to_jax (ms) "
             "| ratio | JAX driving to_jax(f) (ms) | ratio |",
             "|---|---|---|---|---|---|---|---|"]
    for key in args.only or KEYS:
        case = CASES[key]
        for size in (case.full if args.sizes == "full" else case.quick):
            inp = inputs(key, size)
            own = sys_jax.build(key, "jit", size, inp)[1]
            tlj = build_tl_jax(key, size, inp, drive=False)
            drv = build_tl_jax(key, size, inp, drive=True)
            ref = flat(own())
            for other in (tlj, drv):
                got = flat(other())
                assert len(got) == len(ref), key
                for a, b in zip(ref, got):
                    np.testing.assert_allclose(np.reshape(b, np.shape(a)), a,
                                               rtol=1e-8, atol=1e-8)
            t_own, t_tl, t_drv = timed_together((own, tlj, drv), args.repeats)
            row = (f"| {key} | {case.derivative} | {case.size_name}={size} | {1e3 * t_own:.3f} | "
                   f"{1e3 * t_tl:.3f} | {t_tl / t_own:.2f} | {1e3 * t_drv:.3f} | "
                   f"{t_drv / t_own:.2f} |")
            print(row, flush=True)
            lines.append(row)
    with open(args.out, "w") as fh:
        fh.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()

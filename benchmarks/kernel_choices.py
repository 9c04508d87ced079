"""Kernel choices of the Numba backend, each switched off and on in one process: a
product under guards that bound an output index (blas.shifted_contraction's output
window), the order of a scatter pass's inner loops (kernels.unit_stride_innermost) and
a scatter over the rows taken into a row group (rows.is_scatter, added in place).

    NUMBA_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python -m benchmarks.kernel_choices [--quick]
        [--only NAME ...] [--programs]

For each program (two per choice: one of tests/newuser3_programs.py and one written
with other names and layout), the forward and the gradient with respect to every f64
parameter are built with the choice off ("before") and on ("after"), both checked
against the NumPy interpreter at the --quick sizes and against each other at the
measured ones, then all four timed alternately (warm calls, best of the rounds).
Prints a markdown table (wall times, and the ratios of the same calls' CPU times, which
a loaded machine disturbs less); `op ratio` is tl.cost(grad) / tl.cost(f) at the measured
sizes.  OPENBLAS_NUM_THREADS=1 keeps the NumPy calls on one thread too (a recurrence's
step products do not set OpenBLAS's thread count).  --programs times, with the backend
as it is, the gradients of newuser2/newuser3 programs whose gradient/forward exceeded
their op ratio (benchmarks/results/backend.md section 9), at large sizes.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np

import tensorlang as tl
from tensorlang.backend import blas, kernels, numba_module, rows
from tensorlang.backend.tiers import wait_for_builds

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

RELAX = """
def relax(M: f64[m, m], c: f64[m], z0: f64[m], eta: f64, zt: f64[m], S: f64[R]) -> f64:
    z[r: R, p: m] = [r == 0] * z0[p] + [r >= 1] * (z[r - 1, p] + eta * (c[p] - sum[q](M[q, p] * z[r - 1, q])))
    return sum[p](zt[p] * z[R - 1, p]) + 0.5 * sum[p](z[R - 1, p] ** 2)
"""

PAIRS = """
def pairs(E: f64[V, h], F: f64[W, h], who: i64[N], good: i64[N], cand: i64[C, N]) -> f64:
    sp[s] = sum[e](F[who[s], e] * E[good[s], e])
    sc[c, s] = sum[e](F[who[s], e] * E[cand[c, s], e])
    return sum[c, s](log(1.0 + exp(sc[c, s] - sp[s]))) / N
"""

WARP = """
def warp(I: f64[a, b], ya: i64[p], xa: i64[p], yb: i64[p], xb: i64[p], wy: f64[p], wx: f64[p], z: f64[p]) -> f64:
    val[n] = (1.0 - wx[n]) * ((1.0 - wy[n]) * I[xa[n], ya[n]] + wy[n] * I[xa[n], yb[n]]) + wx[n] * ((1.0 - wy[n]) * I[xb[n], ya[n]] + wy[n] * I[xb[n], yb[n]])
    return sum[n](z[n] * val[n]) + 0.5 * sum[n](val[n] ** 2)
"""


def _without_row_scatters(build):
    """`build()` with no scatter in a row group (the backend before)."""
    saved = rows.is_scatter
    rows.is_scatter = lambda st: False
    try:
        return build()
    finally:
        rows.is_scatter = saved


def _without_output_windows(build):
    """`build()` with products whose guards bound an output index left to loop kernels
    (the backend before the output window)."""
    saved = blas.shifted_contraction

    def no_output_window(s, shapes, facts):
        found = saved(s, shapes, facts)
        return None if found is None or found[2] is not None else found
    blas.shifted_contraction = numba_module.shifted_contraction = no_output_window
    try:
        return build()
    finally:
        blas.shifted_contraction = numba_module.shifted_contraction = saved


def _without_pass_order(build):
    """`build()` with a scatter pass's inner loops in the plan's order and every gathered
    position computed inside the innermost loop (the backend before): the pass asks for
    the loops after its solved generators, fewer than the term's loops, while a lone
    scatter term (scatter_order) asks for all of them."""
    saved = kernels.unit_stride_innermost, kernels.KernelWriter.hoisted

    def plan_order(tp, loops, last_generator):
        return None if len(loops) < len(tp.loops) else saved[0](tp, loops, last_generator)
    kernels.unit_stride_innermost = plan_order
    kernels.KernelWriter.hoisted = lambda *args: False
    try:
        return build()
    finally:
        kernels.unit_stride_innermost, kernels.KernelWriter.hoisted = saved


def _metagd(quick):
    from newuser3_programs import PROGRAMS
    from test_newuser_programs import function
    n, T = (300, 40) if quick else (1000, 100)
    rng = np.random.default_rng(0)
    args = dict(A=0.05 * np.eye(n) + 0.02 / np.sqrt(n) * rng.standard_normal((n, n)),
                b=rng.standard_normal(n), x0=rng.standard_normal(n), lr=0.3,
                xs=rng.standard_normal(n), T1=np.zeros(T))
    return function("metagd", PROGRAMS), args, dict(n=n, T=T)


def _relax(quick):
    m, R = (300, 40) if quick else (1000, 100)
    rng = np.random.default_rng(1)
    args = dict(M=0.05 * np.eye(m) + 0.02 / np.sqrt(m) * rng.standard_normal((m, m)),
                c=rng.standard_normal(m), z0=rng.standard_normal(m), eta=0.3,
                zt=rng.standard_normal(m), S=np.zeros(R))
    return tl.parse(RELAX)["relax"], args, dict(m=m, R=R)


def _bpr(quick):
    from newuser3_programs import PROGRAMS
    from test_newuser_programs import function
    U, I, d, B, K = (2000, 4000, 32, 20000, 5) if quick else (20000, 50000, 64, 200000, 10)
    rng = np.random.default_rng(2)
    args = dict(P=0.1 * rng.standard_normal((U, d)), Q=0.1 * rng.standard_normal((I, d)),
                us=rng.integers(0, U, B), pos=rng.integers(0, I, B), neg=rng.integers(0, I, (B, K)))
    return function("bpr", PROGRAMS), args, dict(U=U, I=I, d=d, B=B, K=K)


def _pairs(quick):
    V, W, h, N, C = (4000, 2000, 32, 20000, 5) if quick else (50000, 20000, 64, 200000, 10)
    rng = np.random.default_rng(3)
    args = dict(E=0.1 * rng.standard_normal((V, h)), F=0.1 * rng.standard_normal((W, h)),
                who=rng.integers(0, W, N), good=rng.integers(0, V, N),
                cand=rng.integers(0, V, (C, N)))
    return tl.parse(PAIRS)["pairs"], args, dict(V=V, W=W, h=h, N=N, C=C)


def _interp(quick):
    from newuser2_programs import PROGRAMS, _interp_inputs
    from test_newuser_programs import function
    sizes = dict(h=30, w=30, q=3000) if quick else dict(h=300, w=300, q=2000000)
    return function("interp", PROGRAMS), _interp_inputs(np.random.default_rng(4), **sizes), sizes


def _warp(quick):
    sizes = dict(a=40, b=25, p=3000) if quick else dict(a=400, b=250, p=2000000)
    rng = np.random.default_rng(5)
    xa, ya = rng.integers(0, sizes["a"] - 1, sizes["p"]), rng.integers(0, sizes["b"] - 1, sizes["p"])
    args = dict(I=rng.standard_normal((sizes["a"], sizes["b"])), ya=ya, xa=xa, yb=ya + 1, xb=xa + 1,
                wy=rng.random(sizes["p"]), wx=rng.random(sizes["p"]), z=rng.standard_normal(sizes["p"]))
    return tl.parse(WARP)["warp"], args, sizes


CASES = [("output window", "metagd", _metagd, _without_output_windows),
         ("output window", "relax", _relax, _without_output_windows),
         ("scatter pass order", "bpr", _bpr, _without_pass_order),
         ("scatter pass order", "pairs", _pairs, _without_pass_order),
         ("scatter in a row group", "interp", _interp, _without_row_scatters),
         ("scatter in a row group", "warp", _warp, _without_row_scatters)]


def _large(name, sizes, adjust=None):
    def make(quick):
        from test_newuser_programs import function
        import newuser2_programs
        import newuser3_programs
        programs = (newuser2_programs.PROGRAMS if name in newuser2_programs.PROGRAMS
                    else newuser3_programs.PROGRAMS)
        entry = programs[name]
        at = entry["sizes"] if quick else sizes
        args = entry["make"](np.random.default_rng(0), **at)
        return function(name, programs), adjust(args) if adjust else args, at
    return make


def _stable(args):
    """A rollout's matrix scaled to spectral radius 0.9 (the test file's I + 0.1 noise
    overflows over thousands of steps)."""
    A = args["A"]
    return {**args, "A": 0.9 * A / np.max(np.abs(np.linalg.eigvals(A)))}


# Programs whose gradient/forward exceeded their op ratio, at the sizes measured.
PROGRAMS = [("interp", dict(h=300, w=300, q=200000), None),
            ("interp", dict(h=300, w=300, q=2000000), None),
            ("soft_lcs", dict(n=300, m=300, d=8), None),
            ("option", dict(N=1000), None),
            ("kgreach", dict(ne=2000, nr=8, d=16, B=500), None),
            ("dirmult", dict(b=20000, K=50, M=64), None),
            ("mpc", dict(n=64, m=16, T=2000), _stable)]

# a reduction of reductions whose gradient scatters into the entity table per query
CASES.append(("scatter in a row group", "kgreach", _large(*PROGRAMS[4]), _without_row_scatters))


def _close(got, want):
    for x, y in zip(got if isinstance(got, tuple) else (got,),
                    want if isinstance(want, tuple) else (want,)):
        assert np.allclose(x, y, rtol=1e-9, atol=1e-12), np.max(np.abs(np.asarray(x) - y))


def _sizes_text(sizes):
    return ", ".join(f"{k} = {v:,}" for k, v in sizes.items())


def _gradient(f):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", tl.TLCostWarning)
        return tl.grad(f, wrt=tuple(p.name for p in f.program.params if p.elem == "f64"))


def _op_ratio(f, g, sizes):
    return tl.cost(g).evaluate(**sizes) / tl.cost(f).evaluate(**sizes)


def builder(f, g, args):
    """A function that compiles f and g on the Numba backend, loads them (called once on
    `args`, background builds waited for) and returns them: called again under a switch,
    it builds the other form."""
    def build():
        fns = (f.compile("numba"), g.compile("numba"))
        for fn in fns:
            fn(**args)                         # generate, compile and load now
        wait_for_builds()
        return fns
    return build


def measure(make, switch, quick, rounds):
    """Sizes text, op ratio and best times in seconds: forward and gradient, before and
    after (with `switch` None, the backend as it is, once)."""
    f, args, sizes = make(quick)
    g = _gradient(f)
    build = builder(f, g, args)
    after = build()
    before = switch(build) if switch else after
    small = make(True)[1]                      # the interpreter's sizes
    for fn, side in ((f, 0), (g, 1)):
        want = fn.compile("numpy")(**small)
        _close(before[side](**small), want)
        _close(after[side](**small), want)
    _close(after[1](**args), before[1](**args))
    calls = {"after fwd": after[0], "after grad": after[1]}
    if switch:
        calls.update({"before fwd": before[0], "before grad": before[1]})
    times = {k: [] for k in calls}
    cpu = {k: [] for k in calls}
    for _ in range(rounds):                     # alternate, so all see the same load
        for k, fn in calls.items():
            tic, cpu_tic = time.perf_counter(), time.thread_time()
            fn(**args)
            times[k].append(time.perf_counter() - tic)
            cpu[k].append(time.thread_time() - cpu_tic)
    best = {k: min(v) for k, v in times.items()}
    best.update({f"{k} cpu": min(v) for k, v in cpu.items()})
    return _sizes_text(sizes), _op_ratio(f, g, sizes), best


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--only", nargs="*", help="programs to measure (default: all)")
    ap.add_argument("--programs", action="store_true",
                    help="time the gradients of section 9's programs instead of the choices")
    a = ap.parse_args(argv)
    print(f"NUMBA_NUM_THREADS={os.environ.get('NUMBA_NUM_THREADS', '(unset)')}, "
          f"OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS', '(unset)')}, "
          f"load average {os.getloadavg()[0]:.2f}; best of {a.rounds} alternating warm calls\n")
    if a.programs:
        print("| program | sizes | forward | gradient | grad/fwd | grad/fwd, CPU time | op ratio |")
        print("|---|---|---|---|---|---|---|")
        for name, sizes, adjust in PROGRAMS:
            if a.only and name not in a.only:
                continue
            text, ratio, t = measure(_large(name, sizes, adjust), None, a.quick, a.rounds)
            print(f"| {name} | {text} | {t['after fwd'] * 1e3:.2f} ms | {t['after grad'] * 1e3:.2f} ms | "
                  f"{t['after grad'] / t['after fwd']:.2f} | "
                  f"{t['after grad cpu'] / t['after fwd cpu']:.2f} | {ratio:.2f} |", flush=True)
        return
    print("| choice | program | sizes | forward before / after | gradient before | "
          "gradient after | grad/fwd before | grad/fwd after | the same, CPU time | op ratio |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for choice, name, make, switch in CASES:
        if a.only and name not in a.only:
            continue
        sizes, ratio, t = measure(make, switch, a.quick, a.rounds)
        ms = {k: v * 1e3 for k, v in t.items()}
        print(f"| {choice} | {name} | {sizes} | {ms['before fwd']:.2f} / {ms['after fwd']:.2f} ms | "
              f"{ms['before grad']:.1f} ms | {ms['after grad']:.1f} ms | "
              f"{t['before grad'] / t['before fwd']:.1f} | {t['after grad'] / t['after fwd']:.1f} | "
              f"{t['before grad cpu'] / t['before fwd cpu']:.1f} / "
              f"{t['after grad cpu'] / t['after fwd cpu']:.1f} | {ratio:.2f} |", flush=True)


if __name__ == "__main__":
    main()

"""Inner sum loops with one running sum against 4 partial sums, side by side in one process.

    python -m benchmarks.reduction_unroll            # writes results/reduction_unroll.md
    python -m benchmarks.reduction_unroll --quick    # smaller, prints only

The Numba kernels add an inner sum's points into 4 partial sums (`kernels.UNROLL`);
``TENSORLANG_UNROLL=1`` keeps one chain of additions.  The width is read when a module is
generated and is part of its text, so one process builds both forms of every function
(`f.compile("numba")` once under each setting) and alternates their calls: every round
times `reps` calls of each form and keeps each form's fastest, and each row reports the
medians of those over rounds and the median of the per-round ratios (one chain / partial
sums: above 1 is faster with partial sums).  The fastest call of a round is the one least
disturbed by other work on a shared machine, and by the thread policy's trials.  Each thread setting runs in a child process (``NUMBA_NUM_THREADS`` must be set
before Numba starts); the load average is recorded with each child.  Every pair of
results is checked to agree (relative 1e-9) before timing.

Cases: sums written directly (a squared distance and a 3-factor dot, 10^3..10^7 points;
a plain dot, which the driver hands to BLAS, as a control; a row sum of 16 rows), and
forward and gradient of six programs of tests/newuser_programs.py at larger sizes.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"

SOURCE = """
def dot(a: f64[n], b: f64[n]) -> f64:
    return sum[i](a[i] * b[i])

def sqdist(a: f64[n], b: f64[n]) -> f64:
    return sum[i]((a[i] - b[i]) ** 2)

def dot3(a: f64[n], b: f64[n], c: f64[n]) -> f64:
    return sum[i](a[i] * b[i] * c[i])

def rowsum(A: f64[r, n]) -> f64[r]:
    s[i] = sum[j](A[i, j])
    return s
"""

# (program, sizes) at benchmark scale; the programs' test sizes are a few elements
PROGRAMS = [
    ("horner_fit", dict(k=8, n=1_000_000)),
    ("coulomb", dict(n=1500, d=3)),
    ("svm", dict(b=20_000, k=100)),
    ("crf", dict(T=5000, K=32)),
    ("soft_edit", dict(n=600, m=600)),
    ("kalman", dict(T=1_000_000)),
]
QUICK_PROGRAMS = [("horner_fit", dict(k=8, n=100_000)), ("coulomb", dict(n=400, d=3)),
                  ("kalman", dict(T=100_000))]


def cases(quick: bool):
    """(label, size text, function, inputs) of every case."""
    import tensorlang as tl
    sys.path.insert(0, str(ROOT / "tests"))
    from newuser_programs import PROGRAMS as NEWUSER

    mod = tl.parse(SOURCE)
    rng = np.random.default_rng(0)
    sizes = [10**3, 10**5] if quick else [10**3, 10**4, 10**5, 10**6, 10**7]
    for n in sizes:
        a, b, c = (rng.standard_normal(n) for _ in range(3))
        yield "dot (BLAS, control)", f"n={n}", mod["dot"], dict(a=a, b=b)
        yield "squared distance", f"n={n}", mod["sqdist"], dict(a=a, b=b)
        yield "3-factor dot", f"n={n}", mod["dot3"], dict(a=a, b=b, c=c)
        yield "row sum, 16 rows", f"16 x {n // 16}", mod["rowsum"], dict(
            A=rng.standard_normal((16, n // 16)))
    for name, size in (QUICK_PROGRAMS if quick else PROGRAMS):
        entry = NEWUSER[name]
        f = tl.parse(entry["src"])[name]
        inputs = entry["make"](np.random.default_rng(1), **size)
        text = " ".join(f"{k}={v}" for k, v in size.items())
        yield f"{name} forward", text, f, inputs
        wrt = tuple(p.name for p in f.program.params if p.elem == "f64")
        yield f"{name} gradient", text, tl.grad(f, wrt=wrt), inputs


def build(fn, inputs: dict, width: int):
    """`fn` compiled with `width` partial sums (1: one chain), and its first result:
    the module is generated (and the width read) at the first call."""
    os.environ["TENSORLANG_UNROLL"] = str(width)
    try:
        g = fn.compile("numba")
        return g, g(**inputs)
    finally:
        del os.environ["TENSORLANG_UNROLL"]


def flat(x) -> np.ndarray:
    if isinstance(x, tuple):
        return np.concatenate([flat(v) for v in x])
    return np.ravel(np.asarray(x, dtype=float))


def child(quick: bool) -> None:
    from tensorlang.backend.background import wait_for_background
    rounds = 5 if quick else 11
    for label, size, fn, inputs in cases(quick):
        chain, want = build(fn, inputs, 1)
        parts, got = build(fn, inputs, 4)
        for _ in range(3):                 # background twins, thread choices
            wait_for_background()
            chain(**inputs)
            parts(**inputs)
        want, got = flat(want), flat(got)
        scale = np.max(np.abs(want)) if want.size else 1.0
        assert np.allclose(got, want, rtol=1e-9, atol=1e-9 * scale), (label, size)
        tic = time.perf_counter()
        chain(**inputs)
        reps = max(3, min(200, int(0.05 / max(time.perf_counter() - tic, 1e-7))))
        t_chain, t_parts, ratio = [], [], []
        for _ in range(rounds):
            per = []
            for g in (chain, parts):
                ts = []
                for _ in range(reps):
                    tic = time.perf_counter()
                    g(**inputs)
                    ts.append(time.perf_counter() - tic)
                per.append(min(ts))
            t_chain.append(per[0])
            t_parts.append(per[1])
            ratio.append(per[0] / per[1])
        print(json.dumps(dict(case=label, size=size, chain=statistics.median(t_chain),
                              parts=statistics.median(t_parts),
                              ratio=statistics.median(ratio))), flush=True)


def run_child(threads: str | None, quick: bool) -> tuple[list, str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("TENSORLANG_UNROLL", None)
    if threads is not None:
        env["NUMBA_NUM_THREADS"] = threads
    load = " / ".join(f"{x:.2f}" for x in os.getloadavg())
    cmd = [sys.executable, "-m", "benchmarks.reduction_unroll", "--child"]
    if quick:
        cmd.append("--quick")
    out = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=7200)
    if out.returncode:
        raise RuntimeError(out.stderr[-3000:])
    rows = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    load += " -> " + " / ".join(f"{x:.2f}" for x in os.getloadavg())
    return rows, load


def table(rows: list, grads: bool) -> list[str]:
    lines = ["| case | sizes | one chain ms | 4 partial sums ms | ratio |",
             "|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['case']} | {r['size']} | {r['chain'] * 1e3:.3f} | "
                     f"{r['parts'] * 1e3:.3f} | {r['ratio']:.2f} |")
    if grads:
        lines += ["", "| program | grad / fwd, one chain | grad / fwd, partial sums |",
                  "|---|---|---|"]
        by = {r["case"]: r for r in rows}
        for name in dict.fromkeys(r["case"].rsplit(" ", 1)[0] for r in rows
                                  if r["case"].endswith(" gradient")):
            f, g = by[f"{name} forward"], by[f"{name} gradient"]
            lines.append(f"| {name} | {g['chain'] / f['chain']:.2f} | "
                         f"{g['parts'] / f['parts']:.2f} |")
    return lines


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--child", action="store_true")
    a = ap.parse_args(argv)
    if a.child:
        child(a.quick)
        return 0
    out = ["# Inner sums: one running sum against 4 partial sums", "",
           f"`python -m benchmarks.reduction_unroll`, {datetime.date.today()}, "
           f"{platform.machine()} / Python {platform.python_version()}, "
           f"{os.cpu_count()} cores (shared with other work: compare ratios, not times). "
           "Warm calls; per case the median over alternated rounds of each form's fastest "
           "call in the round, and the median of the per-round ratios one chain / partial "
           "sums (above 1: partial sums faster).", ""]
    for threads, title in (("1", "One thread (NUMBA_NUM_THREADS=1)"),
                           (None, f"Default threads ({os.cpu_count()})")):
        rows, load = run_child(threads, a.quick)
        out += [f"## {title}", "", f"Load average (1 / 5 / 15 min) before -> after: {load}", ""]
        out += table(rows, grads=True) + [""]
        print("\n".join(out[-(len(rows) + 12):]), flush=True)
    if not a.quick:
        RESULTS.mkdir(exist_ok=True)
        (RESULTS / "reduction_unroll.md").write_text("\n".join(out) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""max / logsumexp reductions: tensorlang's compiled kernels against NumPy and SciPy.

    python -m benchmarks.reductions            # writes results/reductions.md
    python -m benchmarks.reductions --quick    # smaller, prints only

Row reductions of a b x k matrix and the softmax cross-entropy gradient, float64, one process:
tensorlang `f.compile("numba")` (warm: compiled before timing), SciPy's
`scipy.special.logsumexp(axis=1)`, and NumPy written by hand (the max-shifted two-pass
formula; `np.max(axis=1)`; the gradient `(softmax(Z) - onehot(y)) / b`). The systems'
calls alternate within every round and each time is the median over rounds, so a noisy
moment hits all of them. Every result is checked against NumPy first.
"""
from __future__ import annotations

import argparse
import datetime
import platform
import statistics
import time
from pathlib import Path

import numpy as np
import scipy.special

import tensorlang as tl

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"

SOURCE = """
def rowlse(Z: f64[b, k]) -> f64[b]:
    r[s] = logsumexp[c](Z[s, c])
    return r

def rowmax(Z: f64[b, k]) -> f64[b]:
    r[s] = max[c](Z[s, c])
    return r

def xent(Z: f64[b, k], y: i64[b]) -> f64:
    lse[s] = logsumexp[c](Z[s, c])
    return sum[s](lse[s] - Z[s, y[s]]) / b
"""


def numpy_lse(Z):
    m = Z.max(axis=1, keepdims=True)
    return np.log(np.exp(Z - m).sum(axis=1)) + m[:, 0]


def numpy_xent_grad(Z, y):
    m = Z.max(axis=1, keepdims=True)
    e = np.exp(Z - m)
    p = e / e.sum(axis=1, keepdims=True)
    p[np.arange(len(y)), y] -= 1.0
    return p / len(y)


def timed(fn) -> float:
    """Seconds of one call (the rounds alternate the systems outside)."""
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def run(b: int, k: int, rounds: int) -> list[tuple]:
    mod = tl.parse(SOURCE, "reductions.tl")
    rng = np.random.default_rng(0)
    Z = rng.standard_normal((b, k)) * 30.0
    y = rng.integers(0, k, size=b)
    lse = mod.rowlse.compile("numba")
    rowmax = mod.rowmax.compile("numba")
    grad = tl.grad(mod.xent, wrt="Z").compile("numba")
    # checked first (and compiled: the first calls also build the kernels)
    assert np.allclose(lse(Z), scipy.special.logsumexp(Z, axis=1), rtol=1e-13)
    assert np.array_equal(rowmax(Z), Z.max(axis=1))
    assert np.allclose(grad(Z, y), numpy_xent_grad(Z, y), rtol=1e-10, atol=1e-15)
    cases = {
        "logsumexp rows": {"tensorlang": lambda: lse(Z),
                           "scipy": lambda: scipy.special.logsumexp(Z, axis=1),
                           "numpy (max-shifted)": lambda: numpy_lse(Z)},
        "max rows": {"tensorlang": lambda: rowmax(Z), "numpy": lambda: Z.max(axis=1)},
        "xent gradient": {"tensorlang": lambda: grad(Z, y),
                          "numpy (by hand)": lambda: numpy_xent_grad(Z, y)},
    }
    rows = []
    for case, systems in cases.items():
        samples = {name: [] for name in systems}
        for _ in range(rounds):
            for name, fn in systems.items():
                samples[name].append(timed(fn))
        med = {name: statistics.median(v) for name, v in samples.items()}
        base = med["tensorlang"]
        for name, t in med.items():
            rows.append((case, f"{b} x {k}", name, t * 1e3, t / base))
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args(argv)
    sizes = [(256, 100)] if args.quick else [(512, 100), (4096, 1000)]
    rounds = 5 if args.quick else 15
    rows = []
    for b, k in sizes:
        rows += run(b, k, rounds)
    lines = ["| case | b x k | system | median ms | time / tensorlang |", "|---|---|---|---|---|"]
    for case, size, name, ms, ratio in rows:
        lines.append(f"| {case} | {size} | {name} | {ms:.3f} | {ratio:.2f} |")
    table = "\n".join(lines)
    print(table)
    if args.quick:
        return
    head = (f"# Reductions: tensorlang against NumPy and SciPy\n\n"
            f"`python -m benchmarks.reductions`, {datetime.date.today()}, "
            f"{platform.machine()} / Python {platform.python_version()}; warm times, medians "
            f"of {rounds} alternated rounds in one process (a shared, noisy machine: ratios, "
            f"not absolute times). Inputs: standard normal logits times 30 (a naive "
            f"log(sum(exp)) overflows on them).\n\n")
    (RESULTS / "reductions.md").write_text(head + table + "\n")


if __name__ == "__main__":
    main()

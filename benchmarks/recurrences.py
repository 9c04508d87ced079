"""Recurrences against hand-written NumPy loops, measured side by side in one process.

    python -m benchmarks.recurrences            # writes benchmarks/results/recurrences.md
    python -m benchmarks.recurrences --quick    # smaller sizes, fewer repeats, prints only

Rows: the tanh RNN of examples/rnn.tl (forward, and the gradient with respect to W
against back-propagation through time written by hand), the discounted returns of
examples/returns.tl (a backward recurrence) and the running sum of examples/cumsum.tl.
Both sides are warmed up (kernels compiled and cached), then timed alternately; each
keeps its best time.  The machine is shared: read the ratios, not the times.
"""
from __future__ import annotations

import argparse
import datetime
import os
import platform
import time
from pathlib import Path

import numpy as np

import tensorlang as tl
from tensorlang.backend.tiers import wait_for_builds
from benchmarks.peers.spec import _w13_d as _peer_rnn_grad, _w13_f as _peer_rnn_forward

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "benchmarks" / "results" / "recurrences.md"


# The hand-written NumPy RNN (forward loop, back-propagation through time) is the peer
# benchmark's W13 reference, kept in one place.
rnn_forward = _peer_rnn_forward


def rnn_grad_W(x, W, h0):
    return _peer_rnn_grad(x, W, h0)[0]


def returns_loop(r, g):
    out, acc = np.empty(len(r)), 0.0
    for t in range(len(r) - 1, -1, -1):
        acc = r[t] + g * acc
        out[t] = acc
    return out


def _jax_rnn_grad(x, W, h0):
    """The peer benchmark's JAX gradient (benchmarks/peers, W13) on these inputs, or None
    without JAX."""
    import importlib.util
    if importlib.util.find_spec("jax") is None:
        return None
    os.environ.setdefault("JAX_ENABLE_X64", "1")
    from benchmarks.peers import sys_jax
    _, d = sys_jax.build("W13", "jit", len(h0), dict(x=x, W=W, h0=h0))
    assert np.allclose(np.asarray(d()), rnn_grad_W(x, W, h0), rtol=1e-8, atol=1e-10)
    return d


def best(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def side_by_side(ours, theirs, repeats: int) -> tuple[float, float]:
    ours(), theirs()                           # compile / warm up
    wait_for_builds()                          # warm times are the compiled kernels', not
                                               # the interpreter's that answer meanwhile
    a, b = [], []
    for _ in range(repeats):                   # alternate, so both see the same load
        a.append(best(ours, 1))
        b.append(best(theirs, 1))
    return min(a), min(b)


def report(title: str, module: str, quick: bool, repeats: int, rows, out: Path) -> None:
    """Print the table of `rows` (program, compared with, ours, theirs in seconds) and,
    unless `quick`, write it to `out`."""
    lines = [f"# {title}", "",
             f"`python -m benchmarks.{module}{' --quick' if quick else ''}`, "
             f"{datetime.date.today()}, {platform.processor() or platform.machine()}, "
             f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}. Warm times, the best of "
             f"{repeats} alternating runs; ratio = tensorlang / the other.", "",
             "| program | compared with | tensorlang | other | ratio |", "|---|---|---|---|---|"]
    for what, other, ours, theirs in rows:
        lines.append(f"| {what} | {other} | {ours * 1e3:.2f} ms | {theirs * 1e3:.2f} ms | "
                     f"{ours / theirs:.2f} |")
    text = "\n".join(lines) + "\n"
    print(text)
    if not quick:
        out.write_text(text)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args(argv)
    repeats = 3 if args.quick else 7
    T, d = (200, 64) if args.quick else (1000, 256)
    n = 10_000 if args.quick else 1_000_000
    rng = np.random.default_rng(0)
    x = rng.standard_normal((T, d))
    W = rng.standard_normal((d, d)) / np.sqrt(d)
    h0 = rng.standard_normal(d)
    rnn = tl.load(ROOT / "examples" / "rnn.tl").rnn_loss
    grad = tl.grad(rnn, wrt="W")
    assert np.isclose(rnn(x, W, h0), rnn_forward(x, W, h0), rtol=1e-10)
    assert np.allclose(grad(x, W, h0), rnn_grad_W(x, W, h0), rtol=1e-8, atol=1e-10)
    r = rng.standard_normal(n)
    returns = tl.load(ROOT / "examples" / "returns.tl").returns
    cumsum = tl.load(ROOT / "examples" / "cumsum.tl").cumsum
    assert np.allclose(returns(r, 0.99), returns_loop(r, 0.99))
    rows = [
        (f"RNN forward (T={T}, d={d})", "NumPy loop, `W @ h` per step",
         *side_by_side(lambda: rnn(x, W, h0), lambda: rnn_forward(x, W, h0), repeats)),
        (f"RNN gradient wrt W (T={T}, d={d})", "hand-written BPTT in NumPy",
         *side_by_side(lambda: grad(x, W, h0), lambda: rnn_grad_W(x, W, h0), repeats)),
    ]
    jax_grad = _jax_rnn_grad(x, W, h0)
    if jax_grad is not None:
        rows.append((f"RNN gradient wrt W (T={T}, d={d})", "JAX: `jax.grad` of a `lax.scan`, jit",
                     *side_by_side(lambda: grad(x, W, h0), jax_grad, repeats)))
    rows += [
        (f"discounted returns (T={n})", "Python loop",
         *side_by_side(lambda: returns(r, 0.99), lambda: returns_loop(r, 0.99), repeats)),
        (f"cumsum (n={n})", "`np.cumsum`",
         *side_by_side(lambda: cumsum(r), lambda: np.cumsum(r), repeats)),
    ]
    report("Recurrences against hand-written loops", "recurrences", args.quick, repeats, rows, OUT)

if __name__ == "__main__":
    main()

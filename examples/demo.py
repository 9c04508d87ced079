"""A short tour of tensorlang: run a few example programs, show an error, and
(where available) take a derivative and a cost.

Run it with `make demo`, or `python examples/demo.py` once the package is installed.
"""
from __future__ import annotations

import time
from pathlib import Path

import numpy as np

import tensorlang as tl

HERE = Path(__file__).resolve().parent


def load(name):
    return tl.load(str(HERE / name))


def blur_reference(img):
    p = np.pad(img, ((0, 0), (1, 1)))
    bx = 0.25 * (p[:, :-2] + 2.0 * p[:, 1:-1] + p[:, 2:])
    p = np.pad(bx, ((1, 1), (0, 0)))
    return 0.25 * (p[:-2, :] + 2.0 * p[1:-1, :] + p[2:, :])


def main() -> None:
    rng = np.random.default_rng(0)
    n, h, w, b, d, k = 200, 120, 90, 256, 32, 10

    x = rng.standard_normal(n)
    A = rng.standard_normal((n, n))
    img = rng.standard_normal((h, w))
    X = rng.standard_normal((b, d))
    W = rng.standard_normal((d, k))
    y = rng.integers(0, k, size=b)
    Z = rng.standard_normal((b, k))

    qform = load("qform.tl")
    trace_sum = load("trace_sum.tl")
    blur = load("blur.tl")
    fd = load("fd_energy.tl")
    mlp = load("mlp.tl")
    softmax = load("softmax.tl")

    rows = [
        ("qform.tl", "qform", f"n={n}",
         lambda: qform.qform(x=x, A=A), lambda: x @ A @ x),
        ("trace_sum.tl", "trace_sum", f"n={n}",
         lambda: trace_sum.trace_sum(A=A), lambda: 10 * np.trace(A)),
        ("blur.tl", "blur_energy", f"{h}x{w}",
         lambda: blur.blur_energy(img=img), lambda: np.sum(blur_reference(img) ** 2)),
        ("fd_energy.tl", "fd_energy", f"n={n}",
         lambda: fd.fd_energy(x=x), lambda: np.sum(np.diff(x) ** 2)),
        ("mlp.tl", "mlp_loss", f"b={b} d={d} k={k}",
         lambda: mlp.mlp_loss(X=X, W=W, y=y),
         lambda: np.mean((np.maximum(X @ W, 0.0)[np.arange(b), y] - 1.0) ** 2)),
        ("softmax.tl", "xent", f"b={b} k={k}",
         lambda: softmax.xent(Z=Z, y=y),
         lambda: np.mean(np.log(np.exp(Z).sum(1)) - Z[np.arange(b), y])),
    ]

    print("tensorlang examples against NumPy (float64, seeded inputs)\n")
    header = f"{'file':<14}{'function':<12}{'sizes':<18}{'tensorlang':>16}{'numpy':>16}{'|diff|':>10}{'first call':>12}{'again':>10}"
    print(header)
    print("-" * len(header))
    for filename, func, sizes, ours, theirs in rows:
        t0 = time.perf_counter()
        got = ours()
        t1 = time.perf_counter()
        ours()
        t2 = time.perf_counter()
        want = float(theirs())
        print(f"{filename:<14}{func:<12}{sizes:<18}{got:>16.8g}{want:>16.8g}"
              f"{abs(got - want):>10.1e}{(t1 - t0) * 1e3:>10.1f}ms{(t2 - t1) * 1e3:>8.2f}ms")
    print("\n(the first call includes any kernel compilation; 'again' is a warm call)")

    # -- what a mistake looks like -------------------------------------------
    bad_source = (
        "def slope(x: f64[n]) -> f64[n]:\n"
        "    d[i] = x[i + 1] - x[i]\n"
        "    return d\n"
    )
    print("\nA program that reads past the end of x is rejected before it runs:\n")
    print("    " + bad_source.replace("\n", "\n    ").rstrip() + "\n")
    try:
        tl.parse(bad_source, filename="bad.tl")
        print("(unexpectedly accepted)")
    except tl.TLError as e:
        print(e)

    # -- derivatives and cost --------------------------------------------------
    print()
    if not hasattr(tl, "grad"):
        print("derivatives: not in this build yet (tl.grad is missing), skipped")
    else:
        try:
            dq = tl.grad(qform.qform, wrt="x")
            g = np.asarray(dq(x=x, A=A))
            ref = (A + A.T) @ x
            print(f"grad of qform wrt x vs (A + A.T) @ x:  max |diff| = {np.max(np.abs(g - ref)):.1e}")
            print("derivative program:\n")
            print("    " + dq.source.strip().replace("\n", "\n    "))
        except NotImplementedError as e:
            print(f"derivatives: not finished yet ({e}), skipped")
    if not hasattr(tl, "cost"):
        print("cost: not in this build yet (tl.cost is missing), skipped")
    else:
        try:
            print(f"\ncost of qform:          {tl.cost(qform.qform)}")
            if hasattr(tl, "grad"):
                print(f"cost of its gradient:   {tl.cost(tl.grad(qform.qform, wrt='x'))}")
        except NotImplementedError as e:
            print(f"cost: not finished yet ({e}), skipped")


if __name__ == "__main__":
    main()

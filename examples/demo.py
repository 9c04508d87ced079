"""A short tour of tensorlang: run a few example programs, show an error, take
derivatives, and compare the cost of optimized and naive derivatives.

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
    dq = tl.grad(qform.qform, wrt="x")
    g = np.asarray(dq(x=x, A=A))
    print(f"\ngrad of qform wrt x vs (A + A.T) @ x:  max |diff| = "
          f"{np.max(np.abs(g - (A + A.T) @ x)):.1e}")
    print("the derivative is itself a .tl program:\n")
    print("    " + dq.source.strip().replace("\n", "\n    "))

    print("\nTrace sum: k copies of trace(A) added up, gradient with respect to A.")
    print("Cost polynomials count scalar operations (tl.cost); naive = plain transposition.\n")
    print(f"{'copies':>6}  {'forward':<12}{'optimized gradient':<22}{'naive gradient':<28}")
    names = "ijpqrstuvw"
    for copies in (1, 2, 4, 10):
        terms = " + ".join(f"sum[{c}](A[{c}, {c}])" for c in names[:copies])
        f = tl.parse(f"def tr(A: f64[n, n]) -> f64:\n    return {terms}\n")["tr"]
        opt = tl.grad(f, wrt="A")
        naive = tl.grad(f, wrt="A", optimize=False)
        assert np.array_equal(opt(A), copies * np.eye(n))
        print(f"{copies:>6}  {str(tl.cost(f)):<12}{str(tl.cost(opt)):<22}"
              f"{str(tl.cost(naive, optimize=False)):<28}")

    print("\nHessian of the quadratic form x^T A x (one-hot seeds, then bracket elimination):\n")
    H = tl.hessian(qform.qform, wrt="x")
    Hn = tl.hessian(qform.qform, wrt="x", optimize=False)
    print("    " + H.source.strip().replace("\n", "\n    "))
    print(f"\n    max |H - (A + A.T)| = {np.max(np.abs(H(x=x, A=A) - (A + A.T))):.1e}")
    print(f"    cost optimized: {tl.cost(H)}    naive: {tl.cost(Hn, optimize=False)}")
    print(f"    at n = {n}: {tl.cost(H).evaluate(n=n):,} operations instead of "
          f"{tl.cost(Hn, optimize=False).evaluate(n=n):,}")


if __name__ == "__main__":
    main()

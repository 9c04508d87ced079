"""A gradient with and without its label checks, side by side on the Numba backend
(interleaved calls, medians), for benchmarks/results/label_checks.md.  Run from the
repository root."""
import sys
import time

import numpy as np

sys.path.insert(0, "tests")
import tensorlang as tl  # noqa: E402
from tensorlang.api import _derived  # noqa: E402
from tensorlang.opt.simplify import remove_dead_statements  # noqa: E402
from suite_programs import CASES  # noqa: E402

REPEATS = 15


def without_checks(g):
    """g's program without the statements no output reads (its label checks)."""
    return _derived(remove_dead_statements(g.program), g.structure, True, of=g)


def cases(rng):
    f = tl.parse(CASES["T27recsys"]["src"])["f"]
    b, m, p, d = 1_000_000, 6040, 3706, 32
    yield ("T27recsys grad (U, V)", f"b={b}, m={m}, p={p}, d={d}", tl.grad(f, wrt=("U", "V")),
           dict(U=rng.standard_normal((m, d)), V=rng.standard_normal((p, d)),
                user=rng.integers(0, m, b), item=rng.integers(0, p, b), r=rng.standard_normal(b)))
    f = tl.parse(CASES["T26graph"]["src"])["f"]
    e, v = 2_000_000, 100_000
    yield ("T26graph grad x", f"e={e}, v={v}", tl.grad(f, wrt="x"),
           dict(x=rng.standard_normal(v), w=rng.standard_normal(e),
                src=rng.integers(0, v, e), dst=rng.integers(0, v, e)))
    f = tl.parse("def f(X: f64[n], y: i64[m]) -> f64:\n    return sum[s](X[y[s]] ** 2)\n")["f"]
    n, m = 100_000, 5_000_000
    yield ("sum_s X[y[s]]^2 grad X", f"n={n}, m={m}", tl.grad(f, wrt="X"),
           dict(X=rng.standard_normal(n), y=rng.integers(0, n, m)))


def main():
    print("| derivative | sizes | with checks (ms) | without (ms) | ratio |")
    print("|---|---|---|---|---|")
    for name, sizes, g, args in cases(np.random.default_rng(0)):
        checked, bare = g.compile("numba"), without_checks(g).compile("numba")
        checked(**args)
        bare(**args)
        with_t, without_t = [], []
        for _ in range(REPEATS):
            t0 = time.perf_counter()
            checked(**args)
            with_t.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            bare(**args)
            without_t.append(time.perf_counter() - t0)
        a, c = np.median(with_t) * 1e3, np.median(without_t) * 1e3
        print(f"| {name} | {sizes} | {a:.2f} | {c:.2f} | {a / c:.3f} |")


if __name__ == "__main__":
    main()

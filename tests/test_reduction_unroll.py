"""Inner sum loops run with several partial sums (kernels.KernelWriter.unrolled).

The partial sums change the order of additions, so a long sum may differ from the one-chain
loop in its last bits; these tests pin what may not change: values against the interpreter
for every length around the block width and the run-time threshold, the exact order (an
emulation in Python floats gives the same bits), short loops bit for bit as before, NaN and
infinities as NumPy's sum, the same bits on every call and in the serial and parallel
kernels, and guards that start or stop a loop in the middle of a block.
"""
import math
import re

import numpy as np
import pytest

import tensorlang as tl
from tensorlang.backend import kernels
from tensorlang.backend.numba_backend import load_module, module_source

U = kernels.UNROLL
T = kernels.UNROLL_MIN_POINTS
LENGTHS = sorted({1, 2, U - 1, U, U + 1, T - 1, T, T + 1, T + U - 1, T + U, T + U + 1, 1000,
                  4099})

SOURCE = """
def total(x: f64[n], w: f64[n]) -> f64:
    return sum[i]((x[i] - w[i]) ** 2)

def rows(A: f64[m, n]) -> f64[m]:
    r[i] = sum[j](A[i, j])
    return r

def below(x: f64[n]) -> f64[n]:
    r[i: n] = sum[j]([j < i] * x[j])
    return r

def above(x: f64[n]) -> f64[n]:
    r[i: n] = sum[j]([j >= i] * x[j] * x[j])
    return r

def band(x: f64[n]) -> f64[n]:
    r[i: n] = sum[j]([i <= j] * [j <= i + 37] * exp(x[j]))
    return r

def positive(x: f64[n], w: f64[n]) -> f64:
    return sum[i]([x[i] > 0.0] * x[i] * w[i])

def gathered(x: f64[n], idx: i64[m]) -> f64:
    return sum[q](x[idx[q]] * x[idx[q]])

def nested(A: f64[m, n]) -> f64[m]:
    r[i] = sum[j](sqrt(1.0 + sum[k]((A[i, k] - A[j, k]) ** 2)))
    return r

def scatter(A: f64[m, n], y: i64[m]) -> f64[m, n]:
    r[s, c] = A[s, c] - [c == y[s]] * sum[j](A[s, j] * A[s, j])
    return r

def embed(E: f64[v, d], y: i64[b], w: f64[b, d]) -> f64:
    return sum[s, k](E[y[s], k] * w[s, k] * w[s, k])

def narrow(A: f64[m, 20], x: f64[n]) -> f64[m, n]:
    r[i: m, k: n] = sum[j](A[i, j]) + sum[j]([k <= j] * [j <= k + 30] * x[j])
    return r

def total2(A: f64[m, n]) -> f64:
    return sum[i, j](A[i, j] * A[i, j])
"""

MOD = tl.parse(SOURCE)


def call_with(monkeypatch, name: str, width: int, **inputs):
    """A fresh compiled function whose module is generated with `width` partial sums."""
    monkeypatch.setenv("TENSORLANG_UNROLL", str(width))
    try:
        f = MOD[name].compile("numba")
        return f, f(**inputs)
    finally:
        monkeypatch.delenv("TENSORLANG_UNROLL")


def reference(name: str, **inputs):
    return MOD[name].compile("numpy")(**inputs)


def emulated_sum(values) -> float:
    """The order the kernel adds a loop's values in (see `KernelWriter.unrolled`)."""
    values = [float(v) for v in values]
    n = len(values)
    top = n // U * U if n >= T else 0
    parts = [0.0] * U
    for b in range(0, top, U):
        for k in range(U):
            parts[k] += values[b + k]
    for v in values[top:]:
        parts[0] += v
    while len(parts) > 1:
        pairs = [a + b for a, b in zip(parts[::2], parts[1::2])]
        parts = pairs + parts[len(pairs) * 2:]
    return 0.0 + parts[0]


@pytest.mark.parametrize("n", LENGTHS)
def test_values_and_order(n):
    rng = np.random.default_rng(n)
    x, w = rng.standard_normal(n), rng.standard_normal(n)
    got = MOD["total"].compile("numba")(x=x, w=w)
    want = reference("total", x=x, w=w)
    # the kernel's point value: x - w as 0.0 + -1.0 * w + x, squared
    d = (0.0 + -1.0 * w) + x
    terms = d * d
    assert abs(got - want) <= 1e-13 * np.sum(terms) + 1e-300
    # exactly the documented order: the same bits as the Python emulation
    assert got == emulated_sum(terms)


def test_short_loops_as_before(monkeypatch):
    """Below the run-time threshold every point adds into one chain, bit for bit as the
    kernel with one running sum (lengths 0 to T - 1, by a triangular guard)."""
    x = np.random.default_rng(3).standard_normal(T + 9) * 1e3
    _, before = call_with(monkeypatch, "below", 1, x=x)
    _, after = call_with(monkeypatch, "below", U, x=x)
    assert np.array_equal(before[:T], after[:T])
    assert np.allclose(after, reference("below", x=x), rtol=1e-13, atol=1e-10)


def test_source_has_partial_sums():
    src = module_source(MOD["rows"].optimized_program())
    parts = re.findall(r"^\s+(b\d+) = (?:acc|0\.0)$", src, re.M)
    assert len(parts) >= U
    rotate = ", ".join([r"b\d+"] * U) + " = " + ", ".join([r"b\d+"] * U)
    assert re.search(r"for i_j in range\(o\d+, o\d+\):\n.*\n.*\n\s+" + rotate, src)
    assert re.search(r"acc = \(\(b\d+ \+ b\d+\) \+ \(b\d+ \+ b\d+\)\)", src)
    assert f">= {T} else" in src


def test_one_chain_when_asked(monkeypatch):
    monkeypatch.setenv("TENSORLANG_UNROLL", "1")
    src = module_source(MOD["rows"].optimized_program())
    assert not re.search(r"b\d+, b\d+ =", src) and "b" not in re.findall(r"(\w)\d+ = ", src)


def test_loops_short_for_every_size_keep_one_sum():
    """A constant range (20) and a band of constant width (31) are below the run-time
    threshold whatever the sizes: written with one running sum."""
    src = module_source(MOD["narrow"].optimized_program())
    assert "def k" in src and not re.search(r"b\d+, b\d+ =", src)
    rng = np.random.default_rng(14)
    A, x = rng.standard_normal((3, 20)), rng.standard_normal(50)
    got = MOD["narrow"].compile("numba")(A=A, x=x)
    assert np.allclose(got, reference("narrow", A=A, x=x), rtol=1e-13, atol=1e-13)


def test_nested_sum_unrolls_the_innermost_only():
    src = module_source(MOD["nested"].optimized_program())
    # each loop that rotates partial sums has no loop inside, and runs over k
    lines = src.splitlines()
    rotating = []
    for at, line in enumerate(lines):
        if line.lstrip().startswith("for "):
            indent = len(line) - len(line.lstrip())
            body = []
            for inner in lines[at + 1:]:
                if len(inner) - len(inner.lstrip()) <= indent:
                    break
                body.append(inner)
            if any(re.match(" " * (indent + 4) + r"b\d+, b\d+, ", b) for b in body):
                rotating.append((line, body))
    assert rotating
    for head, body in rotating:
        assert "i_k" in head and not any("for " in b for b in body), (head, body)
    A = np.random.default_rng(4).standard_normal((9, 70))
    got = MOD["nested"].compile("numba")(A=A)
    assert np.allclose(got, reference("nested", A=A), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", ["below", "above", "band"])
def test_guards_start_and_stop_mid_block(name):
    """Loop bounds that move with the output index: every start and stop position
    modulo the block width, lengths on both sides of the threshold."""
    x = np.random.default_rng(5).standard_normal(2 * T + 2 * U + 3)
    got = MOD[name].compile("numba")(x=x)
    assert np.allclose(got, reference(name, x=x), rtol=1e-12, atol=1e-12)


def test_value_guard_and_gather():
    rng = np.random.default_rng(6)
    for n in (T - 1, T + 3, 501):
        x, w = rng.standard_normal(n), rng.standard_normal(n)
        got = MOD["positive"].compile("numba")(x=x, w=w)
        assert math.isclose(got, reference("positive", x=x, w=w), rel_tol=1e-12, abs_tol=1e-12)
        idx = rng.integers(0, n, 2 * n + 1)
        got = MOD["gathered"].compile("numba")(x=x, idx=idx)
        assert math.isclose(got, reference("gathered", x=x, idx=idx), rel_tol=1e-12)


def test_bad_label_inside_a_block_is_reported():
    x = np.ones(10)
    idx = np.zeros(T + 2 * U, dtype=np.int64)
    idx[T + 1] = 10                           # in a whole block, not the remainder
    with pytest.raises(tl.TLError, match="out of range|outside"):
        MOD["gathered"].compile("numba")(x=x, idx=idx)


@pytest.mark.parametrize("where", [0, 1, U + 2, 100, 102])
def test_nan_and_inf_as_numpy(where):
    n = 103                              # 25 whole blocks and a remainder of 3
    f = MOD["rows"].compile("numba")
    for bad in ([np.nan], [np.inf], [-np.inf], [np.inf, -np.inf]):
        A = np.random.default_rng(7).standard_normal((2, n))
        for k, v in enumerate(bad):
            A[0, (where + 37 * k) % n] = v
        got = f(A=A)
        with np.errstate(invalid="ignore"):
            want = np.sum(A, axis=1)
        assert np.array_equal(np.isnan(got), np.isnan(want))
        assert np.array_equal(got[np.isinf(want)], want[np.isinf(want)])
        assert np.allclose(got[1], want[1], rtol=1e-12)


def test_zeros_stay_positive():
    got = MOD["rows"].compile("numba")(A=-np.zeros((2, 3 * T)))
    assert np.all(got == 0.0) and not np.any(np.signbit(got))


def first_kernels(name: str):
    """The serial and parallel kernel of `name`'s first statement, and the names of
    their arguments (`v_x` a tensor or scalar, `s_n` a size)."""
    prog = MOD[name].optimized_program()
    src = module_source(prog)
    module = load_module(prog)
    head = re.search(r"^def (k\d+)\((.*)\):", src, re.M)
    kernel = head.group(1)
    assert f"def {kernel}_par(" in src
    return getattr(module, kernel), getattr(module, kernel + "_par"), head.group(2).split(", ")


def test_same_bits_every_call_and_thread_count():
    rng = np.random.default_rng(8)
    A = rng.standard_normal((64, 1001)) * 10.0 ** rng.integers(-5, 5, (64, 1001))
    f = MOD["rows"].compile("numba")
    first = f(A=A)
    assert all(np.array_equal(first, f(A=A)) for _ in range(3))
    # the serial kernel and its prange twin compute each element by the same loop
    serial, parallel, args = first_kernels("rows")
    values = {"v_A": A, "s_m": A.shape[0], "s_n": A.shape[1]}
    outs = []
    for kernel in (serial, parallel):
        out = np.empty(A.shape[0])
        kernel(out, *[values[a] for a in args[1:]])
        outs.append(out)
    assert np.array_equal(outs[0], outs[1]) and np.array_equal(outs[0], first)


@pytest.mark.parametrize("name", ["total", "total2"])
def test_parallel_scalar_sums(name):
    """A scalar sum's prange form: the blocks of a one-loop sum split among the
    threads (each partial a reduction of Numba's), or the outer loop of two."""
    rng = np.random.default_rng(12)
    if name == "total":
        inputs = {"x": rng.standard_normal(100_003), "w": rng.standard_normal(100_003)}
        values = {"v_x": inputs["x"], "v_w": inputs["w"], "s_n": 100_003}
    else:
        inputs = {"A": rng.standard_normal((37, 1001))}
        values = {"v_A": inputs["A"], "s_m": 37, "s_n": 1001}
    serial, parallel, args = first_kernels(name)
    if name == "total":
        src = module_source(MOD[name].optimized_program())
        assert re.search(rf"for o\d+ in prange\(0, \(o\d+ - o\d+\) // {U}\):", src)
    want = reference(name, **inputs)
    for kernel in (serial, parallel):
        got = kernel(*[values[a] for a in args])
        assert math.isclose(got, want, rel_tol=1e-12)


def test_scatter_into_one_element(monkeypatch):
    """A scatter whose element is fixed along its innermost loop (`k = y[s]` solved
    outside it) adds that loop into partial sums too, starting at the element."""
    src = module_source(MOD["scatter"].optimized_program())
    assert re.search(r"(b\d+) = v_r\[i_s, i_c\]\n(?:.*\n)+\s+v_r\[i_s, i_c\] = \(\(\1 \+ b", src)
    rng = np.random.default_rng(11)
    for n in (1, U + 1, T - 1, T, T + U + 1, 301):
        A = rng.standard_normal((9, n))
        y = rng.integers(-1, n + 1, 9)           # some labels match no column
        _, before = call_with(monkeypatch, "scatter", 1, A=A, y=y)
        _, after = call_with(monkeypatch, "scatter", U, A=A, y=y)
        assert np.allclose(after, reference("scatter", A=A, y=y), rtol=1e-13, atol=1e-13)
        if n < T:
            assert np.array_equal(before, after)


def test_scatter_along_a_generator_keeps_its_element_per_point():
    """The adjoint of a gather, E_bar[y[s], k] += w[s, k]^2, loops over the generator k
    innermost: each point adds into its own element, so no partial sums there (the
    element is not fixed; a stale index would write the wrong row)."""
    rng = np.random.default_rng(13)
    for d in (3, T + U + 1):
        E, w = rng.standard_normal((5, d)), rng.standard_normal((11, d))
        y = rng.integers(0, 5, 11)
        got = tl.grad(MOD["embed"], wrt="E").compile("numba")(E=E, y=y, w=w)
        want = np.zeros_like(E)
        np.add.at(want, y, w * w)
        assert np.allclose(got, want, rtol=1e-13, atol=1e-13)


def test_scalar_sum_of_two_indices():
    A = np.random.default_rng(9).standard_normal((7, 300))
    got = MOD["total2"].compile("numba")(A=A)
    assert math.isclose(got, reference("total2", A=A), rel_tol=1e-13)


def test_op_count_unchanged():
    """The same operations run: the instrumented count is the cost model's."""
    x, w = np.random.default_rng(10).standard_normal((2, T + 5))
    f = MOD["total"].compile("numba")
    assert f.count_ops(x=x, w=w) == tl.cost(MOD["total"]).evaluate(n=T + 5)

"""The pool of large arrays (backend/pool.py): memory a compiled call made is handed out
again only when nothing outside the pool refers to it, zeroed when zeros were asked for,
within the bound on idle memory, and not at all when the pool is off.  The thresholds are
lowered through `pool.configure` so no test allocates 32 MB."""
import threading

import numpy as np
import pytest

import tensorlang as tl
from derivcheck import as_flat
from tensorlang.backend import pool, rows

N = 512                      # a request of 4 kB; the tests make the pool take it


@pytest.fixture
def small_pool(monkeypatch):
    # forget every buffer (busy ones stay their holders' plain arrays): each test starts empty
    monkeypatch.setattr(pool, "_BUFFERS", [])
    old = pool.configure(enabled=True, min_bytes=1024, cap=1 << 30, idle_seconds=3600)
    yield
    pool.configure(**old)
    pool.release()


def address(a) -> int:
    return a.__array_interface__["data"][0]


def from_pool(a) -> bool:
    """Is `a` memory of one of the pool's buffers (its chain of bases reaches one)?"""
    owners = {id(b.owner) for b in pool._BUFFERS}
    while a is not None:
        if id(a) in owners:
            return True
        a = getattr(a, "base", None)
    return False


def test_a_dropped_array_is_handed_out_again(small_pool):
    a = pool.empty((N,))
    where = address(a)
    del a
    b = pool.empty((N // 2, 2))               # the same bytes, another shape
    assert address(b) == where and b.shape == (N // 2, 2)
    c = pool.empty((N + 1,))                  # other sizes: other buffers
    assert address(c) != where


@pytest.mark.parametrize("holder", ["array", "view", "memoryview", "list", "reshaped"])
def test_memory_still_referenced_is_never_handed_out(small_pool, holder):
    a = pool.empty((N,))
    a[:] = np.arange(N)
    kept = {"array": lambda b: b, "view": lambda b: b[3:9], "memoryview": memoryview,
            "list": lambda b: [b], "reshaped": lambda b: b.reshape(8, -1).T}[holder](a)
    del a
    for _ in range(3):
        b = pool.empty((N,))
        b[:] = -1.0
    seen = np.asarray(kept[0] if holder == "list" else kept)
    want = np.arange(N, dtype=float)
    if holder == "view":
        want = want[3:9]
    elif holder == "reshaped":
        want = want.reshape(8, -1).T
    assert np.array_equal(seen, want)


def test_a_reused_buffer_is_zeroed_for_zeros(small_pool):
    a = pool.empty((N,))
    a[:] = 7.0
    where = address(a)
    del a
    z = pool.zeros((N,))
    assert address(z) == where and not z.any()


def test_idle_memory_stays_within_the_cap(small_pool):
    pool.configure(cap=3 * 8 * N)
    held = [pool.empty((N,)) for _ in range(6)]
    assert pool.stats()["held"] == 6 * 8 * N          # busy buffers are not evicted
    del held
    pool.trim()
    st = pool.stats()
    assert st["idle"] <= 3 * 8 * N and st["buffers"] == 3
    pool.configure(idle_seconds=0.0)                   # unused for longer: freed
    assert pool.stats()["buffers"] == 0


def test_idle_time_counts_from_the_last_use(small_pool, monkeypatch):
    clock = [100.0]
    monkeypatch.setattr(pool, "_clock", lambda: clock[0])
    pool.configure(idle_seconds=5.0)
    a = pool.empty((N,))
    clock[0] += 60.0                 # kept for a minute: in use, not evicted
    pool.trim()
    del a
    clock[0] += 1.0
    pool.trim()
    assert pool.stats()["buffers"] == 1
    clock[0] += 5.0
    pool.trim()
    assert pool.stats()["buffers"] == 0


def test_the_pool_can_be_turned_off(small_pool, monkeypatch):
    pool.configure(enabled=False)
    a = pool.empty((N,))
    del a
    assert pool.stats()["buffers"] == 0
    saved = dict(pool._SETTINGS)
    try:
        for value, enabled, cap in (("0", False, None), ("64", True, 64 << 20),
                                    ("", True, pool._default_cap())):
            monkeypatch.setenv("TENSORLANG_POOL", value)
            pool._SETTINGS.clear()
            s = pool._settings()
            assert s["enabled"] is enabled and (cap is None or s["cap"] == cap)
    finally:
        pool._SETTINGS.clear()
        pool._SETTINGS.update(saved)


def test_two_threads_never_share_a_buffer(small_pool):
    errors = []

    def work(mark):
        for _ in range(300):
            a = pool.empty((N,))
            a[:] = mark
            b = pool.zeros((N,))
            b += mark
            if not (np.all(a == mark) and np.all(b == mark)):
                errors.append(mark)
            del a, b
    threads = [threading.Thread(target=work, args=(float(k + 1),)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


def test_products_from_the_pool(small_pool):
    rng = np.random.default_rng(5)
    A, B, x, y = (rng.standard_normal(s) for s in ((40, 30), (30, 50), (30,), (40,)))
    for got, want in ((pool.matmul(A, B), A @ B), (pool.matmul(A, x), A @ x),
                      (pool.matmul(y, A), y @ A), (pool.matmul(B.T, A.T), B.T @ A.T),
                      (pool.outer(x, y), np.outer(x, y))):
        assert got.shape == want.shape and np.array_equal(got, want)


# A gradient with a BLAS product, an outer-product kernel, a scatter into a zeroed output
# (B's diagonal) and elementwise kernels; and a product of factors whose gradient runs as a
# row loop (rows.py).
MIXED = """
def f(A: f64[n, n], B: f64[n, n], x: f64[n], w: f64[n]) -> f64:
    y[k] = sum[i](A[k, i] * x[i])
    return sum[k](y[k] ** 2) + sum[i](B[i, i] * w[i]) + sum[i](x[i] * w[i] * x[i])
"""
PRODUCT = """
def f(a: f64[m], b: f64[m], c: f64[m], d: f64[m]) -> f64:
    return sum[i](a[i] * b[i] * c[i] * d[i])
"""


def _inputs(fn, sizes, seed):
    rng = np.random.default_rng(seed)
    return {p.name: rng.standard_normal([sizes[d] for d in p.dims])
            for p in fn.program.params}


@pytest.mark.parametrize("src,wrt,sizes", [(MIXED, ("A", "B", "x", "w"), {"n": 24}),
                                           (PRODUCT, ("a", "b", "c", "d"), {"m": 700})])
def test_compiled_calls_recycle_safely(small_pool, monkeypatch, src, wrt, sizes):
    monkeypatch.setenv("TENSORLANG_TIERS", "0")          # every call on the kernels
    monkeypatch.setattr(rows, "MIN_BYTES", 0)            # the row loop at any size
    f = tl.parse(src)["f"]
    g = tl.grad(f, wrt=wrt).compile("numba")
    first, second = _inputs(f, sizes, 1), _inputs(f, sizes, 2)
    want1 = as_flat(g.compile("numpy")(**first))
    want2 = as_flat(g.compile("numpy")(**second))
    pool.configure(enabled=False)
    off1, off2 = as_flat(g(**first)), as_flat(g(**second))
    assert np.allclose(off1, want1, rtol=1e-12, atol=1e-12)
    assert np.allclose(off2, want2, rtol=1e-12, atol=1e-12)
    pool.configure(enabled=True)
    r = g(**first)
    assert np.array_equal(as_flat(r), off1)
    assert any(from_pool(o) for o in r)                   # outputs from the pool
    where = [address(o) for o in r if from_pool(o)]
    del r
    again = g(**second)                                  # the dropped results come back
    assert {address(o) for o in again} & set(where)
    assert np.array_equal(as_flat(again), off2)
    # results kept (whole, as a view) are never written by later calls
    view = again[0][1:]
    kept_view = view.copy()
    kept = again[1].copy()
    held = again[1]
    del again
    for inputs in (first, second, first):
        out = g(**inputs)
        assert np.array_equal(as_flat(out), off1 if inputs is first else off2)
    assert np.array_equal(view, kept_view) and np.array_equal(held, kept)
    # a result passed back in as an input
    loop_on = dict(first)
    for _ in range(3):
        step = g(**loop_on)
        loop_on = {**loop_on, wrt[0]: step[0]}
    pool.configure(enabled=False)
    loop_off = dict(first)
    for _ in range(3):
        step = g(**loop_off)
        loop_off = {**loop_off, wrt[0]: step[0]}
    assert np.array_equal(loop_on[wrt[0]], loop_off[wrt[0]])


def test_scaled_numpy_calls_are_scaled_in_place(small_pool, monkeypatch):
    """A product or a sum over leading axes with a coefficient is scaled in place, in the
    array the pool gave it: the same values as the interpreter."""
    from tensorlang.backend.numba_backend import module_source
    monkeypatch.setenv("TENSORLANG_TIERS", "0")
    src = ("def f(A: f64[n, k], B: f64[k, m], X: f64[k, m]) -> (f64[n, m], f64[m]):\n"
           "    C[i, j] = 2.5 * sum[l](A[i, l] * B[l, j])\n"
           "    s[j] = -3.0 * sum[l](X[l, j])\n"
           "    return C, s\n")
    f = tl.parse(src)["f"]
    text = module_source(f.optimized_program())
    assert "env['C'] *= 2.5" in text and "env['s'] *= -3" in text
    args = _inputs(f, {"n": 9, "k": 7, "m": 40}, 3)
    want = as_flat(f.compile("numpy")(**args))
    g = f.compile("numba")
    for _ in range(2):
        assert np.allclose(as_flat(g(**args)), want, rtol=1e-13, atol=1e-13)

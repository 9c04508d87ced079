"""When a kernel runs on several threads (backend/threads.py).

The choice is a pure function of the serial kernel's estimated time (its cost
polynomial at the call's sizes times the fastest time per operation it has
shown), the length of the loop the threads would split, whether that loop
reduces into a scalar, and the thread count.  These tests read the arguments
the generated driver passes for each statement and check the choice for given
times per operation, never wall times.
"""
import re
import threading
import time

import pytest

import tensorlang as tl
from tensorlang.backend import threads
from tensorlang.backend.numba_backend import module_source

# Times per operation of the cost model, as measured on serial kernels of the
# benchmarks: a sum of squares about 0.25 ns, a map with exp 1.5 ns.
FAST, SLOW = 0.25e-9, 1.5e-9


def choices(src: str, threads_: int, seconds_per_op: float, **sizes) -> dict:
    """statement -> would its parallel form run, for a call at `sizes` on `threads_`
    threads, its serial kernel taking `seconds_per_op` per operation."""
    fn = next(iter(tl.parse(src)))
    text = module_source(fn.optimized_program())
    env = {f"s_{k}": v for k, v in sizes.items()}
    out = {}
    pattern = (r"    work = (.*)\n    if work < (\d+):\n.*\n"
               r"    elif k\d+_par\.signatures and tl_times\.pays\(\d+, work, (.*), (True|False)\)"
               r".*:\n(?:\s+tic = tl_clock\(\)\n)?\s+env\['(\w+)'\]")
    for m in re.finditer(pattern, text):
        work, floor, trip, reduction, name = m.groups()
        env["work"] = eval(work, {}, env)  # noqa: S307 -- our own text
        assert int(floor) == threads.MIN_WORK
        out[name] = (env["work"] >= threads.MIN_WORK
                     and threads.decide(env["work"] * seconds_per_op, eval(trip, {}, env),
                                        reduction == "True", threads_))
    return out


SUM = "def f(x: f64[n]) -> f64:\n    return sum[i](x[i])\n"
SUMSQ = "def f(x: f64[n]) -> f64:\n    return sum[i](x[i] * x[i])\n"
MAP = "def f(x: f64[n]) -> f64[n]:\n    y[i] = exp(x[i]) * x[i]\n    return y\n"
BLUR_ROWS = ("def f(img: f64[h, w]) -> f64[h, w]:\n"
             "    b[r, c] = [c >= 1] * img[r, c - 1] + 2.0 * img[r, c] + [c + 1 < w] * img[r, c + 1]\n"
             "    return b\n")
ROW_SUMS = ("def f(A: f64[n, m]) -> f64[n]:\n"
            "    y[i] = sum[j](exp(A[i, j]))\n    return y\n")
FEW_ROWS = ("def f(A: f64[k, m]) -> f64[k]:\n"
            "    y[i] = sum[j](exp(A[i, j]))\n    return y\n")


def test_a_million_element_sum_runs_serially():
    """Even at four times the time per operation measured here."""
    for src in (SUM, SUMSQ):
        for rate in (FAST, 4 * FAST):
            assert choices(src, 2, rate, n=1_000_000) == {"out": False}
            assert choices(src, 64, rate, n=1_000_000) == {"out": False}


def test_a_long_reduction_runs_in_parallel():
    assert choices(SUMSQ, 2, FAST, n=20_000_000) == {"out": True}


def test_a_large_elementwise_map_runs_in_parallel():
    assert choices(MAP, 2, SLOW, n=10_000_000) == {"y": True}
    assert choices(MAP, 2, FAST, n=10_000_000) == {"y": True}
    assert choices(BLUR_ROWS, 2, FAST, h=2048, w=2048) == {"b": True}


def test_a_matrix_sized_statement_runs_in_parallel():
    assert choices(ROW_SUMS, 2, FAST, n=2048, m=2048) == {"y": True}


def test_small_work_runs_serially():
    assert choices(MAP, 2, SLOW, n=100_000) == {"y": False}
    assert choices(BLUR_ROWS, 2, SLOW, h=256, w=256) == {"b": False}
    # a fast kernel needs more work than a slow one
    assert choices(MAP, 2, SLOW, n=1_000_000) == {"y": True}
    assert choices(MAP, 2, 0.05e-9, n=1_000_000) == {"y": False}


def test_a_small_output_runs_serially_however_long_its_sums():
    """Three rows summed over ten million columns: two threads would split three
    iterations (one of them doing two thirds of the work)."""
    assert choices(FEW_ROWS, 2, SLOW, k=3, m=10_000_000) == {"y": False}
    assert choices(FEW_ROWS, 2, SLOW, k=64, m=1_000_000) == {"y": True}


def test_one_thread_never_runs_a_parallel_form():
    for src, sizes in ((MAP, dict(n=10_000_000)), (SUMSQ, dict(n=50_000_000)),
                       (ROW_SUMS, dict(n=4096, m=4096))):
        assert not any(choices(src, 1, SLOW, **sizes).values())


@pytest.mark.parametrize("seconds,trip,reduction,threads_,want", [
    (threads.MIN_SECONDS, 8, False, 2, True),
    (threads.MIN_SECONDS * 0.99, 10 ** 6, False, 2, False),
    (threads.MIN_SECONDS, 7, False, 2, False),             # fewer than 4 iterations per thread
    (threads.MIN_SECONDS, 31, False, 8, False),
    (threads.MIN_SECONDS, 32, False, 8, True),
    (threads.MIN_SECONDS_REDUCTION * 0.99, 10 ** 7, True, 2, False),
    (threads.MIN_SECONDS_REDUCTION, 10 ** 7, True, 2, True),
    (1e3, 10 ** 6, True, 1, False),
])
def test_decide(seconds, trip, reduction, threads_, want):
    assert threads.decide(seconds, trip, reduction, threads_) is want


def test_kernel_times_keep_the_fastest_serial_call(monkeypatch):
    monkeypatch.setattr(threads, "thread_count", lambda: 2)
    times = threads.KernelTimes()
    work = 10 ** 7
    assert not times.pays(0, work, 10 ** 6, False)          # nothing measured yet
    assert not times.observe(0, work, None, 10 ** 6, False)  # a compiling call is not timed
    assert not times.seconds_per_op
    # serial calls of 10 ms on 1e7 operations: 1 ns each; threads pay from 2 ms on, but
    # one timed call is not enough to decide (it may have been a slow one)
    assert not times.observe(0, work, time.perf_counter() - 0.010, 10 ** 6, False)
    assert not times.pays(0, work, 10 ** 6, False)
    assert times.observe(0, work, time.perf_counter() - 0.010, 10 ** 6, False)
    assert times.pays(0, work, 10 ** 6, False)
    assert not times.pays(0, work // 10, 10 ** 6, False)
    # a faster call lowers the estimate, a slower one leaves it
    times.observe(0, work, time.perf_counter() - 0.001, 10 ** 6, False)
    times.observe(0, work, time.perf_counter() - 0.100, 10 ** 6, False)
    assert times.seconds_per_op[0] == pytest.approx(1e-10, rel=0.5)
    assert not times.pays(0, work, 10 ** 6, False)


def test_small_kernels_never_start_the_thread_pool(monkeypatch):
    def boom():
        raise AssertionError("thread_count called")
    monkeypatch.setattr(threads, "thread_count", boom)
    times = threads.KernelTimes()
    for _ in range(threads.MIN_SAMPLES):
        times.observe(0, 10 ** 6, time.perf_counter() - 0.0005, 10 ** 6, False)
    assert not times.pays(0, 10 ** 6, 10 ** 6, False)
    assert not times.pays(0, 10 ** 9, 3, False)


def _openblas_threads():
    threads._find_blas()
    if threads._BLAS["set"] is None:
        pytest.skip("NumPy's BLAS is not OpenBLAS")
    lib = threads._BLAS["lib"]
    for name in threads._BLAS_SYMBOLS:
        getter = getattr(lib, name.replace("set_num", "get_num"), None)
        if getter is not None and hasattr(lib, name):
            return getter
    pytest.skip("no OpenBLAS thread-count getter")


def test_blas_products_run_on_one_thread_unless_they_pay_and_the_count_is_restored():
    import numpy as np
    get = _openblas_threads()
    before = get()
    threads.blas(False)
    assert get() == 1
    threads.restore_blas()
    assert get() == before
    # a call of a program of BLAS calls leaves OpenBLAS as it found it
    f = tl.parse("def f(A: f64[n, n], B: f64[n, n]) -> f64[n, n]:\n"
                 "    C[i, j] = sum[k](A[i, k] * B[k, j])\n    return C\n")["f"].compile("numba")
    A = np.ones((300, 300))
    for _ in range(3):
        assert np.allclose(f(A, A), 300.0)
        assert get() == before


def test_blas_threads_are_capped_by_numba_num_threads(monkeypatch):
    _openblas_threads()
    monkeypatch.setenv("NUMBA_NUM_THREADS", "1")
    assert threads.blas_thread_count() == 1
    times = threads.KernelTimes()
    for _ in range(threads.MIN_SAMPLES):
        times.observe_blas(0, 10 ** 9, time.perf_counter() - 1.0)  # 1 s on one thread
    assert not times.pays_blas(0, 10 ** 9)
    monkeypatch.delenv("NUMBA_NUM_THREADS")
    if threads.blas_thread_count() > 1:
        assert times.pays_blas(0, 10 ** 9)


def test_every_loaded_openblas_follows_the_thread_count():
    """Numba's kernels make their products through SciPy's OpenBLAS, a second library
    loaded after NumPy's: it is found when it appears, and set and restored with NumPy's."""
    import ctypes
    pytest.importorskip("scipy.linalg.cython_blas")
    _openblas_threads()
    threads.blas(False)
    others = [path for path, _ in threads._BLAS["others"]]
    if not others:
        pytest.skip("SciPy's BLAS is not a second OpenBLAS")
    getters = []
    for path in others:
        lib = ctypes.CDLL(path)
        getters += [getattr(lib, n.replace("set_num", "get_num")) for n in threads._BLAS_SYMBOLS
                    if hasattr(lib, n.replace("set_num", "get_num"))][:1]
    before = [dict(threads._BLAS["others"])[p][1] for p in others]
    assert [g() for g in getters] == [1] * len(getters)
    threads.restore_blas()
    assert [g() for g in getters] == before


def _serial(times, started):
    """MIN_SAMPLES timed serial calls of statement 0 (1e8 operations) begun at `started`."""
    for _ in range(threads.MIN_SAMPLES):
        times.observe(0, 10 ** 8, started, 10 ** 6, False, lambda: 2)


def test_one_slow_serial_call_does_not_send_a_statement_to_threads():
    """A statement's first timed call can be many times slower than its kernel (the first
    product of its shape in the process, a garbage collection after compiling): the
    estimate is the fastest of MIN_SAMPLES calls, so a slow one alone never decides."""
    times = threads.KernelTimes()
    work = 10 ** 7
    assert not times.observe(0, work, time.perf_counter() - 0.130, 10 ** 6, False, lambda: 2)
    assert not times.pays(0, work, 10 ** 6, False, lambda: 2)
    for _ in range(threads.MIN_SAMPLES - 1):
        assert not times.observe(0, work, time.perf_counter() - 0.0005, 10 ** 6, False,
                                 lambda: 2)
    assert not times.pays(0, work, 10 ** 6, False, lambda: 2)


def test_threads_stop_when_a_parallel_call_was_no_faster_than_a_serial_one():
    times = threads.KernelTimes()
    now = time.perf_counter()
    _serial(times, now - 0.1)                                            # 1 ns an operation
    assert times.pays(0, 10 ** 8, 10 ** 6, False, lambda: 2)
    times.observe_parallel(0, 10 ** 8, time.perf_counter() - 0.03)       # threads helped
    assert times.pays(0, 10 ** 8, 10 ** 6, False, lambda: 2)
    slow = threads.KernelTimes()
    _serial(slow, now - 0.1)
    slow.observe_parallel(0, 10 ** 8, time.perf_counter() - 0.5)         # they did not
    assert not slow.pays(0, 10 ** 8, 10 ** 6, False, lambda: 2)


def test_a_parallel_call_during_a_background_compilation_is_not_held_against_threads(monkeypatch):
    from tensorlang.backend import background
    times = threads.KernelTimes()
    _serial(times, time.perf_counter() - 0.1)
    release = threading.Event()
    compiler = threading.Thread(target=release.wait, daemon=True)   # a parallel form compiling
    monkeypatch.setattr(background, "_STARTED", {"kernel": compiler})
    compiler.start()
    assert background.compiling()
    times.observe_parallel(0, 10 ** 8, time.perf_counter() - 0.5)  # slow: the compiler's core
    assert times.pays(0, 10 ** 8, 10 ** 6, False, lambda: 2)
    release.set()
    compiler.join()
    assert not background.compiling()
    times.observe_parallel(0, 10 ** 8, time.perf_counter() - 0.5)  # slow with nothing compiling
    assert not times.pays(0, 10 ** 8, 10 ** 6, False, lambda: 2)


def test_a_statement_whose_threads_did_not_pay_tries_them_again_ever_less_often():
    times = threads.KernelTimes()
    _serial(times, time.perf_counter() - 0.1)
    tries = []
    for call in range(1, 8 * threads.RETRY_AFTER):
        if times.pays(0, 10 ** 8, 10 ** 6, False, lambda: 2):
            tries.append(call)
            times.observe_parallel(0, 10 ** 8, time.perf_counter() - 0.5)   # still slow
    r = threads.RETRY_AFTER
    assert tries == [1, 1 + r, 1 + 3 * r, 1 + 7 * r]
    # a try that pays keeps the parallel form
    times.declined[0] = [0, 1]
    assert times.pays(0, 10 ** 8, 10 ** 6, False, lambda: 2)
    times.observe_parallel(0, 10 ** 8, time.perf_counter() - 0.03)
    assert all(times.pays(0, 10 ** 8, 10 ** 6, False, lambda: 2) for _ in range(5))


def test_a_large_recurrence_steps_products_follow_the_blas_thread_policy():
    """A step too large for the steps' Numba loop runs in the driver: each of its
    products chooses OpenBLAS's thread count as any BLAS call does (one thread unless
    the record says threads pay), instead of running with whatever count the previous
    call left (a busy machine then stalls a matrix-vector product on a helper thread)."""
    from tensorlang.backend.numba_backend import module_source
    src = ("def g(U: f64[m, m], z: f64[m], s: f64[K, m]) -> f64:\n"
           "    q[u: K, a: m] = sin(s[u, a] + sum[b](U[a, b] * ([u == 0] * z[b]"
           " + [u >= 1] * q[u - 1, b])))\n"
           "    return sum[a](q[K - 1, a])\n")
    fn = tl.parse(src)["g"]
    for program in (fn, tl.grad(fn, wrt="U")):
        lines = module_source(program.optimized_program()).splitlines()
        driver = lines[next(n for n, line in enumerate(lines) if line.startswith("def run(")):]
        products = [n for n, line in enumerate(driver) if " @ " in line]
        assert products
        for n in products:
            assert driver[n - 1].strip().startswith("tic = tl_clock()"), driver[n - 4:n + 2]
            assert driver[n - 2].strip() in ("tl_blas(True)", "tl_blas(False)"), driver[n - 4:n + 2]

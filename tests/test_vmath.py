"""backend/vmath.py: exp and log in plain arithmetic, against NumPy's, within one unit
in the last place over the whole double range, special values exactly as NumPy's; sin
and cos within two units on |x| <= TRIG_LIMIT, and `trig_wide` marking the rest."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings, strategies as st
from numba import njit

from tensorlang.backend.vmath import TRIG_LIMIT, trig_wide, vcos, vexp, vlog, vsin


@njit(error_model="numpy", cache=True)
def _exp_all(x, out):
    for k in range(x.shape[0]):
        out[k] = vexp(x[k])


@njit(error_model="numpy", cache=True)
def _log_all(x, out):
    for k in range(x.shape[0]):
        out[k] = vlog(x[k])


@njit(error_model="numpy", cache=True)
def _trig_all(x, s, c, wide):
    for k in range(x.shape[0]):
        s[k] = vsin(x[k])
        c[k] = vcos(x[k])
        wide[k] = trig_wide(x[k])


def _apply(fn, x):
    x = np.ascontiguousarray(x, dtype=np.float64)
    out = np.empty_like(x)
    fn(x, out)
    return out


def _ulps(got, want):
    """Distance in units of the last place of `want` (a subnormal's unit is 5e-324);
    0 where both are the same special value."""
    with np.errstate(all="ignore"):
        d = np.abs(got - want) / np.spacing(np.abs(want))
    same = (got == want) | (np.isnan(got) & np.isnan(want))
    return np.where(same, 0.0, d)


def _check(fn, ref, x):
    got = _apply(fn, x)
    with np.errstate(all="ignore"):
        want = ref(x)
    finite = np.isfinite(want)
    # non-finite results (inf, -inf, NaN) exactly; finite ones within one unit
    np.testing.assert_array_equal(got[~finite], want[~finite])
    worst = _ulps(got[finite], want[finite])
    assert worst.size == 0 or worst.max() <= 1.0, (x[finite][worst.argmax()], worst.max())
    return got


EXP_EDGES = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 1e-300, -1e-300, 5e-324,
             709.782712893384, np.nextafter(709.782712893384, np.inf), 709.78, 710.0, 1e308,
             -708.39641853226408, -708.4, -709.0, -744.44007192138121, -745.13321910194111,
             -745.13321910194122, -745.2, np.nextafter(-745.2, 0.0), -746.0, -1e308,
             0.5 * np.log(2.0), -0.5 * np.log(2.0), np.log(2.0), 1000 * np.log(2.0)]
LOG_EDGES = [0.0, -0.0, np.inf, -np.inf, np.nan, -1.0, -5e-324, 5e-324, 1e-310,
             2.2250738585072014e-308, np.nextafter(2.2250738585072014e-308, 0.0),
             1.7976931348623157e308, 1.0, np.nextafter(1.0, 2.0), np.nextafter(1.0, 0.0),
             2.0, 0.5, np.sqrt(2.0), np.nextafter(np.sqrt(2.0), 2.0),
             np.nextafter(np.sqrt(2.0), 0.0), np.sqrt(0.5), 1.0 + 1e-10, 1.0 - 1e-10, np.e]


def test_exp_on_edges_and_a_sweep_of_the_whole_range():
    rng = np.random.default_rng(0)
    x = np.concatenate([EXP_EDGES, rng.uniform(-760.0, 720.0, 200_000),
                        rng.standard_normal(50_000), 1e-8 * rng.standard_normal(10_000),
                        rng.uniform(-745.2, -708.0, 20_000)])
    got = _check(_exp_all, np.exp, x)
    assert got[2] == np.inf and got[3] == 0.0 and np.isnan(got[4])


def test_log_on_edges_and_a_sweep_of_the_whole_range():
    rng = np.random.default_rng(1)
    x = np.concatenate([LOG_EDGES, np.exp(rng.uniform(-745.0, 709.7, 200_000)),
                        1.0 + 1e-6 * rng.standard_normal(50_000), rng.uniform(0.0, 3.0, 50_000),
                        rng.uniform(0.0, 2.3e-308, 10_000), -rng.random(1000)])
    got = _check(_log_all, np.log, x)
    assert got[0] == -np.inf and got[1] == -np.inf and got[2] == np.inf
    assert np.isnan(got[3]) and np.isnan(got[5])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.floats(allow_nan=True, allow_infinity=True, width=64), min_size=1,
                max_size=64))
def test_exp_matches_numpy_on_any_doubles(xs):
    _check(_exp_all, np.exp, np.array(xs))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.floats(allow_nan=True, allow_infinity=True, width=64), min_size=1,
                max_size=64))
def test_log_matches_numpy_on_any_doubles(xs):
    _check(_log_all, np.log, np.array(xs))


def _check_trig(x):
    """vsin and vcos within two units of NumPy's where trig_wide is 0 (|x| <= TRIG_LIMIT),
    signed zeros kept; trig_wide 1 exactly on the rest (larger, infinite, NaN)."""
    x = np.ascontiguousarray(x, dtype=np.float64)
    s, c, wide = np.empty_like(x), np.empty_like(x), np.empty(x.shape, np.int64)
    _trig_all(x, s, c, wide)
    inside = np.abs(x) <= TRIG_LIMIT
    np.testing.assert_array_equal(wide, (~inside).astype(np.int64))
    for got, want in ((s[inside], np.sin(x[inside])), (c[inside], np.cos(x[inside]))):
        worst = _ulps(got, want)
        assert worst.size == 0 or worst.max() <= 2.0, (x[inside][worst.argmax()], worst.max())
    np.testing.assert_array_equal(np.signbit(s[inside & (x == 0)]),
                                  np.signbit(x[inside & (x == 0)]))


def test_sin_cos_on_edges_and_a_sweep_of_their_range():
    rng = np.random.default_rng(2)
    k = np.arange(-41_000, 41_000)
    near = k * (np.pi / 2)                   # the doubles nearest multiples of pi / 2
    x = np.concatenate([[0.0, -0.0, 5e-324, -5e-324, 1e-300, TRIG_LIMIT, -TRIG_LIMIT,
                         np.nextafter(TRIG_LIMIT, np.inf), np.inf, -np.inf, np.nan, 1e300],
                        near, np.nextafter(near, np.inf), np.nextafter(near, -np.inf),
                        rng.uniform(-TRIG_LIMIT, TRIG_LIMIT, 100_000),
                        rng.standard_normal(50_000), 1e-8 * rng.standard_normal(5_000)])
    _check_trig(x)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.floats(allow_nan=True, allow_infinity=True, width=64), min_size=1,
                max_size=64))
def test_sin_cos_match_numpy_on_any_doubles(xs):
    _check_trig(np.array(xs))


def test_the_loops_that_call_them_vectorise():
    """The functions are not inlined by Numba (that multiplies its compile time on big
    kernels): LLVM inlines them, so an elementwise loop of exp, log, sin and cos still
    runs on vectors of doubles and calls none of them per element."""
    import re

    @njit(error_model="numpy")          # (compiled here: a cached kernel has no IR to show)
    def loop(x, out):
        for k in range(x.shape[0]):
            out[k] = vexp(x[k]) + vlog(x[k]) + vsin(x[k]) * vcos(x[k])
    loop(np.ones(8), np.empty(8))
    ir = "\n".join(loop.inspect_llvm().values())
    assert re.search(r"<\d+ x double>", ir)
    called = set(re.findall(r"call [^@]*@(\S+)\(", ir))
    assert not [c for c in called if re.search(r"vexp|vlog|vsin|vcos", c)], called

"""exp and log in plain arithmetic, for compiled loops that LLVM should vectorise.

Numba compiles ``np.exp`` and ``np.log`` to calls of the C library's scalar functions;
a loop that calls a function is not vectorised (Numba here has no vector math library).
``vexp`` and ``vlog`` compute the same values from additions, multiplications, one
division, ``floor``, comparisons and bit moves between a double and a 64-bit integer,
all of which LLVM turns into vector instructions, once it has inlined them into the caller.

exp(x): x = k ln 2 + r with k = round(x / ln 2) and |r| <= ln 2 / 2 (the product k ln 2
taken in two parts, the first exact for |k| < 2^20, so r is accurate to the last bit);
e^r = 1 + r + r^2 q(r) with q the Taylor polynomial of (e^r - 1 - r) / r^2 to degree 11,
whose first dropped term is below 1e-18 relative on that interval; and 2^k built from its
exponent bits, as two factors 2^(k // 2) 2^(k - k // 2), so that the whole range of
k (-1077 .. 1024) is representable and a result in the subnormal range is rounded once.
Above 709.78 (where e^x overflows) the result is inf; at or below -745.2 it is 0.0
(taken as such, not from an underflowing product); NaN stays NaN.

log(x): x = 2^e m with m in [sqrt(1/2), sqrt(2)) (a subnormal x scaled by 2^54 first);
with f = m - 1 and s = f / (2 + f), log(m) = 2 atanh(s) = 2s + s t(s^2), t the series
2z/3 + 2z^2/5 + ... to z^10 (|s| < 0.172: the rest is below 1e-19 relative), and
2s = f - s f, so log(m) = f - s (f - t) with the small part computed last; e ln 2 is
added in two parts, the first exact.  log(0) = -inf, log(x < 0) = NaN, log(inf) = inf,
NaN stays NaN.

Both are within one unit in the last place of NumPy's results over the whole double
range (tests/test_vmath.py checks random and edge-case inputs); special values come
out exactly as NumPy's.

sin(x) and cos(x) for |x| <= TRIG_LIMIT (2^16): x = k pi/2 + r with k = round(2x / pi)
and |r| <= pi/4, k pi/2 taken in three parts (the first two with 33 significant bits, so
their products with k are exact); sin r = r + r z s(z) and cos r = 1 - z/2 + z^2 c(z)
(z = r^2, the Taylor polynomials to degree 17 and 16, the first dropped terms below 1e-19
relative on that interval; 1 - z/2 is formed with its rounding error added back), and k
mod 4 picks +-sin r or +-cos r.  Within two units in the last place of NumPy's results on
that range.  Beyond it the three-part reduction loses accuracy, and NaN has no quadrant:
there the functions return sin 0 and cos 0, and `trig_wide(x)` is 1, so that a kernel can
count such arguments in a vectorised loop and run the C library's functions instead
(kernels.KernelWriter, `vector_trig`).
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit, types
from numba.extending import intrinsic


def _bitcast(source, target):
    """An intrinsic reinterpreting the 64 bits of a `source` value as a `target` value."""
    def typer(typingctx, value):
        if value != source:
            return None

        def codegen(context, builder, sig, args):
            return builder.bitcast(args[0], context.get_value_type(target))
        return target(source), codegen
    return intrinsic(typer)


_bits = _bitcast(types.float64, types.int64)      # the bits of a double, as an int64
_double = _bitcast(types.int64, types.float64)    # the double with the bits of an int64


_INV_LN2 = 1.4426950408889634
# ln 2 as a sum of two doubles: the first is ln 2 rounded to double with its low 21
# significand bits cleared (so k * _LN2_A is exact for |k| < 2^20), the second is
# ln 2 - _LN2_A rounded to double (both computed with 200-bit arithmetic).
_LN2_A = float.fromhex("0x1.62e42fee00000p-1")
_LN2_B = float.fromhex("0x1.a39ef35793c76p-33")
_EXP_TOP = 709.782712893384          # the largest double with a finite exp
_EXP_CLAMP = 746.0                   # beyond this exp(x) is inf whatever k is
_EXP_ZERO = -745.2                   # at or below this exp(x) rounds to 0.0
_MIN_NORMAL = 2.2250738585072014e-308
_TWO54 = 18014398509481984.0
_SQRT2 = 1.4142135623730951
_MANTISSA = 0x000FFFFFFFFFFFFF
_ONE_BITS = 0x3FF0000000000000

# Not inlined by Numba (inline="always" copies a function's IR into every caller before
# Numba's SSA pass, whose work grows with the square of a kernel's blocks: a recurrence
# step with a dozen exps took 20 s to compile); LLVM inlines them where they are called,
# and the loops vectorise as before (tests/test_vmath.py).
_JIT = dict(error_model="numpy", cache=True)


@njit(**_JIT)
def vexp(x):
    # Below -745.2 (and for NaN) the result is decided below; the arithmetic runs on 0.0
    # there, so no product underflows: a subnormal result costs a slow microcode step
    # on x86, and a vector of results pays it when any one of them needs it.
    c = min(x, _EXP_CLAMP) if x > _EXP_ZERO else 0.0
    k = math.floor(c * _INV_LN2 + 0.5)
    r = (c - k * _LN2_A) - k * _LN2_B
    q = (1.0 / 2 + r * (1.0 / 6 + r * (1.0 / 24 + r * (1.0 / 120 + r * (
        1.0 / 720 + r * (1.0 / 5040 + r * (1.0 / 40320 + r * (1.0 / 362880 + r * (
            1.0 / 3628800 + r * (1.0 / 39916800 + r * (1.0 / 479001600 + r * (
                1.0 / 6227020800))))))))))))
    p = 1.0 + (r + r * r * q)
    kk = np.int64(k)
    k1 = kk >> 1
    k2 = kk - k1
    y = p * _double((k1 + 1023) << 52) * _double((k2 + 1023) << 52)
    y = np.inf if x > _EXP_TOP else y
    y = 0.0 if x <= _EXP_ZERO else y
    return x if x != x else y


@njit(**_JIT)
def vlog(x):
    sub = x < _MIN_NORMAL
    xs = x * _TWO54 if sub else x
    b = _bits(xs)
    e = ((b >> 52) & 0x7FF) - (1023 + 54 if sub else 1023)
    m = _double((b & _MANTISSA) | _ONE_BITS)             # in [1, 2)
    big = m > _SQRT2
    m = m * 0.5 if big else m
    e = e + 1 if big else e
    f = m - 1.0
    s = f / (2.0 + f)
    z = s * s
    t = z * (2.0 / 3 + z * (2.0 / 5 + z * (2.0 / 7 + z * (2.0 / 9 + z * (2.0 / 11 + z * (
        2.0 / 13 + z * (2.0 / 15 + z * (2.0 / 17 + z * (2.0 / 19 + z * (2.0 / 21))))))))))
    k = float(e)
    y = k * _LN2_A + ((f - s * (f - t)) + k * _LN2_B)
    y = -np.inf if x == 0.0 else y
    y = np.nan if x < 0.0 else y
    y = x if x == np.inf else y
    return x if x != x else y


TRIG_LIMIT = 65536.0
_TWO_OVER_PI = 0.6366197723675814
# pi / 2 as a sum of three doubles: the first two with 33 significant bits (their
# products with k are exact for |k| < 2^20), the third the rest rounded to double
# (computed with 300-bit arithmetic)
_PIO2_A = float.fromhex("0x1.921fb54400000p+0")
_PIO2_B = float.fromhex("0x1.0b4611a600000p-34")
_PIO2_C = float.fromhex("0x1.3198a2e037073p-69")


@njit(**_JIT)
def trig_wide(x):
    """1 where vsin and vcos do not apply (|x| > TRIG_LIMIT or NaN), else 0."""
    return 0 if abs(x) <= TRIG_LIMIT else 1


@njit(**_JIT)
def _sincos_quadrant(x, shift):
    c = x if abs(x) <= TRIG_LIMIT else 0.0
    k = math.floor(c * _TWO_OVER_PI + 0.5)
    r = ((c - k * _PIO2_A) - k * _PIO2_B) - k * _PIO2_C
    z = r * r
    s = r * z * (-1.0 / 6 + z * (1.0 / 120 + z * (-1.0 / 5040 + z * (
        1.0 / 362880 + z * (-1.0 / 39916800 + z * (1.0 / 6227020800 + z * (
            -1.0 / 1307674368000 + z * (1.0 / 355687428096000))))))))
    s = r if r == 0.0 else r + s         # sin(-0.0) is -0.0
    hz = 0.5 * z
    w = 1.0 - hz
    co = w + (((1.0 - w) - hz) + z * z * (1.0 / 24 + z * (-1.0 / 720 + z * (
        1.0 / 40320 + z * (-1.0 / 3628800 + z * (1.0 / 479001600 + z * (
            -1.0 / 87178291200 + z * (1.0 / 20922789888000))))))))
    # sin(x) = sin(r + k pi/2): k mod 4 = 0, 1, 2, 3 gives s, c, -s, -c; cos shifts k by 1
    n = np.int64(k) + shift
    y = co if (n & 1) != 0 else s
    return -y if (n & 2) != 0 else y


@njit(**_JIT)
def vsin(x):
    return _sincos_quadrant(x, 0)


@njit(**_JIT)
def vcos(x):
    return _sincos_quadrant(x, 1)

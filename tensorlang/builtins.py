"""The builtin scalar functions: one record per builtin, read by every stage.

A record says everything the compiler needs to know about one builtin: its
name and arity (the front end), its NumPy implementation (the reference
interpreter, the loop interpreter and constant folding), its Numba spelling
and the source of the helper that spelling may call (the generated module),
its partial derivatives as Tensor SSA bodies (forward and reverse mode), the
convention at its kinks, and its weight in the cost model.  No other module
lists builtin names, so adding a builtin is adding one record to ``BUILTINS``;
the tests in tests/test_builtin_rules.py iterate over the table.

Derivative rules receive the primal output as a body as well as the
arguments.  Where a statement stores the call (``a[i] = tanh(x[i])``) the
derivative modes pass a read of that statement (``a[l]``), so ``1 - a[l] ** 2``
reuses the stored value; elsewhere they pass the call itself.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np

from .ssa import build as B
from .ssa.ir import Apply, ValCmp


@dataclass(frozen=True)
class Kink:
    """A point where a builtin is not differentiable, with the partials used there.

    `at` holds one value per argument; `partials` one number per argument.
    The tests check them, and finite differences on both sides of the point."""
    at: tuple[float, ...]
    partials: tuple[float, ...]


@dataclass(frozen=True)
class Builtin:
    """Everything the compiler knows about one builtin scalar function.

    name, arity:  how it is called; the front end accepts exactly `arity` arguments.
    numpy:        elementwise implementation on float64 arrays or scalars.
    numba:        the call in generated kernel text, arguments as {0}, {1}.
    numba_helper: source of the njit function `numba` calls, if it calls one;
                  the generated module defines only the helpers its kernels use.
    partials:     (value, *args) -> one body per argument, each the partial
                  derivative with respect to that argument; `value` is a body
                  equal to the builtin's output at `args`.
    convention:   the derivative at kinks, in words (docs/language.md says the same).
    kinks:        the same convention as data, checked by the tests.
    domain:       an interval where the builtin is smooth and defined, for tests.
    cost:         scalar operations one call counts in tl.cost and count_ops.
    jax:          the call in emitted JAX code (backend/jax_backend.py), arguments
                  as {0}, {1}; `jnp`, `jax` and `lax` are in scope.
    bounded_slope: every partial is finite wherever the arguments are (sin, tanh,
                  max; not sqrt, log or exp, whose slopes are inf at 0 or overflow):
                  reverse mode need not guard a zero adjoint it multiplies
                  (ad/reverse.may_be_singular).
    slope_overflows_only: a partial is inf only where it overflows, at arguments
                  so large that the builtin's value does too (exp), never at a
                  finite point such as 0 (sqrt, log): reverse mode keeps such a
                  zero adjoint out with index brackets alone, not with label or
                  value brackets, which cost a read per element (ad/reverse.py).
    infinite_value: the value itself is inf at a finite argument (log at 0, pow(0, -1)):
                  such a call may not be evaluated where the program does not
                  evaluate it, outside a sum that is empty there (opt/contract.py).
    """
    name: str
    arity: int
    numpy: Callable
    numba: str
    partials: Callable
    numba_helper: str = ""
    convention: str = ""
    kinks: tuple[Kink, ...] = ()
    domain: tuple[float, float] = (-2.0, 2.0)
    cost: int = 1
    jax: str = ""
    bounded_slope: bool = False
    slope_overflows_only: bool = False
    infinite_value: bool = False

    def numba_call(self, args) -> str:
        return self.numba.format(*args)


# ------------------------------------------------------------ bodies for the rules
def _apply(fn: str, *args) -> tuple:
    return B.factor_body(Apply(fn, tuple(args)))


def _power(base, p: float) -> tuple:
    return B.power(base, p)


def _cmp(op: str, a, b) -> tuple:
    return B.pred_body((ValCmp(op, a, b),))


def _mul(*bodies) -> tuple:
    out = B.const(1.0)
    for b in bodies:
        out = B.mul(out, b, set())
    return out


def _one_minus(b) -> tuple:
    return B.sub(B.const(1.0), b)


# ------------------------------------------------------------ NumPy implementations
def _sigmoid_array(x):
    # Stable for large |x|: never exponentiates a large positive number.
    out = np.empty_like(x)
    pos = x >= 0
    out[pos] = 1.0 / (1.0 + np.exp(-x[pos]))
    ex = np.exp(x[~pos])
    out[~pos] = ex / (1.0 + ex)
    return out


def _sigmoid(x):
    arr = np.asarray(x, dtype=np.float64)
    if arr.ndim == 0:
        return _sigmoid_array(arr.reshape(1))[0]
    return _sigmoid_array(arr)


def _softplus(x):
    # log(1 + exp(x)) = max(x, 0) + log1p(exp(-|x|)): the exponent is never positive.
    x = np.asarray(x, dtype=np.float64)
    return np.maximum(x, 0.0) + np.log1p(np.exp(-np.abs(x)))


def _erf(x):
    from scipy.special import erf       # imported on first use: scipy is slow to import
    return erf(x)


# ------------------------------------------------------------ Numba helpers
_SIGMOID_HELPER = '''\
@njit(**JIT)
def tl_sigmoid(v):
    if v >= 0.0:
        return 1.0 / (1.0 + np.exp(-v))
    e = np.exp(v)
    return e / (1.0 + e)
'''

_SOFTPLUS_HELPER = '''\
@njit(**JIT)
def tl_softplus(v):
    if v > 0.0:
        return v + np.log1p(np.exp(-v))
    return np.log1p(np.exp(v))
'''

_SIGMOID_SLOPE_HELPER = '''\
@njit(**JIT)
def tl_sigmoid_slope(y):
    return y * (1.0 - y)
'''

_TANH_SLOPE_HELPER = '''\
@njit(**JIT)
def tl_tanh_slope(y):
    return 1.0 - y * y
'''

_SIGN_HELPER = '''\
@njit(**JIT)
def tl_sign(v):
    if v > 0.0:
        return 1.0
    if v < 0.0:
        return -1.0
    if v != v:
        return v
    return 0.0
'''

# NaN propagates as in NumPy's maximum/minimum (a plain comparison would drop it).
_MAX_HELPER = '''\
@njit(**JIT)
def tl_max(a, b):
    if a != a or b != b:
        return a + b
    return a if a >= b else b
'''

_MIN_HELPER = '''\
@njit(**JIT)
def tl_min(a, b):
    if a != a or b != b:
        return a + b
    return a if a <= b else b
'''

_POW_HELPER = '''\
@njit(**JIT)
def tl_pow(a, b):
    return a ** b
'''


def quotient(coeff, items, power=None):
    """coeff times the (value, power) items of positive power, divided by those of
    negative power, one division each: the order every backend computes a term in,
    so `a / b` is a true division and no reciprocal is ever formed."""
    power = power or ieee_power
    val = np.float64(coeff)
    den = []
    for x, p in items:
        if p > 0:
            val = val * (x if p == 1 else power(x, p))
        else:
            den.append(x if p == -1 else power(x, -p))
    for d in den:
        val = val / d
    return val


def ieee_power(a, b):
    """a ** b as IEEE 754's pow, which compiled code calls (C's pow).

    NumPy computes an array to the scalar power 0.5 as sqrt, which differs from
    pow at -inf (NaN instead of inf) and at -0 (-0 instead of +0); every other
    exponent is pow already, so only those points are put right."""
    out = np.power(a, b)
    half = np.equal(b, 0.5)
    if np.any(half):
        out = np.where(half & np.isneginf(a), np.inf, out)
        out = np.where(half & np.equal(a, 0.0), 0.0, out)
    return out


def _jnp(fn: str) -> str:
    return f"jnp.{fn}({{0}})"


def _numpy_call(fn: str) -> str:
    # NumPy's scalar functions, not math's: they return inf/nan where math raises.
    return f"np.{fn}({{0}})"


# ------------------------------------------------------------ the table
_TIE = "on a tie the whole derivative goes to the first argument"

BUILTINS: dict[str, Builtin] = {b.name: b for b in (
    Builtin("exp", 1, np.exp, _numpy_call("exp"),
            lambda v, a: [v],
            jax=_jnp("exp"), slope_overflows_only=True),
    Builtin("log", 1, np.log, _numpy_call("log"),
            lambda v, a: [_power(a, -1.0)], domain=(0.3, 3.0),
            jax=_jnp("log"), infinite_value=True),
    Builtin("log1p", 1, np.log1p, _numpy_call("log1p"),
            lambda v, a: [_power(B.add(B.const(1.0), a), -1.0)], domain=(-0.5, 2.0),
            jax=_jnp("log1p"), infinite_value=True),
    Builtin("sqrt", 1, np.sqrt, _numpy_call("sqrt"),
            lambda v, a: [B.scale(_power(v, -1.0), 0.5)], domain=(0.3, 3.0),
            jax=_jnp("sqrt")),
    Builtin("sin", 1, np.sin, _numpy_call("sin"),
            lambda v, a: [_apply("cos", a)],
            jax=_jnp("sin"), bounded_slope=True),
    Builtin("cos", 1, np.cos, _numpy_call("cos"),
            lambda v, a: [B.neg(_apply("sin", a))],
            jax=_jnp("cos"), bounded_slope=True),
    Builtin("tan", 1, np.tan, _numpy_call("tan"),
            lambda v, a: [B.add(B.const(1.0), _power(v, 2.0))], domain=(-1.2, 1.2),
            jax=_jnp("tan")),
    # tanh' and sigmoid' are one factor each, a polynomial of the value: as 1 - v ** 2
    # and v - v ** 2 the normal form made each two terms, and every factor the chain
    # rule put beside them (a cotangent, a bracket, the tangent of the argument) was
    # computed twice
    Builtin("tanh", 1, np.tanh, _numpy_call("tanh"),
            lambda v, a: [_apply("tanh_slope", v)],
            jax=_jnp("tanh"), bounded_slope=True),
    Builtin("tanh_slope", 1, lambda y: 1.0 - y * y, "tl_tanh_slope({0})",
            lambda v, a: [B.scale(a, -2.0)], numba_helper=_TANH_SLOPE_HELPER,
            jax="(lambda y: 1.0 - y * y)({0})"),
    Builtin("sigmoid", 1, _sigmoid, "tl_sigmoid({0})",
            lambda v, a: [_apply("sigmoid_slope", v)], numba_helper=_SIGMOID_HELPER,
            jax="jax.nn.sigmoid({0})", bounded_slope=True),
    Builtin("sigmoid_slope", 1, lambda y: y * (1.0 - y), "tl_sigmoid_slope({0})",
            lambda v, a: [_one_minus(B.scale(a, 2.0))], numba_helper=_SIGMOID_SLOPE_HELPER,
            jax="(lambda y: y * (1.0 - y))({0})"),
    Builtin("softplus", 1, _softplus, "tl_softplus({0})",
            lambda v, a: [_apply("sigmoid", a)], numba_helper=_SOFTPLUS_HELPER,
            domain=(-4.0, 4.0),
            jax="jax.nn.softplus({0})", bounded_slope=True),
    Builtin("erf", 1, _erf, "math.erf({0})",
            lambda v, a: [B.scale(_apply("exp", B.neg(_power(a, 2.0))), 2.0 / math.sqrt(math.pi))],
            jax="jax.scipy.special.erf({0})", bounded_slope=True),
    # abs' is sign, one factor: as [a > 0] - [a < 0] the derivative of a product of
    # abs calls was two terms that each computed the rest of the product again
    Builtin("abs", 1, np.abs, "abs({0})",
            lambda v, a: [_apply("sign", a)],
            convention="abs'(0) = 0", kinks=(Kink((0.0,), (0.0,)),),
            jax=_jnp("abs"), bounded_slope=True),
    Builtin("sign", 1, np.sign, "tl_sign({0})",
            lambda v, a: [B.const(0.0)], numba_helper=_SIGN_HELPER,
            convention="sign(0) = 0", kinks=(Kink((0.0,), (0.0,)),),
            jax=_jnp("sign"), bounded_slope=True),
    # Values at ties do not depend on which argument wins; the convention is
    # the derivative's alone.  NaN propagates, as in NumPy.
    Builtin("max", 2, np.maximum, "tl_max({0}, {1})",
            lambda v, a, b: [_cmp(">=", a, b), _cmp("<", a, b)], numba_helper=_MAX_HELPER,
            convention=_TIE, kinks=(Kink((0.5, 0.5), (1.0, 0.0)), Kink((-1.0, -1.0), (1.0, 0.0))),
            jax="jnp.maximum({0}, {1})", bounded_slope=True),
    Builtin("min", 2, np.minimum, "tl_min({0}, {1})",
            lambda v, a, b: [_cmp("<=", a, b), _cmp(">", a, b)], numba_helper=_MIN_HELPER,
            convention=_TIE, kinks=(Kink((0.5, 0.5), (1.0, 0.0)), Kink((-1.0, -1.0), (1.0, 0.0))),
            jax="jnp.minimum({0}, {1})", bounded_slope=True),
    # d/da a^b = b a^(b-1) (not b v / a, which is NaN at a = 0); d/db a^b = a^b log a.
    # (simplify.share_powers reads both powers from one where a cannot be 0.)
    Builtin("pow", 2, ieee_power, "tl_pow({0}, {1})",
            lambda v, a, b: [_mul(b, _apply("pow", a, B.sub(b, B.const(1.0)))),
                             _mul(v, _apply("log", a))],
            numba_helper=_POW_HELPER, domain=(0.3, 2.0),
            jax="jnp.power({0}, {1})", infinite_value=True),
)}

ARITY = {name: b.arity for name, b in BUILTINS.items()}
BUILTIN_NAMES = frozenset(BUILTINS)


def numpy_impl(name: str) -> Callable:
    return BUILTINS[name].numpy


def jax_call(name: str, args) -> str:
    """The builtin `name` applied to argument expressions in emitted JAX code."""
    return BUILTINS[name].jax.format(*args)


def numba_helpers(names) -> str:
    """The helper functions the given builtins call, in table order, one block each."""
    used = set(names)
    return "\n\n".join(b.numba_helper for b in BUILTINS.values()
                       if b.name in used and b.numba_helper)

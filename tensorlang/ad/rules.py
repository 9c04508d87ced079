"""One table of derivative rules for the builtins.

``PARTIALS[fn](args)`` returns, for each argument, the partial derivative of
``fn`` with respect to it as a Tensor SSA body over the same indices as the
arguments.  Conventions at kinks and ties (LANGUAGE.md section 5):

* ``max(a, b)`` and ``min(a, b)`` pass the whole derivative to the first
  argument on ties: d/da max = [a >= b], d/db max = [a < b].
* ``abs'(0) = 0``: d/da abs = [a > 0] - [a < 0].

Every rule is checked against central finite differences in the tests.
"""
from __future__ import annotations

from ..ssa import build as B
from ..ssa.ir import Apply, Group, ValCmp


def _apply(fn, *args):
    return B.factor_body(Apply(fn, tuple(args)))


def _pow_body(base, p: float):
    return B.power(base, p, set())


def _cmp(op, a, b):
    return B.pred_body((ValCmp(op, a, b),))


def _mul(*bodies):
    out = B.const(1.0)
    for b in bodies:
        out = B.mul(out, b, set())
    return out


def _exp(a):
    return [_apply("exp", a)]


def _log(a):
    return [_pow_body(a, -1.0)]


def _log1p(a):
    return [_pow_body(B.add(B.const(1.0), a), -1.0)]


def _sqrt(a):
    return [B.scale(_pow_body(_apply("sqrt", a), -1.0), 0.5)]


def _sin(a):
    return [_apply("cos", a)]


def _cos(a):
    return [B.neg(_apply("sin", a))]


def _tan(a):
    return [B.add(B.const(1.0), _pow_body(_apply("tan", a), 2.0))]


def _tanh(a):
    return [B.sub(B.const(1.0), _pow_body(_apply("tanh", a), 2.0))]


def _sigmoid(a):
    s = _apply("sigmoid", a)
    return [_mul(s, B.sub(B.const(1.0), s))]


def _abs(a):
    zero = B.const(0.0)
    return [B.sub(_cmp(">", a, zero), _cmp("<", a, zero))]


def _max(a, b):
    return [_cmp(">=", a, b), _cmp("<", a, b)]


def _min(a, b):
    return [_cmp("<=", a, b), _cmp(">", a, b)]


def _pow(a, b):
    # d/da a^b = b a^(b-1);  d/db a^b = a^b log a
    return [_mul(b, _apply("pow", a, B.sub(b, B.const(1.0)))),
            _mul(_apply("pow", a, b), _apply("log", a))]


PARTIALS = {
    "exp": _exp, "log": _log, "log1p": _log1p, "sqrt": _sqrt, "sin": _sin, "cos": _cos,
    "tan": _tan, "tanh": _tanh, "sigmoid": _sigmoid, "abs": _abs, "max": _max, "min": _min,
    "pow": _pow,
}


def partials(fn: str, args) -> list:
    return PARTIALS[fn](*args)


__all__ = ["PARTIALS", "partials", "Group"]

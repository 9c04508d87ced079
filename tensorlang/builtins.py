"""The builtin scalar functions: names, arities, and NumPy implementations.

One table, so the checker, the interpreter and (later) the derivative rules
and code generators agree on what exists.
"""
from __future__ import annotations

import numpy as np


def _sigmoid(x):
    # Stable for large |x|: never exponentiates a large positive number.
    out = np.empty_like(x)
    pos = x >= 0
    out[pos] = 1.0 / (1.0 + np.exp(-x[pos]))
    ex = np.exp(x[~pos])
    out[~pos] = ex / (1.0 + ex)
    return out


def _sigmoid_any(x):
    arr = np.asarray(x, dtype=np.float64)
    if arr.ndim == 0:
        return _sigmoid(arr.reshape(1))[0]
    return _sigmoid(arr)


UNARY = {
    "exp": np.exp, "log": np.log, "log1p": np.log1p, "sqrt": np.sqrt, "sin": np.sin,
    "cos": np.cos, "tan": np.tan, "tanh": np.tanh, "sigmoid": _sigmoid_any, "abs": np.abs,
}


# Values of max/min at ties do not depend on which argument "wins"; that
# convention (the first) matters only to derivatives.  NaN propagates, as in NumPy.
BINARY = {"max": np.maximum, "min": np.minimum, "pow": np.power}

ARITY = {**{k: 1 for k in UNARY}, **{k: 2 for k in BINARY}}
BUILTIN_NAMES = frozenset(ARITY)


def numpy_impl(name: str):
    return UNARY.get(name) or BINARY[name]

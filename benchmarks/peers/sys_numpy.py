"""NumPy rows: the forward function and a hand-derived gradient or Hessian in vectorised NumPy
(the functions of spec.py that also serve as references), where writing one by hand is
natural."""
from __future__ import annotations

import numpy as np

from .spec import NUMPY, call_args

FORMULATION = {
    "W1": "hand gradient W @ B.T",
    "W2": "hand backpropagation (softmax - one-hot, ReLU mask, matrix products)",
    "W5a": "hand gradient k * I",
    "W5b": "hand gradient (B.T, A.T)",
    "W10a": "np.correlate forward; hand gradient with np.convolve / np.correlate",
    "W10b": "25 shifted slices forward; hand gradient with 25 shifted slices and dots",
    "W12": "hand Hessian X.T @ (s (1 - s) X) / m",
}


def rows(key):
    return [("hand", FORMULATION[key])] if key in FORMULATION else []


def build(key: str, variant: str, size, inp: dict):
    f, d = NUMPY[key]
    args = call_args(key, size, inp)
    return (lambda: f(**args)), (lambda: d(**args))


def to_numpy(out):
    parts = out if isinstance(out, tuple) else (out,)
    return tuple(np.asarray(p) for p in parts)

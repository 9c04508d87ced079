"""NumPy rows: the forward function and a hand-derived gradient or Hessian in vectorised NumPy
(the functions of spec.py that also serve as references), where writing one by hand is
natural."""
from __future__ import annotations

from .spec import NUMPY, NUMPY_VARIANTS, call_args, flat_numpy

FORMULATION = {
    "W1": "hand gradient W @ B.T",
    "W2": "hand backpropagation (softmax - one-hot, ReLU mask, matrix products)",
    "W5a": "hand gradient k * I",
    "W5b": "hand gradient (B.T, A.T)",
    "W10a": "np.correlate forward; hand gradient with np.convolve / np.correlate",
    "W10b": "25 shifted slices forward; hand gradient with 25 shifted slices and dots",
    "W12": "hand Hessian X.T @ (s (1 - s) X) / m",
    "W13": "hand back-propagation through time: a loop of W @ h forward, W.T @ h_bar and "
           "np.outer back",
    "W15": "hand forward-backward in log space: per step a max-shifted log-sum-exp of a "
           "K x K matrix, in each direction",
}
VARIANT_FORMULATION = {
    ("W15", "scaled"): "hand forward-backward in probability space, rescaled per step "
                       "(Rabiner): exp(A) once, a matrix-vector product per step and direction",
}


def rows(key):
    out = [("hand", FORMULATION[key])] if key in FORMULATION else []
    return out + [(v, form) for (k, v), form in VARIANT_FORMULATION.items() if k == key]


def build(key: str, variant: str, size, inp: dict):
    f, d = NUMPY_VARIANTS[(key, variant)] if variant != "hand" else NUMPY[key]
    args = call_args(key, size, inp)
    return (lambda: f(**args)), (lambda: d(**args))


to_numpy = flat_numpy

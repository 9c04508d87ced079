"""Every function in examples/*.tl against a hand-written NumPy reference.

Each entry of CASES pairs an input builder (seeded, small, non-square where
the signature allows it, so a swapped index shows up as a wrong value or a
shape error) with a reference written directly in NumPy.  A new example file
or function without an entry here fails test_every_example_function_has_a_reference.
"""
from __future__ import annotations

import functools
import re
import zlib
from pathlib import Path

import numpy as np
import scipy.special
import pytest

import tensorlang as tl

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"

RTOL = 1e-10
ATOL = 1e-12


# ---------------------------------------------------------------------------
# input builders: each takes a numpy Generator and returns the keyword
# arguments in parameter order (so the same dict also serves a positional call)
# ---------------------------------------------------------------------------

def vec(rng, n):
    return rng.standard_normal(n)


def mat(rng, m, n):
    return rng.standard_normal((m, n))


def labels(rng, v, b):
    return rng.integers(0, v, size=b).astype(np.int64)


def mask(rng, h, w):
    return rng.random((h, w)) < 0.6


# ---------------------------------------------------------------------------
# references
# ---------------------------------------------------------------------------

def hinge_ref(Z, y):
    """Crammer-Singer hinge: the best wrong class's margin violation, clipped at 0."""
    rows = np.arange(len(y))
    wrong = np.where(np.arange(Z.shape[1])[None, :] == y[:, None], -np.inf, Z)
    v = wrong.max(axis=1) - Z[rows, y] + 1.0
    return float(np.mean(np.maximum(v, 0.0)))


def pad_shift(a, axis, step):
    """a shifted by `step` along `axis`, zero where the read falls outside:
    result[..., i, ...] = a[..., i + step, ...] if in range else 0."""
    out = np.zeros_like(a)
    n = a.shape[axis]
    src = [slice(None)] * a.ndim
    dst = [slice(None)] * a.ndim
    if step >= 0:
        src[axis] = slice(step, n)
        dst[axis] = slice(0, n - step)
    else:
        src[axis] = slice(0, n + step)
        dst[axis] = slice(-step, n)
    out[tuple(dst)] = a[tuple(src)]
    return out


def blur_ref(img):
    bx = 0.25 * (pad_shift(img, 1, -1) + 2.0 * img + pad_shift(img, 1, 1))
    return 0.25 * (pad_shift(bx, 0, -1) + 2.0 * bx + pad_shift(bx, 0, 1))


def laplacian_ref(u, M):
    L = (pad_shift(u, 0, -1) + pad_shift(u, 0, 1)
         + pad_shift(u, 1, -1) + pad_shift(u, 1, 1) - 4.0 * u)
    return np.where(M, L, 0.0)


def fd_energy_ref(x):
    return float(np.sum(np.diff(x) ** 2))


def onehot(y, v):
    return np.eye(v)[y]


def lse_rows(Z):
    return np.log(np.exp(Z).sum(axis=1))


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def residual_ref(A, x, rhs):
    res = A @ x - rhs
    return res, 0.5 * float(res @ res)


def conv3_ref(x, k):
    xp = np.concatenate([[0.0], x, [0.0]])
    n = len(x)
    return k[0] * xp[0:n] + k[1] * xp[1:n + 1] + k[2] * xp[2:n + 2]


def band_ref(A):
    return float(np.trace(A, 1) + np.trace(A, -1))


def border_ref(A):
    inner = A[1:-1, 1:-1].sum()
    return float(A.sum() - inner)


# ---------------------------------------------------------------------------
# the table: (file, function) -> (inputs, reference)
# ---------------------------------------------------------------------------

def digits_loss_ref(X, W1, b1, W2, b2, y, lam):
    Z = np.tanh(X @ W1 + b1) @ W2 + b2
    xent = float(np.mean(lse_rows(Z) - Z[np.arange(len(y)), y]))
    return xent + 0.5 * lam * float(np.sum(W1 ** 2) + np.sum(W2 ** 2))


def rnn_ref(x, W, h0):
    h = h0
    for t in range(len(x)):
        h = np.tanh(x[t] + W @ h)
    return float(h @ h)


def returns_ref(r, g):
    out, acc = np.zeros(len(r)), 0.0
    for t in reversed(range(len(r))):
        acc = r[t] + g * acc
        out[t] = acc
    return out


def cumsum_rows_ref(X, w):
    C = X.copy()
    for i in range(1, len(X)):
        C[i] = X[i] + C[i - 1]
    return float((w * C ** 2).sum())


def hmm_ref(pi, A, E):
    """The forward algorithm in log space."""
    a = pi + E[0]
    for t in range(1, len(E)):
        a = scipy.special.logsumexp(a[:, None] + A, axis=0) + E[t]
    return float(scipy.special.logsumexp(a))


def hmm_inputs(r, T=7, K=4):
    """Normalised log-probabilities, so the log-likelihood is a real one."""
    return dict(pi=np.log(r.dirichlet(np.ones(K))), A=np.log(r.dirichlet(np.ones(K), size=K)),
                E=np.log(r.dirichlet(np.ones(T), size=K).T))


def soft_dtw_ref(x, y, g):
    """The soft-DTW dynamic program: R padded with a row and column of +inf, R[0, 0] = 0."""
    n, m = len(x), len(y)
    D = ((x[:, None, :] - y[None, :, :]) ** 2).sum(-1)
    R = np.full((n + 1, m + 1), np.inf)
    R[0, 0] = 0.0
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            v = -np.array([R[i - 1, j - 1], R[i - 1, j], R[i, j - 1]]) / g
            top = v.max()
            R[i, j] = D[i - 1, j - 1] - g * (top + np.log(np.exp(v - top).sum()))
    return float(R[n, m])


def horner_ref(c, x):
    acc = 0.0
    for s in reversed(range(len(c))):
        acc = c[s] + x * acc
    return float(acc)


def lstm_ref(W, B, extra, h0, s0, seq):
    """The ADBench LSTM objective as a loop over steps and layers."""
    sig = lambda z: 1.0 / (1.0 + np.exp(-z))  # noqa: E731
    h, s = h0.copy(), s0.copy()
    total = 0.0
    for t in range(len(seq) - 1):
        x = seq[t] * extra[0]
        for l in range(len(W)):
            forget, inp, out = sig(x * W[l, 0] + B[l, 0]), sig(h[l] * W[l, 1] + B[l, 1]), \
                sig(x * W[l, 2] + B[l, 2])
            s[l] = s[l] * forget + inp * np.tanh(h[l] * W[l, 3] + B[l, 3])
            h[l] = out * np.tanh(s[l])
            x = h[l]
        y = x * extra[1] + extra[2]
        total += np.sum(seq[t + 1] * (y - np.log(2.0 + np.exp(y).sum())))
    return float(-total / ((len(seq) - 1) * seq.shape[1]))


def lstm_inputs(r, L=2, b=5, c=6):
    return dict(W=r.standard_normal((L, 4, b)), B=r.standard_normal((L, 4, b)),
                extra=r.standard_normal((3, b)), h0=r.standard_normal((L, b)),
                s0=r.standard_normal((L, b)), seq=r.standard_normal((c, b)))


CASES = {
    # qform.tl
    ("qform.tl", "qform"): (
        lambda r: dict(x=vec(r, 6), A=mat(r, 6, 6)),
        lambda x, A: float(x @ A @ x),
    ),
    ("qform.tl", "bilinear"): (
        lambda r: dict(u=vec(r, 5), B=mat(r, 5, 7), v=vec(r, 7)),
        lambda u, B, v: float(u @ B @ v),
    ),
    ("qform.tl", "trace4"): (
        lambda r: dict(A=mat(r, 6, 6)),
        lambda A: 4.0 * float(np.trace(A)),
    ),
    # trace_sum.tl
    ("trace_sum.tl", "trace_sum"): (
        lambda r: dict(A=mat(r, 7, 7)),
        lambda A: 10.0 * float(np.trace(A)),
    ),
    ("trace_sum.tl", "trace_product"): (
        lambda r: dict(A=mat(r, 5, 7), B=mat(r, 7, 5)),
        lambda A, B: float(np.trace(A @ B)),
    ),
    # blur.tl
    ("blur.tl", "blur"): (
        lambda r: dict(img=mat(r, 5, 7)),
        blur_ref,
    ),
    ("blur.tl", "blur_energy"): (
        lambda r: dict(img=mat(r, 6, 5)),
        lambda img: float(np.sum(blur_ref(img) ** 2)),
    ),
    # fd_energy.tl
    ("fd_energy.tl", "fd_energy"): (
        lambda r: dict(x=vec(r, 7)),
        fd_energy_ref,
    ),
    ("fd_energy.tl", "backward_diff"): (
        lambda r: dict(x=vec(r, 6)),
        lambda x: np.concatenate([[0.0], np.diff(x)]),
    ),
    ("fd_energy.tl", "fd_energy2"): (
        lambda r: dict(u=mat(r, 5, 7)),
        lambda u: float(np.sum(np.diff(u, axis=0) ** 2) + np.sum(np.diff(u, axis=1) ** 2)),
    ),
    ("fd_energy.tl", "fd_regularized"): (
        lambda r: dict(x=vec(r, 6), target=vec(r, 6), alpha=0.7),
        lambda x, target, alpha: float(np.mean((x - target) ** 2)) + alpha * fd_energy_ref(x),
    ),
    # matchain.tl
    ("matchain.tl", "matchain"): (
        lambda r: dict(A=mat(r, 5, 6), B=mat(r, 6, 7), C=mat(r, 7, 4)),
        lambda A, B, C: A @ B @ C,
    ),
    ("matchain.tl", "matchain_sum"): (
        lambda r: dict(A=mat(r, 5, 6), B=mat(r, 6, 7), C=mat(r, 7, 4)),
        lambda A, B, C: float(np.sum(A @ B @ C)),
    ),
    ("matchain.tl", "matchain_direct"): (
        lambda r: dict(A=mat(r, 4, 6), B=mat(r, 6, 5), C=mat(r, 5, 7)),
        lambda A, B, C: A @ B @ C,
    ),
    ("matchain.tl", "gram"): (
        lambda r: dict(A=mat(r, 7, 5)),
        lambda A: A.T @ A,
    ),
    # laplacian.tl
    ("laplacian.tl", "laplacian"): (
        lambda r: dict(u=mat(r, 5, 7), M=mask(r, 5, 7)),
        laplacian_ref,
    ),
    ("laplacian.tl", "laplacian_energy"): (
        lambda r: dict(u=mat(r, 6, 5), M=mask(r, 6, 5)),
        lambda u, M: 0.5 * float(np.sum(laplacian_ref(u, M) ** 2)),
    ),
    ("laplacian.tl", "masked_dirichlet"): (
        lambda r: dict(u=mat(r, 5, 7), M=mask(r, 5, 7)),
        lambda u, M: float(np.sum(M[:-1, :] * np.diff(u, axis=0) ** 2)),
    ),
    # onehot_loss.tl  (v=7 classes, d=5 features, b=6 rows)
    ("onehot_loss.tl", "embed"): (
        lambda r: dict(E=mat(r, 7, 5), y=labels(r, 7, 6)),
        lambda E, y: E[y, :],
    ),
    ("onehot_loss.tl", "onehot_loss"): (
        lambda r: dict(E=mat(r, 7, 5), W=mat(r, 5, 7), y=labels(r, 7, 6)),
        lambda E, W, y: float(np.sum((E[y] @ W - onehot(y, 7)) ** 2)) / len(y),
    ),
    ("onehot_loss.tl", "picked"): (
        lambda r: dict(P=mat(r, 6, 7), y=labels(r, 7, 6)),
        lambda P, y: P[np.arange(len(y)), y],
    ),
    # mlp.tl  (b=6 rows, d=5 inputs, h=7 hidden, k=4 classes)
    ("mlp.tl", "mlp_loss"): (
        lambda r: dict(X=mat(r, 6, 5), W=mat(r, 5, 4), y=labels(r, 4, 6)),
        lambda X, W, y: float(np.sum(
            (np.maximum(X @ W, 0.0)[np.arange(len(y)), y] - 1.0) ** 2)) / len(y),
    ),
    ("mlp.tl", "mlp2_loss"): (
        lambda r: dict(X=mat(r, 6, 5), W1=mat(r, 5, 7), c1=vec(r, 7),
                       W2=mat(r, 7, 4), y=labels(r, 4, 6)),
        lambda X, W1, c1, W2, y: float(np.sum(
            (np.maximum(X @ W1 + c1, 0.0) @ W2 - onehot(y, 4)) ** 2)) / len(y),
    ),
    # softmax.tl  (b=6 rows, k=5 classes)
    ("softmax.tl", "softmax"): (
        lambda r: dict(Z=mat(r, 6, 5)),
        lambda Z: np.exp(Z) / np.exp(Z).sum(axis=1, keepdims=True),
    ),
    ("digits_mlp.tl", "digits_logits"): (
        lambda r: dict(X=mat(r, 6, 5), W1=mat(r, 5, 7), b1=vec(r, 7), W2=mat(r, 7, 4), b2=vec(r, 4)),
        lambda X, W1, b1, W2, b2: np.tanh(X @ W1 + b1) @ W2 + b2),
    ("digits_mlp.tl", "digits_loss"): (
        lambda r: dict(X=mat(r, 6, 5), W1=mat(r, 5, 7), b1=vec(r, 7), W2=mat(r, 7, 4), b2=vec(r, 4),
                       y=labels(r, 4, 6), lam=0.3),
        lambda X, W1, b1, W2, b2, y, lam: digits_loss_ref(X, W1, b1, W2, b2, y, lam)),
    ("softmax.tl", "xent"): (
        lambda r: dict(Z=mat(r, 6, 5), y=labels(r, 5, 6)),
        lambda Z, y: float(np.mean(lse_rows(Z) - Z[np.arange(len(y)), y])),
    ),
    ("softmax.tl", "xent_bracket"): (
        lambda r: dict(Z=mat(r, 6, 5), y=labels(r, 5, 6)),
        lambda Z, y: float(np.mean(lse_rows(Z) - Z[np.arange(len(y)), y])),
    ),
    ("softmax.tl", "hinge"): (
        lambda r: dict(Z=mat(r, 6, 5), y=labels(r, 5, 6)),
        lambda Z, y: hinge_ref(Z, y),
    ),
    # rnn.tl, returns.tl, cumsum.tl: recurrences against loops written here
    ("rnn.tl", "rnn_loss"): (
        lambda r: dict(x=mat(r, 7, 4), W=0.5 * mat(r, 4, 4), h0=vec(r, 4)),
        rnn_ref),
    ("returns.tl", "returns"): (
        lambda r: dict(r=vec(r, 9), g=0.9),
        returns_ref),
    ("returns.tl", "returns_loss"): (
        lambda r: dict(r=vec(r, 9), g=0.9, w=vec(r, 9)),
        lambda r, g, w: float((w * returns_ref(r, g) ** 2).sum())),
    ("cumsum.tl", "cumsum"): (
        lambda r: dict(x=vec(r, 8)),
        lambda x: np.cumsum(x)),
    ("cumsum.tl", "cumsum_rows"): (
        lambda r: dict(X=mat(r, 6, 3), w=mat(r, 6, 3)),
        cumsum_rows_ref),
    # hmm.tl, soft_dtw.tl, power.tl: recurrences with reductions, against loops written here
    ("hmm.tl", "hmm_loglik"): (hmm_inputs, hmm_ref),
    ("soft_dtw.tl", "soft_dtw"): (
        lambda r: dict(x=mat(r, 5, 3), y=mat(r, 7, 3), g=0.7),
        soft_dtw_ref),
    ("power.tl", "power"): (
        lambda r: dict(x=1.1 + 0.1 * float(r.standard_normal()), steps=np.zeros(6)),
        lambda x, steps: float(x ** len(steps))),
    ("power.tl", "horner"): (
        lambda r: dict(c=vec(r, 6), x=float(r.standard_normal())),
        horner_ref),
    ("lstm.tl", "lstm_loss"): (lstm_inputs, lstm_ref),
    # conv_valid.tl  (sizes chosen so every exact division is whole)
    ("conv_valid.tl", "correlate"): (
        lambda r: dict(x=vec(r, 9), w=vec(r, 4)),
        lambda x, w: np.correlate(x, w, mode="valid"),
    ),
    ("conv_valid.tl", "conv2d_energy"): (
        lambda r: dict(img=mat(r, 7, 6), K=mat(r, 3, 2)),
        lambda img, K: float(np.sum(np.tanh(np.array(
            [[np.sum(K * img[i:i + 3, j:j + 2]) for j in range(5)] for i in range(5)])))),
    ),
    ("conv_valid.tl", "avgpool2"): (
        lambda r: dict(img=mat(r, 6, 8)),
        lambda img: img.reshape(3, 2, 4, 2).mean(axis=(1, 3)),
    ),
    ("conv_valid.tl", "strided_fit"): (
        lambda r: dict(x=vec(r, 11), w=vec(r, 3), t=vec(r, 5)),
        lambda x, w, t: float(np.sum(
            (np.array([np.dot(w, x[2 * i:2 * i + 3]) for i in range(5)]) - t) ** 2)),
    ),
    # calls.tl
    ("calls.tl", "qform"): (
        lambda r: dict(x=vec(r, 5), A=mat(r, 5, 5)),
        lambda x, A: float(x @ A @ x),
    ),
    ("calls.tl", "rayleigh"): (
        lambda r: dict(v=vec(r, 6), G=mat(r, 6, 6)),
        lambda v, G: float(v @ G @ v) / float(v @ v),
    ),
    ("calls.tl", "shifted_qform"): (
        lambda r: dict(x=vec(r, 5), A=mat(r, 5, 5), sigma=1.3),
        lambda x, A, sigma: float(x @ (A - sigma * np.eye(len(x))) @ x),
    ),
    ("calls.tl", "axpy"): (
        lambda r: dict(alpha=-0.4, x=vec(r, 6), y=vec(r, 6)),
        lambda alpha, x, y: alpha * x + y,
    ),
    ("calls.tl", "axpy_norm"): (
        lambda r: dict(x=vec(r, 6), y=vec(r, 6)),
        lambda x, y: float(np.sum((2.0 * x + y) ** 2)),
    ),
    ("calls.tl", "matvec"): (
        lambda r: dict(A=mat(r, 5, 7), x=vec(r, 7)),
        lambda A, x: A @ x,
    ),
    ("calls.tl", "residual"): (
        lambda r: dict(A=mat(r, 5, 7), x=vec(r, 7), rhs=vec(r, 5)),
        residual_ref,
    ),
    ("calls.tl", "residual_mean"): (
        lambda r: dict(A=mat(r, 5, 7), x=vec(r, 7), rhs=vec(r, 5)),
        lambda A, x, rhs: residual_ref(A, x, rhs)[1] + float(np.mean(A @ x - rhs)),
    ),
    # indexing.tl
    ("indexing.tl", "flip"): (
        lambda r: dict(x=vec(r, 7)),
        lambda x: x[::-1].copy(),
    ),
    ("indexing.tl", "conv3"): (
        lambda r: dict(x=vec(r, 7), k=vec(r, 3)),
        conv3_ref,
    ),
    ("indexing.tl", "even_odd"): (
        lambda r: dict(x=vec(r, 7)),
        lambda x: float(x[0::2].sum() - x[1::2].sum()),
    ),
    ("indexing.tl", "diag"): (
        lambda r: dict(x=vec(r, 5)),
        lambda x: np.diag(x),
    ),
    ("indexing.tl", "band"): (
        lambda r: dict(A=mat(r, 6, 6)),
        band_ref,
    ),
    ("indexing.tl", "border"): (
        lambda r: dict(A=mat(r, 5, 7)),
        border_ref,
    ),
    ("indexing.tl", "hinge"): (
        lambda r: dict(x=vec(r, 7), y=vec(r, 7)),
        lambda x, y: float(np.sum(np.where(x * y < 1.0, 1.0 - x * y, 0.0))),
    ),
    ("indexing.tl", "positive_part"): (
        lambda r: dict(x=vec(r, 7)),
        lambda x: float(np.sum(np.maximum(x, 0.0))),
    ),
    # pointwise.tl
    ("pointwise.tl", "activations"): (
        lambda r: dict(x=vec(r, 7)),
        lambda x: (np.tanh(x) + sigmoid(x) + np.sin(x) * np.cos(x)
                   + np.tan(0.5 * x) + np.abs(x)),
    ),
    ("pointwise.tl", "smooth_activations"): (
        lambda r: dict(x=vec(r, 7)),
        lambda x: np.logaddexp(0.0, x) * scipy.special.erf(x),
    ),
    ("pointwise.tl", "smooth_losses"): (
        lambda r: dict(x=vec(r, 7)),
        lambda x: float(np.sum(np.log1p(np.exp(x))) + np.sum(np.sqrt(1.0 + x ** 2) - 1.0)
                        + np.sum(np.log(1.0 + x ** 2))),
    ),
    ("pointwise.tl", "clip_pow"): (
        lambda r: dict(x=vec(r, 7)),
        lambda x: np.minimum(np.maximum(x, -0.5), 1.0) + (np.abs(x) + 1.0) ** 1.5,
    ),
    ("pointwise.tl", "precedence"): (
        lambda r: dict(x=vec(r, 6)),
        lambda x: float(np.sum(-(x ** 2) + 2.0 ** (x ** 2) - (x / 2) * 3 - 3.0)) + 1e-3 * len(x),
    ),
    ("pointwise.tl", "mean"): (
        lambda r: dict(x=vec(r, 7)),
        lambda x: float(np.mean(x)),
    ),
}


# ---------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------

def example_files():
    return sorted(p.name for p in EXAMPLES.glob("*.tl"))


def declared_functions(filename):
    """Function names in a .tl file, in order, read straight from the text."""
    text = (EXAMPLES / filename).read_text()
    return re.findall(r"^def\s+([A-Za-z_][A-Za-z0-9_]*)\s*\(", text, flags=re.M)


@functools.lru_cache(maxsize=None)
def load(filename):
    return tl.load(str(EXAMPLES / filename))


def seeded_rng(filename, func):
    # a stable seed per case, so each case has its own inputs run after run
    return np.random.default_rng(zlib.crc32(f"{filename}:{func}".encode()))


def check_value(got, want, what):
    if isinstance(want, tuple):
        assert type(got) is tuple, f"{what}: expected a tuple, got {type(got).__name__}"
        assert len(got) == len(want), f"{what}: expected {len(want)} outputs, got {len(got)}"
        for k, (g, w) in enumerate(zip(got, want)):
            check_value(g, w, f"{what}[{k}]")
    elif isinstance(want, np.ndarray):
        assert isinstance(got, np.ndarray), f"{what}: expected an ndarray, got {type(got).__name__}"
        assert got.shape == want.shape, f"{what}: shape {got.shape}, expected {want.shape}"
        assert got.dtype == np.float64, f"{what}: dtype {got.dtype}, expected float64"
        np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL, err_msg=what)
    else:
        assert type(got) is float, f"{what}: expected a Python float, got {type(got).__name__}"
        assert np.allclose(got, want, rtol=RTOL, atol=ATOL), f"{what}: {got!r} != {want!r}"


# ---------------------------------------------------------------------------
# tests
# ---------------------------------------------------------------------------

def test_there_are_enough_examples():
    assert len(example_files()) >= 8


@pytest.mark.parametrize("filename", example_files())
def test_example_starts_with_header_comment(filename):
    first = (EXAMPLES / filename).read_text().splitlines()[0]
    assert first.startswith(f"# {filename} -- "), first


def test_every_example_function_has_a_reference():
    declared = {(f, name) for f in example_files() for name in declared_functions(f)}
    missing = sorted(declared - CASES.keys())
    stale = sorted(CASES.keys() - declared)
    assert not missing, f"example functions without a NumPy reference in CASES: {missing}"
    assert not stale, f"CASES entries for functions that no longer exist: {stale}"


@pytest.mark.parametrize("filename", example_files())
def test_module_names_in_file_order(filename):
    mod = load(filename)
    assert list(mod.names) == declared_functions(filename)
    for name in mod.names:
        assert mod[name] is not None
        assert getattr(mod, name) is not None


@pytest.mark.parametrize(("filename", "func"), sorted(CASES), ids=lambda v: v)
def test_example_matches_numpy(filename, func):
    build, reference = CASES[(filename, func)]
    inputs = build(seeded_rng(filename, func))
    want = reference(**{k: np.copy(v) if isinstance(v, np.ndarray) else v
                        for k, v in inputs.items()})
    if isinstance(want, np.floating):
        want = float(want)
    got = load(filename)[func](**inputs)
    check_value(got, want, f"{filename}:{func}")


@pytest.mark.parametrize(("filename", "func"), sorted(CASES), ids=lambda v: v)
def test_example_on_reference_backend(filename, func):
    """The NumPy interpreter is the oracle for every other backend, so it must agree too."""
    build, reference = CASES[(filename, func)]
    inputs = build(seeded_rng(filename, func))
    want = reference(**{k: np.copy(v) if isinstance(v, np.ndarray) else v
                        for k, v in inputs.items()})
    oracle = load(filename)[func].compile(backend="numpy")
    check_value(oracle(**inputs), want, f"{filename}:{func} (numpy backend)")


def test_positional_call_matches_keyword_call():
    mod = load("qform.tl")
    inputs = CASES[("qform.tl", "bilinear")][0](seeded_rng("qform.tl", "bilinear"))
    by_position = mod.bilinear(*inputs.values())
    by_keyword = mod["bilinear"](**inputs)
    assert type(by_position) is float
    assert by_position == by_keyword
    check_value(by_position, float(inputs["u"] @ inputs["B"] @ inputs["v"]), "bilinear positional")


def test_tuple_result_positional():
    mod = load("calls.tl")
    inputs = CASES[("calls.tl", "residual")][0](seeded_rng("calls.tl", "residual"))
    got = mod.residual(*inputs.values())
    check_value(got, residual_ref(**inputs), "residual positional")


def test_inputs_are_not_modified():
    mod = load("blur.tl")
    img = np.random.default_rng(1).standard_normal((5, 6))
    before = img.copy()
    mod.blur(img=img)
    np.testing.assert_array_equal(img, before)


def test_array_like_and_non_contiguous_inputs():
    # LANGUAGE.md: any array-like of the declared rank is accepted
    mod = load("qform.tl")
    rng = np.random.default_rng(2)
    big = rng.standard_normal((12, 12))
    A = big[::2, ::2]                      # a strided view
    x = [float(v) for v in rng.standard_normal(6)]   # a plain list
    check_value(mod.qform(x=x, A=A), float(np.asarray(x) @ A @ np.asarray(x)), "qform strided")
    At = np.asfortranarray(big[:6, :6])
    check_value(mod.qform(x=x, A=At), float(np.asarray(x) @ At @ np.asarray(x)), "qform fortran")

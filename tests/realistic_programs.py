"""Realistic programs for the cost regression suite, written as a user would.

Each entry holds the program (one function, named like the entry), the sizes
its test inputs take, a NumPy version written independently of tensorlang
(`ref(**inputs)` returns the same scalar), and a note.  The expected costs of
the function and of its gradients are in tests/golden/realistic/<name>.txt;
tests/test_realistic_costs.py checks them, the values, the derivatives and the
certificate; benchmarks/cost_table.py prints them as rows of the cost table.
"""
import numpy as np


def _softplus(z):
    return np.logaddexp(0.0, z)


# ------------------------------------------------------------ NumPy versions
def conv1d_valid_ref(x, w, t):
    n, k, m = len(x), len(w), len(t)
    y = np.array([sum(w[j] * x[i + j] for j in range(k) if i + j < n) for i in range(m)])
    return 0.5 * np.sum((y - t) ** 2)


def _same(img, K, pad, dil=1):
    """Correlation of img with K, zero padding `pad` on every side, dilation `dil`."""
    h, w = img.shape
    P = np.pad(img, pad)
    out = np.zeros((h, w))
    for a in range(K.shape[0]):
        for b in range(K.shape[1]):
            out += K[a, b] * P[dil * a:dil * a + h, dil * b:dil * b + w]
    return out


def conv2d_same3_ref(K, img):
    return np.sum(_same(img, K, 1) ** 2)


def conv2d_same5_ref(K, img, T):
    return np.sum((np.tanh(_same(img, K, 2)) - T) ** 2)


def conv1d_dilated_ref(x, w):
    n, k = len(x), len(w)
    xp = np.concatenate([x, np.zeros(2 * k)])
    y = sum(w[j] * xp[2 * j:2 * j + n] for j in range(k))
    return np.sum(y ** 2)


def conv2d_dilated_ref(K, img):
    return np.sum(_same(img, K, 2, dil=2) ** 2)


def conv1d_strided_ref(x, w, t):
    n, k, m = len(x), len(w), len(t)
    y = np.array([sum(w[j] * x[2 * i + j] for j in range(k) if 2 * i + j < n)
                  for i in range(m)])
    return np.sum((y - t) ** 2)


def conv2d_strided_ref(K, img, T):
    h, w = img.shape
    m, q = T.shape
    P = np.zeros((2 * m + 3, 2 * q + 3))
    P[:min(h, 2 * m + 3), :min(w, 2 * q + 3)] = img[:2 * m + 3, :2 * q + 3]
    y = np.zeros((m, q))
    for a in range(3):
        for b in range(3):
            y += K[a, b] * P[a:a + 2 * m:2, b:b + 2 * q:2]
    return np.sum((y - T) ** 2)


def conv2d_valid_ref(K, img, T):
    k = K.shape[0]
    h, w = img.shape
    m, q = T.shape
    P = np.zeros((m + k, q + k))
    P[:min(h, m + k), :min(w, q + k)] = img[:m + k, :q + k]
    y = np.zeros((m, q))
    for a in range(k):
        for b in range(k):
            y += K[a, b] * P[a:a + m, b:b + q]
    return 0.5 * np.sum((y - T) ** 2)


def conv_channels_ref(K, img, bias):
    o, ch = K.shape[:2]
    _, h, w = img.shape
    P = np.pad(img, ((0, 0), (1, 1), (1, 1)))
    Y = np.zeros((o, h, w)) + bias[:, None, None]
    for a in range(3):
        for b in range(3):
            Y += np.einsum("oc,chw->ohw", K[:, :, a, b], P[:, a:a + h, b:b + w])
    return np.sum(np.maximum(Y, 0.0) ** 2)


def conv_depthwise_ref(K, img):
    return sum(np.sum(_same(img[c], K[c], 1) ** 2) for c in range(img.shape[0]))


def conv_transposed_ref(x, w, t):
    n, k, m = len(x), len(w), len(t)
    y = np.zeros(2 * n + k)
    for i in range(n):
        y[2 * i:2 * i + k] += w * x[i]
    return np.sum((y[:m] - t) ** 2)


def conv2d_transposed_ref(x, K, T):
    n, n2 = x.shape
    m, m2 = T.shape
    y = np.zeros((2 * n + 3, 2 * n2 + 3))
    for i in range(n):
        for j in range(n2):
            y[2 * i:2 * i + 3, 2 * j:2 * j + 3] += K * x[i, j]
    y = np.pad(y, ((0, max(0, m - y.shape[0])), (0, max(0, m2 - y.shape[1]))))
    return np.sum((y[:m, :m2] - T) ** 2)


def _windows2x2(img, m, q):
    """The 2x2 blocks of img at stride 2, as an (m, q, 4) array; None where a block
    leaves the image."""
    h, w = img.shape
    out = np.full((m, q, 4), np.nan)
    for i in range(m):
        for j in range(q):
            if 2 * i + 1 < h and 2 * j + 1 < w:
                out[i, j] = img[2 * i:2 * i + 2, 2 * j:2 * j + 2].ravel()
    return out


def avgpool_ref(img, T):
    win = _windows2x2(img, *T.shape)
    p = np.where(np.isnan(win[..., 0]), 0.0, np.nanmean(np.nan_to_num(win), axis=-1))
    return np.sum((p - T) ** 2)


def maxpool_sep_ref(img, T):
    win = _windows2x2(img, *T.shape)
    p = np.where(np.isnan(win[..., 0]), 0.0, np.nan_to_num(win, nan=-np.inf).max(axis=-1))
    return np.sum((p - T) ** 2)


def maxpool1d_ref(x, t):
    p = np.append(np.maximum(x[:-1], x[1:]), 0.0)
    return np.sum((p - t) ** 2)


def softpool_ref(img):
    h, w = img.shape
    E = np.pad(np.exp(img), 1)
    s = sum(E[a:a + h, b:b + w] for a in range(3) for b in range(3))
    return np.sum(np.log(s) ** 2)


def cp_loss_ref(A, B, C, Y):
    return np.sum((np.einsum("ir,jr,kr->ijk", A, B, C) - Y) ** 2)


def tucker_loss_ref(G, U, V, W, Y):
    return np.sum((np.einsum("abc,ia,jb,kc->ijk", G, U, V, W) - Y) ** 2)


def tt_loss_ref(G1, G2, G3, Y):
    return np.sum((np.einsum("ia,ajb,bk->ijk", G1, G2, G3) - Y) ** 2)


def attention_ref(Q, K, V, T):
    S = Q @ K.T / np.sqrt(Q.shape[1])
    P = np.exp(S)
    O = (P @ V) / P.sum(axis=1, keepdims=True)
    return 0.5 * np.sum((O - T) ** 2)


def causal_attention_ref(Q, K, V, T):
    t, d = Q.shape
    S = Q @ K.T / np.sqrt(d)
    P = np.where(np.tril(np.ones((t, t), dtype=bool)), np.exp(S), 0.0)
    O = (P @ V) / P.sum(axis=1, keepdims=True)
    return 0.5 * np.sum((O - T) ** 2)


def tridiag_ref(lo, di, up, x):
    A = np.diag(di) + np.diag(lo[1:], -1) + np.diag(up[:-1], 1)
    return float(x @ A @ x)


def band_qform_ref(B, x):
    n, b = B.shape
    return sum(x[i] * B[i, t] * x[i + t] for i in range(n) for t in range(b) if i + t < n)


def band_dense_ref(A, x):
    n = len(x)
    mask = np.abs(np.subtract.outer(np.arange(n), np.arange(n))) <= 2
    return float(x @ (A * mask) @ x)


def masked_mf_ref(U, V, R, M, lam):
    E = M * (U @ V.T - R)
    return np.sum(E ** 2) + lam * (np.sum(U ** 2) + np.sum(V ** 2))


def tv_iso_ref(u):
    dr = np.zeros_like(u)
    dc = np.zeros_like(u)
    dr[:-1] = u[1:] - u[:-1]
    dc[:, :-1] = u[:, 1:] - u[:, :-1]
    return np.sum(np.sqrt(1e-6 + dr ** 2 + dc ** 2))


def tv_aniso_ref(u, f, alpha):
    tv = np.sum(np.abs(np.diff(u, axis=0))) + np.sum(np.abs(np.diff(u, axis=1)))
    return 0.5 * np.sum((u - f) ** 2) + alpha * tv


def gmm_ref(X, mu, a, lp):
    d = X.shape[1]
    D = ((X[:, None, :] - mu[None, :, :]) ** 2).sum(axis=-1)
    logits = a + 0.5 * d * lp - 0.5 * np.exp(lp) * D
    return -np.mean(np.log(np.exp(logits).sum(axis=1)))


def mlp_ce_ref(X, W1, b1, W2, y):
    H = np.tanh(X @ W1 + b1)
    Z = H @ W2
    lse = np.log(np.exp(Z).sum(axis=1))
    return float(np.mean(lse - Z[np.arange(len(y)), y]))


# ------------------------------------------------------------ the programs
def bilateral_smooth_ref(img, g, s):
    h, w = img.shape
    total = 0.0
    for a in range(3):
        for q in range(3):
            for r in range(h):
                for c in range(w):
                    rr, cc = r + a - 1, c + q - 1
                    if 0 <= rr < h and 0 <= cc < w:
                        total += np.exp(-s * (g[rr, cc] - g[r, c]) ** 2) * (img[rr, cc] - img[r, c]) ** 2
    return total


PROGRAMS = {
    "conv1d_valid": dict(src="""
# a valid 1-D correlation: the output (size m = n - k + 1 in use) reads inside x
def conv1d_valid(x: f64[n], w: f64[k], t: f64[m]) -> f64:
    y[i: m] = sum[j]([i + j < n] * w[j] * x[i + j])
    return 0.5 * sum[i]((y[i] - t[i]) ** 2)
""", sizes=dict(n=9, k=3, m=7), ref=conv1d_valid_ref,
        note="valid 1-D correlation, output m: no k*n term in the x gradient"),

    "conv2d_same3": dict(src="""
# 3x3 'same' convolution, zero padding written with brackets
def conv2d_same3(K: f64[3, 3], img: f64[h, w]) -> f64:
    y[r: h, c: w] = sum[a, b]([0 <= r + a - 1 < h and 0 <= c + b - 1 < w]
                              * K[a, b] * img[r + a - 1, c + b - 1])
    return sum[r, c](y[r, c] ** 2)
""", sizes=dict(h=6, w=5), ref=conv2d_same3_ref, note="3x3 same convolution energy"),

    "conv2d_same5": dict(src="""
# 5x5 'same' convolution through tanh, squared error against a target
def conv2d_same5(K: f64[5, 5], img: f64[h, w], T: f64[h, w]) -> f64:
    y[r: h, c: w] = sum[a, b]([0 <= r + a - 2 < h and 0 <= c + b - 2 < w]
                              * K[a, b] * img[r + a - 2, c + b - 2])
    return sum[r, c]((tanh(y[r, c]) - T[r, c]) ** 2)
""", sizes=dict(h=6, w=7), ref=conv2d_same5_ref, note="5x5 same convolution, tanh, target"),

    "conv1d_dilated": dict(src="""
# a k-tap correlation with dilation 2, truncated at the end of x
def conv1d_dilated(x: f64[n], w: f64[k]) -> f64:
    y[i: n] = sum[j]([i + 2 * j < n] * w[j] * x[i + 2 * j])
    return sum[i](y[i] ** 2)
""", sizes=dict(n=9, k=3), ref=conv1d_dilated_ref, note="dilated 1-D correlation"),

    "conv2d_dilated": dict(src="""
# 3x3 convolution with dilation 2 and 'same' zero padding
def conv2d_dilated(K: f64[3, 3], img: f64[h, w]) -> f64:
    y[r: h, c: w] = sum[a, b]([0 <= r + 2 * a - 2 < h and 0 <= c + 2 * b - 2 < w]
                              * K[a, b] * img[r + 2 * a - 2, c + 2 * b - 2])
    return sum[r, c](y[r, c] ** 2)
""", sizes=dict(h=6, w=7), ref=conv2d_dilated_ref, note="dilated 3x3 convolution"),

    "conv1d_strided": dict(src="""
# a k-tap correlation with stride 2 (m = (n - k) / 2 + 1 outputs in use)
def conv1d_strided(x: f64[n], w: f64[k], t: f64[m]) -> f64:
    y[i: m] = sum[j]([2 * i + j < n] * w[j] * x[2 * i + j])
    return sum[i]((y[i] - t[i]) ** 2)
""", sizes=dict(n=11, k=3, m=5), ref=conv1d_strided_ref, note="strided 1-D correlation"),

    "conv2d_strided": dict(src="""
# 3x3 convolution with stride 2 in both directions
def conv2d_strided(K: f64[3, 3], img: f64[h, w], T: f64[m, q]) -> f64:
    y[r: m, c: q] = sum[a, b]([2 * r + a < h and 2 * c + b < w]
                              * K[a, b] * img[2 * r + a, 2 * c + b])
    return sum[r, c]((y[r, c] - T[r, c]) ** 2)
""", sizes=dict(h=7, w=8, m=3, q=3), ref=conv2d_strided_ref, note="strided 3x3 convolution"),

    "conv2d_valid": dict(src="""
# a k x k valid correlation, output m x q (m = h - k + 1 in use)
def conv2d_valid(K: f64[k, k], img: f64[h, w], T: f64[m, q]) -> f64:
    y[r: m, c: q] = sum[a, b]([r + a < h and c + b < w] * K[a, b] * img[r + a, c + b])
    return 0.5 * sum[r, c]((y[r, c] - T[r, c]) ** 2)
""", sizes=dict(k=3, h=7, w=6, m=5, q=4), ref=conv2d_valid_ref,
        note="k x k valid 2-D correlation: no k*m*q*w term"),

    "conv_channels": dict(src="""
# a multi-channel 3x3 convolution layer with bias and a ReLU
def conv_channels(K: f64[o, ch, 3, 3], img: f64[ch, h, w], bias: f64[o]) -> f64:
    Y[co: o, r: h, c: w] = bias[co] + sum[ci, a, b](
        [0 <= r + a - 1 < h and 0 <= c + b - 1 < w]
        * K[co, ci, a, b] * img[ci, r + a - 1, c + b - 1])
    return sum[co, r, c](max(Y[co, r, c], 0.0) ** 2)
""", sizes=dict(o=2, ch=3, h=5, w=4), ref=conv_channels_ref,
        note="channels in and out, bias, ReLU"),

    "conv_depthwise": dict(src="""
# a depthwise 3x3 convolution: one kernel per channel
def conv_depthwise(K: f64[ch, 3, 3], img: f64[ch, h, w]) -> f64:
    Y[g: ch, r: h, c: w] = sum[a, b]([0 <= r + a - 1 < h and 0 <= c + b - 1 < w]
                                     * K[g, a, b] * img[g, r + a - 1, c + b - 1])
    return sum[g, r, c](Y[g, r, c] ** 2)
""", sizes=dict(ch=2, h=5, w=6), ref=conv_depthwise_ref, note="depthwise convolution"),

    "conv_transposed": dict(src="""
# a transposed 1-D convolution with stride 2: x[i] spreads w into y[2 i ..]
def conv_transposed(x: f64[n], w: f64[k], t: f64[m]) -> f64:
    y[l: m] = sum[i, j]([l == 2 * i + j] * w[j] * x[i])
    return sum[l]((y[l] - t[l]) ** 2)
""", sizes=dict(n=5, k=3, m=11), ref=conv_transposed_ref,
        note="transposed convolution, stride 2: no k*n term"),

    "conv2d_transposed": dict(src="""
# a transposed 3x3 convolution with stride 2 in both directions
def conv2d_transposed(x: f64[n, n2], K: f64[3, 3], T: f64[m, m2]) -> f64:
    y[r: m, c: m2] = sum[i, j, a, b]([r == 2 * i + a and c == 2 * j + b] * K[a, b] * x[i, j])
    return sum[r, c]((y[r, c] - T[r, c]) ** 2)
""", sizes=dict(n=3, n2=4, m=7, m2=9), ref=conv2d_transposed_ref,
        note="transposed 2-D convolution, stride 2"),

    "avgpool": dict(src="""
# 2x2 average pooling with stride 2, the four reads written out
def avgpool(img: f64[h, w], T: f64[m, q]) -> f64:
    p[i: m, j: q] = [2 * i + 1 < h and 2 * j + 1 < w] * 0.25 * (
        img[2 * i, 2 * j] + img[2 * i + 1, 2 * j] + img[2 * i, 2 * j + 1]
        + img[2 * i + 1, 2 * j + 1])
    return sum[i, j]((p[i, j] - T[i, j]) ** 2)
""", sizes=dict(h=7, w=6, m=3, q=4), ref=avgpool_ref,
        note="2x2 average pooling: the gradient visits the pooled windows, no 9 h w"),

    "maxpool_sep": dict(src="""
# 2x2 max pooling with stride 2, rows first, then columns
def maxpool_sep(img: f64[h, w], T: f64[m, q]) -> f64:
    r[i: m, c: w] = [2 * i + 1 < h] * max(img[2 * i, c], img[2 * i + 1, c])
    p[i: m, j: q] = [2 * j + 1 < w] * max(r[i, 2 * j], r[i, 2 * j + 1])
    return sum[i, j]((p[i, j] - T[i, j]) ** 2)
""", sizes=dict(h=6, w=7, m=3, q=3), ref=maxpool_sep_ref, note="separable 2x2 max pooling"),

    "maxpool1d": dict(src="""
# the larger of each pair of neighbours
def maxpool1d(x: f64[n], t: f64[n]) -> f64:
    p[i] = [i + 1 < n] * max(x[i], x[i + 1])
    return sum[i]((p[i] - t[i]) ** 2)
""", sizes=dict(n=8), ref=maxpool1d_ref, note="max of neighbours"),

    "softpool": dict(src="""
# a soft 3x3 max pooling: log of the sum of exponentials over each window
def softpool(img: f64[h, w]) -> f64:
    p[r: h, c: w] = log(sum[a: 3, b: 3]([0 <= r + a - 1 < h and 0 <= c + b - 1 < w]
                                        * exp(img[r + a - 1, c + b - 1])))
    return sum[r, c](p[r, c] ** 2)
""", sizes=dict(h=5, w=6), ref=softpool_ref, note="log-sum-exp pooling"),

    "cp_loss": dict(src="""
# CP decomposition: reconstruction error of a rank-R model
def cp_loss(A: f64[I, R], B: f64[J, R], C: f64[K, R], Y: f64[I, J, K]) -> f64:
    X[i, j, k] = sum[r](A[i, r] * B[j, r] * C[k, r])
    return sum[i, j, k]((X[i, j, k] - Y[i, j, k]) ** 2)
""", sizes=dict(I=3, J=4, K=5, R=2), ref=cp_loss_ref, note="CP reconstruction loss"),

    "tucker_loss": dict(src="""
# Tucker decomposition: core G and one factor per mode
def tucker_loss(G: f64[R, S, Q], U: f64[I, R], V: f64[J, S], W: f64[K, Q],
                Y: f64[I, J, K]) -> f64:
    X[i, j, k] = sum[a, b, c](G[a, b, c] * U[i, a] * V[j, b] * W[k, c])
    return sum[i, j, k]((X[i, j, k] - Y[i, j, k]) ** 2)
""", sizes=dict(R=2, S=3, Q=2, I=4, J=3, K=5), ref=tucker_loss_ref,
        note="Tucker reconstruction loss"),

    "tt_loss": dict(src="""
# a tensor train of three cores
def tt_loss(G1: f64[I, R], G2: f64[R, J, S], G3: f64[S, K], Y: f64[I, J, K]) -> f64:
    X[i, j, k] = sum[a, b](G1[i, a] * G2[a, j, b] * G3[b, k])
    return sum[i, j, k]((X[i, j, k] - Y[i, j, k]) ** 2)
""", sizes=dict(I=3, J=4, K=5, R=2, S=3), ref=tt_loss_ref,
        note="tensor-train reconstruction loss"),

    "attention": dict(src="""
# one attention head: scaled scores, a softmax over the keys, weighted values
def attention(Q: f64[nq, d], K: f64[nk, d], V: f64[nk, dv], T: f64[nq, dv]) -> f64:
    s[a, b] = sum[e](Q[a, e] * K[b, e]) / sqrt(d)
    p[a, b] = exp(s[a, b])
    z[a] = sum[b](p[a, b])
    o[a, c] = sum[b](p[a, b] * V[b, c]) / z[a]
    return 0.5 * sum[a, c]((o[a, c] - T[a, c]) ** 2)
""", sizes=dict(nq=3, nk=5, d=4, dv=2), ref=attention_ref, note="softmax attention"),

    "causal_attention": dict(src="""
# self-attention where each position sees itself and the positions before it
def causal_attention(Q: f64[t, d], K: f64[t, d], V: f64[t, dv], T: f64[t, dv]) -> f64:
    s[a, b] = sum[e](Q[a, e] * K[b, e]) / sqrt(d)
    p[a, b] = [b <= a] * exp(s[a, b])
    z[a] = sum[b](p[a, b])
    o[a, c] = sum[b](p[a, b] * V[b, c]) / z[a]
    return 0.5 * sum[a, c]((o[a, c] - T[a, c]) ** 2)
""", sizes=dict(t=5, d=3, dv=2), ref=causal_attention_ref, note="causal softmax attention"),

    "tridiag": dict(src="""
# x^T A x for a tridiagonal A given by its three diagonals
def tridiag(lo: f64[n], di: f64[n], up: f64[n], x: f64[n]) -> f64:
    y[i] = [i >= 1] * lo[i] * x[i - 1] + di[i] * x[i] + [i + 1 < n] * up[i] * x[i + 1]
    return sum[i](x[i] * y[i])
""", sizes=dict(n=7), ref=tridiag_ref, note="tridiagonal quadratic form"),

    "band_qform": dict(src="""
# a banded quadratic form, the band stored row by row (B[i, t] = A[i, i + t])
def band_qform(B: f64[n, b], x: f64[n]) -> f64:
    return sum[i, t]([i + t < n] * x[i] * B[i, t] * x[i + t])
""", sizes=dict(n=8, b=3), ref=band_qform_ref, note="banded quadratic form, band storage"),

    "band_dense": dict(src="""
# a quadratic form with the five central diagonals of a dense matrix
def band_dense(A: f64[n, n], x: f64[n]) -> f64:
    return sum[i, j]([j - i <= 2 and i - j <= 2] * x[i] * A[i, j] * x[j])
""", sizes=dict(n=8), ref=band_dense_ref, note="pentadiagonal part of a dense matrix"),

    "masked_mf": dict(src="""
# matrix factorisation on the observed entries, with weight decay
def masked_mf(U: f64[m, r], V: f64[n, r], R: f64[m, n], M: bool[m, n], lam: f64) -> f64:
    E[i, j] = [M[i, j]] * (sum[a](U[i, a] * V[j, a]) - R[i, j])
    return sum[i, j](E[i, j] ** 2) + lam * (sum[i, a](U[i, a] ** 2) + sum[j, a](V[j, a] ** 2))
""", sizes=dict(m=5, n=4, r=2), ref=masked_mf_ref, note="masked matrix factorisation"),

    "tv_iso": dict(src="""
# isotropic total variation, smoothed at zero
def tv_iso(u: f64[h, w]) -> f64:
    g[r, c] = sqrt(1e-6 + [r + 1 < h] * (u[r + 1, c] - u[r, c]) ** 2
                   + [c + 1 < w] * (u[r, c + 1] - u[r, c]) ** 2)
    return sum[r, c](g[r, c])
""", sizes=dict(h=5, w=6), ref=tv_iso_ref, note="isotropic total variation"),

    "tv_aniso": dict(src="""
# anisotropic total-variation denoising
def tv_aniso(u: f64[h, w], f: f64[h, w], alpha: f64) -> f64:
    return 0.5 * sum[r, c]((u[r, c] - f[r, c]) ** 2) + alpha * sum[r, c](
        [r + 1 < h] * abs(u[r + 1, c] - u[r, c]) + [c + 1 < w] * abs(u[r, c + 1] - u[r, c]))
""", sizes=dict(h=5, w=6), ref=tv_aniso_ref, note="anisotropic TV denoising"),

    "gmm": dict(src="""
# negative mean log-likelihood of an isotropic Gaussian mixture
# (a: unnormalised log weights, lp: log precisions)
def gmm(X: f64[s, d], mu: f64[k, d], a: f64[k], lp: f64[k]) -> f64:
    D[i, c] = sum[e]((X[i, e] - mu[c, e]) ** 2)
    L[i] = log(sum[c](exp(a[c] + 0.5 * d * lp[c] - 0.5 * exp(lp[c]) * D[i, c])))
    return -sum[i](L[i]) / s
""", sizes=dict(s=6, d=3, k=4), ref=gmm_ref, note="Gaussian mixture log-likelihood"),

    "mlp_ce": dict(src="""
# a tanh hidden layer and softmax cross-entropy against labels y
def mlp_ce(X: f64[b, d], W1: f64[d, u], b1: f64[u], W2: f64[u, k], y: i64[b]) -> f64:
    H[s, v] = tanh(sum[j](X[s, j] * W1[j, v]) + b1[v])
    Z[s, c] = sum[v](H[s, v] * W2[v, c])
    return sum[s](log(sum[c](exp(Z[s, c]))) - sum[c]([c == y[s]] * Z[s, c])) / b
""", sizes=dict(b=5, d=4, u=3, k=3), ref=mlp_ce_ref, note="MLP layer, one-hot cross-entropy"),

    "bilateral_smooth": dict(src="""
# an edge-aware smoothness energy: neighbours in a 3x3 window weighted by a guide image g
def bilateral_smooth(img: f64[h, w], g: f64[h, w], s: f64) -> f64:
    return sum[r, c, a: 3, q: 3]([1 <= r + a < h + 1 and 1 <= c + q < w + 1]
                                 * exp(-s * (g[r + a - 1, c + q - 1] - g[r, c]) ** 2)
                                 * (img[r + a - 1, c + q - 1] - img[r, c]) ** 2)
""", sizes=dict(h=5, w=4), ref=bilateral_smooth_ref,
        note="bilateral smoothness: its jvp stores each squared difference and its tangent"),
}

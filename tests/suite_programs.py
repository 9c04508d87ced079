"""The asymptotic-cost regression suite: programs that once exposed a pitfall.

Each case names a program, the parameters to differentiate, and what the
derivative must cost.  tests/test_cost_regressions.py checks values and bounds;
benchmarks/cost_table.py prints the table of forward, naive and optimized costs.
"""

CASES = {
    "T1": dict(src="""
def f(A: f64[n, n]) -> f64:
    return sum[i](A[i, i])
""", wrt=("A",), note="grad is [k == l], no sum left; O(n^2) for the dense output"),
    "T2": dict(src="""
def f(A: f64[n, n]) -> f64:
    return sum[i](A[i, i]) + sum[j](A[j, j]) + sum[k](A[k, k]) + sum[l](A[l, l])
""", wrt=("A",), note="4 [k == l]; independent of the number of copies"),
    "T4": dict(src="""
def f(w: f64[n], A: f64[n, n]) -> f64:
    return sum[i](w[i] * A[i, i])
""", wrt=("w", "A"), note="O(n^2) for A, O(n) for w"),
    "T5": dict(src="""
def f(x: f64[n]) -> f64:
    return sum[i]([i + 1 < n] * x[i] * x[i + 1])
""", wrt=("x",), note="O(n); reads x[k - 1] and x[k + 1] under guards"),
    "T6a": dict(src="""
def f(x: f64[n]) -> f64:
    return sum[i]([i + 1 < n] * (x[i + 1] - x[i]) ** 2)
""", wrt=("x",), note="finite-difference energy: grad <= 4 x forward"),
    "T6b": dict(src="""
def f(img: f64[h, w]) -> f64:
    b[r, c] = 0.25 * ([c >= 1] * img[r, c - 1] + 2.0 * img[r, c] + [c + 1 < w] * img[r, c + 1])
    return sum[r, c](b[r, c] ** 2)
""", wrt=("img",), note="3-tap blur energy: grad <= 4 x forward"),
    "T9": dict(src="""
def f(A: f64[n, n], x: f64[n]) -> f64:
    y[k] = sum[i](A[k, i] * x[i])
    return sum[k](y[k] ** 2)
""", wrt=("x", "A"), note="O(n^2) and y stays a statement"),
    "T10": dict(src="""
def f(A: f64[n, n], B: f64[n, n]) -> f64:
    return sum[i, j](A[j, i] * B[i, j])
""", wrt=("A",), note="O(n^2); the adjoint is B transposed"),
    "T11": dict(src="""
def f(x: f64[n]) -> f64:
    return sum[i](sin(x[i]) * cos(x[i]))
""", wrt=("x",), note="O(n)"),
    "T12": dict(src="""
def f(u: f64[h, w], M: bool[h, w]) -> f64:
    lap[r, c] = [M[r, c]] * ([r >= 1] * u[r - 1, c] + [r + 1 < h] * u[r + 1, c]
                 + [c >= 1] * u[r, c - 1] + [c + 1 < w] * u[r, c + 1] - 4.0 * u[r, c])
    return sum[r, c](lap[r, c] ** 2)
""", wrt=("u",), note="masked Laplacian energy: same degree as the forward"),
    "T15": dict(src="""
def f(x: f64[n], A: f64[n, n]) -> f64:
    y[i] = sum[j](A[i, j] * x[j])
    return sum[i](x[i] * y[i])
""", wrt=("x",), note="Hessian = A + A^T in O(n^2) operations and memory"),
    "T16": dict(src="""
def f(x: f64[m]) -> f64:
    return sum[i: m]([2 * i < m] * x[2 * i] ** 2)
""", wrt=("x",),
        note="strided: 2 x[k] at even k, exactly 0 at odd k, also after re-parsing"),
    "T18min": dict(src="""
def f(a: f64[n], b: f64[n]) -> f64:
    return sum[i](min(a[i], b[i]))
""", wrt=("a", "b"), note="[a <= b] and [a > b] (ties to the first argument)"),
    "T18max": dict(src="""
def f(a: f64[n], b: f64[n]) -> f64:
    return sum[i](max(a[i], b[i]))
""", wrt=("a", "b"), note="[a >= b] and [a < b]"),
    "T18abs": dict(src="""
def f(a: f64[n]) -> f64:
    return sum[i](abs(a[i]))
""", wrt=("a",), note="sign(a) with abs'(0) = 0"),
    "T19": dict(src="""
def f(E: f64[v, d], G: f64[b, d], y: i64[b]) -> f64:
    Y[s, c] = sum[u]([u == y[s]] * E[u, c])
    return sum[s, c](G[s, c] * Y[s, c])
""", wrt=("E",), note="forward has no loop over u; grad E has no b*v*d term"),
    "T20": dict(src="""
def f(x: f64[n], w: f64[k]) -> f64:
    y[i: n] = sum[j]([i + j < n] * w[j] * x[i + j])
    return sum[i](y[i] * y[i])
""", wrt=("x", "w"), note="k-tap correlation: O(kn), no n^2 term, whatever the indices are called"),
    "T21": dict(src="""
def f(x: f64[n], t: f64[m]) -> f64:
    r[i] = [2 * i < n] * x[2 * i] - t[i]
    return sum[i](r[i] ** 2)
""", wrt=("x", "t"), note="stride 2 read beside a plain one: O(m + n), no m*n term"),
    "T22": dict(src="""
def f(K: f64[3, 3], img: f64[h, w]) -> f64:
    y[r: h, c: w] = sum[a, b]([r + a < h and c + b < w] * K[a, b] * img[r + a, c + b])
    return sum[r, c](y[r, c] ** 2)
""", wrt=("img", "K"), note="3x3 convolution: O(hw), the 9 taps loop, not the image"),
    "T23": dict(src="""
def f(img: f64[h, w], T: f64[m, q]) -> f64:
    p[i: m, j: q] = [2 * i + 1 < h and 2 * j + 1 < w] * 0.25 * sum[a: 2, b: 2](img[2 * i + a, 2 * j + b])
    return sum[i, j]((p[i, j] - T[i, j]) ** 2)
""", wrt=("img",), note="2x2 average pooling, stride 2: O(hw + mq), no h*m term"),
    "T24": dict(src="""
def f(A: f64[n, n], x: f64[n], d: f64[b]) -> f64:
    y[i] = sum[j]([0 <= i - j < b] * d[i - j] * A[i, j] * x[j])
    return sum[i](y[i] ** 2)
""", wrt=("x", "d", "A"), note="banded (b diagonals) product: forward O(bn), grad x and d O(bn)"),
    "T25wdiff": dict(src="""
def f(x: f64[n], wt: f64[n]) -> f64:
    return sum[i]([i + 1 < n] * wt[i] * (x[i + 1] - x[i]) ** 2)
""", wrt=("x", "wt"),
        note="weighted differences: the cotangent of the square is stored once, read at two shifts"),
    "T26graph": dict(src="""
def f(x: f64[v], w: f64[e], src: i64[e], dst: i64[e]) -> f64:
    return sum[k](w[k] * (x[src[k]] - x[dst[k]]) ** 2)
""", wrt=("x", "w"),
        note="graph Laplacian form over an edge list: one scatter pass over the edges, any e and v"),
    "T27recsys": dict(src="""
def f(U: f64[m, d], V: f64[p, d], user: i64[b], item: i64[b], r: f64[b]) -> f64:
    pred[s] = sum[c](U[user[s], c] * V[item[s], c])
    return 0.5 * sum[s]((pred[s] - r[s]) ** 2)
""", wrt=("U", "V"),
        note="recommender: each gathered factor's adjoint is 2 b d, its label checked once per rating"),
    "T28bilateral": dict(src="""
def f(img: f64[h, w], ref: f64[h, w], s: f64) -> f64:
    wgt[r: h, c: w, a: 3, q: 3] = [1 <= r + a < h + 1 and 1 <= c + q < w + 1] * exp(-s * (img[r + a - 1, c + q - 1] - img[r, c]) ** 2)
    num[r, c] = sum[a, q]([1 <= r + a < h + 1 and 1 <= c + q < w + 1] * wgt[r, c, a, q] * img[r + a - 1, c + q - 1])
    den[r, c] = sum[a, q](wgt[r, c, a, q])
    return sum[r, c]((num[r, c] / den[r, c] - ref[r, c]) ** 2)
""", wrt=("img",), note="3x3 bilateral filter against a reference: grad within 3 x the forward"),
    "T29prod6": dict(src="""
def f(a: f64[n], b: f64[n], c: f64[n], d: f64[n], e: f64[n], g: f64[n]) -> f64:
    return sum[i](a[i] * b[i] * c[i] * d[i] * e[i] * g[i])
""", wrt=("a", "b", "c", "d", "e", "g"),
        note="six elementwise factors: every adjoint from prefix and suffix products, no m^2"),
    "T30prod10": dict(src="""
def f(a: f64[n], b: f64[n], c: f64[n], d: f64[n], e: f64[n], g: f64[n], p: f64[n], q: f64[n], r: f64[n], s: f64[n]) -> f64:
    return sum[i](a[i] * b[i] * c[i] * d[i] * e[i] * g[i] * p[i] * q[i] * r[i] * s[i])
""", wrt=("a", "b", "c", "d", "e", "g", "p", "q", "r", "s"),
        note="ten elementwise factors: gradient 6.6 x the forward (naive 10 x), jvp 7.1 x"),
    "T31bracketsig": dict(src="""
def f(a: f64[n], b: f64[n], x: f64[n], w: f64[n]) -> f64:
    y[i] = ([i == 0] * a[i] + [i >= 1] * b[i]) * sigmoid(x[i] * w[i] + 1.0)
    return sum[i](y[i])
""", wrt=("a", "b", "x", "w"),
        note="a bracketed sum times a sigmoid: its argument is stored once, not once per bracket"),
}

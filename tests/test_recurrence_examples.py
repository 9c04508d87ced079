"""The recurrence examples that reduce inside a step (hmm.tl, soft_dtw.tl), the stacked
LSTM over (time, layer) and the Zygote-style loops of power.tl: values against loops written here, finite
differences, the dot-product identity and the cheap-gradient certificate."""
from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest
import scipy.special

import tensorlang as tl

from derivcheck import dot_product_identity, grad_matches_fd
from test_examples import hmm_inputs, hmm_ref, horner_ref, lstm_inputs, lstm_ref, soft_dtw_ref

HMM = tl.load("examples/hmm.tl").hmm_loglik
SOFT_DTW = tl.load("examples/soft_dtw.tl").soft_dtw
POWER = tl.load("examples/power.tl")
LSTM = tl.load("examples/lstm.tl").lstm_loss
ADBENCH = Path("/work/shared/adbench/lstm")


def forward_backward(pi, A, E):
    """Hand-written forward-backward in log space: the log-likelihood, the posterior
    marginals gamma[t, j] and the expected transition counts xi[i, j]."""
    T, K = E.shape
    alpha, beta = np.zeros((T, K)), np.zeros((T, K))
    alpha[0] = pi + E[0]
    for t in range(1, T):
        alpha[t] = scipy.special.logsumexp(alpha[t - 1][:, None] + A, axis=0) + E[t]
    for t in range(T - 2, -1, -1):
        beta[t] = scipy.special.logsumexp(A + E[t + 1] + beta[t + 1], axis=1)
    ll = scipy.special.logsumexp(alpha[-1])
    gamma = np.exp(alpha + beta - ll)
    xi = sum(np.exp(alpha[t][:, None] + A + E[t + 1] + beta[t + 1] - ll) for t in range(T - 1))
    return ll, gamma, xi


def certified(f, wrt, sizes):
    """The derivatives build without a TLCostWarning, and the gradient's cost is within
    4 (cost(f) + |wrt|) at each of the given sizes."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", tl.TLCostWarning)
        g, _, _ = tl.grad(f, wrt=wrt), tl.jvp(f, wrt=wrt), tl.vjp(f, wrt=wrt)
    shapes = f.program.shapes()
    cf, cg = tl.cost(f), tl.cost(g)
    for s in sizes:
        count = lambda dims: int(np.prod([s[d] if isinstance(d, str) else d for d in dims]))  # noqa
        inputs = sum(count(shapes[w][1]) for w in wrt)
        assert cg.evaluate(**s) <= 4 * (cf.evaluate(**s) + inputs), (s, cf, cg)
    return g


def test_hmm_gradient_is_forward_backward():
    """The gradient of the log-likelihood with respect to the emission log-probabilities
    is the posterior marginals; with respect to pi the first step's marginals, with
    respect to A the expected transition counts."""
    rng = np.random.default_rng(12)
    for T, K in ((9, 4), (1, 3), (5, 1)):
        a = hmm_inputs(rng, T, K)
        ll, gamma, xi = forward_backward(**a)
        assert np.isclose(HMM(**a), ll, rtol=1e-12)
        g_E, g_A, g_pi = tl.grad(HMM, wrt=("E", "A", "pi"))(**a)
        np.testing.assert_allclose(g_E, gamma, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(g_pi, gamma[0], rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(g_A, xi, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(g_E.sum(axis=1), 1.0, rtol=1e-10)


def test_hmm_derivatives_and_certificate():
    rng = np.random.default_rng(13)
    a = hmm_inputs(rng, 6, 3)
    a["E"] = a["E"] + rng.standard_normal(a["E"].shape)     # unnormalised scores work too
    grad_matches_fd(HMM, ("pi", "A", "E"), a, rng)
    dot_product_identity(HMM, ("pi", "A", "E"), a, rng)
    certified(HMM, ("pi", "A", "E"), [{"T": n, "K": k} for n in (2, 1000) for k in (1, 64)])


def test_hmm_large_scores_do_not_overflow():
    rng = np.random.default_rng(14)
    a = hmm_inputs(rng, 5, 3)
    a["E"] = a["E"] + 800.0
    assert np.isclose(HMM(**a), hmm_ref(**a), rtol=1e-12)
    assert np.isfinite(tl.grad(HMM, wrt=("E",))(**a)).all()


def test_soft_dtw_against_the_dynamic_program_and_derivatives():
    rng = np.random.default_rng(15)
    for n, m in ((6, 4), (1, 5), (4, 1), (1, 1)):
        x, y = rng.standard_normal((n, 2)), rng.standard_normal((m, 2))
        for g in (0.1, 1.0):
            assert np.isclose(SOFT_DTW(x=x, y=y, g=g), soft_dtw_ref(x, y, g), rtol=1e-12)
    a = dict(x=rng.standard_normal((5, 3)), y=rng.standard_normal((6, 3)), g=0.8)
    grad_matches_fd(SOFT_DTW, ("x", "y", "g"), a, rng)
    dot_product_identity(SOFT_DTW, ("x", "y", "g"), a, rng)
    certified(SOFT_DTW, ("x", "y", "g"),
              [{"n": n, "m": m, "d": d} for n in (2, 1000) for m in (3, 1000) for d in (1, 8)])


def test_power_derivative_is_k_x_to_the_k_minus_one():
    rng = np.random.default_rng(16)
    dpow = tl.grad(POWER.power, wrt=("x",))
    for k in (1, 2, 7):
        x = 0.5 + rng.random()
        steps = np.zeros(k)
        assert np.isclose(POWER.power(x=x, steps=steps), x ** k, rtol=1e-13)
        (got,) = dpow(x=x, steps=steps)
        assert np.isclose(got, k * x ** (k - 1), rtol=1e-13)
    a = dict(c=rng.standard_normal(6), x=0.9)
    assert np.isclose(POWER.horner(**a), horner_ref(**a), rtol=1e-13)
    g_c, g_x = tl.grad(POWER.horner, wrt=("c", "x"))(**a)
    np.testing.assert_allclose(g_c, a["x"] ** np.arange(6), rtol=1e-13)
    assert np.isclose(g_x, np.polyval((np.arange(1, 6) * a["c"][1:])[::-1], a["x"]), rtol=1e-12)
    grad_matches_fd(POWER.horner, ("c", "x"), a, rng)
    dot_product_identity(POWER.horner, ("c", "x"), a, rng)
    dot_product_identity(POWER.power, ("x",), dict(x=1.2, steps=np.zeros(5)), rng)
    certified(POWER.power, ("x",), [{"k": k} for k in (1, 2, 1000)])
    certified(POWER.horner, ("c", "x"), [{"k": k} for k in (1, 2, 1000)])


@pytest.mark.parametrize("f,wrt,make", [
    (HMM, ("E", "A", "pi"), lambda r: hmm_inputs(r, 6, 3)),
    (SOFT_DTW, ("x", "y", "g"),
     lambda r: dict(x=r.standard_normal((5, 2)), y=r.standard_normal((4, 2)), g=0.6)),
], ids=["hmm", "soft_dtw"])
def test_numba_gradient_agrees(f, wrt, make):
    a = make(np.random.default_rng(17))
    g = tl.grad(f, wrt=wrt)
    for got, want in zip(g.compile(backend="numba")(**a), g(**a)):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)


def test_a_reduction_in_a_group_after_other_statements_is_hoisted():
    """The reduction is stored in a statement of its own that joins the group; the
    bounds of its reads are checked knowing the group's statements, whichever
    statements come before it."""
    f = tl.parse("def f(x: f64[n], w: f64[m]) -> f64[n]:\n    y[i] = 2.0 * x[i]\n"
                 "    c[i] = y[i] + [i >= 1] * logsumexp[j](w[j] + c[i - 1])\n    return c\n").f
    rng = np.random.default_rng(18)
    x, w = rng.standard_normal(5), rng.standard_normal(3)
    want = 2.0 * x
    for i in range(1, 5):
        want[i] += scipy.special.logsumexp(w + want[i - 1])
    np.testing.assert_allclose(f(x=x, w=w), want, rtol=1e-12)
    assert any(s.name != "c" and s.name != "y" for s in f.optimized_program().stmts)


def test_lstm_values_derivatives_and_certificate():
    rng = np.random.default_rng(19)
    for L, b, c in ((2, 3, 5), (1, 2, 2), (3, 1, 4)):
        a = lstm_inputs(rng, L, b, c)
        assert np.isclose(LSTM(**a), lstm_ref(**a), rtol=1e-12)
    a = lstm_inputs(rng, 2, 3, 5)
    grad_matches_fd(LSTM, ("W", "B", "extra"), a, rng)
    dot_product_identity(LSTM, ("W", "B", "extra", "h0", "s0"), a, rng)
    certified(LSTM, ("W", "B", "extra"),
              [{"L": L, "b": b, "c": c} for L in (1, 4) for b in (2, 14)
               for c in (2, 4096)])


def read_adbench_lstm(path):
    """An ADBench LSTM file (see /work/shared/adbench/README.md) as lstm_loss's arguments."""
    rows = [[float(v) for v in line.split()] for line in path.read_text().splitlines()
            if line.strip()]
    L, c, b = (int(v) for v in rows[0])
    main = np.array(rows[1:1 + 2 * L]).reshape(L, 2, 4, b)
    state = np.array(rows[4 + 2 * L:4 + 4 * L]).reshape(L, 2, b)
    return dict(W=main[:, 0], B=main[:, 1], extra=np.array(rows[1 + 2 * L:4 + 2 * L]),
                h0=state[:, 0], s0=state[:, 1], seq=np.array(rows[4 + 4 * L:4 + 4 * L + c]))


@pytest.mark.skipif(not (ADBENCH / "lstm_l2_c1024.txt").exists(), reason="no ADBench data")
def test_numba_lstm_reproduces_the_adbench_value():
    a = read_adbench_lstm(ADBENCH / "lstm_l2_c1024.txt")
    assert np.isclose(LSTM.compile(backend="numba")(**a), 0.66666517955885, rtol=1e-12)


def test_common_factors_of_an_adjoint_recurrence_are_shared():
    """F * a + F * b -> F * (a + b) applies to the members of a recurrence group too:
    the adjoint of sigmoid(..) * tanh(..) multiplies out sigmoid' = s - s ** 2, and the
    factored form saves the repeated product at every step (35 T n before, 33 T n)."""
    f = tl.parse("def f(x: f64[T, n], w: f64[n]) -> f64:\n"
                 "    h[t, i] = sigmoid(x[t, i] + [t >= 1] * w[i] * h[t - 1, i]) * tanh(x[t, i])\n"
                 "    return sum[t, i](h[t, i])\n").f
    g = tl.grad(f, wrt=("w",))
    assert tl.cost(g).evaluate(T=1000, n=1000) <= 33 * 10 ** 6 + 2000
    rng = np.random.default_rng(20)
    grad_matches_fd(f, ("w",), dict(x=rng.standard_normal((5, 3)), w=rng.standard_normal(3)), rng)


def test_the_recurrences_section_of_the_docs_runs_as_the_examples():
    """Every function the *Recurrences* section of docs/language.md quotes from examples/
    (a block with an `# examples/...` comment; the section's other programs show errors)
    parses and computes what the example file of the same name computes."""
    import re
    from derivcheck import inputs_for
    text = Path("docs/language.md").read_text()
    section = text[text.index("## Recurrences"):text.index("## What a derivative may cost")]
    blocks = [b for b in re.findall(r"```\n(.*?)```", section, re.S) if "def " in b and "# examples/" in b]
    examples = {}
    for path in Path("examples").glob("*.tl"):
        for fn in tl.load(str(path)):
            examples[fn.name] = fn
    seen = set()
    for block in blocks:
        for fn in tl.parse(block, "docs.tl"):
            want = examples[fn.name]
            inputs = inputs_for(want, size=3, seed=4)
            np.testing.assert_allclose(fn(**inputs), want(**inputs), rtol=1e-12)
            seen.add(fn.name)
    assert {"rnn_loss", "returns", "hmm_loglik", "soft_dtw"} <= seen

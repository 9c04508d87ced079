"""Checks of tests/newuser14_programs.py with the helpers of
tests/test_newuser_programs.py (values, gradients, jvp against vjp, the certificate,
the refused programs), then the API around the programs as docs/api.md describes it:
dense Hessians and Hessian-vector products against finite differences of the
gradient and closed forms, Jacobians of two called functions, and two programs on the
Numba backend.  The defects the corpus found are tested at the end, each with the
smallest program that showed it (a program whose derivatives are wrong again goes to
WRONG_DERIVATIVES, run as a strict xfail).
"""
from functools import partial

import numpy as np
import pytest

import tensorlang as tl
from derivcheck import strict
from newuser14_programs import PROGRAMS, REJECTED
from test_newuser_programs import (corpus_tests, hessian_builder, check_dense_hessian,
                                   check_hvp_against_differences,
                                   check_hvp_is_the_hessian_times_the_direction,
                                   check_derivatives, check_on_numba, function as _function,
                                   inputs as _inputs, module)

# Derivatives that miss the certificate today (the values are checked all the same).
KNOWN_MISSES: dict = {
    # (coo_jacobi's jvp in all f64 parameters cost 26*E*T + ... against 24*E*T + ...: the
    # tangent of the division by dg[i] was multiplied into every point of the scatter
    # sum over the coordinate list.  A divisor of a term that sums, at the statement's
    # own indices, now has its tangent written once, -d_dg[i] / dg[i] * x[t, i]
    # (ad/forward.common_divisor, inside recurrences too): 18*E*T + ...)
    # (erlang_b's grad and vjp in all f64 parameters cost 41*C*K + ... against 36*C*K +
    # ...: B_bar's term -[l + 1 < K] * B[k, l] * B_bar[k, l + 1] * a[k] ** 2 /
    # B_a_sum[k, l + 1] ** 2, the quotient's derivative multiplied out inside the
    # recurrence.  The denominator's cotangent is now stored as a member of the adjoint
    # group, and a divisor's partial in a term alone under its brackets reads the
    # quotient the statement holds (ad/rules.quotient_partial): 35*C*K + ...)
    # (tl.grad and tl.vjp cost 7*F*T*X + 17*F*(T + 1)*X - 6*F*T - 10*F*X + ... against
    # 24*F*(T + 1)*X + 4*F*T - 24*F*X + ...: V_bar summed the fare-class cotangent
    # V_arg_bar twice per state, at (k - 1, l + 1) and (k - 1, l).  The sum is now stored
    # once per step, a member of the adjoint recurrence read at both points
    # (opt/shiftsum.py): 7*F*T*X + 16*F*(T + 1)*X - 6*F*T - 8*F*X + ...)
    # (tl.jvp cost 24*F*(T + 1)*X - 17*F*X + ... against the same bound (1.043e8
    # against 1.03e8 at F = 65536, T = X = 8): the value test of the kink, beside the
    # step guard [t < T], was counted at every step, t = T included, where the guard
    # fails; counted where the guard holds (costs.CostModel.step_member) it is
    # 24*F*(T + 1)*X - 24*F*X + ..., within the bound.)
    # the max recurrence of "viterbi" (tests/test_newuser_programs.py): tl.grad and tl.vjp
    # 6*K*T*d + 18*K^2*T + 26*K*T + ... against 8*K*T*d + 12*K^2*T + 40*K*T + ... (cost(f)
    # = 2*K*T*d + 3*K^2*T + 10*K*T - 3*K^2 + 2*T + 5), tl.jvp 6*K*T*d + 18*K^2*T + ...;
    # most of it the share of the maximum at every (t, j, i), term [k >= 1 and A[p, l] +
    # a[k - 1, p] == a_max[k, l]] * a_bar[k, l] / a_max_arg_bar_arg1[k, l].  Smallest:
    # "viterbi"'s recurrence, a[t, j] = E[t, j] + [t >= 1] * max[i](a[t - 1, i] + A[i, j]).
    "ssvm": "max recurrence (loss-augmented Viterbi)",
}

# Derivatives left out of test_derivatives to keep this module within its time.
SLOW_TO_BUILD: dict = {}

# Programs whose derivatives are wrong today: left out of test_derivatives and run
# below as strict xfails.
WRONG_DERIVATIVES: dict = {
    # (tl.grad(sammon, wrt=("Y", "D")) was NaN in every entry of Y_bar (the gradient in Y
    # alone was right, and so was optimize=False): the adjoint of the pair distances read
    # the stored cotangent D_bar shares, 0 on the diagonal by the bracket [i < j],
    # without that bracket, 0 / dy[k, k] = 0 / 0.  A cotangent reverse mode stores for
    # several readers now has its support recorded as an adjoint's is, so a plain copy
    # of it is read under those brackets where partials can be inf, ad/reverse.py.)
}

# Dense Hessians that miss the certificate (checked for their values, and that the
# warning is still given).
HESSIAN_MISSES: dict = {}

function = partial(_function, programs=PROGRAMS)
inputs = partial(_inputs, programs=PROGRAMS)

# the value, derivative and rejection tests every corpus module runs
globals().update(corpus_tests(PROGRAMS, minimum=24, known_misses=KNOWN_MISSES,
                              slow_to_build=set(SLOW_TO_BUILD) | set(WRONG_DERIVATIVES),
                              rejected=REJECTED, hessian_misses=HESSIAN_MISSES))


_module = partial(module, programs=PROGRAMS)


# ------------------------------------------------------------ Hessians
_hessian = hessian_builder(PROGRAMS)


@pytest.mark.parametrize("name, w", [("lu_gp", "x"), ("muskingum", "lK"), ("boris", "v0"),
                                     ("planar_flow", "bb")])
def test_dense_hessian_against_differences_of_the_gradient(name, w):
    """tl.hessian, of shape x.shape + x.shape, is the finite difference of tl.grad and
    symmetric: a kernel matrix eliminated by a recurrence over whole matrices, routing
    through reaches in series, a Boris rotation by two cross products, planar flows
    whose log-determinant reads the next layer."""
    check_dense_hessian(name, w, _hessian, PROGRAMS)


def test_lu_gp_hessian_in_the_targets_is_the_inverse_kernel():
    """0.5 y' inv(K) y + 0.5 log det K is quadratic in y: its Hessian is inv(K), although
    the program never forms an inverse (it eliminates [K | y] and divides by pivots)."""
    args = inputs("lu_gp", seed=3)
    x = args["x"]
    K = (np.exp(2 * args["lsf"] - 0.5 * (x[:, None] - x[None, :]) ** 2 / np.exp(2 * args["ll"]))
         + np.eye(len(x)) * np.exp(2 * args["lsn"]))
    H = _hessian("lu_gp", "y")(**args)
    assert np.allclose(H, np.linalg.inv(K), rtol=1e-9, atol=1e-10)


@pytest.mark.parametrize("name, w", [("hh", "lg"), ("seam", "img"), ("ebm", "lD"),
                                     ("revenue_dp", "sal")])
def test_hvp_against_differences_of_the_gradient(name, w):
    """tl.hvp through a four-member neuron recurrence with powers of its gates, a soft
    seam through filtered logsumexps one row back, a climate model whose albedo reads
    the state of the same step, and a booking DP with a max kink."""
    check_hvp_against_differences(name, w, PROGRAMS)


def test_hvp_is_the_hessian_times_the_direction():
    check_hvp_is_the_hessian_times_the_direction("muskingum", "lK", _hessian,
                                                 PROGRAMS)


# ------------------------------------------------------------ Jacobians
def test_jacobian_of_the_padded_convolution():
    """conv3 is linear in the signal: its Jacobian is the banded matrix
    J[i, l] = k[l - i + 1] for |i - l| <= 1, built within the certificate; in the taps
    it is the matrix of shifted, zero-padded signals."""
    conv3 = _module("unet1d")["conv3"]
    rng = np.random.default_rng(4)
    v, k = rng.standard_normal(6), rng.standard_normal(3)
    J = np.asarray(strict(tl.jacobian, conv3, wrt="v")(v=v, k=k))
    band = sum(k[t] * np.eye(6, k=t - 1) for t in range(3))
    assert np.allclose(J, band, rtol=1e-12, atol=1e-14)
    Jk = np.asarray(strict(tl.jacobian, conv3, wrt="k")(v=v, k=k))
    padded = np.r_[0.0, v, 0.0]
    assert np.allclose(Jk, np.stack([padded[i:i + 3] for i in range(6)]), rtol=1e-12, atol=1e-14)


def test_jacobian_of_srgb_decoding_is_diagonal():
    """srgb_lin is elementwise, linear below 0.04045 and a 2.4 power above: its
    Jacobian is diagonal, 1 / 12.92 or 2.4 / 1.055 ((c + 0.055) / 1.055) ** 1.4."""
    f = _module("delta_e")["srgb_lin"]
    c = np.array([[0.01, 0.5, 0.9], [0.03, 0.2, 0.04045]])
    J = np.asarray(strict(tl.jacobian, f, wrt="c")(c=c))
    slope = np.where(c <= 0.04045, 1.0 / 12.92, 2.4 / 1.055 * ((c + 0.055) / 1.055) ** 1.4)
    assert J.shape == (2, 3, 2, 3)
    assert np.allclose(J, np.einsum("ij,ab,ia->iajb", np.eye(2), np.eye(3), slope), rtol=1e-12)


# ------------------------------------------------------------ Numba
def test_a_pair_on_numba():
    """The values and gradients of Muskingum routing (a group over two leading indices,
    each reach reading its upstream neighbour in the same step) and of Jacobi sweeps on
    a coordinate list (the previous iterate gathered by column label inside the
    recurrence, a scatter by row label) are the interpreter's on the compiled backend."""
    check_on_numba(("muskingum", "coo_jacobi"), PROGRAMS)


# ------------------------------------------------------------ defects the corpus found
@pytest.mark.parametrize("name", sorted(WRONG_DERIVATIVES))
def test_derivatives_known_wrong(name, request):
    request.node.add_marker(pytest.mark.xfail(strict=True, reason=WRONG_DERIVATIVES[name]))
    check_derivatives(name, PROGRAMS, known_misses=KNOWN_MISSES)


SHARED_COTANGENT = {
    # an index bracket; the same with [x[i] > 0.0], [c[i] == 1] or sum[i | i >= 1], and
    # with x[i] ** 0.5 or x[i] ** 1.5 for sqrt
    "bracket": ("""
def f(x: f64[n], y: f64[n]) -> f64:
    r[i] = sqrt(x[i])
    return sum[i]([i >= 1] * (y[i] - r[i]) ** 2)
""", np.array([-1.0, 4.0, 9.0]), np.array([1.0, 1.0, 1.0])),
    # a value filter on a logsumexp: the softmax weights out_part_bar are stored with the
    # filter's bracket, then multiplied by log(x[k]) and by y[k] / x[k] (read without
    # it, that was 0 * NaN at x = 0)
    "filtered_logsumexp": ("""
def f(x: f64[n], y: f64[n]) -> f64:
    return logsumexp[i | x[i] > 0.0](y[i] * log(x[i]))
""", np.array([-1.0, 0.0, 2.0, 8.0]), np.array([1.0, 2.0, 3.0, 0.5])),
}


@pytest.mark.parametrize("kind", ["bracket", "filtered_logsumexp"])
def test_a_cotangent_shared_by_two_adjoints_keeps_its_bracket(kind):
    """docs/language.md: a term multiplied by a false bracket contributes nothing to a
    derivative, even where the derivative of what it multiplies is inf or NaN.  With
    respect to x alone (or to y alone, or with optimize=False) the gradient was finite;
    with respect to both, the stored cotangent (y_bar, which holds [i >= 1] as a value)
    was read by x_bar[k] = -0.5 * y_bar[k] / r[k] without the bracket, and at x[0] = -1
    that is 0 / NaN.  It is read under the bracket now (ad/reverse.py records a stored
    cotangent's support), and a filtered logsumexp's weights, stored once for both
    partials, are read under the filter (Transposer.shared_cotangent)."""
    src, x, y = SHARED_COTANGENT[kind]
    f = tl.parse(src, filename="shared.tl")["f"]
    gx, gy = tl.grad(f, wrt=("x", "y"))(x=x, y=y)
    assert np.array_equal(gx, tl.grad(f, wrt="x")(x=x, y=y)), gx
    assert np.array_equal(gy, tl.grad(f, wrt="y")(x=x, y=y)), gy


LABEL_ERROR = """
def f(Wt: f64[V, d], bt: f64[V], cj: i64[P]) -> f64:
    return sum[p]((sum[c](Wt[cj[p], c]) + bt[cj[p]]) ** 2)
"""


@pytest.mark.parametrize("backend", ["numpy", "numba"])
def test_a_derivative_reports_the_label_error_of_its_function(backend):
    """docs/api.md: where f raises a TLBoundsError for an i64 label, every derivative
    raises the very same error, with f's source line and caret.  f reports the read
    bt[cj[p]] (column 43); tl.grad and tl.jvp reported Wt[cj[p], c] (column 27), the
    read their check statement meets first (in "ddpm", f reports ab[ts[s]] on line 8
    and tl.grad reported E[ts[s], k] on line 9).  A derivative now reports the
    function's own error where both fail (api.Function._function_label_error)."""
    f = tl.parse(LABEL_ERROR, filename="glove_label.tl")["f"]
    args = dict(Wt=np.ones((3, 2)), bt=np.ones(3), cj=np.array([0, 1, 9]))
    with pytest.raises(tl.TLBoundsError) as mine:
        f(**args)
    assert ":3:43:" in str(mine.value)
    derivatives = [tl.grad(f, wrt=("Wt", "bt")), tl.grad(f, wrt="Wt"),
                   tl.value_and_grad(f, wrt="bt"), tl.hvp(f, wrt="Wt")]
    extra = [{}, {}, {}, dict(d_Wt=np.ones((3, 2)))]
    jvp = tl.jvp(f, wrt=("Wt", "bt"))
    derivatives.append(jvp)
    extra.append(dict(d_Wt=np.ones((3, 2)), d_bt=np.ones(3)))
    for d, more in zip(derivatives, extra):
        d = d.compile(backend)
        with pytest.raises(tl.TLBoundsError) as derived:
            d(**args, **more)
        assert str(derived.value) == str(mine.value), (str(mine.value), str(derived.value))


TO_JAX_BRACKET = """
def f(x: f64[n]) -> f64:
    return sum[i]([i >= 1] * x[i] ** 0.5)
"""


def test_to_jax_keeps_a_bracket_a_strong_zero():
    """A bracket is a strong zero (docs/language.md).  tl.to_jax emitted the sum as
    jnp.einsum of jnp.power(x, 0.5) and the 0/1 mask, so called eagerly (and under
    jax.vmap) it was NaN at x = (-1, 4), where f gives 2.0.  A fractional power under
    a bracket is now computed point by point with jnp.where, as log(x[i]) was."""
    jax = pytest.importorskip("jax")
    for bracket in ("[i >= 1]", "[x[i] > 0.0]"):
        for power in ("0.5", "1.5", "-0.5"):
            src = TO_JAX_BRACKET.replace("[i >= 1]", bracket).replace("0.5", power)
            f = tl.parse(src, filename="tojax.tl")["f"]
            x = np.array([-1.0, 4.0])
            want = f(x=x)
            assert want == 4.0 ** float(power)
            g = tl.to_jax(f)
            assert float(g(x)) == want, (bracket, power)
            assert float(jax.jit(g)(x)) == want, (bracket, power)
            assert float(jax.vmap(g)(np.stack([x, x]))[1]) == want, (bracket, power)
            assert float(f.compile("jax")(x=x)) == want, (bracket, power)

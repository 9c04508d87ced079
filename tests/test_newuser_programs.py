"""Programs written from the documentation alone (tests/newuser_programs.py).

For each program: the value matches an independent NumPy version; the gradient
with respect to every f64 parameter matches central finite differences; jvp and
vjp satisfy the dot-product identity; and grad, jvp and vjp build without a
TLCostWarning (except where the entry names the derivative that misses the
certificate, and why).  A handful run on the Numba backend as well.
"""
import functools
import warnings

import numpy as np
import pytest

import tensorlang as tl
from derivcheck import check_close, dot_product_identity, f64_params, fd_jacobian, \
    grad_matches_fd, hvp_matches_fd, strict
from newuser_programs import PROGRAMS

NAMES = sorted(PROGRAMS)

# Derivatives that miss the certificate today, by a constant or through a derived
# size it takes as independent of the sizes it is made of (left for the certificate's
# owners; the values are checked all the same).
KNOWN_MISSES = {
    # max recurrence: the adjoint stores the cotangent of each entry (T K^2) and
    # counts the maximum's ties in a sum of its own: 18 K^2 T against 12 K^2 T;
    # what would take it to about 12 K^2 T: benchmarks/results/cost_warnings.md,
    # "A shared pass hosted by the adjoint step"
    "viterbi": "max recurrence",
}


def module(name, programs=PROGRAMS):
    """The module an entry's source parses to (its other functions too)."""
    return tl.parse(programs[name]["src"], filename=f"{name}.tl")


def function(name, programs=PROGRAMS):
    return module(name, programs)[name]


def inputs(name, seed=0, programs=PROGRAMS):
    entry = programs[name]
    return entry["make"](np.random.default_rng(seed), **entry["sizes"])


def test_at_least_thirty_programs():
    assert len(PROGRAMS) >= 30


def check_value(name, programs=PROGRAMS):
    args = inputs(name, programs=programs)
    check_close(function(name, programs)(**args), programs[name]["ref"](**args),
                f"{name} against NumPy", rtol=1e-10, atol=1e-10)


def check_derivatives(name, programs=PROGRAMS, known_misses=KNOWN_MISSES):
    """Gradient against finite differences, the dot-product identity, and no
    certificate warning from grad, jvp or vjp; a program `known_misses` names must
    still warn (an entry that no longer misses is stale and fails here)."""
    f = function(name, programs)
    wrt = f64_params(f)
    args = inputs(name, seed=1, programs=programs)
    with warnings.catch_warnings(record=True) as seen:
        if name not in known_misses:
            warnings.simplefilter("error", tl.TLCostWarning)
        else:
            warnings.simplefilter("always", tl.TLCostWarning)
        grad_matches_fd(f, wrt, args, np.random.default_rng(2))
        dot_product_identity(f, wrt, args, np.random.default_rng(3))
    if name in known_misses:
        assert any(issubclass(w.category, tl.TLCostWarning) for w in seen), \
            f"{name} meets the certificate now: take it out of KNOWN_MISSES"


@pytest.mark.parametrize("name", NAMES)
def test_value_matches_numpy(name):
    check_value(name)


@pytest.mark.parametrize("name", NAMES)
def test_derivatives(name):
    check_derivatives(name)


@pytest.mark.parametrize("name", ["mixture1d", "kalman", "chol_gauss", "crf"])
def test_second_derivatives(name):
    """hvp against finite differences of the gradient, one parameter at a time."""
    f = function(name)
    args = inputs(name, seed=4)
    rng = np.random.default_rng(5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", tl.TLCostWarning)
        for w in f64_params(f):
            hvp_matches_fd(f, w, args, rng, f"hvp of {name} along {w}")


def test_a_handful_on_numba():
    """Values and gradients of programs of several kinds (a recurrence group, a max
    recurrence, gathers through an edge list, logsumexp, reductions with filters)
    are the interpreter's on the compiled backend."""
    check_on_numba(("kalman", "viterbi", "springs", "mixture1d", "rank_hinge"))


def check_on_numba(names, programs=PROGRAMS):
    """The values and the gradients (with respect to every f64 parameter) of the
    programs `names` are the interpreter's on the compiled backend (the certificate is
    test_derivatives' to check, so its warnings are not shown here)."""
    for name in names:
        f = function(name, programs)
        args = inputs(name, programs=programs)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", tl.TLCostWarning)
            g = tl.grad(f, wrt=tuple(f64_params(f)))
        check_close(f.compile("numba")(**args), f.compile("numpy")(**args), name,
                    rtol=1e-10, atol=1e-10)
        check_close(g.compile("numba")(**args), g.compile("numpy")(**args), f"grad of {name}",
                    rtol=1e-9, atol=1e-10)


def hessian_builder(programs):
    """tl.hessian(entry, wrt=w) of an entry of `programs`, built once for the tests that
    share it, a certificate warning an error."""
    @functools.lru_cache(maxsize=None)
    def hessian(name, w):
        return strict(tl.hessian, function(name, programs), wrt=w)
    return hessian


def check_dense_hessian(name, w, hessian, programs=PROGRAMS, symmetry_rtol=1e-8):
    """The dense Hessian of entry `name` in `w` (`hessian(name, w)`, a module's shared
    build), of shape w.shape + w.shape, is the finite difference of tl.grad, and
    symmetric."""
    args = inputs(name, seed=3, programs=programs)
    H = np.asarray(hessian(name, w)(**args))
    shape = np.shape(args[w])
    assert H.shape == shape + shape
    fd = fd_jacobian(tl.grad(function(name, programs), wrt=w), args, w)
    assert np.allclose(H, fd, rtol=1e-5, atol=1e-6), np.max(np.abs(H - fd))
    n = int(np.prod(shape))
    assert np.allclose(H.reshape(n, n), H.reshape(n, n).T, rtol=symmetry_rtol, atol=1e-9)


def check_hvp_against_differences(name, w, programs=PROGRAMS):
    """tl.hvp of entry `name` along parameter `w` against differences of its gradient,
    with no certificate warning."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", tl.TLCostWarning)
        hvp_matches_fd(function(name, programs), w, inputs(name, seed=5, programs=programs),
                       np.random.default_rng(6), f"hvp of {name} along {w}")


def check_hvp_is_the_hessian_times_the_direction(name, w, hessian, programs=PROGRAMS,
                                                 rtol=1e-10):
    """tl.hvp of entry `name` along vector parameter `w` is its dense Hessian
    (`hessian(name, w)`, a module's shared build) times the direction."""
    args = inputs(name, seed=2, programs=programs)
    d = np.random.default_rng(3).standard_normal(len(args[w]))
    H = hessian(name, w)(**args)
    hv = strict(tl.hvp, function(name, programs), wrt=w)(**args, **{f"d_{w}": d})
    assert np.allclose(hv, H @ d, rtol=rtol, atol=1e-12)


def check_rejected(name, rejected):
    """rejected[name] = (source, error class, part of the message, line): parsing the
    source raises that class, located at that line of `name`.tl."""
    src, cls, message, line = rejected[name]
    with pytest.raises(getattr(tl, cls)) as err:
        tl.parse(src, filename=f"{name}.tl")
    assert message in str(err.value)
    assert str(err.value).startswith(f"{name}.tl:{line}:")


def corpus_tests(programs, *, minimum, known_misses=None, slow_to_build=(), rejected=None,
                 hessian_misses=None):
    """The tests every corpus module runs, made for its programs: a module adds them
    to its namespace (`globals().update(corpus_tests(PROGRAMS, ...))`) and writes only
    the checks particular to its programs.

    - test_corpus_size: the module holds at least `minimum` programs;
    - test_value_matches_numpy: every program's value against its NumPy version;
    - test_derivatives: every program but `slow_to_build`'s, by `check_derivatives`
      (`known_misses`: the programs whose derivatives still miss the certificate);
    - test_what_the_language_rejects_is_a_located_error, when `rejected` is given;
    - test_hessians_that_miss_the_certificate, when `hessian_misses` ((name, wrt) ->
      why) is given: the dense Hessian still warns, and matches differences of the
      gradient.
    """
    names = sorted(programs)
    known_misses = {} if known_misses is None else known_misses

    def test_corpus_size():
        assert len(programs) >= minimum

    @pytest.mark.parametrize("name", names)
    def test_value_matches_numpy(name):
        check_value(name, programs)

    @pytest.mark.parametrize("name", sorted(set(names) - set(slow_to_build)))
    def test_derivatives(name):
        check_derivatives(name, programs, known_misses=known_misses)

    tests = dict(test_corpus_size=test_corpus_size,
                 test_value_matches_numpy=test_value_matches_numpy,
                 test_derivatives=test_derivatives)
    if rejected is not None:
        @pytest.mark.parametrize("name", sorted(rejected))
        def test_what_the_language_rejects_is_a_located_error(name):
            check_rejected(name, rejected)
        tests["test_what_the_language_rejects_is_a_located_error"] = \
            test_what_the_language_rejects_is_a_located_error
    if hessian_misses is not None:
        @pytest.mark.parametrize("name, w", sorted(hessian_misses))
        def test_hessians_that_miss_the_certificate(name, w):
            """The values are right; the warning is still given (an entry that no
            longer warns is stale and fails here)."""
            check_hessian_miss(name, w, programs)
        tests["test_hessians_that_miss_the_certificate"] = test_hessians_that_miss_the_certificate
    return tests


def check_hessian_miss(name, w, programs):
    args = inputs(name, 3, programs)
    fn = function(name, programs)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always", tl.TLCostWarning)
        H = tl.hessian(fn, wrt=w)
    assert any(issubclass(x.category, tl.TLCostWarning) for x in seen), \
        f"tl.hessian({name}, wrt={w!r}) meets the certificate now: take it out of HESSIAN_MISSES"
    fd = fd_jacobian(tl.grad(fn, wrt=w), args, w)
    assert np.allclose(H(**args), fd, rtol=1e-5, atol=1e-6)

"""The fourth set of programs written from the documentation alone
(tests/newuser4_programs.py), checked as tests/test_newuser_programs.py checks
the first: values against an independent NumPy version, the gradient with
respect to every f64 parameter against central finite differences, the
dot-product identity between jvp and vjp, no TLCostWarning from grad, jvp or
vjp, a few second derivatives, the programs the language rejects by design
as located errors, and a handful on the Numba backend.
"""

import numpy as np

from derivcheck import hvp_matches_fd
from newuser4_programs import PROGRAMS, REJECTED
from test_newuser_programs import (corpus_tests, check_on_numba, function as _function,
                                   inputs as _inputs)


# Derivatives left out of test_derivatives because building them takes far longer
# than the rest (the values are checked all the same; the report names the cause).
SLOW_TO_BUILD = {
    # five inlined window sums of derived size (h - k + 1) x (w - k + 1): grad, jvp
    # and vjp took 4 to 5 s of CPU each to build, nearly all of it in the simplifier's
    # equality-bracket elimination and common-product factoring trials; about 2 s each
    # since trials are costed from remembered parts, but checking them (grad, jvp,
    # vjp, finite differences) would still add a fifth to this module's time
    # (benchmarks/results/compile_time_scaling.md)
    "ssim": "simplifier time on five derived-size window sums",
}


# the value, derivative and rejection tests every corpus module runs
globals().update(corpus_tests(PROGRAMS, minimum=35, slow_to_build=SLOW_TO_BUILD,
                              rejected=REJECTED))


def function(name):
    return _function(name, PROGRAMS)


def inputs(name, seed=0):
    return _inputs(name, seed, PROGRAMS)


def test_second_derivatives_of_a_few():
    """hvp against finite differences of the gradient along one parameter."""
    rng = np.random.default_rng(5)
    for name, w in (("binorm", "z"), ("biquad", "b1"), ("nlogit", "lam")):
        hvp_matches_fd(function(name), w, inputs(name, seed=4), rng, f"hvp of {name} along {w}")


def test_a_handful_on_numba():
    """Values and gradients of a recurrence gathering the previous step through an
    i64 table (PageRank), a group of three states reading one and four steps back
    (Holt-Winters), a two-index recurrence reading two back along both indices and
    a filtered logsumexp of gathers (Plackett-Luce) are the interpreter's on the
    compiled backend (ones whose kernels compile in seconds)."""
    check_on_numba(("pagerank", "holt4", "iir2d", "plackett"), PROGRAMS)

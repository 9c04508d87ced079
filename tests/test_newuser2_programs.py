"""The second set of programs written from the documentation alone
(tests/newuser2_programs.py), checked as tests/test_newuser_programs.py checks
the first: values against an independent NumPy version, the gradient with
respect to every f64 parameter against central finite differences, the
dot-product identity between jvp and vjp, no TLCostWarning from grad, jvp or
vjp, and a handful on the Numba backend.
"""
from newuser2_programs import PROGRAMS
from test_newuser_programs import (corpus_tests, check_on_numba, function as _function,
                                   inputs as _inputs)

# the value, derivative and rejection tests every corpus module runs
globals().update(corpus_tests(PROGRAMS, minimum=25))


def function(name):
    return _function(name, PROGRAMS)


def inputs(name, seed=0):
    return _inputs(name, seed, PROGRAMS)


def test_a_handful_on_numba():
    """Values and gradients of a recurrence group that gathers through an edge list,
    a recurrence two steps back and a running logsumexp are the interpreter's on the
    compiled backend (small ones: the kernels of each gradient take seconds to
    compile; soft-DTW's two-index recurrence is checked there with the examples)."""
    check_on_numba(("spring_chain", "iir2", "cumlse"), PROGRAMS)

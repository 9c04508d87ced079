"""Checks of tests/newuser10_programs.py with the helpers of
tests/test_newuser_programs.py (values, gradients, jvp against vjp, the certificate,
the refused programs), then the API around a program as a user reads it in
docs/api.md: dense Hessians and Hessian-vector products against finite differences
of the gradient, Jacobians of the vector-valued programs against finite differences
of the function, the JAX and PyTorch bridges, the command line on a file, and a
handful on the Numba backend.
"""
import warnings
from functools import partial

import numpy as np

import tensorlang as tl
from derivcheck import hvp_matches_fd
from newuser10_programs import PROGRAMS, REJECTED
from test_newuser_programs import (corpus_tests, check_on_numba, function as _function,
                                   inputs as _inputs)

# Derivatives that miss the certificate today (the values are checked all the same).
KNOWN_MISSES: dict = {}

# Derivatives left out of test_derivatives to keep this module within its time.
SLOW_TO_BUILD: dict = {}

function = partial(_function, programs=PROGRAMS)
inputs = partial(_inputs, programs=PROGRAMS)

# the value, derivative and rejection tests every corpus module runs
globals().update(corpus_tests(PROGRAMS, minimum=24, known_misses=KNOWN_MISSES,
                              slow_to_build=SLOW_TO_BUILD, rejected=REJECTED))

"""Random programs compiled with Numba compute what the reference interpreter computes.

The programs come from the generator of test_roundtrip_fuzz.py.  For each one:
the function itself, its jvp and vjp with respect to all of its f64 parameters,
and for scalar outputs its gradient, run on both backends and agree to 1e-12
relative (scaled by the largest magnitude in the result).  Every compiled
program costs a few Numba compilations (about half a second each), so the
number of examples is kept small and fixed; the examples are derandomized so
a run is reproducible.
"""
import numpy as np
from hypothesis import HealthCheck, given, reject, settings
from hypothesis import strategies as st

import tensorlang as tl
from tensorlang.backend import numba_backend
from tensorlang.backend.kernels import Unsupported
from derivcheck import as_flat
from test_roundtrip_fuzz import SIZES, random_case, single_functions


def agree(fn, inputs, what: str, source: str):
    # The interpreter fallback would make the comparison vacuous: only the known
    # gap (a reduction or a gather inside an `or`) may take it.
    try:
        numba_backend.load_module(fn.optimized_program())
    except Unsupported:
        assert " or " in source, f"{what}: the Numba backend rejected\n{source}"
        return
    want = as_flat(fn.compile("numpy")(**inputs))
    got = as_flat(fn.compile("numba")(**inputs))
    scale = max(1.0, float(np.max(np.abs(want), initial=0.0)))
    assert got.shape == want.shape, (what, source)
    assert np.allclose(got, want, rtol=1e-12, atol=1e-12 * scale, equal_nan=True), \
        f"{what} differs between backends:\n{source}\ngot  {got}\nwant {want}"


@settings(max_examples=20, deadline=None, derandomize=True, database=None,
          suppress_health_check=list(HealthCheck))
@given(funcs=single_functions(), sizes=SIZES, seed=st.integers(0, 2**32 - 1))
def test_random_programs_and_derivatives_agree_between_backends(funcs, sizes, seed):
    spec, f, inputs, rng = random_case(funcs, sizes, seed)
    out = as_flat(f(**inputs))
    if not np.all(np.isfinite(out)) or np.max(np.abs(out), initial=0.0) > 1e6:
        reject()
    agree(f, inputs, "value", spec.source)
    wrt = tuple(name for name, elem, _ in spec.params if elem == "f64")
    if not wrt:
        return
    tangents = {f"d_{w}": rng.standard_normal(np.shape(inputs[w])) for w in wrt}
    agree(tl.jvp(f, wrt=wrt), {**inputs, **tangents}, "jvp", spec.source)
    d_out = rng.standard_normal(np.shape(f(**inputs)))
    agree(tl.vjp(f, wrt=wrt), {**inputs, "d_out": d_out}, "vjp", spec.source)

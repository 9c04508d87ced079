"""Random well-typed programs, differentiated and checked like the examples.

The programs come from the generator of test_roundtrip_fuzz.py.  For each one,
with respect to all of its f64 parameters at once:

* the dot-product identity <vjp(ybar), dx> == <ybar, jvp(dx)> (no step size,
  so it holds to rounding even at kinks);
* jvp against central finite differences along a random direction, unless the
  function has a kink or jump right there (two step sizes disagree);
* for scalar outputs, grad equal to vjp with cotangent 1, and the optimized
  gradient equal to the naive one.
"""
import numpy as np
from hypothesis import given, reject, settings
from hypothesis import strategies as st

import tensorlang as tl
from derivcheck import as_flat
from test_roundtrip_fuzz import FUZZ, SIZES, random_case, single_functions


def directional(f, inputs, dirs, eps):
    plus, minus = dict(inputs), dict(inputs)
    for w, d in dirs.items():
        plus[w] = np.asarray(inputs[w], dtype=float) + eps * d
        minus[w] = np.asarray(inputs[w], dtype=float) - eps * d
    return (as_flat(f(**plus)) - as_flat(f(**minus))) / (2 * eps)


@settings(FUZZ, max_examples=60)
@given(funcs=single_functions(), sizes=SIZES, seed=st.integers(0, 2**32 - 1))
def test_random_program_derivatives(funcs, sizes, seed):
    spec, f, inputs, rng = random_case(funcs, sizes, seed)
    wrt = tuple(name for name, elem, _ in spec.params if elem == "f64")
    for w in wrt:                      # smooth points: no grid values, so no exact ties
        inputs[w] = rng.standard_normal(np.shape(inputs[w])) if np.ndim(inputs[w]) \
            else float(rng.standard_normal())
    out = as_flat(f(**inputs))
    if not np.all(np.isfinite(out)) or np.max(np.abs(out), initial=0.0) > 1e6:
        reject()
    dirs = {w: rng.standard_normal(np.shape(inputs[w])) for w in wrt}

    jvp = tl.jvp(f, wrt=wrt)
    value, tangent = jvp(**inputs, **{f"d_{w}": dirs[w] for w in wrt})
    assert np.allclose(as_flat(value), out, rtol=1e-10, atol=1e-10)
    vjp = tl.vjp(f, wrt=wrt)
    ybar = rng.standard_normal(np.shape(value))
    bars = vjp(**inputs, d_out=ybar)
    if not (np.all(np.isfinite(as_flat(tangent)))
            and all(np.all(np.isfinite(np.asarray(b))) for b in bars)):
        reject()      # a point where f is not differentiable (sqrt at 0): inf or NaN is right
    lhs = sum(float(np.sum(b * dirs[w])) for b, w in zip(bars, wrt))
    rhs = float(np.sum(ybar * np.asarray(tangent)))
    scale = 1.0 + sum(float(np.sum(np.abs(b))) for b in bars) \
        * max(float(np.max(np.abs(d), initial=0.0)) for d in dirs.values())
    assert abs(lhs - rhs) <= 1e-9 * scale, f"dot-product identity:\n{spec.source}"

    fd1 = directional(f, inputs, dirs, 1e-6)
    fd2 = directional(f, inputs, dirs, 1e-5)
    if np.allclose(fd1, fd2, rtol=1e-4, atol=1e-6):        # smooth here: compare
        assert np.allclose(as_flat(tangent), fd1, rtol=1e-4, atol=1e-5), \
            f"jvp vs finite differences:\n{spec.source}"

    if np.ndim(value) == 0:
        g = tl.grad(f, wrt=wrt)(**inputs)
        naive = tl.grad(f, wrt=wrt, optimize=False)(**inputs)
        v1 = tl.vjp(f, wrt=wrt)(**inputs, d_out=1.0)
        for a, b, c in zip(g, naive, v1):
            assert np.allclose(a, b, rtol=1e-9, atol=1e-9), f"naive vs optimized:\n{spec.source}"
            assert np.allclose(a, c, rtol=1e-9, atol=1e-9), f"grad vs vjp:\n{spec.source}"

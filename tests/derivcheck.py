"""Shared derivative checks: finite differences and the dot-product identity."""
from __future__ import annotations

import warnings

import numpy as np

import tensorlang as tl
from tensorlang import sizexpr
from tensorlang.inputs import random_inputs

EPS = 1e-6


def as_printed(prog):
    """`prog` as its printed source states it: without what the planner was told about
    labels that earlier statements checked (`Stmt.checked_labels`, which a finished
    derivative's statements carry and no source text says), so that a printed
    derivative parsed back compares equal to it."""
    from dataclasses import replace
    return replace(prog, stmts=tuple(replace(s, checked_labels=()) for s in prog.stmts))


def f64_params(fn) -> list[str]:
    return [p.name for p in fn.program.params if p.elem == "f64"]


def sizes_for(fn, size: int = 4) -> dict:
    """Distinct sizes (non-square on purpose), derived ones included.  Derived sizes
    (n - k + 1, n / 2) must come out whole and at least 1, so the first of a few
    assignments for which they do is used."""
    plain, derived = sizexpr.split(fn.program.sizes())
    for scale in (1, 2, 6):
        for order in (plain, plain[::-1]):
            sizes = {s: scale * (size + k) for k, s in enumerate(order)}
            try:
                return sizexpr.bind(derived, sizes)
            except ValueError:
                continue
    raise AssertionError(f"no test sizes make the derived sizes of {fn.name} valid")


def inputs_for(fn, size: int = 4, seed: int = 0) -> dict:
    return random_inputs(fn, {}, sizes_for(fn, size), seed=seed)


def perturbed(inputs: dict, name: str, direction, eps: float) -> dict:
    out = dict(inputs)
    out[name] = np.asarray(inputs[name], dtype=float) + eps * direction
    return out


def as_flat(v) -> np.ndarray:
    if isinstance(v, tuple):
        return np.concatenate([as_flat(x) for x in v])
    return np.atleast_1d(np.asarray(v, dtype=float)).ravel()


def directional_fd(fn, inputs: dict, directions: dict) -> np.ndarray:
    """Central difference of fn along `directions` (name -> array)."""
    plus, minus = dict(inputs), dict(inputs)
    for name, d in directions.items():
        plus = perturbed(plus, name, d, EPS)
        minus = perturbed(minus, name, d, -EPS)
    return (as_flat(fn(**plus)) - as_flat(fn(**minus))) / (2 * EPS)


def random_directions(fn, inputs: dict, wrt, rng) -> dict:
    return {w: rng.standard_normal(np.shape(inputs[w])) for w in wrt}


def check_close(a, b, what: str, rtol=1e-5, atol=1e-6):
    a, b = as_flat(a), as_flat(b)
    assert a.shape == b.shape, f"{what}: shapes {a.shape} vs {b.shape}"
    assert np.allclose(a, b, rtol=rtol, atol=atol), f"{what}: {a} vs {b}"


def grad_matches_fd(fn, wrt, inputs, rng, optimize=True):
    g = tl.grad(fn, wrt=tuple(wrt), optimize=optimize)
    grads = g(**inputs)
    dirs = random_directions(fn, inputs, wrt, rng)
    fd = directional_fd(fn, inputs, dirs)
    predicted = sum(float(np.sum(gr * dirs[w])) for gr, w in zip(grads, wrt))
    check_close(predicted, fd, f"grad of {fn.name} along a random direction")
    return grads


def jvp_matches_fd(fn, wrt, inputs, rng):
    j = tl.jvp(fn, wrt=tuple(wrt))
    dirs = random_directions(fn, inputs, wrt, rng)
    out, d_out = j(**inputs, **{f"d_{w}": d for w, d in dirs.items()})
    check_close(out, fn(**inputs), f"jvp primal of {fn.name}")
    check_close(d_out, directional_fd(fn, inputs, dirs), f"jvp tangent of {fn.name}")


def hvp_matches_fd(fn, w: str, inputs, rng, what: str):
    """tl.hvp of fn along a random direction in w against a central difference of
    tl.grad along it."""
    g = tl.grad(fn, wrt=w)
    d = rng.standard_normal(np.shape(inputs[w]))
    fd = (np.asarray(g(**perturbed(inputs, w, d, EPS)))
          - np.asarray(g(**perturbed(inputs, w, d, -EPS)))) / (2 * EPS)
    check_close(tl.hvp(fn, wrt=w)(**inputs, **{f"d_{w}": d}), fd, what, rtol=1e-4, atol=1e-5)


def dot_product_identity(fn, wrt, inputs, rng):
    """<vjp(ybar), dx> == <ybar, jvp(dx)>."""
    j = tl.jvp(fn, wrt=tuple(wrt))
    v = tl.vjp(fn, wrt=tuple(wrt))
    dirs = random_directions(fn, inputs, wrt, rng)
    out, d_out = j(**inputs, **{f"d_{w}": d for w, d in dirs.items()})
    ybar = rng.standard_normal(np.shape(out))
    bars = v(**inputs, d_out=ybar)
    lhs = sum(float(np.sum(b * dirs[w])) for b, w in zip(bars, wrt))
    rhs = float(np.sum(ybar * np.asarray(d_out)))
    assert np.isclose(lhs, rhs, rtol=1e-9, atol=1e-9), (lhs, rhs)


def strict(build, *args, **kw):
    """`build(*args, **kw)` (a derivative) with certificate warnings turned into errors:
    for programs that are cheap to differentiate, a warning is a finding."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", tl.TLCostWarning)
        return build(*args, **kw)


def of_terms_multiplied_out(kind: str, fn, wrt):
    """tl.<kind>(fn, wrt) as derived from fn's terms multiplied out (driver.derive's
    start="written"), where tl.<kind> may take the program as it runs instead: for
    tests of the rewrites that fire on the former."""
    from tensorlang.api import _derived, _flat
    from tensorlang.driver import derive
    prog = derive(kind, fn.program, wrt, True, runs=fn.optimized_program(), start="written")
    return _derived(prog, _flat(wrt), True, of=fn)


def fd_jacobian(fn, args: dict, w: str, eps: float = EPS) -> np.ndarray:
    """Central differences of fn (any output shape) along each entry of args[w]:
    shape out.shape + w.shape."""
    x = np.asarray(args[w], dtype=float)
    cols = []
    for k in range(x.size):
        e = np.zeros(x.size)
        e[k] = eps
        plus, minus = dict(args), dict(args)
        plus[w] = x + e.reshape(x.shape)
        minus[w] = x - e.reshape(x.shape)
        cols.append((np.asarray(fn(**plus)) - np.asarray(fn(**minus))) / (2 * eps))
    J = np.stack(cols, axis=-1)
    return J.reshape(J.shape[:-1] + x.shape)

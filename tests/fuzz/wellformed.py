"""Fuzzer 1: random well-typed programs with an independent evaluator.

The programs come from the generator of tests/test_roundtrip_fuzz.py (single
functions, and a helper with a function that calls it), driven by a seeded
``random.Random`` instead of Hypothesis.  Each is run on the interpreter and
on Numba and compared with the generator's evaluator; for single outputs its
jvp, vjp and (for a scalar) grad are compared across the backends and checked
with the dot-product identity.
"""
from __future__ import annotations

import random

import numpy as np

from .common import Case, RandomDraw, Skip, composite_body

import test_roundtrip_fuzz as R  # noqa: E402  (common puts tests/ on the path)

NAME = "wellformed"

_SINGLE = composite_body(R.single_functions)
_CALLING = composite_body(R.calling_modules)


def generate(seed: int):
    """(funcs, sizes, rng): the generator's functions for this seed."""
    rng = random.Random(seed)
    body = _CALLING if rng.random() < 0.25 else _SINGLE
    funcs = body(RandomDraw(rng))
    if rng.random() < 0.2:
        sizes = (1, 1, 1)
    else:
        sizes = (rng.randint(1, 5), rng.randint(1, 5), rng.randint(1, 4))
    return funcs, sizes


def expectation(spec, inputs: dict, sizes: dict):
    """() -> outputs of the generator's evaluator (Skip when it overflows)."""
    def expect():
        env = dict(inputs)
        env.update(sizes)
        env["__mag__"] = [1.0]
        try:
            want = spec.run(env)
        except (R.Overflow, OverflowError, ZeroDivisionError):
            raise Skip("overflow") from None
        for w in want:
            if not np.all(np.abs(w) < R.MAX_MAGNITUDE):
                raise Skip("large")
        expect.scale = env["__mag__"][0]
        return want
    return expect


def case_from(funcs, sizes_drawn, seed: int, fuzzer: str = NAME) -> tuple:
    """(case, spec, dims) for the last function of a generated module."""
    spec = funcs[-1]
    n, m, k = sizes_drawn
    dims = {"n": n, "m": m, "k": k}
    rng = np.random.default_rng(seed)
    inputs = R.make_inputs(spec.params, dims, rng)
    used = {d for _, _, ds in spec.params for d in ds}
    sizes = {d: v for d, v in dims.items() if d in used}
    source = "\n".join(f.source for f in funcs)
    case = Case(fuzzer, seed, source, spec.name, inputs, expectation(spec, inputs, sizes),
                derivs=not spec.tuple_return)
    return case, spec, sizes


def make(seed: int) -> Case:
    funcs, sizes = generate(seed)
    case, spec, _ = case_from(funcs, sizes, seed)
    case.scale = _scale_hint(case)
    return case


def _scale_hint(case: Case) -> float:
    """The magnitude the absolute tolerance is relative to: filled in lazily by
    the evaluator (see ``expectation``), so wrap it."""
    expect = case.expect

    def run():
        out = expect()
        case.scale = max(1.0, getattr(expect, "scale", 1.0))
        return out
    case.expect = run
    return 1.0

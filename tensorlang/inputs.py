"""Seeded random inputs for a function, from its parameter types and given sizes.

Used by ``tensorlang run`` for the inputs a user does not give, and by tests.
Labels of ``i64`` parameters are drawn below the extent they index, so gathers
stay in range.
"""
from __future__ import annotations

import numpy as np

from . import sizexpr
from .api import _fmt_bytes, _memory_limit
from .errors import TLShapeError
from .ssa.ir import Gather, IdxCmp, IndexVar, Program

DEFAULT_SIZE = 8


def label_bound(prog: Program, name: str, sizes: dict[str, int]) -> int:
    """How many distinct labels an i64 tensor may hold: the extent it indexes."""
    shapes = prog.shapes()
    best = None

    def extent(d):
        return d if isinstance(d, int) else sizes.get(d, DEFAULT_SIZE)

    def visit_body(body, ranges):
        nonlocal best
        for t in body:
            inner = {**ranges, **dict(t.sums)}
            for f, _ in t.factors:
                idx = getattr(f, "idx", None)
                if idx is not None:
                    for aff, d in zip(idx, shapes[f.name][1]):
                        if len(aff.terms) == 1 and isinstance(aff.terms[0][0], Gather) \
                                and aff.terms[0][0].name == name:
                            best = extent(d) if best is None else min(best, extent(d))
                for b in getattr(f, "args", ()):
                    visit_body(b, inner)
                if hasattr(f, "body"):
                    visit_body(f.body, inner)
            for a in t.pred:
                if isinstance(a, IdxCmp) and a.op == "==" and len(a.aff.terms) == 2:
                    atoms = [x for x, _ in a.aff.terms]
                    if any(isinstance(x, Gather) and x.name == name for x in atoms):
                        for x in atoms:
                            if isinstance(x, IndexVar) and x.name in inner:
                                e = extent(inner[x.name])
                                best = e if best is None else min(best, e)

    for st in prog.stmts:
        visit_body(st.body, dict(st.indices))
    return best or 2


def random_inputs(fn, given: dict, sizes: dict[str, int], seed: int = 0) -> dict:
    """Fill every parameter not given with seeded random data of the given sizes."""
    rng = np.random.default_rng(seed)
    out = {}
    # derived sizes (n - k + 1) follow from the others, whatever the caller passed
    sizes = {k: v for k, v in sizes.items() if not sizexpr.is_derived(k)}
    for p in fn.program.params:           # sizes fixed by given arrays come first
        if p.name in given:
            arr = np.asarray(given[p.name])
            for d, k in zip(p.dims, arr.shape):
                if isinstance(d, str) and not sizexpr.is_derived(d):
                    sizes.setdefault(d, k)
    for p in fn.program.params:              # plain sizes next, derived ones from them
        for d in p.dims:
            if isinstance(d, str) and not sizexpr.is_derived(d):
                sizes.setdefault(d, DEFAULT_SIZE)
    try:
        sizes = sizexpr.bind(fn.program.sizes(), sizes)
    except ValueError as exc:
        raise TLShapeError(f"cannot make inputs for {fn.name}: {exc}",
                           hint="choose sizes with --size for which every derived size "
                                "is a whole number of at least 1") from None
    for p in fn.program.params:
        if p.name in given:
            out[p.name] = given[p.name]
            continue
        shape = tuple(d if isinstance(d, int) else sizes[d] for d in p.dims)
        nbytes = int(np.prod(shape, dtype=object)) * (1 if p.elem == "bool" else 8)
        if nbytes > _memory_limit():
            raise TLShapeError(f"a random input {p.name} of shape {shape} would need "
                               f"{_fmt_bytes(nbytes)}, more than this machine's memory",
                               hint="give smaller sizes with --size, or the input as a file")
        if p.elem == "f64":
            out[p.name] = rng.standard_normal(shape) if shape else float(rng.standard_normal())
        elif p.elem == "bool":
            out[p.name] = rng.random(shape) < 0.5
        else:
            out[p.name] = rng.integers(0, label_bound(fn.program, p.name, sizes), size=shape)
    return out

"""Guard peeling: where along a generator's range its guards change value.

A loop over a generator whose brackets are affine in it is split into pieces
on which every bracket is constant, so the bulk piece runs with no tests and
only the boundary pieces keep them (at most ``PEEL_BUDGET`` innermost loops
per statement, so code size stays bounded).
"""
from __future__ import annotations

from ..ssa.ir import Affine

# Guard peeling splits loops; at most this many innermost loops per statement.
PEEL_BUDGET = 9


def peel_segments(plans, var: str, dim):
    """Split the loop over generator `var` where its guards change value.

    `[k >= 1]` and `[k + 1 < n]` on a stencil's output index become three loops,
    [0, 1), [1, n - 1) and [n - 1, n), each with the guards that hold there
    dropped (and the terms whose guards fail there left out), so the loop body
    has no tests and can vectorise.  The split assumes the breakpoints come in
    the order they have for large sizes; the returned condition checks that at
    run time, and the kernel keeps the guarded loop for the sizes where it fails.
    Returns (conditions, [(lo, hi, plans)]) or None when there is nothing to peel.
    """
    from dataclasses import replace

    from ..loops import single_var_bound
    size = Affine.dim(dim)
    points = {}                                 # breakpoint -> kind, keyed by its affine form
    for tp in plans:
        for a in tp.filters + tp.outer_filters:
            b = single_var_bound(a, var)
            if b is None:
                continue
            side, bound = b
            point = bound if side == "lo" else bound.shift(1)
            rel = point - size
            if point.is_const and point.const >= 0:
                points[point] = (0, point.const)
            elif rel.is_const and rel.const <= 0:
                points[point] = (1, rel.const)
            else:
                return None                     # a bound of another shape: keep the tests
    if not points:
        return None
    order = sorted(points, key=lambda p: points[p])
    consts = [p for p in order if points[p][0] == 0]
    rels = [p for p in order if points[p][0] == 1]
    # valid when every constant breakpoint lies before every size-relative one and inside.
    conds = []
    if consts and rels:
        conds.append(rels[0] - consts[-1])
    if consts:
        conds.append(size - consts[-1])
    if rels:
        conds.append(rels[0])
    bounds = [Affine(0)] + order + [size]
    pieces = []
    for lo, hi in zip(bounds, bounds[1:]):
        if lo == hi:
            continue
        kept = []
        for tp in plans:
            alive = True
            remaining = []
            for atoms in (tp.filters, tp.outer_filters):
                left = _constant_on_piece(atoms, var, lo, hi, order)
                if left is None:
                    alive = False
                    break
                remaining.append(left)
            if alive:
                kept.append(replace(tp, filters=remaining[0], outer_filters=remaining[1]))
        pieces.append((lo, hi, kept))
    return conds, pieces


def _constant_on_piece(atoms, var: str, lo: Affine, hi: Affine, order):
    """The atoms still to test on the piece [lo, hi) of var's loop (those with a bound
    on var hold there and are dropped), or None when one of them fails there."""
    from ..loops import single_var_bound
    out = []
    for a in atoms:
        b = single_var_bound(a, var)
        if b is None:
            out.append(a)
            continue
        side, bound = b
        point = bound if side == "lo" else bound.shift(1)
        # In [lo, hi): var >= bound holds iff bound <= lo; var < point iff hi <= point.
        if side == "lo":
            holds = _before_or_at(point, lo, order)
        else:
            holds = _before_or_at(hi, point, order)
        if not holds:
            return None
    return tuple(out)


def _before_or_at(a: Affine, b: Affine, order) -> bool:
    """Is breakpoint a <= breakpoint b in the assumed order (0 first, the size last)?"""
    def rank(p):
        if p == Affine(0):
            return -1
        if p in order:
            return order.index(p)
        return len(order)                       # the size itself
    return rank(a) <= rank(b)

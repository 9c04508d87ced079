"""The builtins' derivative rules as the derivative modes apply them.

The rules themselves are records of the builtin table (tensorlang.builtins).
A rule may use the builtin's output; this module decides what body stands for
it.  When a statement's whole body is one builtin call, as in
``a[i] = tanh(x[i])``, the output is a read of that statement, so the
derivative ``1 - a[l] ** 2`` reads the stored value instead of calling
``tanh`` again; anywhere else it is the call itself.

Conventions at kinks and ties (LANGUAGE.md section 5) are stated in the table:
``max``/``min`` pass the whole derivative to the first argument on ties, and
``abs'(0) = 0``.  Every rule is checked against finite differences in the tests.
"""
from __future__ import annotations

from ..builtins import BUILTINS
from ..ssa import build as B
from ..ssa.ir import Access, Affine, Apply, IndexVar

# Known outputs: pairs (call, body equal to the call's value) in the current scope.
Known = tuple


def stored_calls(name: str, indices, body) -> Known:
    """The call that `body`, the body of statement `name` over `indices`, stores.

    It must be the statement's whole body: one term with coefficient 1, no
    sums, one factor to the first power.  A bracket on the term does not
    matter: where it is false the term, and so any derivative through it, is
    zero anyway."""
    if len(body) != 1:
        return ()
    t = body[0]
    if t.coeff != 1 or t.sums or len(t.factors) != 1:
        return ()
    f, p = t.factors[0]
    if p != 1 or not isinstance(f, Apply):
        return ()
    read = Access(name, tuple(Affine.of(IndexVar(n)) for n, _ in indices))
    return ((f, B.factor_body(read)),)


def output_of(f: Apply, known: Known = ()) -> tuple:
    """A body equal to the output of call `f`: a stored value if one is known."""
    for call, value in known:
        if call == f:
            return value
    return B.factor_body(f)


def partials(f: Apply, known: Known = ()) -> list:
    """One body per argument of `f`: the partial derivative with respect to it."""
    return BUILTINS[f.fn].partials(output_of(f, known), *f.args)


__all__ = ["partials", "stored_calls", "output_of"]

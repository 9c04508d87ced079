"""Index ranges: what each statement index and summed index ranges over.

An index's range comes from its plain uses as a tensor index (``A[i, j]``
gives ``i`` the first dimension of ``A``) or from an explicit ``i: n``; two
uses that disagree, or an index with no such use, are located errors.  A
mixin of ``lower.FunctionLowerer``, which owns the scopes and the diagnostics.
"""
from __future__ import annotations

from .. import sizexpr
from ..builtins import BUILTIN_NAMES
from ..errors import TLNameError, TLShapeError, TLTypeError
from ..syntax import ast as A
from ..syntax.parse import KEYWORDS
from .resolve import _unwrap
from .ir import Dim


class RangeInference:
    """Range inference for statement and sum binders."""

    def check_binder_name(self, b: A.Binder):
        if b.name in self.names or b.name in self.sizes:
            self.fail(TLNameError, b.span, f"index {b.name} has the name of a tensor or size",
                      "choose another index name")
        if b.name in BUILTIN_NAMES or b.name in KEYWORDS:
            self.fail(TLNameError, b.span, f"{b.name} is a builtin name and cannot be an index")

    def binder_dim(self, b: A.Binder):
        if b.dim is None:
            return None
        v = b.dim.value
        if isinstance(v, int):
            if v < 1:
                self.fail(TLShapeError, b.dim.span, f"range {v} must be at least 1")
            return v
        for sym in sizexpr.base_symbols(v):
            if sym not in self.sizes:
                self.fail(TLNameError, b.dim.span, f"unknown size {sym}",
                          f"sizes come from parameter types; known: "
                          f"{', '.join(self.sizes) or 'none'}")
        return v

    def infer_ranges(self, binders, expr, declared=None) -> dict[str, Dim]:
        """Each binder's range: explicit, or from its plain uses `x[.., i, ..]` in expr
        (one expression, or a tuple of them: a reduction's filter and body).
        `declared()`: the sizes the function's return type gives the statement's
        indices, when it is returned; asked only for the hint of an error."""
        names = {b.name for b in binders}
        uses: dict[str, list] = {n: [] for n in names}
        near: dict[str, list] = {n: [] for n in names}
        self._collect_uses(expr, names, uses, near)
        out = {}
        for b in binders:
            explicit = self.binder_dim(b)
            found = uses[b.name]
            dims = []
            for d, where in found:
                if d not in [x for x, _ in dims]:
                    dims.append((d, where))
            if explicit is not None:
                # An explicit range wins over plain uses (`e[i: m] = [i < n] * x[i]`
                # reads x only where it exists); the bounds proof checks every read.
                out[b.name] = explicit
                continue
            if not dims:
                # An index expression that is no index at all (an index multiplied by
                # another, a remainder, a division of an index) is the error to fix
                # first: with it fixed, the read may well set the range.
                for _, ix in near[b.name]:
                    wrong = self._not_an_index(ix, b.name)
                    if wrong is not None:
                        self.fail(TLTypeError, *wrong)
                # The size a returned statement's declared type gives the index, else
                # the dimension it moves along in a read like x[c, t - 2 * j], is the
                # likeliest range (one it moves along alone, as in w[L - 1 - k], before
                # one it moves along with another index, as in x[p + k]); any size of
                # the function otherwise.
                some = ((declared() if declared else {}).get(b.name)
                        or self._likeliest_dim(b.name, near[b.name])
                        or next(iter(self.sizes), "n"))
                self.fail(TLShapeError, b.span,
                          f"cannot infer the range of index {b.name}",
                          f"only a plain use like x[{b.name}] sets a range (x[{b.name} + 1] does "
                          f"not); give it explicitly, e.g. {b.name}: {some}")
            if len(dims) > 1:
                (d1, w1), (d2, w2) = dims[0], dims[1]
                self.fail(TLShapeError, w2,
                          f"index {b.name} has conflicting ranges: {d1} (line {w1.line}) and {d2}",
                          "an index ranges over one size; use two indices or an explicit range")
            out[b.name] = dims[0][0]
        return out

    def _likeliest_dim(self, name: str, near: list):
        """The dimension of the first read whose index expression moves with `name`
        alone (sizes and constants aside), else of the first read that mentions it;
        None when none does."""
        alone = [d for d, ix in near if _names_in(ix) - set(self.sizes) == {name}]
        return (alone or [d for d, _ in near] or [None])[0]

    def _collect_uses(self, e, names, uses, near):
        """Plain uses of `names` into `uses` (dimension, span), and into `near`
        (dimension, index expression) where an index expression mentions one of them
        otherwise."""
        # An explicit stack, in source order: a long flat sum needs no deep recursion.
        stack = list(reversed(e)) if isinstance(e, tuple) else [e]
        while stack:
            e = stack.pop()
            if isinstance(e, A.Access):
                ent = self.names.get(e.name)
                if ent is None and e.name not in names and e.name not in self.sizes:
                    self.unknown_name(e.name_span, e.name)
                if ent is not None and len(ent.dims) != len(e.indices):
                    # A rank error explains a failed inference better than the inference does.
                    self.indices(e, ent, {})
                if ent is not None and len(ent.dims) == len(e.indices):
                    for k, ix in enumerate(e.indices):
                        u = _unwrap(ix)
                        if isinstance(u, A.Name) and u.id in names:
                            uses[u.id].append((ent.dims[k], ix.span))
                        else:
                            for n in _names_in(ix) & names:
                                near[n].append((ent.dims[k], ix))
            elif isinstance(e, (A.Sum, A.Reduce)):
                for b in e.binders:
                    if b.name in names:
                        self.fail(TLNameError, b.span, f"index {b.name} is already bound here",
                                  "use a different name for the summed index")
            stack.extend(reversed(A.children(e)))

    def _not_an_index(self, ix, name: str):
        """(span, message, hint) of the first part of index expression ix, mentioning
        `name`, that lowering would reject whatever the index's range: `a * b` with an
        index on each side, a remainder `a % q`, a division with an index in it (a
        division of sizes is a derived size); or None."""
        sizes = set(self.sizes)
        stack = [ix]
        while stack:
            x = stack.pop()
            if isinstance(x, A.BinOp) and name in _names_in(x):
                if x.op == "*":
                    left, right = (_names_in(side) - sizes for side in (x.left, x.right))
                    if left and right:
                        return (x.span, "index expression is not affine",
                                "an index may multiply variables by integer constants only")
                if x.op == "%":
                    return (x.span, "% may only appear in a divisibility guard",
                            "write [a % q == 0] inside a bracket")
                if x.op == "/":
                    return (x.span, "operator / is not allowed in an index",
                            "indices are affine: sums of integer multiples of indices and "
                            "sizes")
            stack.extend(A.children(x))
        return None


def _names_in(e) -> set[str]:
    """The names an index expression mentions."""
    out, stack = set(), [e]
    while stack:
        x = stack.pop()
        if isinstance(x, A.Name):
            out.add(x.id)
        stack.extend(A.children(x))
    return out

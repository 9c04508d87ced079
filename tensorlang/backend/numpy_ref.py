"""The reference interpreter: Tensor SSA evaluated with NumPy.

This is the oracle every other stage is tested against, so it favours being
obviously right over being fast.  Each term is evaluated on the grid of the
indices it uses: every factor and every bracket becomes an array over just its
own indices ("labelled arrays"), and the product is contracted with
``numpy.einsum``.  Brackets are strong zeros: reads that a bracket excludes are
never taken from memory (their positions read 0), and if any factor holds a
non-finite value the term is computed point by point with ``where(mask,
product, 0)`` so a NaN or inf behind a false bracket cannot leak through
``0 * inf``.  A term with a factor of negative power is computed point by point
too, as a quotient: einsum could only multiply by a reciprocal.

Gathers through i64 tensors are range-checked wherever the term's brackets
hold; an out-of-range label raises :class:`TLBoundsError` naming the access.
"""
from __future__ import annotations

import itertools
import string

import numpy as np

from ..builtins import ieee_power, numpy_impl, quotient
from ..errors import SourceText, TLBoundsError, TLInternalError
from ..ssa.recur import recurrences
from ..ssa.traverse import index_names as term_index_names, substitute
from ..ssa.ir import (Access, Affine, AnyOf, Apply, Gather, Group, IdxCmp, IndexVar, NotAtom,
                      Program, Reduce, Rel, SizeValue, SizeVar, Term, ValCmp)
from ..ssa.printer import fmt_affine

_LETTERS = string.ascii_letters
# A term evaluated point by point lays out at most this many points at a time.
POINTWISE_BLOCK = 1 << 20


class LA:
    """A labelled array: values over the named axes, in scope order."""
    __slots__ = ("arr", "axes")

    def __init__(self, arr, axes: tuple):
        self.arr = arr
        self.axes = axes


class Scope:
    """Index axes in scope, in binding order, with their extents."""

    def __init__(self, order: tuple = (), ranges: dict | None = None):
        self.order = order
        self.ranges = ranges or {}

    def extend(self, names_extents) -> "Scope":
        order = self.order + tuple(n for n, _ in names_extents)
        ranges = dict(self.ranges)
        ranges.update(dict(names_extents))
        return Scope(order, ranges)

    def union(self, *axes_lists) -> tuple:
        seen = set()
        for axes in axes_lists:
            seen.update(axes)
        return tuple(a for a in self.order if a in seen)

    def shape(self, axes) -> tuple:
        return tuple(self.ranges[a] for a in axes)

    def align(self, la: LA, axes: tuple):
        """la's array reshaped to broadcast against `axes` (a superset, same order)."""
        if la.axes == axes:
            return la.arr
        shape = [self.ranges[a] if a in la.axes else 1 for a in axes]
        return np.reshape(la.arr, shape)

    def full(self, la: LA, axes: tuple):
        return np.broadcast_to(self.align(la, axes), self.shape(axes))


class Interpreter:
    def __init__(self, prog: Program, source: SourceText | None = None):
        self.prog = prog
        self.source = source
        self.shapes = prog.shapes()

    # ------------------------------------------------------------ driver
    def run(self, inputs: dict, sizes: dict[str, int]):
        self.env = dict(inputs)
        self.sizes = sizes
        groups = {g.members[0]: g for g in recurrences(self.prog)}
        skip: set[str] = set()
        with np.errstate(all="ignore"):
            for st in self.prog.stmts:
                if st.name in groups:
                    self.recurrence(groups[st.name])
                    skip.update(groups[st.name].members)
                if st.name in skip:
                    continue
                extents = [(n, self.extent(d)) for n, d in st.indices]
                scope = Scope().extend(extents)
                axes = tuple(n for n, _ in st.indices)
                # np.array, not ascontiguousarray: the latter makes 0-d arrays 1-d.
                self.env[st.name] = np.array(self.body(st.body, scope, axes, None),
                                             dtype=np.float64, order="C")
        return [self.env[o] for o in self.prog.outputs]

    def extent(self, d) -> int:
        return d if isinstance(d, int) else self.sizes[d]

    def recurrence(self, g):
        """A recurrence group: its steps in order (each leading index upwards when
        the group reads back, downwards when it reads forward), and in each step
        every member over its remaining indices, with the step's indices fixed."""
        stmts = [self.prog.stmt(m) for m in g.members]
        for st in stmts:
            # NaN, so a read of a step not yet computed cannot pass unnoticed.
            self.env[st.name] = np.full(tuple(self.extent(d) for d in st.dims), np.nan)
        first = stmts[0]
        ranges = [range(self.extent(d)) if step < 0 else range(self.extent(d) - 1, -1, -1)
                  for (_, d), step in zip(first.indices[:g.lead], g.steps)]
        for point in itertools.product(*ranges):
            for st in stmts:
                fix = {n: Affine(v) for (n, _), v in zip(st.indices[:g.lead], point)}
                rest = st.indices[g.lead:]
                scope = Scope().extend([(n, self.extent(d)) for n, d in rest])
                axes = tuple(n for n, _ in rest)
                self.env[st.name][point] = self.body(substitute(st.body, fix), scope, axes, None)

    # ------------------------------------------------------------ bodies
    def body(self, body, scope: Scope, axes: tuple, mask: LA | None):
        """Sum of terms as a dense array over `axes`."""
        out = np.zeros(scope.shape(axes))
        for t in body:
            la = self.term(t, scope, mask)
            out = out + scope.align(la, axes)
        return out

    def body_la(self, body, scope: Scope, mask: LA | None) -> LA:
        used = set()
        for t in body:
            used |= term_index_names(t) - {n for n, _ in t.sums}
        axes = scope.union(used)
        return LA(self.body(body, scope, axes, mask), axes)

    def term(self, t: Term, scope: Scope, outer_mask: LA | None) -> LA:
        inner = scope.extend([(n, self.extent(d)) for n, d in t.sums])
        sum_axes = tuple(n for n, _ in t.sums)
        free = scope.union(term_index_names(t) - set(sum_axes))
        # `own` multiplies this term; `mask` (with the enclosing brackets too)
        # only decides where gathered labels must be in range.
        own = self.conjunction(t.pred, inner, outer_mask)
        mask = own if outer_mask is None else (outer_mask if own is None
                                               else _and(inner, outer_mask, own))
        factors = [(self.factor(f, inner, mask), p) for f, p in t.factors]
        if all(p > 0 for _, p in factors):
            powered = [la if p == 1 else LA(ieee_power(la.arr, p), la.axes) for la, p in factors]
            if all(np.all(np.isfinite(la.arr)) for la in powered):
                operands = list(powered)
                if own is not None:
                    operands.append(LA(own.arr.astype(np.float64), own.axes))
                val = self.contract(operands, inner, free, sum_axes)
                return LA(t.coeff * np.asarray(val, dtype=np.float64), free)
        # A quotient, or a value that is not finite: point by point (see `pointwise`).
        return LA(self.pointwise(t.coeff, factors, own, inner, free, sum_axes), free)

    def pointwise(self, coeff, factors, own, scope: Scope, free, sum_axes):
        """A term evaluated at each point of its axes, then summed.

        Two things einsum cannot do need this.  A factor of negative power is a
        division, `c * n1 * n2 / d1 / d2` in the order the compiled kernels use:
        multiplying by a reciprocal instead gives inf for x / x at x = 5e-324 and
        0.9999999999999999 for 1e308 / 1e308.  And a bracket must stay a strong
        zero where a factor is inf or NaN (0 * inf is NaN), so it is applied with
        `where`.  Only the axes the factors and the bracket use are laid out, at
        most POINTWISE_BLOCK points at a time (in slices of the first axis), so a
        quotient inside a contraction needs no more memory than a slice of its
        grid; a summed index that none of them uses multiplies by its extent.
        """
        axes = scope.union(*[la.axes for la, _ in factors], own.axes if own is not None else ())
        shape = scope.shape(axes)
        arrays = [(scope.align(la, axes), p) for la, p in factors]
        mask = scope.align(own, axes) if own is not None else None
        summed = tuple(k for k, a in enumerate(axes) if a in sum_axes)

        def block(sl):
            """The summed values over positions `sl` of the first axis (all if None)."""
            def cut(arr):
                return arr if sl is None or arr.shape[0] == 1 else arr[sl]
            val = quotient(coeff, [(cut(arr), p) for arr, p in arrays])
            part = shape if sl is None else (len(range(shape[0])[sl]),) + shape[1:]
            val = np.broadcast_to(val, part)
            if mask is not None:
                val = np.where(cut(mask), val, 0.0)
            return val.sum(axis=summed) if summed else val

        points = int(np.prod(shape, dtype=np.float64))
        if not axes or points <= POINTWISE_BLOCK or shape[0] == 1:
            val = block(None)
        else:
            step = max(1, POINTWISE_BLOCK * shape[0] // points)
            parts = [block(slice(k, k + step)) for k in range(0, shape[0], step)]
            if axes[0] in sum_axes:
                val = parts[0]
                for more in parts[1:]:
                    val = val + more
            else:
                val = np.concatenate(parts, axis=0)
        for a in sum_axes:
            if a not in axes:
                n = scope.ranges[a]
                val = val * n if n else np.zeros_like(val)
        kept = tuple(a for a in axes if a not in sum_axes)
        return scope.full(LA(np.asarray(val, dtype=np.float64), kept), free)

    def contract(self, operands, scope: Scope, free, sum_axes):
        # Scalars multiply the result; einsum only sees operands with axes.
        scalar = 1.0
        for o in [o for o in operands if not o.axes]:
            scalar = scalar * o.arr
        operands = [o for o in operands if o.axes]
        return scalar * self._contract_axes(operands, scope, free, sum_axes)

    def _contract_axes(self, operands, scope: Scope, free, sum_axes):
        if not operands:
            count = 1
            for a in sum_axes:
                count *= scope.ranges[a]
            return np.full(scope.shape(free), float(count))
        letter = {a: _LETTERS[k] for k, a in enumerate(scope.union(free, sum_axes,
                                                                   *[o.axes for o in operands]))}
        subs = ",".join("".join(letter[a] for a in o.axes) for o in operands)
        out = "".join(letter[a] for a in free)
        # Axes in `free` that no operand mentions are broadcast afterwards.
        present = set().union(*[set(o.axes) for o in operands])
        out_present = "".join(letter[a] for a in free if a in present)
        res = np.einsum(f"{subs}->{out_present}", *[o.arr for o in operands], optimize="greedy")
        missing = [a for a in free if a not in present]
        # Summed axes no operand mentions contribute a factor of their extent.
        for a in sum_axes:
            if a not in present:
                res = res * scope.ranges[a]
        if missing:
            la = LA(res, tuple(a for a in free if a in present))
            res = scope.full(la, free)
        del out
        return res

    # ------------------------------------------------------------ factors
    def factor(self, f, scope: Scope, mask: LA | None) -> LA:
        if isinstance(f, Access):
            return self.access(f.name, f.idx, scope, mask, f.span)
        if isinstance(f, Apply):
            args = [self.body_la(b, scope, mask) for b in f.args]
            axes = scope.union(*[a.axes for a in args])
            vals = [scope.align(a, axes) for a in args]
            res = numpy_impl(f.fn)(*vals)
            return LA(np.broadcast_to(res, scope.shape(axes)), axes)
        if isinstance(f, Group):
            return self.body_la(f.body, scope, mask)
        if isinstance(f, SizeValue):
            return LA(np.asarray(float(self.sizes[f.name])), ())
        if isinstance(f, Reduce):
            return self.reduce(f, scope, mask)
        raise TypeError(f)

    def reduce(self, f: Reduce, scope: Scope, mask: LA | None) -> LA:
        """max / min / logsumexp of the body over the reduced axes, where the filter
        holds (elsewhere the entry is the reduction's identity, -inf or +inf).
        logsumexp is shifted by the max, as scipy's is: exp(v - m) <= 1, and an
        infinite max (all -inf, or some +inf) shifts by 0."""
        inner = scope.extend([(n, self.extent(d)) for n, d in f.over])
        names = tuple(n for n, _ in f.over)
        own = self.conjunction(f.where, inner, mask)
        body_mask = own if mask is None else (mask if own is None else _and(inner, mask, own))
        val = self.body_la(f.body, inner, body_mask)
        axes = inner.union(val.axes, names, own.axes if own is not None else ())
        arr = inner.full(val, axes)
        if own is not None:
            fill = np.inf if f.op == "min" else -np.inf
            arr = np.where(inner.full(own, axes), arr, fill)
        red = tuple(k for k, a in enumerate(axes) if a in names)
        if f.op == "max":
            out = np.max(arr, axis=red)
        elif f.op == "min":
            out = np.min(arr, axis=red)
        else:
            top = np.max(arr, axis=red, keepdims=True)
            shift = np.where(np.isfinite(top), top, 0.0)
            out = np.log(np.sum(np.exp(arr - shift), axis=red)) + np.squeeze(shift, axis=red)
        return LA(np.asarray(out, dtype=np.float64), tuple(a for a in axes if a not in names))

    def affine(self, aff: Affine, scope: Scope, mask: LA | None, span) -> LA:
        parts = []
        for atom, c in aff.terms:
            if isinstance(atom, IndexVar):
                parts.append((LA(np.arange(scope.ranges[atom.name]), (atom.name,)), c))
            elif isinstance(atom, SizeVar):
                parts.append((LA(np.asarray(self.sizes[atom.name]), ()), c))
            else:
                g = self.gather_values(atom, scope, mask, span)
                parts.append((g, c))
        axes = scope.union(*[p.axes for p, _ in parts])
        val = np.full(scope.shape(axes), aff.const, dtype=np.int64)
        for la, c in parts:
            val = val + c * scope.align(la, axes)
        return LA(val, axes)

    def gather_values(self, g: Gather, scope, mask, span) -> LA:
        # a label read through another label (y[z[s]]) is located at that read
        la = self.access(g.name, g.idx, scope, mask, g.span or span, fill=0)
        return LA(la.arr.astype(np.int64), la.axes)

    def access(self, name, idx, scope: Scope, mask: LA | None, span, fill=0.0) -> LA:
        data = self.env.get(name)
        if data is None:
            # only a compiler defect orders a read before its statement (the strict
            # verify, TENSORLANG_VERIFY=1, refuses such a program before it runs)
            raise TLInternalError(f"internal error in the interpreter: {self.prog.name} reads "
                                  f"{name} before any statement writes it")
        if not idx:
            return LA(np.asarray(data), ())
        idx_las = [self.affine(a, scope, mask, span) for a in idx]
        axes = scope.union(*[la.axes for la in idx_las])
        shape = scope.shape(axes)
        ok = np.ones(shape, dtype=bool)
        arrays = []
        for k, (la, aff) in enumerate(zip(idx_las, idx)):
            arr = np.broadcast_to(scope.align(la, axes), shape)
            inside = (arr >= 0) & (arr < data.shape[k])
            if any(isinstance(a, Gather) for a in aff.atoms()):
                self.check_gather(name, k, aff, arr, inside, mask, scope, axes, span, data.shape[k])
            ok &= inside
            arrays.append(np.where(inside, arr, 0))
        vals = data[tuple(arrays)] if arrays else data
        if not ok.all():
            vals = np.where(ok, vals, fill)
        return LA(vals, axes)

    def check_gather(self, name, k, aff, arr, inside, mask, scope, axes, span, extent):
        bad = ~inside
        labels = arr
        if mask is not None:
            all_axes = scope.union(axes, mask.axes)
            shape = scope.shape(all_axes)
            bad = np.broadcast_to(scope.align(LA(bad, axes), all_axes), shape) \
                & np.broadcast_to(scope.align(mask, all_axes), shape)
            # The labels laid out like `bad`, so the first bad position names its label.
            labels = np.broadcast_to(scope.align(LA(arr, axes), all_axes), shape)
            axes = all_axes
        if not bad.any():
            return
        pos = tuple(np.argwhere(bad)[0])
        labels = np.broadcast_to(labels, bad.shape)
        value = labels[pos] if labels.ndim else labels
        name, index = self.as_written(name, k, aff, span)
        entry = self.entry_read(aff, scope, mask, span, axes, pos)
        msg = (f"gathered index {index} = {int(value)} is out of range for dimension {k} of "
               f"{name} (size {extent})")
        if entry not in (None, index):      # the entry of the label array to mend
            msg += f"; the label is {entry}"
        line = self.source.line_text(span.line) if (self.source and span) else None
        raise TLBoundsError(msg, span, "labels must lie in 0 .. size - 1", line)

    def as_written(self, name: str, k: int, aff: Affine, span) -> tuple[str, str]:
        """The tensor and its index `k` as the source writes them at `span`: the
        program may be a derivative or a simplified one, whose index names are the
        simplifier's (`src[g]` for the user's `src[e]`) and whose tensors may be a
        caller's (a call is inlined under the caller's names)."""
        written = self.source.indices_as_written(span) if self.source else None
        if written is not None and len(written[1]) == np.ndim(self.env[name]):
            return written[0], written[1][k]
        only = aff.terms[0][0] if len(aff.terms) == 1 else None
        if only.__class__ is Gather and aff.terms[0][1] == 1 and aff.const == 0 and self.source:
            text = self.source.text_of(only.span)
            if text:
                return name, " ".join(text.split())
        return name, fmt_affine(aff)

    def entry_read(self, aff: Affine, scope, mask, span, axes, pos) -> str | None:
        """The entry of the label tensor that index `aff` reads at position `pos` of
        `axes` (`y[3]` for `y[t]` at t = 3), named as written; None unless `aff` is
        one label read."""
        if not (len(aff.terms) == 1 and aff.const == 0 and aff.terms[0][1] == 1
                and aff.terms[0][0].__class__ is Gather):
            return None
        g = aff.terms[0][0]
        at = []
        shape = scope.shape(axes)
        for a in g.idx:
            la = self.affine(a, scope, mask, span)
            at.append(int(np.broadcast_to(scope.align(la, axes), shape)[pos]))
        written = self.source.indices_as_written(g.span) if self.source else None
        return f"{written[0] if written else g.name}[{', '.join(map(str, at))}]"

    # ------------------------------------------------------------ predicates
    def conjunction(self, atoms, scope: Scope, mask: LA | None) -> LA | None:
        """The conjunction of `atoms` (None for none), evaluated as the compiled
        kernels evaluate it: in `filter_rank` order, the labels each atom reads
        checked only where the earlier ones hold (`[z[s] >= 0 and k == y[z[s]]]`
        never checks y at a negative z[s])."""
        from .kernels import filter_rank
        own = None
        for atom in sorted(atoms, key=filter_rank):
            guard = own if mask is None else (mask if own is None else _and(scope, mask, own))
            m = self.atom(atom, scope, guard)
            own = m if own is None else _and(scope, own, m)
        return own

    def atom(self, atom, scope: Scope, mask: LA | None) -> LA:
        if isinstance(atom, IdxCmp):
            la = self.affine(atom.aff, scope, mask, atom.span)
            if atom.op == ">=":
                return LA(la.arr >= 0, la.axes)
            if atom.op == "==":
                return LA(la.arr == 0, la.axes)
            if atom.op == "%":
                return LA(la.arr % atom.mod == 0, la.axes)
            return LA(la.arr != 0, la.axes)
        if isinstance(atom, Rel):
            la = self.access(atom.name, atom.idx, scope, mask, atom.span, fill=False)
            return LA(la.arr.astype(bool), la.axes)
        if isinstance(atom, ValCmp):
            left = self.body_la(atom.left, scope, mask)
            right = self.body_la(atom.right, scope, mask)
            axes = scope.union(left.axes, right.axes)
            a, b = scope.align(left, axes), scope.align(right, axes)
            res = {"<": np.less, "<=": np.less_equal, ">": np.greater, ">=": np.greater_equal,
                   "==": np.equal, "!=": np.not_equal}[atom.op](a, b)
            return LA(np.broadcast_to(res, scope.shape(axes)), axes)
        if isinstance(atom, NotAtom):
            la = self.atom(atom.atom, scope, mask)
            return LA(~la.arr, la.axes)
        if isinstance(atom, AnyOf):
            # in the kernels' order, each alternative read only where none before held
            from .kernels import alternative_rank
            result = None
            for alt in sorted(atom.alts, key=alternative_rank):
                unsettled = None if result is None else LA(~result.arr, result.axes)
                if mask is not None:
                    unsettled = mask if unsettled is None else _and(scope, mask, unsettled)
                conj = self.conjunction(alt, scope, unsettled)
                if conj is None:
                    conj = LA(np.asarray(True), ())
                result = conj if result is None else _or(scope, result, conj)
            return result
        raise TypeError(atom)


def _and(scope: Scope, a: LA, b: LA) -> LA:
    axes = scope.union(a.axes, b.axes)
    return LA(np.broadcast_to(scope.align(a, axes) & scope.align(b, axes), scope.shape(axes)), axes)


def _or(scope: Scope, a: LA, b: LA) -> LA:
    axes = scope.union(a.axes, b.axes)
    return LA(np.broadcast_to(scope.align(a, axes) | scope.align(b, axes), scope.shape(axes)), axes)


def evaluate(prog: Program, inputs: dict, sizes: dict[str, int], source=None):
    """Run a program on checked inputs; returns the list of output arrays."""
    return Interpreter(prog, source).run(inputs, sizes)

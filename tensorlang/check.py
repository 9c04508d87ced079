"""The bounds stage: every affine access is inside its tensor, given its brackets.

Input: a lowered :class:`Program` (accesses carry their source spans), as
written: the front end keeps the terms whose coefficient is zero in the copy it
gives this stage (ssa/build.ZeroTerms), since a zero guards no read.
Output: nothing, or diagnostics in an :class:`ErrorSink`.

The facts available at an access are the ranges of the indices in scope, the
size symbols' lower bound and the affine brackets of every enclosing term (a
bracket is a strong zero, so the access is only evaluated where they hold);
the proofs are those of bounds.py.  A failed proof is reported with the
possible range and the bracket that would guard the access.  Index
expressions are also proven to stay within int64 (bounds.INDEX_LIMIT).

Gathers through i64 tensors cannot be proven statically; they are checked
at call time by the backends.
"""
from __future__ import annotations

from .bounds import INDEX_LIMIT, MAX_SIZE, Facts, magnitude, size_facts, value_range
from .errors import ErrorSink, TLBoundsError
from .ssa.ir import (Access, Affine, AnyOf, Apply, Gather, Group, IdxCmp, IndexVar, NotAtom,
                     Program, Reduce, Rel, Term, ValCmp)
from .ssa.printer import fmt_affine, fmt_idxcmp


class BoundsChecker:
    def __init__(self, prog: Program, sink: ErrorSink):
        self.prog = prog
        self.sink = sink
        self.shapes = prog.shapes()
        self.base = size_facts(prog)
        self.proven: list[str] = []          # one line per access, for `explain`
        self._overflow_seen: set = set()

    def run(self) -> None:
        for st in self.prog.stmts:
            facts = self.base.with_ranges(st.indices)
            self.body(st.body, facts, dict(st.indices))

    def body(self, body, facts: Facts, ranges: dict):
        for t in body:
            self.term(t, facts, ranges)

    def term(self, t: Term, facts: Facts, ranges: dict):
        ranges = {**ranges, **dict(t.sums)}
        facts = facts.with_ranges(t.sums).with_pred(t.pred)
        for atom in t.pred:
            self.atom(atom, facts, ranges)
        for f, _ in t.factors:
            if isinstance(f, Access):
                self.access(f.name, f.idx, f.span, facts, ranges)
            elif isinstance(f, Apply):
                for b in f.args:
                    self.body(b, facts, ranges)
            elif isinstance(f, Group):
                self.body(f.body, facts, ranges)
            elif isinstance(f, Reduce):
                # The body is read only at the points of the domain: the reduced
                # indices in their ranges where the filter holds (and, a bracket
                # being a strong zero, where the enclosing brackets hold).
                self.term(f.domain(), facts, ranges)
                dom = f.domain()
                inner = facts.with_ranges(dom.sums).with_pred(dom.pred)
                self.body(f.body, inner, {**ranges, **dict(dom.sums)})

    def atom(self, atom, facts, ranges):
        if isinstance(atom, IdxCmp):
            self.overflow(atom.aff, atom.span, ranges, f"the comparison [{fmt_idxcmp(atom)}] computes")
            if atom.op == "%" and atom.mod > INDEX_LIMIT:
                self.sink.add(TLBoundsError, atom.span,
                              f"the modulus {atom.mod} is beyond the 64-bit integer range of "
                              f"index arithmetic (at most 2^{INDEX_LIMIT.bit_length() - 1})",
                              "use a smaller modulus")
            self.gathers(atom.aff, atom.span, facts, ranges)
        elif isinstance(atom, Rel):
            self.access(atom.name, atom.idx, atom.span, facts, ranges)
        elif isinstance(atom, ValCmp):
            self.body(atom.left, facts, ranges)
            self.body(atom.right, facts, ranges)
        elif isinstance(atom, NotAtom):
            self.atom(atom.atom, facts, ranges)
        elif isinstance(atom, AnyOf):
            for alt in atom.alts:
                # An alternative is only looked at when the index-only alternatives
                # are false (the backends test those first), so their negations hold.
                others = [negated_index_guard(o) for o in atom.alts if o is not alt]
                inner = facts.with_pred(alt).with_pred([g for g in others if g is not None])
                for a in alt:
                    self.atom(a, inner, ranges)

    def overflow(self, aff: Affine, span, ranges, what: str) -> bool:
        """Report an index expression whose int64 evaluation could overflow; True if fine."""
        bound = magnitude(aff, ranges)
        if bound <= INDEX_LIMIT:
            return True
        key = (span, aff)
        if key in self._overflow_seen:
            return False
        self._overflow_seen.add(key)
        self.sink.add(
            TLBoundsError, span,
            f"{what} {fmt_affine(aff)}, whose magnitude can reach about 2^{bound.bit_length()}: "
            f"index arithmetic must stay within 2^{INDEX_LIMIT.bit_length() - 1} (it is done in "
            f"64-bit integers, and a size may be up to 2^{MAX_SIZE.bit_length() - 1})",
            "use smaller coefficients and constants in index expressions")
        return False

    def gathers(self, aff: Affine, span, facts, ranges):
        for atom, _ in aff.terms:
            if isinstance(atom, Gather):
                self.access(atom.name, atom.idx, span, facts, ranges)

    def access(self, name, idx, span, facts: Facts, ranges):
        dims = self.shapes[name][1]
        proved = []
        for k, (aff, dim) in enumerate(zip(idx, dims)):
            self.gathers(aff, span, facts, ranges)
            if not self.overflow(aff, span, ranges, f"index {k} of {name} is"):
                continue
            if any(isinstance(a, Gather) for a in aff.atoms()):
                proved.append(f"dim {k} gathered, checked at call time")
                continue
            upper = Affine.dim(dim).shift(-1) - aff          # aff <= dim - 1
            low_ok = facts.proves(aff)
            high_ok = facts.proves(upper)
            if low_ok and high_ok:
                if not (aff.terms == ((IndexVar(ranges_key(aff)), 1),) and aff.const == 0
                        and ranges.get(ranges_key(aff)) == dim):
                    proved.append(f"0 <= {fmt_affine(aff)} < {dim}")
                continue
            self.report(name, k, aff, dim, span, ranges, low_ok, high_ok, facts)
        if proved:
            shown = f"{name}[{', '.join(fmt_affine(a) for a in idx)}]"
            self.proven.append(f"{shown}: " + "; ".join(proved))

    def _as_written(self, name: str, span) -> str:
        """The tensor's name as the access under `span` writes it: a read of a
        call's result through the name it was given (`k = rates(th)`, then
        `k[4]`) reads the callee's inlined statement, whose name the user never
        wrote."""
        source = getattr(self.sink, "source", None)
        written = source.indices_as_written(span) if source is not None else None
        return written[0] if written is not None else name

    def report(self, name, k, aff, dim, span, ranges, low_ok, high_ok, facts=None):
        name = self._as_written(name, span)
        text = fmt_affine(aff)
        guards = []
        if not low_ok:
            guards.append(IdxCmp(">=", aff))
        if not high_ok:
            guards.append(IdxCmp(">=", Affine.dim(dim).shift(-1) - aff))
        guard_hint = f"guard it with [{' and '.join(fmt_idxcmp(g) for g in guards)}]"
        if not aff.index_vars():
            # No index to guard: the position is fixed.  Where it moves with the sizes
            # (`s[T - 2]`), a bracket on the sizes guards it (`[T >= 2]`); a constant
            # beyond a literal dimension cannot be guarded.
            last = fmt_affine(Affine.dim(dim).shift(-1))
            self.sink.add(
                TLBoundsError, span,
                f"index {k} of {name} is {text}, which can lie outside 0 .. {last} "
                f"(dimension {k} of {name} has size {dim})",
                guard_hint if all(g.aff.terms for g in guards)
                else f"the last position of dimension {k} is {last}")
            return
        rng = value_range(aff, ranges, facts)
        where = ""
        if rng is not None:
            # derived sizes written in the user's sizes: `1 .. n`, not `1 .. (n - p + 1) + p - 1`
            lo, hi = (fmt_affine(b.in_plain_sizes()) for b in rng)
            where = f": {text} ranges over {lo} .. {hi}"
        self.sink.add(
            TLBoundsError, span,
            f"index {k} of {name} may be out of range{where}, but {name} has size {dim} "
            f"in dimension {k}",
            guard_hint)


def negated_index_guard(alt):
    """The negation of a one-atom alternative `aff >= 0` as a fact (`-aff - 1 >= 0`)."""
    if len(alt) == 1 and isinstance(alt[0], IdxCmp) and alt[0].op == ">=":
        return IdxCmp(">=", alt[0].aff.scale(-1).shift(-1))
    return None


def ranges_key(aff: Affine) -> str | None:
    """The index name of a plain `i` access position, else None."""
    if len(aff.terms) == 1 and isinstance(aff.terms[0][0], IndexVar):
        return aff.terms[0][0].name
    return None

"""``verify``: the structural invariants every stage must keep, checked strictly.

A program passes when
* every name is assigned once, parameters included, and outputs exist;
* every tensor read is a parameter or an earlier statement (or a member of
  the reader's own recurrence group, kept contiguous and in step order,
  ssa/recur.py), of the right element type (f64 for values, i64 for gathers,
  bool for relations) and rank;
* every index variable is bound (by its statement or an enclosing sum) and no
  sum binds a name already bound around it (no shadowing, so substitution
  cannot capture);
* every dimension is a known size symbol or a positive integer;
* every node is a Tensor SSA node of a known kind, operators are the ones the
  IR defines, builtins exist with their arity, and numbers are finite.

Bounds are proven on the user's program by the checker and kept by
construction, so they are not re-proven here.  The driver runs ``verify``
after every stage when ``TENSORLANG_VERIFY=1`` (the test suite does).
"""
from __future__ import annotations

import math

from .. import sizexpr
from ..builtins import ARITY
from .recur import is_ordered
from .ir import (REDUCTIONS, Access, Affine, AnyOf, Apply, Gather, Group, IdxCmp, IndexVar,
                 NotAtom, Program, Reduce, Rel, SizeValue, SizeVar, Term, ValCmp)

INDEX_OPS = (">=", "==", "!=", "%")
VALUE_OPS = ("<", "<=", ">", ">=", "==", "!=")
ELEMENT_TYPES = ("f64", "i64", "bool")


class VerifyError(Exception):
    pass


class _Verifier:
    def __init__(self, prog: Program):
        self.prog = prog
        # the parameters' sizes; a derived size (n - k + 1) is known when its own are
        self.sizes = {d for p in prog.params for d in p.dims if isinstance(d, str)}
        self.shapes: dict[str, tuple[str, tuple]] = {}
        self.where = prog.name

    def fail(self, message: str):
        raise VerifyError(f"{self.prog.name}: {self.where}: {message}")

    def known_size(self, name: str) -> bool:
        return all(b in self.sizes for b in sizexpr.base_symbols(name))

    def run(self):
        for p in self.prog.params:
            if p.name in self.shapes:
                self.fail(f"parameter {p.name} declared twice")
            if p.elem not in ELEMENT_TYPES:
                self.fail(f"parameter {p.name} has unknown element type {p.elem!r}")
            for d in p.dims:
                self.dim(d)
            self.shapes[p.name] = (p.elem, p.dims)
        # Every statement is known before the bodies are walked: a recurrence
        # reads itself or later members of its group; the order is checked below.
        declared = set(self.shapes)
        for s in self.prog.stmts:
            self.where = s.name
            if s.name in declared:
                self.fail(f"{s.name} assigned twice")
            declared.add(s.name)
            self.shapes[s.name] = ("f64", s.dims)
        for s in self.prog.stmts:
            self.where = s.name
            bound = [n for n, _ in s.indices]
            if len(set(bound)) != len(bound):
                self.fail("repeated statement index")
            for _, d in s.indices:
                self.dim(d)
            self.body(s.body, frozenset(bound))
        self.where = "statement order"
        try:
            wrong = is_ordered(self.prog)
        except ValueError as exc:
            wrong = f"ill-founded recurrence: {exc}"
        if wrong is not None:
            self.fail(wrong)
        self.where = "return"
        if not self.prog.outputs:
            self.fail("no outputs")
        for o in self.prog.outputs:
            if o not in self.shapes:
                self.fail(f"output {o} is not defined")
        if not self.prog.tuple_return and len(self.prog.outputs) != 1:
            self.fail("several outputs but not a tuple return")

    def dim(self, d):
        if isinstance(d, bool) or not isinstance(d, (int, str)):
            self.fail(f"dimension {d!r} is neither a size symbol nor an integer")
        if isinstance(d, str) and not self.known_size(d):
            self.fail(f"unknown size {d}")
        if isinstance(d, int) and d < 1:
            self.fail(f"dimension {d} < 1")

    def number(self, x, what: str):
        if not isinstance(x, float) or not math.isfinite(x):
            self.fail(f"{what} {x!r} is not a finite float")

    def tensor(self, name: str, elem: str, rank: int, what: str):
        got = self.shapes.get(name)
        if got is None:
            self.fail(f"{what} {name} reads a name not defined before it")
        if got[0] != elem or len(got[1]) != rank:
            self.fail(f"{what} {name}: expected {elem} of rank {rank}, found {got[0]} of "
                      f"rank {len(got[1])}")

    def read(self, name: str, elem: str, idx, what: str, scope):
        """A read of `name` (a tensor of `elem`) at the index forms `idx`."""
        self.tensor(name, elem, len(idx), what)
        for x in idx:
            self.affine(x, scope)

    # ------------------------------------------------------------ walk
    def body(self, body, scope: frozenset):
        if not isinstance(body, tuple):
            self.fail(f"a body must be a tuple of terms, found {type(body).__name__}")
        for t in body:
            if t.__class__ is not Term:
                self.fail(f"unknown node {type(t).__name__} where a term belongs")
            self.term(t, scope)

    def term(self, t: Term, scope: frozenset):
        self.number(t.coeff, "coefficient")
        names = [n for n, _ in t.sums]
        for n, d in t.sums:
            if n in scope:
                self.fail(f"sum index {n} shadows an index bound around it")
            self.dim(d)
        if len(set(names)) != len(names):
            self.fail("a sum binds the same index twice")
        inner = scope.union(names)
        for a in t.pred:
            self.atom(a, inner)
        for f, p in t.factors:
            self.number(p, "power")
            self.factor(f, inner)

    def atom(self, a, scope):
        cls = a.__class__
        if cls is IdxCmp:
            if a.op not in INDEX_OPS:
                self.fail(f"unknown index comparison {a.op!r}")
            if a.op == "%" and a.mod < 2:
                self.fail(f"divisibility guard modulo {a.mod}")
            self.affine(a.aff, scope)
        elif cls is Rel:
            self.read(a.name, "bool", a.idx, "relation", scope)
        elif cls is ValCmp:
            if a.op not in VALUE_OPS:
                self.fail(f"unknown value comparison {a.op!r}")
            self.body(a.left, scope)
            self.body(a.right, scope)
        elif cls is NotAtom:
            self.atom(a.atom, scope)
        elif cls is AnyOf:
            for alt in a.alts:
                for x in alt:
                    self.atom(x, scope)
        else:
            self.fail(f"unknown predicate node {type(a).__name__}")

    def factor(self, f, scope):
        cls = f.__class__
        if cls is Access:
            self.read(f.name, "f64", f.idx, "access", scope)
        elif cls is Apply:
            if f.fn not in ARITY:
                self.fail(f"unknown builtin {f.fn}")
            if len(f.args) != ARITY[f.fn]:
                self.fail(f"{f.fn} takes {ARITY[f.fn]} argument(s), given {len(f.args)}")
            for b in f.args:
                self.body(b, scope)
        elif cls is Group:
            self.body(f.body, scope)
        elif cls is SizeValue:
            if not self.known_size(f.name):
                self.fail(f"unknown size {f.name}")
        elif cls is Reduce:
            if f.op not in REDUCTIONS:
                self.fail(f"unknown reduction {f.op!r}")
            names = [n for n, _ in f.over]
            if not names:
                self.fail(f"a {f.op} reduction over no index")
            for n, d in f.over:
                if n in scope:
                    self.fail(f"reduced index {n} shadows an index bound around it")
                self.dim(d)
            if len(set(names)) != len(names):
                self.fail(f"a {f.op} reduction binds the same index twice")
            inner = scope.union(names)
            for a in f.where:
                self.atom(a, inner)
            self.body(f.body, inner)
        else:
            self.fail(f"unknown factor node {type(f).__name__}")

    def affine(self, a, scope):
        if a.__class__ is not Affine:
            self.fail(f"unknown index node {type(a).__name__}")
        if isinstance(a.const, bool) or not isinstance(a.const, int):
            self.fail(f"index constant {a.const!r} is not an integer")
        for atom, c in a.terms:
            if isinstance(c, bool) or not isinstance(c, int) or c == 0:
                self.fail(f"index coefficient {c!r} is not a non-zero integer")
            cls = atom.__class__
            if cls is IndexVar:
                if atom.name not in scope:
                    self.fail(f"unbound index {atom.name}")
            elif cls is SizeVar:
                if not self.known_size(atom.name):
                    self.fail(f"unknown size {atom.name}")
                e = sizexpr.parse(atom.name)
                if e is not None and e.den == 1:
                    self.fail(f"the derived size {atom.name} stands in index arithmetic "
                              f"instead of the sizes it is written in")
            elif cls is Gather:
                self.read(atom.name, "i64", atom.idx, "gather", scope)
            else:
                self.fail(f"unknown index atom {type(atom).__name__}")


def verify(prog: Program) -> None:
    """Raise VerifyError naming the program, statement and broken invariant."""
    if prog.__class__ is not Program:
        raise VerifyError(f"not a program: {type(prog).__name__}")
    _Verifier(prog).run()

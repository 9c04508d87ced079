"""Tensor SSA: node kinds, canonical construction, and ``verify``.

Grammar of the IR (every node is a frozen, slotted dataclass; spans are kept
for diagnostics but never compared)::

    Program   := name, params: (Param...), stmts: (Stmt...), outputs: (name...)
    Stmt      := name[(index: Dim)...] = Body
    Body      := (Term...)                       -- a sum; () is zero
    Term      := coeff * sum[(index: Dim)...]( Pred * Factor^power * ... )
    Pred      := (Atom...)                       -- a conjunction; () is true
    Atom      := IdxCmp(op, Affine)              -- Affine op 0, op in {>=, ==, !=},
                                                 -- or Affine % q == 0 (op '%')
               | Rel(name, (Affine...))          -- a bool relation entry
               | ValCmp(op, Body, Body)          -- a value comparison
               | NotAtom(Atom) | AnyOf((Pred...))
    Factor    := Access(name, (Affine...))       -- () for a scalar
               | Apply(fn, (Body...))            -- a pointwise builtin
               | Group(Body)                     -- a parenthesised sum kept whole
               | SizeValue(name)                 -- a size symbol used as a number
               | Reduce(op, (index: Dim)..., Pred, Body)
                                                 -- max / min / logsumexp of the body over
                                                 -- the indices where Pred holds
    Affine    := const + sum coef * Atom, Atom in IndexVar | SizeVar | Gather
    Gather    := name[(Affine...)]               -- an entry of an i64 tensor

A ``Dim`` is a size symbol (``str``) or an integer literal (``int``).  Affine
forms have integer coefficients only and are kept canonical (sorted, merged,
no zero coefficients), so structural equality is semantic equality of forms.
"""
from __future__ import annotations

import operator
from dataclasses import dataclass, field, fields
from typing import Union

from ..errors import Span
from ..memo import Memo

Dim = Union[str, int]
_nospan = lambda: field(default=None, compare=False, repr=False, hash=False)  # noqa: E731


def _cache():
    """A private slot that memoises a value derived from the node (never compared)."""
    return field(default=None, init=False, compare=False, repr=False, hash=False)


def _representative(x):
    """The node that stands for every node found equal to x so far (x itself when none
    was): equal trees are rebuilt again and again (a rule's trial, a memo's key), and
    the second comparison of two of them is then one identity test instead of a walk
    of both.  The links form a union-find forest, compressed as it is walked; they
    hold only nodes equal to the one linking, so they change no answer."""
    r = x._e
    if r is None:
        return x
    while r._e is not None:
        r = r._e
    object.__setattr__(x, "_e", r)
    return r


def node(cls):
    """A frozen, slotted IR node whose hash and order key are computed once.

    IR trees are shared and compared constantly (canonical sorting, like-term
    merging, fixed-point tests), and a dataclass recomputes its hash over the
    whole subtree on every call.  Two slots, ``_h`` and ``_k``, memoise the
    hash and the structural order key; equality checks the cached hashes
    before comparing fields, and a third, ``_e``, links nodes found equal to one
    representative (``_representative``), so that two equal trees are walked once.
    """
    cls.__annotations__["_h"] = "int | None"
    cls.__annotations__["_k"] = "tuple | None"
    cls.__annotations__["_e"] = "object | None"
    cls._h = _cache()
    cls._k = _cache()
    cls._e = _cache()
    cls = dataclass(frozen=True, slots=True)(cls)
    names = tuple(f.name for f in fields(cls) if f.compare)
    # the compared fields as one tuple, read in C
    if len(names) > 1:
        compared = operator.attrgetter(*names)
    else:
        one = operator.attrgetter(names[0])

        def compared(node):
            return (one(node),)

    def __hash__(self):
        h = self._h
        if h is None:
            h = hash(compared(self))
            object.__setattr__(self, "_h", h)
        return h

    def __eq__(self, other):
        if self is other:
            return True
        if other.__class__ is not self.__class__:
            return NotImplemented
        if hash(self) != hash(other):
            return False
        a, b = _representative(self), _representative(other)
        if a is b:
            return True
        if compared(self) == compared(other):
            object.__setattr__(b, "_e", a)
            return True
        return False

    own = tuple(operator.attrgetter(f.name) for f in fields(cls)
                if f.name not in ("_h", "_k", "_e"))
    own_names = tuple(f.name for f in fields(cls) if f.name not in ("_h", "_k", "_e"))

    def __getstate__(self):
        # Hashes of strings differ between processes: never carry a cached one.
        return tuple(g(self) for g in own)

    def __setstate__(self, state):
        for n, v in zip(own_names, state):
            object.__setattr__(self, n, v)
        object.__setattr__(self, "_h", None)
        object.__setattr__(self, "_k", None)
        object.__setattr__(self, "_e", None)

    cls.__hash__ = __hash__
    cls.__eq__ = __eq__
    cls.__getstate__ = __getstate__
    cls.__setstate__ = __setstate__
    return cls


# ------------------------------------------------------------------ affine
@node
class IndexVar:
    name: str

    def sort_key(self):
        return (0, self.name, ())


@node
class SizeVar:
    name: str

    def sort_key(self):
        return (1, self.name, ())


@node
class Gather:
    """``y[s]`` for an i64 tensor ``y``: an integer read at run time.  Its span is
    the read as written, which a call-time label error quotes."""
    name: str
    idx: tuple["Affine", ...]
    span: Span | None = _nospan()

    def sort_key(self):
        return (2, self.name, tuple(a.sort_key() for a in self.idx))


AffAtom = Union[IndexVar, SizeVar, Gather]


@node
class Affine:
    const: int
    terms: tuple[tuple[AffAtom, int], ...] = ()

    @staticmethod
    def make(const: int, pairs) -> "Affine":
        acc: dict = {}
        for atom, coef in pairs:
            acc[atom] = acc.get(atom, 0) + coef
        terms = tuple(sorted(((a, c) for a, c in acc.items() if c != 0),
                             key=lambda p: p[0].sort_key()))
        return Affine(int(const), terms)

    @staticmethod
    def of(x) -> "Affine":
        if isinstance(x, Affine):
            return x
        if isinstance(x, int):
            return Affine(x)
        if isinstance(x, str):
            return Affine(0, ((SizeVar(x), 1),))
        return Affine(0, ((x, 1),))

    @staticmethod
    def dim(d: Dim) -> "Affine":
        return Affine(d) if isinstance(d, int) else Affine(0, ((SizeVar(d), 1),))

    def __add__(self, other: "Affine") -> "Affine":
        return Affine.make(self.const + other.const, self.terms + other.terms)

    def __sub__(self, other: "Affine") -> "Affine":
        return self + other.scale(-1)

    def scale(self, k: int) -> "Affine":
        if k == 0:
            return Affine(0)
        return Affine(self.const * k, tuple((a, c * k) for a, c in self.terms))

    def shift(self, k: int) -> "Affine":
        return Affine(self.const + k, self.terms)

    @property
    def is_const(self) -> bool:
        return not self.terms

    def sort_key(self):
        return (self.const, tuple((a.sort_key(), c) for a, c in self.terms))

    def atoms(self):
        return [a for a, _ in self.terms]

    def in_plain_sizes(self) -> "Affine":
        """This form with each derived size that has no division (``n - k + 1``,
        sizexpr) replaced by the sizes it is written in: the canonical form of index
        arithmetic, because source text can only spell it that way (``i < n - k + 1``
        parses to plain n and k), so printing and parsing again give the same form.
        A size with a division (``n / 2``) is not affine in its sizes and stays whole."""
        if not any(a.__class__ is SizeVar and " " in a.name for a, _ in self.terms):
            return self
        from .. import sizexpr
        const, pairs = self.const, []
        for a, c in self.terms:
            e = sizexpr.parse(a.name) if a.__class__ is SizeVar else None
            if e is None or e.den != 1:
                pairs.append((a, c))
                continue
            const += c * e.const
            pairs.extend((SizeVar(s), c * k) for s, k in e.terms)
        return Affine.make(const, pairs)

    def index_vars(self) -> set[str]:
        out = set()
        for a, _ in self.terms:
            if isinstance(a, IndexVar):
                out.add(a.name)
            elif isinstance(a, Gather):
                for sub in a.idx:
                    out |= sub.index_vars()
        return out


# ------------------------------------------------------------------ predicates
@node
class IdxCmp:
    """``aff op 0`` over integers; op is '>=', '==' or '!='.

    op '%' is the divisibility guard ``aff % mod == 0``: the integer constraint a
    strided index leaves behind when it is solved backwards (k == 2 i).
    """
    op: str
    aff: Affine
    span: Span | None = _nospan()
    mod: int = 0


@node
class Rel:
    name: str
    idx: tuple[Affine, ...]
    span: Span | None = _nospan()


@node
class ValCmp:
    op: str                      # < <= > >= == !=
    left: "Body"
    right: "Body"


@node
class NotAtom:
    atom: "Atom"


@node
class AnyOf:
    """A disjunction of conjunctions."""
    alts: tuple[tuple["Atom", ...], ...]


Atom = Union[IdxCmp, Rel, ValCmp, NotAtom, AnyOf]


# ------------------------------------------------------------------ factors
@node
class Access:
    name: str
    idx: tuple[Affine, ...]
    span: Span | None = _nospan()


@node
class Apply:
    fn: str
    args: tuple["Body", ...]


@node
class Group:
    body: "Body"


@node
class SizeValue:
    name: str


REDUCTIONS = ("max", "min", "logsumexp")


@node
class Reduce:
    """``op[j: n, ... | where](body)``: the max, min or logsumexp of ``body`` over
    the indices ``over``, taken at the points where the conjunction ``where`` holds
    (every point when it is ()).  Over no point it is -inf (max, logsumexp) or
    +inf (min).

    The indices are bound here and are not summed: a reduction is its own node
    kind, never a Term with sums, so no rule about sums (bracket elimination,
    collapsing free sums, distributing, contraction ordering, merging sums) can
    reach its indices.  Rules see it as an opaque factor; its body is an
    ordinary body in which the indices are free."""
    op: str
    over: tuple[tuple[str, Dim], ...]
    where: tuple["Atom", ...]
    body: "Body"

    def domain(self) -> "Term":
        """The points reduced over as a term without factors (its sums are the
        indices, its brackets the filter): the context nested bodies see, and what
        the loop planner and the cost model plan the reduction's loops from."""
        return Term(1.0, self.over, self.where, ())


Factor = Union[Access, Apply, Group, SizeValue, Reduce]


@node
class Term:
    coeff: float = 1.0
    sums: tuple[tuple[str, Dim], ...] = ()
    pred: tuple[Atom, ...] = ()
    factors: tuple[tuple[Factor, float], ...] = ()

    @property
    def is_const(self) -> bool:
        return not self.sums and not self.pred and not self.factors


Body = tuple  # tuple[Term, ...]


# ------------------------------------------------------------------ program
@node
class Param:
    name: str
    elem: str                    # f64 / bool / i64
    dims: tuple[Dim, ...]


@node
class Stmt:
    name: str
    indices: tuple[tuple[str, Dim], ...]
    body: Body
    span: Span | None = _nospan()
    # ((label form, dim), ...): labels that statements run whole before this one have
    # read into a dimension, so they lie in it here (bounds.Facts.with_checked_labels,
    # set by domain.drop_enforced_label_guards on a finished derivative only).  The
    # planner then needs no range test where it solves a generator as such a label.
    checked_labels: tuple = ()

    @property
    def dims(self) -> tuple[Dim, ...]:
        return tuple(d for _, d in self.indices)


@node
class Program:
    name: str
    params: tuple[Param, ...]
    stmts: tuple[Stmt, ...]
    outputs: tuple[str, ...]
    tuple_return: bool = False
    _sz: tuple | None = _cache()          # memoised sizes()

    def shapes(self) -> dict[str, tuple[str, tuple[Dim, ...]]]:
        """name -> (elem, dims) for every parameter and statement."""
        out = {p.name: (p.elem, p.dims) for p in self.params}
        for s in self.stmts:
            out[s.name] = ("f64", s.dims)
        return out

    def returns_scalar(self) -> bool:
        """One output, of rank 0: what grad needs, and what makes a vjp's cotangent a
        scalar."""
        return len(self.outputs) == 1 and not self.shapes()[self.outputs[0]][1]

    def sizes(self) -> list[str]:
        """The size symbols: the parameters' in order, then the derived sizes
        (``n - k + 1``, LANGUAGE.md section 13) used anywhere, each once."""
        cached = self._sz
        if cached is not None:
            return list(cached)
        seen: list[str] = []
        for p in self.params:
            for d in p.dims:
                if isinstance(d, str) and d not in seen:
                    seen.append(d)
        for name in _derived_sizes(self):
            if name not in seen:
                seen.append(name)
        object.__setattr__(self, "_sz", tuple(seen))
        return seen

    def stmt(self, name: str) -> Stmt:
        for s in self.stmts:
            if s.name == name:
                return s
        raise KeyError(name)


# ------------------------------------------------------------------ helpers
def written_at(prog: Program) -> tuple:
    """Where prog's statements were written, for memos keyed by programs.  Programs
    compare equal whatever their spans, so a memo keyed by the program alone gives
    the function of one file the spans of an equal function of another, and a label
    error found while running it is then located in the other file.  The spans of the
    reads inside a statement follow from the statement's own (same file and place,
    same text)."""
    return tuple(s.span for s in prog.stmts)


def splice(prog: Program, start: int, stop: int, new: tuple, outputs: tuple | None = None,
           tuple_return: bool | None = None) -> Program:
    """prog with its statements [start:stop] replaced by `new` (and other outputs if
    given).  A rule's trial program is built this way, and each is asked for its
    sizes: when neither the statements taken out nor those put in use a derived size,
    the sizes are prog's (the parameters' and the other statements' in their order),
    so they are carried over instead of found again over every statement."""
    out = Program(prog.name, prog.params, prog.stmts[:start] + tuple(new) + prog.stmts[stop:],
                  prog.outputs if outputs is None else outputs,
                  prog.tuple_return if tuple_return is None else tuple_return)
    sizes = prog._sz
    if sizes is not None and not any(_statement_sizes(st) for st in prog.stmts[start:stop]) \
            and not any(_statement_sizes(st) for st in new):
        object.__setattr__(out, "_sz", sizes)
    return out


def _statement_sizes(st: Stmt) -> tuple[str, ...]:
    return _STATEMENT_SIZES.compute(st, lambda: _statement_derived_sizes(st))


def _derived_sizes(prog: Program) -> list[str]:
    """Derived sizes (names with a definition, see sizexpr) anywhere in prog, in order."""
    from .. import sizexpr
    out: list[str] = []
    for p in prog.params:
        for d in p.dims:
            if isinstance(d, str) and d not in out and sizexpr.is_derived(d):
                out.append(d)
    for st in prog.stmts:
        for d in _statement_sizes(st):
            if d not in out:
                out.append(d)
    return out


# Derived sizes per statement: a rewrite builds a new program around mostly the
# same statements, and each new program is asked for its sizes.
_STATEMENT_SIZES = Memo(50_000)


def _statement_derived_sizes(st: Stmt) -> tuple[str, ...]:
    """The derived sizes of st in order of first use: its indices', then its terms'
    (a body's walk visits its terms one after the other)."""
    from .. import sizexpr
    out: list[str] = []
    for d in [d for _, d in st.indices] + [d for t in st.body for d in _term_sizes(t)]:
        if isinstance(d, str) and d not in out and sizexpr.is_derived(d):
            out.append(d)
    return tuple(out)


def _term_sizes(t: Term) -> tuple:
    """The dims and size symbols term t uses, in walk order (remembered: a rewrite
    carries most terms of a statement into the new one)."""
    def compute():
        from .traverse import iter_nodes
        out = []
        for n in iter_nodes(t):
            cls = n.__class__
            if cls is Term:
                out.extend(d for _, d in n.sums)
            elif cls is Reduce:
                # a reduction binds its indices as a term's sums do (max[k: K + 1](...))
                out.extend(d for _, d in n.over)
            elif cls is SizeVar or cls is SizeValue:
                out.append(n.name)
        return tuple(dict.fromkeys(out))
    return _TERM_SIZES.compute(t, compute)


_TERM_SIZES = Memo(100_000)


def body_const_value(body: Body) -> float | None:
    """The number a body denotes when it is a constant, else None."""
    if not body:
        return 0.0
    if len(body) == 1 and body[0].is_const:
        return body[0].coeff
    return None


# ------------------------------------------------------------ canonical order
def dim_key(d: Dim) -> tuple:
    """Integers before size symbols; never compares an int with a str."""
    return (0, d, "") if isinstance(d, int) else (1, 0, d)


def body_key(body: Body) -> tuple:
    return tuple(order_key(t) for t in body)


def _sums_key(sums) -> tuple:
    return tuple((n, dim_key(d)) for n, d in sums)


def _idx_key(idx) -> tuple:
    return tuple(order_key(a) for a in idx)


# Each key starts with a tag unique to its node kind, so keys of different kinds
# compare by tag and keys of one kind always have the same shape.
_ORDER = {
    IndexVar: lambda x: (0, x.name),
    SizeVar: lambda x: (1, x.name),
    Gather: lambda x: (2, x.name, _idx_key(x.idx)),
    Affine: lambda x: (3, x.const, tuple((order_key(a), c) for a, c in x.terms)),
    IdxCmp: lambda x: (10, x.op, order_key(x.aff), x.mod),
    Rel: lambda x: (11, x.name, _idx_key(x.idx)),
    ValCmp: lambda x: (12, x.op, body_key(x.left), body_key(x.right)),
    NotAtom: lambda x: (13, order_key(x.atom)),
    AnyOf: lambda x: (14, tuple(tuple(order_key(a) for a in alt) for alt in x.alts)),
    Access: lambda x: (20, x.name, _idx_key(x.idx)),
    Apply: lambda x: (21, x.fn, tuple(body_key(b) for b in x.args)),
    Group: lambda x: (22, body_key(x.body)),
    SizeValue: lambda x: (23, x.name),
    Reduce: lambda x: (24, x.op, _sums_key(x.over), tuple(order_key(a) for a in x.where),
                       body_key(x.body)),
    Term: lambda x: (30, _sums_key(x.sums), tuple(order_key(a) for a in x.pred),
                     tuple((order_key(f), p) for f, p in x.factors), x.coeff),
}


def order_key(x) -> tuple:
    """The structural key that fixes the canonical order of IR nodes.

    It depends only on the tree (node kinds, names, numbers), never on how a
    node is printed, and is computed once per node.
    """
    k = x._k
    if k is None:
        try:
            build = _ORDER[x.__class__]
        except KeyError:
            raise TypeError(f"no canonical order for {type(x).__name__}") from None
        k = build(x)
        object.__setattr__(x, "_k", k)
    return k


def term_shape_key(t: Term) -> tuple:
    """A term's key without its coefficient: equal for like terms."""
    return order_key(t)[:-1]

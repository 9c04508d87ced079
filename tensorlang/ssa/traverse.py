"""The one walk over Tensor SSA bodies: a map and a fold that every pass uses.

A body is a tuple of terms; a term holds predicate atoms and factors; atoms and
factors hold affine index forms and, for value comparisons, builtin calls and
groups, further bodies.  Which node holds which children is written down once,
here.  Every other module maps or folds through these functions, so a new node
kind needs one edit in this file, and an unknown node is an error rather than
something a pass silently copies.

Maps preserve identity: when no child changes, the very same node is returned,
so callers can test ``new is old`` cheaply and unchanged subtrees keep their
memoised hashes and keys.
"""
from __future__ import annotations

from typing import Callable, Iterator

from .ir import (Access, Affine, AnyOf, Apply, Gather, Group, IdxCmp, IndexVar, NotAtom, Reduce,
                 Rel, SizeValue, SizeVar, Term, ValCmp)
from ..memo import Memo

BodyFn = Callable[[tuple], tuple]
AffineFn = Callable[[Affine], Affine]


class UnknownNode(TypeError):
    """A value that is not a Tensor SSA node where the walk expects one."""

    def __init__(self, what: str, node):
        super().__init__(f"unknown {what} node: {type(node).__name__} ({node!r:.80})")


def _same(new, old) -> bool:
    return len(new) == len(old) and all(a is b for a, b in zip(new, old))


# ------------------------------------------------------------ one level of children
def map_affines(idx: tuple, affine_fn: AffineFn) -> tuple:
    new = tuple(affine_fn(a) for a in idx)
    return idx if _same(new, idx) else new


def map_atom(a, body_fn: BodyFn, affine_fn: AffineFn):
    """The atom with its direct bodies and affine forms mapped (nested atoms recursed)."""
    cls = a.__class__
    if cls is IdxCmp:
        aff = affine_fn(a.aff)
        return a if aff is a.aff else IdxCmp(a.op, aff, a.span, a.mod)
    if cls is Rel:
        idx = map_affines(a.idx, affine_fn)
        return a if idx is a.idx else Rel(a.name, idx, a.span)
    if cls is ValCmp:
        left, right = body_fn(a.left), body_fn(a.right)
        return a if left is a.left and right is a.right else ValCmp(a.op, left, right)
    if cls is NotAtom:
        inner = map_atom(a.atom, body_fn, affine_fn)
        return a if inner is a.atom else NotAtom(inner)
    if cls is AnyOf:
        alts = tuple(map_pred(alt, body_fn, affine_fn) for alt in a.alts)
        return a if _same(alts, a.alts) else AnyOf(alts)
    raise UnknownNode("predicate", a)


def map_pred(pred: tuple, body_fn: BodyFn, affine_fn: AffineFn) -> tuple:
    new = tuple(map_atom(a, body_fn, affine_fn) for a in pred)
    return pred if _same(new, pred) else new


def map_factor(f, body_fn: BodyFn, affine_fn: AffineFn, reduce_fn=None):
    """The factor with its direct bodies and affine forms mapped.  A reduction is
    mapped by `reduce_fn(reduction) -> reduction` when given (a map that must see
    the indices the reduction binds: a scoped context, shadowing), else its filter
    and body as any other atoms and body."""
    cls = f.__class__
    if cls is Access:
        idx = map_affines(f.idx, affine_fn)
        return f if idx is f.idx else Access(f.name, idx, f.span)
    if cls is Apply:
        args = tuple(body_fn(b) for b in f.args)
        return f if _same(args, f.args) else Apply(f.fn, args)
    if cls is Group:
        body = body_fn(f.body)
        return f if body is f.body else Group(body)
    if cls is SizeValue:
        return f
    if cls is Reduce:
        if reduce_fn is not None:
            return reduce_fn(f)
        return rebuild_reduce(f, map_pred(f.where, body_fn, affine_fn), body_fn(f.body))
    raise UnknownNode("factor", f)


def rebuild_reduce(f: Reduce, where: tuple, body: tuple) -> Reduce:
    """f with a new filter and body (f itself when both are the same objects); a filter
    that became false leaves the reduction over no point (`empty_reduce`)."""
    if where is f.where and body is f.body:
        return f
    if where is not f.where:
        from .build import canon_pred
        where = canon_pred(where)
        if where is None:
            return empty_reduce(f)
    return Reduce(f.op, f.over, where, body)


def empty_reduce(f: Reduce) -> Reduce:
    """The reduction over no point (its filter was found false): -inf or +inf, which
    no constant of the IR can hold, so it stays a reduction whose filter is the
    contradiction `0 >= 1` (an atom the canonical builders would fold to false)."""
    return Reduce(f.op, f.over, (IdxCmp(">=", Affine(-1)),), ())


def map_reduce_scoped(f: Reduce, body_fn: BodyFn, affine_fn: AffineFn) -> Reduce:
    """f's filter and body mapped by functions that already account for its indices."""
    return rebuild_reduce(f, map_pred(f.where, body_fn, affine_fn), body_fn(f.body))


def map_term_children(t: Term, body_fn: BodyFn, affine_fn: AffineFn, reduce_fn=None) -> Term:
    """t with every body and affine form directly inside its atoms and factors mapped
    (`reduce_fn`: see `map_factor`)."""
    pred = map_pred(t.pred, body_fn, affine_fn)
    factors = tuple((map_factor(f, body_fn, affine_fn, reduce_fn), p) for f, p in t.factors)
    if pred is t.pred and all(a[0] is b[0] for a, b in zip(factors, t.factors)):
        return t
    return Term(t.coeff, t.sums, pred, factors)


def keep(x):
    return x


def nested_bodies(t: Term) -> list:
    """The bodies directly inside t: builtin arguments, groups, value comparisons."""
    out: list = []
    map_term_children(t, lambda b: out.append(b) or b, keep)
    return out


# ------------------------------------------------------------ affine forms
def substitute_affine(aff: Affine, mapping: dict) -> Affine:
    """Index variables replaced by affine forms, inside gathers too."""
    if not mapping:
        return aff
    hit = False
    acc = Affine(aff.const)
    for atom, c in aff.terms:
        if atom.__class__ is IndexVar and atom.name in mapping:
            acc = acc + mapping[atom.name].scale(c)
            hit = True
            continue
        if atom.__class__ is Gather:
            idx = map_affines(atom.idx, lambda a: substitute_affine(a, mapping))
            if idx is not atom.idx:
                atom = Gather(atom.name, idx, atom.span)
                hit = True
        acc = acc + Affine(0, ((atom, c),))
    return acc if hit else aff


# ------------------------------------------------------------ substitution
def substitute_term(t: Term, mapping: dict) -> Term:
    """Free index variables of t replaced; the term's own sums shadow the mapping.

    Capture-avoiding: a sum of t that binds a name occurring in a substituted
    form is renamed first.  Inside the driver's recipes binders are unique
    (ssa/names.py) and this never happens; programs handed to the backends
    have short names again, and a backend pass substituting into them relies
    on it."""
    if t.sums:
        mapping, clash, free = _under_binders({n for n, _ in t.sums}, mapping)
        if clash:
            t = rename_sums(t, clash, free | index_names(t) | set(mapping))
    if not mapping:
        return t
    return map_term_children(t, lambda b: substitute_body(b, mapping),
                             lambda a: substitute_affine(a, mapping),
                             lambda r: substitute_reduce(r, mapping))


def _under_binders(bound: set, mapping: dict):
    """A substitution entering the scope of the index binders `bound`: (the mapping
    without the variables they shadow, the binders that a substituted form mentions
    and that must be renamed first, the index variables the forms mention)."""
    if not bound.isdisjoint(mapping):
        mapping = {k: v for k, v in mapping.items() if k not in bound}
    free = set()
    for v in mapping.values():
        free |= v.index_vars()
    return mapping, bound & free, free


def substitute_reduce(r: Reduce, mapping: dict) -> Reduce:
    """Free index variables of reduction r replaced; its indices shadow the mapping,
    and one that a substituted form mentions is renamed first (no capture)."""
    mapping, clash, free = _under_binders({n for n, _ in r.over}, mapping)
    if not mapping:
        return r
    if clash:
        r = rename_reduce(r, clash, free | index_names(r) | set(mapping))
    return map_reduce_scoped(r, lambda b: substitute_body(b, mapping),
                             lambda a: substitute_affine(a, mapping))


def _binder_renaming(binders, clash: set, avoid: set) -> dict:
    """old -> new for the binders named in `clash`: a fresh name of the supply for an
    internal binder, else the name's stem numbered apart from `avoid`."""
    from .names import fresh, is_internal, unique_name
    taken = set(avoid)
    renamed = {}
    for n, _ in binders:
        if n in clash:
            stem = n.rstrip("0123456789") or n
            new = fresh(n) if is_internal(n) else unique_name(stem, taken)
            taken.add(new)
            renamed[n] = new
    return renamed


def rename_reduce(r: Reduce, clash: set, avoid: set) -> Reduce:
    """r with its indices named in `clash` renamed (as `rename_sums` does for sums)."""
    renamed = _binder_renaming(r.over, clash, avoid)
    inner = {old: Affine.of(IndexVar(new)) for old, new in renamed.items()}
    over = tuple((renamed.get(n, n), d) for n, d in r.over)
    moved = Reduce(r.op, over, r.where, r.body)
    return map_reduce_scoped(moved, lambda b: substitute_body(b, inner),
                             lambda a: substitute_affine(a, inner))


def rename_sums(t: Term, clash: set, avoid: set) -> Term:
    """t with its sums named in `clash` renamed: a fresh name of the supply for an
    internal binder, else the name's stem numbered apart from `avoid`."""
    renamed = _binder_renaming(t.sums, clash, avoid)
    sums = tuple((renamed.get(n, n), d) for n, d in t.sums)
    inner = {old: Affine.of(IndexVar(new)) for old, new in renamed.items()}
    body = substitute_term(Term(t.coeff, (), t.pred, t.factors), inner)
    return Term(t.coeff, sums, body.pred, body.factors)


def substitute_body(body: tuple, mapping: dict) -> tuple:
    if not mapping:
        return body
    new = tuple(substitute_term(t, mapping) for t in body)
    return body if _same(new, body) else new


def substitute(x, mapping: dict):
    """Substitution in any body, term, atom or factor."""
    if isinstance(x, tuple):
        return substitute_body(x, mapping)
    if x.__class__ is Term:
        return substitute_term(x, mapping)
    body_fn = lambda b: substitute_body(b, mapping)         # noqa: E731
    affine_fn = lambda a: substitute_affine(a, mapping)     # noqa: E731
    if x.__class__ in (IdxCmp, Rel, ValCmp, NotAtom, AnyOf):
        return map_atom(x, body_fn, affine_fn)
    return map_factor(x, body_fn, affine_fn, lambda r: substitute_reduce(r, mapping))


# ------------------------------------------------------------ scoped maps over terms
def map_terms_in_body(body: tuple, fn, ctx, enter, rebuild=tuple) -> tuple:
    """fn(term, ctx) -> list of terms, applied innermost first to every term.

    `enter(ctx, term)` gives the context of the bodies nested inside `term`
    (its builtin arguments, groups and value comparisons), which see the
    term's sums and brackets.  The body and filter of a reduction inside
    `term` see, in addition, the reduction's indices and filter: their context
    is `enter` of that one with the reduction's domain (`Reduce.domain`, a
    term whose sums are the reduced indices).  A changed body, nested ones
    included, is built by `rebuild` from its list of terms (a canonicaliser,
    say); an unchanged body is returned as it was.
    """
    out = []
    changed = False
    for t in body:
        inner = None

        def nested(b, t=t):
            nonlocal inner
            if inner is None:
                inner = enter(ctx, t)
            return map_terms_in_body(b, fn, inner, enter, rebuild)

        def reduction(r, t=t):
            nonlocal inner
            if inner is None:
                inner = enter(ctx, t)
            scoped = enter(inner, r.domain())
            return map_reduce_scoped(
                r, lambda b: map_terms_in_body(b, fn, scoped, enter, rebuild), keep)
        u = map_term_children(t, nested, keep, reduction)
        got = fn(u, ctx)
        if u is not t or len(got) != 1 or got[0] is not t:
            changed = True
        out.extend(got)
    return rebuild(out) if changed else body


# ------------------------------------------------------------ folds
def iter_nodes(x) -> Iterator:
    """Every node in x, pre-order: terms, atoms, factors, affine forms and their atoms.

    x may be a body (a tuple of terms), a term, an atom, a factor or an affine form.
    """
    stack = [x]
    while stack:
        n = stack.pop()
        cls = n.__class__
        if cls is tuple:
            stack.extend(reversed(n))
            continue
        yield n
        if cls is Term:
            stack.extend(reversed([f for f, _ in n.factors]))
            stack.extend(reversed(n.pred))
        elif cls is Affine:
            stack.extend(reversed([a for a, _ in n.terms]))
        elif cls is Gather or cls is Access or cls is Rel:
            stack.extend(reversed(n.idx))
        elif cls is IdxCmp:
            stack.append(n.aff)
        elif cls is ValCmp:
            stack.extend((n.right, n.left))
        elif cls is NotAtom:
            stack.append(n.atom)
        elif cls is AnyOf:
            for alt in reversed(n.alts):
                stack.extend(reversed(alt))
        elif cls is Apply:
            stack.extend(reversed(n.args))
        elif cls is Group:
            stack.append(n.body)
        elif cls is Reduce:
            stack.append(n.body)
            stack.extend(reversed(n.where))
        elif cls in (IndexVar, SizeVar, SizeValue):
            pass
        else:
            raise UnknownNode("IR", n)


# Index names per term: products rename apart and loop plans look up the names of
# the same terms again and again.
_TERM_INDEX_NAMES = Memo(100_000)


def sums_or_reduces(x) -> bool:
    """Whether some term in x sums an index or x holds a reduction (max, logsumexp, ...)."""
    return any(n.__class__ is Reduce or (n.__class__ is Term and n.sums) for n in iter_nodes(x))


def index_names(x) -> set[str]:
    """Every index variable name in x, bound sums included."""
    cls = x.__class__
    if cls is Term:
        return set(_term_index_names(x))
    if cls is tuple and all(t.__class__ is Term for t in x):
        out: set[str] = set()
        for t in x:
            out |= _term_index_names(t)
        return out
    return _index_names(x)


def _term_index_names(t: Term) -> frozenset:
    return _TERM_INDEX_NAMES.compute(t, lambda: frozenset(_index_names(t)))


def _index_names(x) -> set[str]:
    out: set[str] = set()
    for n in iter_nodes(x):
        cls = n.__class__
        if cls is IndexVar:
            out.add(n.name)
        elif cls is Term:
            out.update(name for name, _ in n.sums)
        elif cls is Reduce:
            out.update(name for name, _ in n.over)
    return out


# The tensors each statement reads: the read graph of every program a rewrite
# builds is made of mostly the same statements.
_STATEMENT_READS = Memo(50_000)


def statement_reads(s) -> frozenset:
    """Names of the tensors statement s reads (its body's ``tensor_reads``), remembered."""
    return _STATEMENT_READS.compute(s, lambda: frozenset(
        a.name for t in s.body for a in term_accesses(t)))


def term_accesses(t: Term) -> tuple:
    """The Access nodes of term t in walk order (``iter_nodes``), remembered by value:
    a rewrite puts most of a statement's terms, as they were, into the new statement,
    so what a statement reads is put together from its terms' (a body's walk visits
    its terms one after the other).  The nodes may come from an equal term seen
    before, whose spans may differ (spans take no part in equality)."""
    return _TERM_ACCESSES.compute(t, lambda: tuple(
        n for n in iter_nodes(t) if n.__class__ is Access))


_TERM_ACCESSES = Memo(100_000)


def live_statements(prog) -> set[str]:
    """Names of the statements and parameters the outputs of `prog` read, directly
    or through other statements, the outputs included."""
    live = set(prog.outputs)
    while True:             # (until nothing changes: a recurrence reads later members)
        count = len(live)
        for s in reversed(prog.stmts):
            if s.name in live:
                live |= statement_reads(s)
        if len(live) == count:
            return live


def check_statements(prog) -> set[str]:
    """Names of the statements that nothing reads: no output, directly or through
    others, and no other statement (a derivative's label checks, domain.py).  A
    statement that only such checks read (a copy whose values a check compares) is
    not one: its values matter."""
    read = {n for s in prog.stmts for n in statement_reads(s) if n != s.name}
    return {s.name for s in prog.stmts} - live_statements(prog) - read


def tensor_reads(x) -> set[str]:
    """Names of the f64 tensors and scalars x reads (factor accesses, value comparisons included)."""
    return {n.name for n in iter_nodes(x) if n.__class__ is Access}


def gathered_tensors(x) -> set[str]:
    """Names of the i64 tensors x reads as gathers."""
    return {n.name for n in iter_nodes(x) if n.__class__ is Gather}


def binder_names(x) -> set[str]:
    """Names bound by the sums and reductions of x and of every body nested in it."""
    return {name for n in iter_nodes(x) if n.__class__ in (Term, Reduce)
            for name, _ in binders_of(n)}


def binders_of(n) -> tuple:
    """The (index, dim) pairs node n binds: a term's sums, a reduction's indices."""
    if n.__class__ is Term:
        return n.sums
    if n.__class__ is Reduce:
        return n.over
    return ()


def free_index_names(x) -> set[str]:
    """Index variables x uses that no binder inside x binds (with binders unique)."""
    return index_names(x) - binder_names(x)

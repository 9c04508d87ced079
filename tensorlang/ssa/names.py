"""Index binders that cannot be captured: one supply of fresh names.

While a program is differentiated or simplified, every index it binds (a
statement's generators, every sum at any depth) has a name that no other
binder in the program has.  Such a name is ``hint'N``: the apostrophe cannot
appear in source text, so no user name can ever collide with one, and ``N``
comes from the one supply below, so no two generated names collide either.
With all binders distinct, substitution cannot capture and no sum can shadow
another; the only operation that could break the property is copying a term
next to itself (a product of a body with itself), and ``build.mul_terms``
freshens the copy's binders when it does that.

``unique_binders`` gives a program such names on entry to the driver's
recipes; ``readable_binders`` turns them back into short names (the hint, with
a number only where two binders of one statement share a hint) when a program
leaves them, so users, printers and backends only ever see readable names.

The supply is deterministic: ``supply()`` starts a numbering for one run of
the driver, so the same input program always gets the same names.
"""
from __future__ import annotations

import itertools
import threading
from contextlib import contextmanager

from ..memo import Memo
from . import traverse as T
from .ir import Affine, IndexVar, Program, Reduce, Stmt, Term, written_at

MARK = "'"


class _Supply(threading.local):
    def __init__(self):
        self.counter = None
        self.depth = 0


_SUPPLY = _Supply()
# Names asked for outside a driver run come from here (never reset).
_LOOSE = itertools.count(1_000_000)


@contextmanager
def supply():
    """A numbering of fresh names for one run of the driver (nested runs share it)."""
    if _SUPPLY.depth == 0:
        _SUPPLY.counter = itertools.count()
    _SUPPLY.depth += 1
    try:
        yield
    finally:
        _SUPPLY.depth -= 1
        if _SUPPLY.depth == 0:
            _SUPPLY.counter = None


def _next() -> int:
    return next(_SUPPLY.counter if _SUPPLY.counter is not None else _LOOSE)


def position() -> int | None:
    """Where the active numbering stands (None outside a driver run)."""
    if _SUPPLY.counter is None:
        return None
    n = next(_SUPPLY.counter)
    _SUPPLY.counter = itertools.count(n)
    return n


def rewind_past(ends) -> None:
    """Continue the active numbering after the furthest of `ends`, the positions where
    the alternatives that are kept stopped.  Alternatives built from one position
    take the same names for different things, and each is a program a later step
    may extend: fresh names must be fresh for every one kept, not only for the
    last one built."""
    ends = [n for n in ends if n is not None]
    if ends:
        rewind_to(max(ends))


def advance_to(n: int | None) -> None:
    """Continue the active numbering at n (after reusing a remembered result)."""
    if n is not None and _SUPPLY.counter is not None:
        _SUPPLY.counter = itertools.count(max(n, position()))


def rewind_to(n: int | None) -> None:
    """Continue the active numbering at n, even below where it stands: for trying
    alternatives of one step, each from the same position, and keeping one (the
    names the others took are then bound nowhere)."""
    if n is not None and _SUPPLY.counter is not None:
        _SUPPLY.counter = itertools.count(n)


def hint_of(name: str) -> str:
    return name.split(MARK, 1)[0] or "i"


def fresh(hint: str) -> str:
    """A binder name no other binder has: ``hint'N``."""
    return f"{hint_of(hint)}{MARK}{_next()}"


def is_internal(name: str) -> bool:
    return MARK in name


def _var(name: str) -> Affine:
    return Affine.of(IndexVar(name))


# ------------------------------------------------------------ renaming binders
def _rename_term(t: Term, new_name, mapping: dict) -> Term:
    """t with every sum, at any depth, renamed to new_name(old) and the uses of
    renamed indices (and of those in `mapping`) substituted.  The new names are
    distinct from every name in scope, so nothing is captured."""
    sums = tuple((new_name(n), d) for n, d in t.sums)
    inner = {**mapping, **{old: _var(new) for (old, _), (new, _) in zip(t.sums, sums)
                           if old != new}}
    base = t if sums == t.sums else Term(t.coeff, sums, t.pred, t.factors)
    return T.map_term_children(base, lambda b: _rename_body(b, new_name, inner),
                               lambda a: T.substitute_affine(a, inner),
                               lambda r: _rename_reduce(r, new_name, inner))


def _rename_reduce(r: Reduce, new_name, mapping: dict) -> Reduce:
    """A reduction's indices renamed like a term's sums (see `_rename_term`)."""
    over = tuple((new_name(n), d) for n, d in r.over)
    inner = {**mapping, **{old: _var(new) for (old, _), (new, _) in zip(r.over, over)
                           if old != new}}
    base = r if over == r.over else Reduce(r.op, over, r.where, r.body)
    return T.map_reduce_scoped(base, lambda b: _rename_body(b, new_name, inner),
                               lambda a: T.substitute_affine(a, inner))


def _rename_body(body, new_name, mapping: dict) -> tuple:
    from .build import canon_body
    terms = [_rename_term(t, new_name, mapping) for t in body]
    return body if all(a is b for a, b in zip(terms, body)) else canon_body(terms)


def _var_map(old_new) -> dict:
    return {old: _var(new) for old, new in old_new if old != new}


# ------------------------------------------------------------ entering the recipes
# Programs entering the recipes, by program and the supply's position: the
# gradient, Hessian and jvp of one function each start from it at the same place.
_ENTERED = Memo(256)


def unique_binders(prog: Program) -> Program:
    """Every binder of every statement renamed to a fresh name of the supply."""
    start = position()
    if start is None:                   # outside a driver run: names never repeat
        return _unique_binders(prog)
    key = (prog, written_at(prog), start)
    hit = _ENTERED.get(key)
    if hit is None:
        hit = _ENTERED.put(key, (_unique_binders(prog), position()))
    advance_to(hit[1])
    return hit[0]


def _unique_binders(prog: Program) -> Program:
    stmts = []
    for s in prog.stmts:
        indices = tuple((fresh(n), d) for n, d in s.indices)
        mapping = _var_map(zip([n for n, _ in s.indices], [n for n, _ in indices]))
        stmts.append(Stmt(s.name, indices, _rename_body(s.body, fresh, mapping), s.span))
    return Program(prog.name, prog.params, tuple(stmts), prog.outputs, prog.tuple_return)


# ------------------------------------------------------------ leaving them
def _binders_in_order(body, out: list):
    for t in body:
        out.extend(n for n, _ in t.sums)
        out.extend(n for f, _ in t.factors if f.__class__ is Reduce for n, _ in f.over)
        for b in T.nested_bodies(t):
            _binders_in_order(b, out)


def _display_names(s: Stmt, taken: set[str]) -> dict[str, str]:
    """Short names for a statement's internal binders, distinct within the statement."""
    order = _statement_binders(s)
    used = set(taken) | {n for n in order if not is_internal(n)}
    names: dict[str, str] = {}
    for n in order:
        if not is_internal(n) or n in names:
            continue
        shown = _short_name(hint_of(n), used)
        used.add(shown)
        names[n] = shown
    return names


# Single letters that read as indices, in the order they are offered.
LETTERS = "ijklmpqrstuvwabcegh"


def _short_name(base: str, used: set[str]) -> str:
    """base if free; a one-letter base moves on to the next free index letter;
    otherwise base1, base2, ..."""
    if base not in used:
        return base
    if len(base) == 1 and base in LETTERS:
        start = LETTERS.index(base)
        for letter in LETTERS[start + 1:] + LETTERS[:start]:
            if letter not in used:
                return letter
    return unique_name(base, used)


def unique_name(base: str, used: set[str]) -> str:
    """A name for a new tensor or statement (or a readable index): base itself if
    free, else base1, base2, ..."""
    if base not in used:
        return base
    k = 1
    while f"{base}{k}" in used:
        k += 1
    return f"{base}{k}"


def readable_binders(prog: Program) -> Program:
    """Internal binder names replaced by short ones (a statement at a time)."""
    if not any(is_internal(n) for s in prog.stmts for n in _statement_binders(s)):
        return prog
    taken = ({p.name for p in prog.params} | {s.name for s in prog.stmts} | set(prog.sizes()))
    stmts = []
    for s in prog.stmts:
        names = _display_names(s, taken)
        if not names:
            stmts.append(s)
            continue
        mapping = _var_map((n, names[n]) for n, _ in s.indices if n in names)
        stmts.append(Stmt(s.name, tuple((names.get(n, n), d) for n, d in s.indices),
                          _rename_body(s.body, lambda n: names.get(n, n), mapping), s.span))
    return Program(prog.name, prog.params, tuple(stmts), prog.outputs, prog.tuple_return)


def _statement_binders(s: Stmt) -> list[str]:
    order = [n for n, _ in s.indices]
    _binders_in_order(s.body, order)
    return order


def rename_binders(prog: Program, new_name) -> Program:
    """Every binder of every statement (generators and sums at any depth) renamed to
    new_name(old).  The caller keeps the new names apart from each other within a
    statement and from the program's tensors and sizes; tests use it to check that
    nothing the compiler decides depends on what indices are called."""
    stmts = []
    for s in prog.stmts:
        mapping = _var_map((n, new_name(n)) for n, _ in s.indices)
        stmts.append(Stmt(s.name, tuple((new_name(n), d) for n, d in s.indices),
                          _rename_body(s.body, new_name, mapping), s.span))
    return Program(prog.name, prog.params, tuple(stmts), prog.outputs, prog.tuple_return)


def binder_names_of(prog: Program) -> list[str]:
    """The names every statement binds, each once, in order of first appearance."""
    out: list[str] = []
    for s in prog.stmts:
        out.extend(_statement_binders(s))
    return list(dict.fromkeys(out))


def freshen(t: Term, clash: set[str]) -> Term:
    """t with every binder named in `clash` (at any depth) given a fresh name: the
    copy of a term placed next to itself no longer shares binders with it."""
    return _rename_term(t, lambda n: fresh(n) if n in clash else n, {})


"""Fusion for code generation: a tensor read once, element for element, is never stored.

A statement P that is read at exactly one place, in a consumer whose loops at
that place run over exactly P's index tuple (each combination once), computes
each of its elements exactly once for that read.  Writing P to memory and
reading it back costs two memory passes and buys nothing, so its body is
substituted at the read, as a parenthesised group the kernel evaluates into a
register.  Chains fuse one link at a time: `blur -> square -> sum` becomes one
loop that never stores the blurred image.

Only a code-generation choice: the program's meaning, its printed form and its
cost polynomial (which counts the unfused program, an upper bound) are unchanged.
"""
from __future__ import annotations

from dataclasses import replace

from ..bounds import size_facts
from ..loops import plan_statement, plan_term
from ..ssa import build as B
from ..ssa import traverse as T
from ..ssa.traverse import iter_nodes, substitute_term
from ..ssa.ir import Access, Apply, Group, IndexVar, Program, Reduce, Stmt, Term


def fuse_single_use(prog: Program, keep=lambda stmt: False) -> tuple[Program, list[str]]:
    """Inline every fusible producer; returns the program and the names fused away.

    `keep(stmt)` marks statements that must stay materialised (for example the
    ones the backend hands to BLAS)."""
    fused = []
    while True:
        step = _fuse_one(prog, keep)
        if step is None:
            return prog, fused
        prog, name = step
        fused.append(name)


def _fuse_one(prog: Program, keep):
    outputs = set(prog.outputs)
    counts = read_counts(prog)
    base = size_facts(prog)
    for p in prog.stmts:
        if p.name in outputs or not p.indices or counts.get(p.name) != 1 or keep(p):
            continue
        if plan_statement(p, base).scatter_terms:
            continue                  # a scatter writes its output out of order
        for c in prog.stmts:
            if c.name == p.name:
                continue
            new_body = _inline_into(c, p, base)
            if new_body is not None:
                stmts = tuple(replace(s, body=new_body) if s.name == c.name
                              else s for s in prog.stmts if s.name != p.name)
                return Program(prog.name, prog.params, stmts, prog.outputs,
                               prog.tuple_return), p.name
    return None


def read_counts(prog: Program) -> dict[str, int]:
    """How many places in the program read each tensor (inside predicates too)."""
    counts: dict[str, int] = {}
    for s in prog.stmts:
        for node in iter_nodes(s.body):
            if node.__class__ is Access:
                counts[node.name] = counts.get(node.name, 0) + 1
    return counts


def _inline_into(c: Stmt, p: Stmt, base):
    """C's body with its one read of P replaced by P's body, or None if not fusible."""
    gens = {n for n, _ in c.indices}
    out = []
    done = False
    for t in c.body:
        if not done and _reads(t, p.name):
            if plan_term(t, c.indices, base, top=True).scatter:
                return None
            new = _term_with_inline(t, p, gens | {n for n, _ in t.sums})
            if new is None:
                return None
            out.append(new)
            done = True
        else:
            out.append(t)
    return tuple(out) if done else None


def _reads(t: Term, name: str) -> bool:
    return read_counts(Program("", (), (Stmt("_", (), (t,)),), ())).get(name, 0) > 0


def _term_with_inline(t: Term, p: Stmt, loop_vars: set[str]):
    """Replace P's access among t's factors (descending into sum-free groups and
    builtin arguments); the access must index P by exactly the loop variables."""
    factors = []
    found = False
    for f, power in t.factors:
        if not found and isinstance(f, Access) and f.name == p.name:
            if not _is_loop_tuple(f.idx, loop_vars):
                return None
            factors.append((Group(_instantiate(p, f.idx, loop_vars)), power))
            found = True
        elif not found and isinstance(f, (Group, Apply)) and _factor_reads(f, p.name):
            inner = _factor_with_inline(f, p, loop_vars)
            if inner is None:
                return None
            factors.append((inner, power))
            found = True
        else:
            factors.append((f, power))
    return Term(t.coeff, t.sums, t.pred, tuple(factors)) if found else None


def _factor_reads(f, name: str) -> bool:
    return _reads(Term(1.0, (), (), ((f, 1.0),)), name)


def _factor_with_inline(f, p: Stmt, loop_vars: set[str]):
    bodies = [f.body] if isinstance(f, Group) else list(f.args)
    new_bodies = []
    found = False
    for b in bodies:
        if found or not any(_reads(t, p.name) for t in b):
            new_bodies.append(b)
            continue
        terms = []
        for t in b:
            if found or not _reads(t, p.name):
                terms.append(t)
                continue
            if t.sums or t.pred and _pred_reads(t, p.name):
                return None           # a nested loop would recompute P per iteration
            new = _term_with_inline(t, p, loop_vars)
            if new is None:
                return None
            terms.append(new)
            found = True
        new_bodies.append(tuple(terms))
    if not found:
        return None
    return Group(new_bodies[0]) if isinstance(f, Group) else Apply(f.fn, tuple(new_bodies))


def _pred_reads(t: Term, name: str) -> bool:
    return _reads(Term(1.0, (), t.pred, ()), name)


def _is_loop_tuple(idx, loop_vars: set[str]) -> bool:
    """Is `idx` a tuple of distinct plain loop variables covering all of them?"""
    names = []
    for a in idx:
        if a.const or len(a.terms) != 1:
            return False
        atom, coef = a.terms[0]
        if coef != 1 or not isinstance(atom, IndexVar):
            return False
        names.append(atom.name)
    return len(set(names)) == len(names) and set(names) == loop_vars


def _instantiate(p: Stmt, idx, avoid: set[str]) -> tuple:
    """P's body at the element `idx`, its summed indices renamed apart from `avoid`."""
    mapping = {n: a for (n, _), a in zip(p.indices, idx)}
    taken = set(avoid) | {n for n, _ in p.indices}
    terms = []
    for t in p.body:
        t = B.rename_sums_apart(t, taken)
        terms.append(_reductions_apart(substitute_term(t, mapping), taken))
    return tuple(terms)


def _reductions_apart(t: Term, taken: set[str]) -> Term:
    """t with the indices of its reductions (at any depth) renamed apart from `taken`,
    the consumer's loop variables: a reduction's loop must not reuse one of them."""
    def apart(r: Reduce) -> Reduce:
        clash = {n for n, _ in r.over} & taken
        if clash:
            r = T.rename_reduce(r, clash, set(taken) | T.index_names(r))
        return T.map_reduce_scoped(r, lambda b: tuple(_reductions_apart(u, taken) for u in b),
                                   T.keep)
    return T.map_term_children(t, lambda b: tuple(_reductions_apart(u, taken) for u in b),
                               T.keep, apart)


__all__ = ["fuse_single_use", "read_counts"]

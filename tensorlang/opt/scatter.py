"""Scatters taken out of the steps of a recurrence.

A recurrence runs its steps one after another, and each step evaluates its
statements' terms at the step's elements.  A term that reads nothing the group
computes and puts entries of a sum at a step chosen by a label,

    h_bar[k: T, l: d] = sum[p: m]([k == ts[p]] * w[p] * h[ts[p], l]) + <the step's reads>

(the cotangent of a recurrence read at gathered times, `h[ts[s], i]`), is then a
search: every step scans all m labels for those equal to it, T m d work where the
scatter itself (one pass over p, adding into row ts[p]) is m d.  As a statement of
its own, computed before the group, it is that scatter; the member reads it.  The
rule is cost-guarded, so the statement is made only where the cost model counts
it cheaper.
"""
from __future__ import annotations

from ..ssa import build as B
from ..ssa.ir import Access, Affine, Gather, IdxCmp, IndexVar, Program, Stmt, Term
from ..ssa.names import unique_name
from ..ssa.recur import recurrences
from ..ssa.traverse import term_accesses


def split_step_scatters(prog: Program) -> Program:
    """Each member of a recurrence group whose terms include scatters that read no
    member of the group, onto its leading indices (`_scatters_onto`) or onto its other
    indices under a bracket that fixes the step (`_one_step`): those terms as a
    statement of their own, before the group, read by the member."""
    groups = recurrences(prog)
    if not groups:
        return prog
    stmts = list(prog.stmts)
    used = {p.name for p in prog.params} | {s.name for s in stmts} | set(prog.sizes())
    changed = False
    for g in groups:
        members = set(g.members)
        split = {}                  # member -> (the member reading its scatter, the scatter)
        for s in stmts:
            if s.name not in members:
                continue
            lead = {name for name, _ in s.indices[:g.lead]}
            gens = {name for name, _ in s.indices}
            moved = [t for t in s.body if _scatters_onto(t, lead)
                     or _scatters_onto(t, gens) and _one_step(t, lead)]
            moved = [t for t in moved if not any(a.name in members for a in term_accesses(t))]
            if not moved:
                continue
            name = unique_name(f"{s.name}_scatter", used)
            used.add(name)
            read = B.factor_body(Access(name, tuple(Affine.of(IndexVar(i)) for i, _ in s.indices)))
            kept = tuple(t for t in s.body if t not in moved)
            split[s.name] = (Stmt(s.name, s.indices, B.canon_body(kept + read), s.span),
                             Stmt(name, s.indices, B.canon_body(moved), s.span))
        if not split:
            continue
        # the scatters, in the members' order, just before the group's first member
        first = next(j for j, st in enumerate(stmts) if st.name in members)
        stmts = (stmts[:first] + [scatter for _, scatter in split.values()]
                 + [split[st.name][0] if st.name in split else st for st in stmts[first:]])
        changed = True
    if not changed:
        return prog
    return Program(prog.name, prog.params, tuple(stmts), prog.outputs, prog.tuple_return)


def _one_step(t: Term, lead: set[str]) -> bool:
    """Does a bracket of t fix a leading index to one step (`[k == T - 1]`)?  A scatter
    onto the other indices under it runs in that step alone when it is a statement of
    its own, where a step kernel would loop over its labels at every step."""
    return any(atom.__class__ is IdxCmp and atom.op == "==" and len(atom.aff.index_vars()) == 1
               and atom.aff.index_vars() <= lead and not any(
                   a.__class__ is Gather for a, _ in atom.aff.terms) for atom in t.pred)


def _scatters_onto(t: Term, lead: set[str]) -> bool:
    """Does t sum over an index that an equality `[k == y[p]]` ties, through a label
    read at it, to a leading index k?"""
    if not t.sums:
        return False
    summed = {name for name, _ in t.sums}
    for atom in t.pred:
        if atom.__class__ is not IdxCmp or atom.op != "==":
            continue
        steps = any(a.__class__ is IndexVar and a.name in lead for a, _ in atom.aff.terms)
        labels = any(a.__class__ is Gather and any(x.index_vars() & summed for x in a.idx)
                     for a, _ in atom.aff.terms)
        if steps and labels:
            return True
    return False

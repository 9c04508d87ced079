"""Loop-nest plans: how each Tensor SSA statement runs as loops.

This is the contract between the cost model, the instrumented counter and the
compiled backend.  A statement ``y[G] = t_1 + ... + t_m`` runs as

* a zero-filled output when some term scatters (see below);
* one loop nest over the generators ``G`` in which every *gather* term adds its
  value into a local accumulator (its own sums are inner loops), then the
  element is written once;
* for every *scatter* term, a separate loop nest over its remaining indices
  that computes the solved generators and adds into ``y`` at that position.

A term scatters when one of its equalities fixes a generator index from
indices it does not loop over itself, e.g. ``[k == l]`` (the diagonal of a
Hessian: only n of the n^2 entries are visited) or ``[k == y[s]]`` (the adjoint
of a gather: each label sends its row to one place).  Equalities involving a
summed index are never solved here: eliminating them is the simplifier's job,
and the naive derivative must show the cost of not doing so.

Guards ``[lo <= v]`` / ``[v <= hi]`` on a summed index, with bounds in size
symbols and constants only, become that loop's bounds; every other bracket is a
filter tested on each iteration.
"""
from __future__ import annotations

from dataclasses import dataclass

from .bounds import Facts, size_facts
from .ssa.ir import Affine, AnyOf, IdxCmp, IndexVar, Program, SizeVar, Stmt, Term


@dataclass(frozen=True)
class Loop:
    var: str
    lo: Affine          # inclusive, in size symbols and constants
    hi: Affine          # inclusive


@dataclass(frozen=True)
class TermPlan:
    term: Term
    loops: tuple[Loop, ...]                 # outermost first (gather terms: sums only)
    solved: tuple[tuple[str, Affine], ...]  # scatter terms: generator := affine
    filters: tuple                          # atoms tested each iteration
    scatter: bool


@dataclass(frozen=True)
class StmtPlan:
    stmt: Stmt
    gather_terms: tuple[TermPlan, ...]
    scatter_terms: tuple[TermPlan, ...]


def single_var_bound(atom, var: str):
    """For `atom` = (c*var + rest >= 0) with rest in sizes/constants: ('lo'|'hi', bound)."""
    if not (isinstance(atom, IdxCmp) and atom.op == ">="):
        return None
    coef = 0
    rest = []
    for a, c in atom.aff.terms:
        if isinstance(a, IndexVar) and a.name == var:
            coef = c
        elif isinstance(a, SizeVar):
            rest.append((a, c))
        else:
            return None
    if abs(coef) != 1:
        return None
    r = Affine.make(atom.aff.const, rest)
    if coef == 1:
        return "lo", r.scale(-1)            # var >= -rest
    return "hi", r                          # var <= rest


def _solvable_generator(atom, gens: set[str], looped: set[str]):
    """(g, expr) when an equality fixes generator g from non-summed quantities."""
    if not (isinstance(atom, IdxCmp) and atom.op == "=="):
        return None
    for a, c in atom.aff.terms:
        if isinstance(a, IndexVar) and a.name in gens and abs(c) == 1:
            rest = Affine.make(atom.aff.const, [(b, k) for b, k in atom.aff.terms if b != a])
            expr = rest.scale(-c)
            plain = {b.name for b, _ in expr.terms if isinstance(b, IndexVar)}
            if plain & looped or a.name in expr.index_vars():
                continue
            return a.name, expr
    return None


def plan_loops(var_dims, pred, facts: Facts):
    """Loops over (var, dim) pairs with bounds taken from single-variable guards."""
    loops = []
    used = set()
    for var, dim in var_dims:
        lo, hi = Affine(0), Affine.dim(dim).shift(-1)
        for k, atom in enumerate(pred):
            b = single_var_bound(atom, var)
            if b is None:
                continue
            side, bound = b
            # A bound is taken when it is tighter than the range and leaves a
            # trip count hi - lo + 1 that is never negative, so the polynomial
            # stays exact for every size >= 1.
            if side == "lo" and facts.proves(bound - lo) and facts.proves(hi - bound + Affine(1)):
                lo = bound
                used.add(k)
            elif side == "hi" and facts.proves(hi - bound) and facts.proves(bound - lo + Affine(1)):
                hi = bound
                used.add(k)
        loops.append(Loop(var, lo, hi))
    filters = tuple(a for k, a in enumerate(pred) if k not in used)
    return tuple(loops), order_filters(filters)


def order_filters(atoms) -> tuple:
    """Affine guards first: they make the reads in the other filters safe."""
    return tuple(sorted(atoms, key=lambda a: 0 if isinstance(a, IdxCmp) else 1))


def plan_term(t: Term, gens: tuple, facts: Facts, top: bool) -> TermPlan:
    """Plan one term; `gens` are the statement's generators (empty for nested bodies)."""
    gen_names = {g for g, _ in gens}
    summed = {n for n, _ in t.sums}
    pred = list(t.pred)
    solved = []
    if top:
        remaining = set(gen_names)
        progress = True
        while progress:
            progress = False
            for atom in list(pred):
                sol = _solvable_generator(atom, remaining, summed)
                if sol is not None:
                    g, expr = sol
                    solved.append((g, expr))
                    remaining.discard(g)
                    pred.remove(atom)
                    progress = True
                    break
    if solved:
        solved_names = {g for g, _ in solved}
        loop_vars = [(g, d) for g, d in gens if g not in solved_names] + list(t.sums)
        loop_facts = facts.with_ranges(loop_vars)
        loops, filters = plan_loops(loop_vars, pred, loop_facts)
        # A solved generator must land inside the output; keep the check unless proven.
        dims = dict(gens)
        guard_facts = loop_facts.with_pred([a for a in pred if isinstance(a, IdxCmp)])
        checks = []
        for g, expr in solved:
            if not guard_facts.proves(expr):
                checks.append(IdxCmp(">=", expr))
            upper = Affine.dim(dims[g]).shift(-1) - expr
            if not guard_facts.proves(upper):
                checks.append(IdxCmp(">=", upper))
        # A generator's expression may read generators solved after it (k = 2 * l,
        # then l = n - 3) but never one solved before it: compute them in reverse.
        return TermPlan(t, loops, tuple(reversed(solved)),
                        order_filters(tuple(checks) + filters), True)
    inner_facts = facts.with_ranges(t.sums)
    loops, filters = plan_loops(list(t.sums), pred, inner_facts)
    return TermPlan(t, loops, (), filters, False)


def plan_statement(s: Stmt, base: Facts) -> StmtPlan:
    facts = base.with_ranges(s.indices)
    gathers, scatters = [], []
    for t in s.body:
        p = plan_term(t, s.indices, base, top=True)
        if p.scatter:
            scatters.append(p)
        else:
            gathers.append(plan_term(t, s.indices, facts, top=False))
    return StmtPlan(s, tuple(gathers), tuple(scatters))



def plan_program(prog: Program) -> list[StmtPlan]:
    base = size_facts(prog)
    return [plan_statement(s, base) for s in prog.stmts]




__all__ = ["Loop", "TermPlan", "StmtPlan", "plan_program", "plan_term", "plan_loops",
           "AnyOf"]


# ------------------------------------------------------------ printing, for `explain`
def format_program_plan(prog: Program) -> str:
    from .ssa.printer import fmt_affine, fmt_atom, fmt_body
    lines = []

    def product(t) -> str:
        return fmt_body((Term(t.coeff, (), (), t.factors),))

    def loops_text(loops, indent):
        out = []
        for lp in loops:
            out.append("  " * indent + f"for {lp.var} in {fmt_affine(lp.lo)} .. {fmt_affine(lp.hi)}:")
            indent += 1
        return out, indent

    def filt(tp):
        return " and ".join(fmt_atom(a) for a in tp.filters)

    for sp in plan_program(prog):
        s = sp.stmt
        gens = [Loop(n, Affine(0), Affine.dim(d).shift(-1)) for n, d in s.indices]
        target = s.name + (f"[{', '.join(n for n, _ in s.indices)}]" if s.indices else "")
        lines.append(f"{target}:")
        if sp.scatter_terms:
            lines.append(f"  {s.name} = 0")
        if sp.gather_terms or not sp.scatter_terms:
            body, ind = loops_text(gens, 1)
            lines += body
            lines.append("  " * ind + "acc = 0")
            for tp in sp.gather_terms:
                inner, k = loops_text(tp.loops, ind)
                lines += inner
                if tp.filters:
                    lines.append("  " * k + f"if {filt(tp)}:")
                    k += 1
                lines.append("  " * k + f"acc += {product(tp.term)}")
            lines.append("  " * ind + f"{target} = acc")
        for tp in sp.scatter_terms:
            inner, k = loops_text(tp.loops, 1)
            lines += inner
            for g, e in tp.solved:
                lines.append("  " * k + f"{g} = {fmt_affine(e)}")
            if tp.filters:
                lines.append("  " * k + f"if {filt(tp)}:")
                k += 1
            lines.append("  " * k + f"{target} += {product(tp.term)}")
    return "\n".join(lines)

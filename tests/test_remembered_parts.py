"""Results put together from remembered parts equal what they replace, on the statements,
scopes and constraint systems that building derivatives of the corpus asks about:

* a statement's cost from its remembered term groups (`CostModel.statement_of`) is the
  cost of its plan (`CostModel.statement(plan_statement(...))`);
* what a statement reads (`statement_reads`, `recur._accesses`) and the derived sizes it
  uses (`ir._statement_derived_sizes`), put together from its terms, are those a walk
  over its whole body finds;
* Fourier-Motzkin elimination (`bounds.infeasible`) decides every system as the
  elimination that counted each variable's signs over every constraint did.
"""
import random

import pytest

import tensorlang as tl
from tensorlang import bounds, costs
from tensorlang.memo import Memo
from tensorlang.check import BoundsChecker
from tensorlang.errors import ErrorSink
from tensorlang.loops import plan_program, plan_statement
from tensorlang.ssa import ir, recur
from tensorlang.ssa.ir import Access, SizeValue, SizeVar, Term
from tensorlang.ssa.traverse import iter_nodes, statement_reads, tensor_reads

from newuser2_programs import PROGRAMS as NEWUSER2
from newuser4_programs import PROGRAMS as NEWUSER4

# Derived sizes and window sums (ssim), scatters through i64 tables (stn), a recurrence
# group (iir2), bands and strided reads (interp).
CASES = [("ssim", NEWUSER4, "jvp"), ("stn", NEWUSER4, "grad"), ("iir2", NEWUSER2, "grad"),
         ("interp", NEWUSER2, "grad")]


def derive(name, programs, kind):
    fn = tl.parse(programs[name]["src"], filename=f"{name}.tl")[name]
    f64 = tuple(p.name for p in fn.program.params if p.elem == "f64")
    d = getattr(tl, kind)(fn, wrt=f64)
    return [fn.optimized_program(), d.optimized_program()]


@pytest.mark.parametrize("name,programs,kind", CASES, ids=[c[0] for c in CASES])
def test_a_statement_costed_from_remembered_term_groups_costs_what_its_plan_does(
        name, programs, kind, monkeypatch):
    seen = []
    remembered = costs.CostModel.statement_of

    def statement_of(self, s):
        out = remembered(self, s)
        seen.append(out == self.statement(plan_statement(s, self.base)))
        return out
    monkeypatch.setattr(costs.CostModel, "statement_of", statement_of)
    costs.forget_cached_costs()     # or costs the tests before remembered answer instead
    for prog in derive(name, programs, kind):
        model = costs.CostModel(prog)
        for s in prog.stmts:            # (again: now from the remembered groups)
            statement_of(model, s)
    assert len(seen) > 20 and all(seen)


def whole_walk_sizes(st):
    """The derived sizes of st as one walk over its indices and body finds them."""
    from tensorlang import sizexpr
    out = []

    def note(d):
        if isinstance(d, str) and d not in out and sizexpr.is_derived(d):
            out.append(d)
    for _, d in st.indices:
        note(d)
    for n in iter_nodes(st.body):
        if n.__class__ is Term:
            for _, d in n.sums:
                note(d)
        elif n.__class__ in (SizeVar, SizeValue):
            note(n.name)
    return tuple(out)


@pytest.mark.parametrize("name,programs,kind", CASES, ids=[c[0] for c in CASES])
def test_reads_and_sizes_put_together_from_terms_are_those_of_the_whole_body(name, programs,
                                                                             kind):
    stmts = [s for prog in derive(name, programs, kind) for s in prog.stmts]
    for s in stmts:
        assert statement_reads(s) == frozenset(tensor_reads(s.body))
        assert [(r.reader, r.target, r.access) for r in recur._accesses(s)] == \
            [(s.name, n.name, n) for n in iter_nodes(s.body) if n.__class__ is Access]
        assert ir._statement_derived_sizes(s) == whole_walk_sizes(s)
    assert any(ir._statement_derived_sizes(s) for s in stmts) or name != "ssim"


def infeasible_counting_every_constraint(constraints) -> bool:
    """Fourier-Motzkin as it was written before signs were counted once per round."""
    cons = set(constraints)
    while True:
        live = set()
        for coefs, k in cons:
            if not coefs:
                if k < 0:
                    return True
                continue
            live.add((coefs, k))
        cons = live
        if not cons:
            return False
        variables = {v for coefs, _ in cons for v, _ in coefs}
        best, best_cost = None, None
        for v in sorted(variables):
            pos = sum(1 for coefs, _ in cons if dict(coefs).get(v, 0) > 0)
            neg = sum(1 for coefs, _ in cons if dict(coefs).get(v, 0) < 0)
            cost = pos * neg - pos - neg
            if best_cost is None or cost < best_cost:
                best, best_cost = v, cost
        v = best
        pos, neg, rest = [], [], []
        for coefs, k in cons:
            c = dict(coefs).get(v, 0)
            (pos if c > 0 else neg if c < 0 else rest).append((dict(coefs), k, c))
        new = {(tuple(sorted(d.items())), k) for d, k, _ in rest}
        for dp, kp, cp in pos:
            for dn, kn, cn in neg:
                a, b = -cn, cp
                coefs = {}
                for var in set(dp) | set(dn):
                    if var == v:
                        continue
                    c = a * dp.get(var, 0) + b * dn.get(var, 0)
                    if c:
                        coefs[var] = c
                new.add(bounds._tighten(coefs, a * kp + b * kn))
        if len(new) > bounds.MAX_CONSTRAINTS:
            return False
        cons = new


def test_elimination_decides_the_corpus_systems_as_before(monkeypatch):
    programs = derive("ssim", NEWUSER4, "jvp") + derive("interp", NEWUSER2, "grad")
    systems = []
    decide = bounds.infeasible

    def infeasible(constraints):
        systems.append(frozenset(constraints))
        return decide(constraints)
    monkeypatch.setattr(bounds, "infeasible", infeasible)
    # every proof the bounds check and the loop plans of the derivatives ask, afresh
    monkeypatch.setattr(bounds, "_PROOFS", Memo(50_000))
    monkeypatch.setattr(bounds, "_SPLITS", Memo(20_000))
    for prog in programs:
        BoundsChecker(prog, ErrorSink()).run()
        plan_program(prog)
    assert len(systems) > 30
    for cons in systems:
        assert decide(cons) == infeasible_counting_every_constraint(cons)


def test_elimination_decides_random_systems_as_before():
    rng = random.Random(1)
    names = ["i:a", "i:b", "s:n", "s:m", "i:c", "s:k"]
    for _ in range(3000):
        cons = []
        for _ in range(rng.randint(1, 9)):
            coefs = {v: rng.choice([-3, -2, -1, 1, 2, 3])
                     for v in rng.sample(names, rng.randint(0, 4))}
            cons.append(bounds._tighten(coefs, rng.randint(-5, 5)))
        assert bounds.infeasible(cons) == infeasible_counting_every_constraint(cons)


def test_the_unfiltered_work_of_a_step_from_remembered_terms_is_its_plans(monkeypatch):
    # a recurrence's work guarded by a test of the step alone ([t >= 1], [t >= 2]) is
    # counted over the steps where it holds (CostModel.step_member)
    from tensorlang.loops import StmtPlan
    seen = []
    remembered = costs.CostModel.unfiltered_work

    def unfiltered_work(self, s, bare, elements):
        out = remembered(self, s, bare, elements)
        seen.append(out == self.statement(StmtPlan(s, bare, ())) - elements)
        return out
    monkeypatch.setattr(costs.CostModel, "unfiltered_work", unfiltered_work)
    monkeypatch.setattr(costs, "_STATEMENT_COSTS", Memo(20_000))    # (costed here)
    for name in ("iir2", "pendulum"):
        derive(name, NEWUSER2, "grad")
    assert len(seen) > 5 and all(seen)


def test_hoisting_reductions_passes_by_statements_without_one_as_it_rewrote_them(monkeypatch):
    from pathlib import Path
    from tensorlang.opt import hoist
    from tensorlang.ssa.names import supply
    root = Path(__file__).resolve().parent.parent
    progs = []
    for path in sorted(root.glob("examples/*.tl")):
        module = tl.parse(path.read_text())
        progs += [module[name].program for name in module.names]
    progs = [p for p in progs if any(hoist._holds_reduction(s) for s in p.stmts)]
    assert len(progs) >= 3
    for prog in progs:
        with supply():
            skipping = hoist.hoist_reductions(prog)
        with monkeypatch.context() as m:
            m.setattr(hoist, "_holds_reduction", lambda s: True)
            with supply():
                walking = hoist.hoist_reductions(prog)
        assert skipping == walking and (skipping is prog) == (walking is prog)

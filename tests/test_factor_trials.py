"""The parts of a factoring trial (opt/factor.py) that are remembered or put together from
the statement it rewrites equal what they replace, on every trial that building the
Hessians of the user programs that took longest to build makes:

* the factored statement's body (`factor._body_with`) is canon_body of its kept terms
  and the factored term;
* its cost from the terms it changes (`costs._cost_from_changes`) is the cost of its
  plan;
* the bounds proof of a trial statement term by term (`factor._reads_in_bounds`) decides
  as the proof of the whole statement;
* the stored statement proved with the indices named as the statement it comes from
  names them (`factor._store`) is proved as under its own fresh generators;
* a statement whose group of gather terms under shared brackets gains or loses a term is
  costed from the groups' costs as it is whole (`costs.CostModel.filter_group_cost`);
* a remembered stored statement (`factor._stored`) is the one built afresh, but for the
  names of its generators;
* scatter passes (`loops.fuse_scatters`, which remembers how a term joins a pass) are
  those of joining every term afresh.
"""
import pytest

import tensorlang as tl
from tensorlang import costs, loops
from tensorlang.check import BoundsChecker
from tensorlang.errors import ErrorSink
from tensorlang.loops import plan_statement, plan_term
from tensorlang.memo import Memo
from tensorlang.opt import factor, simplify
from tensorlang.ssa import build as B
from tensorlang.ssa import traverse as T
from tensorlang.ssa.ir import Affine, IndexVar, Stmt
from tensorlang.ssa.names import fresh

from newuser_programs import PROGRAMS as NEWUSER
from newuser5_programs import PROGRAMS as NEWUSER5
from newuser6_programs import PROGRAMS as NEWUSER6
from newuser7_programs import PROGRAMS as NEWUSER7

# Scatters through edge lists (posegraph, truss), matrix products under gates (glu).
CASES = [("posegraph", NEWUSER5, "P"), ("truss", NEWUSER6, "u"), ("glu", NEWUSER6, "X")]
IDS = [c[0] for c in CASES]


@pytest.fixture
def afresh(monkeypatch):
    """Derivatives built here, not found in the memos of the tests before."""
    monkeypatch.setattr(simplify, "_SIMPLIFIED", Memo(2_000))
    for name in ("_TRIALS", "_STORED", "_PROVEN", "_PARTS", "_NORMAL_KEYS"):
        monkeypatch.setattr(factor, name, Memo(20_000))
    costs.forget_cached_costs()


def hessian(name, programs, wrt):
    fn = tl.parse(programs[name]["src"], filename=f"{name}.tl")[name]
    return tl.hessian(fn, wrt=wrt).optimized_program()


def costs_from_changes_checked(monkeypatch, every: int = 1) -> list:
    """Has every `every`-th statement costed from its changes (`costs._cost_from_changes`)
    compared with the cost of its plan; the list the outcomes go to (one per statement
    costed from its changes: True or False where compared, None where not).  Planning
    and costing a statement whole is what the changes save: comparing each of icp's
    two thousand trials took six times as long as building its Hessian."""
    costed = []
    from_changes = costs._cost_from_changes

    def checked(before, after, prog):
        out = from_changes(before, after, prog)
        if out is not None:
            if len(costed) % every:
                costed.append(None)
            else:
                model = costs.CostModel(prog)
                costed.append(out == model.statement(plan_statement(after, model.base)))
        return out
    monkeypatch.setattr(costs, "_cost_from_changes", checked)
    return costed


# Hessians whose factoring trials add or remove gather terms that share their brackets
# with other terms of the statement (`[k == F[q, 0]] * ...` of a pairwise sum).
# (ising's Hessian had such trials until tanh' became the one factor tanh_slope(tanh(..)):
# it no longer has two terms to factor, and nbody's stands in for it.)
GROUPED = [("coulomb", NEWUSER, "X"), ("nbody", NEWUSER, "X"), ("ndcg", NEWUSER7, "S")]
GROUPED_IDS = [c[0] for c in GROUPED]

# Each watcher below replaces one remembered or assembled part of a trial by a wrapper
# that also builds the part afresh and records whether the two agree; a test installs
# several and builds a Hessian once (building it is what takes the time).


def watch_filter_groups(monkeypatch) -> list:
    """The filter groups `costs.CostModel.filter_group_cost` is asked about."""
    groups = []
    group_cost = costs.CostModel.filter_group_cost

    def counted(self, s, filters):
        groups.append(filters)
        return group_cost(self, s, filters)
    monkeypatch.setattr(costs.CostModel, "filter_group_cost", counted)
    return groups


def watch_stored_proofs(monkeypatch) -> list:
    """Whether each stored statement `factor._in_bounds` proves is proved as under
    fresh generators of its own."""
    seen = []
    in_bounds = factor._in_bounds

    def checked(prog, k, stmt):
        out = in_bounds(prog, k, stmt)
        # (h's generators as `_store` names them; their proofs are remembered nowhere)
        gens = tuple((fresh(n), d) for n, d in stmt.indices)
        rename = {n: Affine.of(IndexVar(m)) for (n, _), (m, _) in zip(stmt.indices, gens)}
        body = B.canon_body([T.substitute_term(t, rename) for t in stmt.body])
        seen.append(out == in_bounds(prog, k, Stmt(stmt.name, gens, body)))
        return out
    monkeypatch.setattr(factor, "_in_bounds", checked)
    return seen


def watch_factored_bodies(monkeypatch, every: int = 1) -> list:
    """Whether every `every`-th factored body `factor._body_with` puts together is
    canon_body of its kept terms and the factored term (None where not compared)."""
    bodies = []
    body_with = factor._body_with

    def checked_body(s, kept, main):
        out = body_with(s, kept, main)
        if len(bodies) % every:
            bodies.append(None)
        else:
            bodies.append(repr(out) == repr(B.canon_body(list(kept) + [main])))
        return out
    monkeypatch.setattr(factor, "_body_with", checked_body)
    return bodies


def watch_term_proofs(monkeypatch) -> list:
    """Whether each trial statement proved term by term (`factor._reads_in_bounds`) is
    proved as the bounds stage proves it whole."""
    seen = []
    by_terms = factor._reads_in_bounds

    def checked(trial, stmt):
        out = by_terms(trial, stmt)
        sink = ErrorSink()
        checker = BoundsChecker(trial, sink)
        checker.body(stmt.body, checker.base.with_ranges(stmt.indices), dict(stmt.indices))
        seen.append(out == (not sink))
        return out
    monkeypatch.setattr(factor, "_reads_in_bounds", checked)
    return seen


def renamed(stored, gens):
    """The body of a stored statement `stored` (as `_stored` gives it) with its generators
    named `gens`, its terms as text in sorted order."""
    rename = {n: Affine.of(IndexVar(m)) for (n, _), (m, _) in zip(stored[0], gens)}
    return sorted(repr(t) for t in B.canon_body([T.substitute_term(t, rename)
                                                 for t in stored[1]]))


def watch_remembered_stores(monkeypatch) -> list:
    """Whether each stored statement `factor._stored` remembers is the one `factor._store`
    builds afresh, but for the names of its generators."""
    seen = []
    stored = factor._stored

    def checked(prog, k, common, members, name):
        out = stored(prog, k, common, members, name)
        again = factor._store(prog, k, common, members, name)
        if out is None or again is None:
            seen.append(out is again)
        else:
            seen.append(out[2:] == again[2:]
                        and [d for _, d in out[0]] == [d for _, d in again[0]]
                        and renamed(out, again[0]) == sorted(map(repr, again[1])))
        return out
    monkeypatch.setattr(factor, "_stored", checked)
    return seen


def passes_joined_afresh(plans, gens, base):
    """fuse_scatters, every term planned again for each pass it may join."""
    passes = []
    for tp in plans:
        depth = tp.solve_depth
        for group in passes:
            head = group[0]
            if depth == 0 or head.solve_depth != depth:
                continue
            term = loops._loops_renamed(tp, head, depth, {g for g, _ in gens})
            if term is None:
                continue
            again = plan_term(term, gens, base, top=True)
            if again.solve_depth == depth and again.loops[:depth] == head.loops[:depth]:
                group.append(again)
                break
        else:
            passes.append([tp])
    return tuple(tuple(g) for g in passes)


def watch_scatter_joins(monkeypatch) -> list:
    """Whether the scatter passes of each statement (`loops.fuse_scatters`, which
    remembers how a term joins a pass) are those of joining every term afresh."""
    seen = []
    fuse = loops.fuse_scatters

    def checked(plans, gens, base):
        out = fuse(plans, gens, base)
        seen.append(out == passes_joined_afresh(plans, gens, base))
        return out
    monkeypatch.setattr(costs, "fuse_scatters", checked)
    return seen


@pytest.mark.parametrize("name,programs,wrt", CASES, ids=IDS)
def test_every_remembered_part_of_a_trial_is_what_it_replaces(name, programs, wrt, afresh,
                                                              monkeypatch):
    """posegraph's, truss's and glu's Hessians, every watcher at once."""
    proofs = watch_stored_proofs(monkeypatch)
    bodies = watch_factored_bodies(monkeypatch)
    costed = costs_from_changes_checked(monkeypatch)
    term_proofs = watch_term_proofs(monkeypatch)
    stores = watch_remembered_stores(monkeypatch)
    joins = watch_scatter_joins(monkeypatch)
    hessian(name, programs, wrt)
    assert len(proofs) >= 5 and all(proofs), "a stored statement proved otherwise afresh"
    assert len(bodies) >= 10 and all(bodies), "a factored body unlike canon_body's"
    # (posegraph's statements have terms that share their brackets, and are costed whole;
    # glu's fewer since sigmoid' is one factor, 20 -> 15)
    assert len(costed) >= {"glu": 12, "truss": 1}.get(name, 0) and all(costed), \
        "a cost from the changes unlike the plan's"
    assert len(term_proofs) >= 10 and all(term_proofs), "a term-by-term proof unlike the whole's"
    assert len(stores) >= 10 and all(stores), "a remembered stored statement unlike a new one"
    assert len(joins) >= 10 and all(joins), "scatter passes unlike those joined afresh"


@pytest.mark.parametrize("name,programs,wrt", GROUPED, ids=GROUPED_IDS)
def test_a_statement_whose_bracket_group_changes_is_costed_as_it_is_whole(
        name, programs, wrt, afresh, monkeypatch):
    costed = costs_from_changes_checked(monkeypatch)
    groups = watch_filter_groups(monkeypatch)
    proofs = watch_stored_proofs(monkeypatch)
    hessian(name, programs, wrt)
    assert len(groups) >= 8 and len(costed) >= 4 and all(costed)
    assert len(proofs) >= 5 and all(proofs), "a stored statement proved otherwise afresh"


def test_icps_factored_statements_are_put_together_and_costed_as_they_are_whole(
        afresh, monkeypatch):
    # (icp's 1,200 to 2,000 trials factor one 92-term statement of scatter terms: one in
    # eight is compared; fewer since a sum of gathered reads the program reads unguarded
    # anyway is stored without the scatter's bracket, 830 N -> 583 N)
    bodies = watch_factored_bodies(monkeypatch, every=8)
    costed = costs_from_changes_checked(monkeypatch, every=8)
    hessian("icp", NEWUSER5, "src")
    assert len(bodies) >= 10 and False not in bodies
    assert len(costed) >= 1000 and False not in costed

"""The cost of a factoring trial from the statements it changes (costs.splice_cost):
on every trial the derivatives of the corpus's recurrence programs make, the polynomial
is the one costing the trial program whole gives, and recurrence members are costed so
(not whole).  (RK4: its jvp's 909 trials below; its gradient and Hessian factor the
same group again and took half a minute more here.)"""
import collections
from pathlib import Path

import pytest

import tensorlang as tl
from tensorlang import costs
from tensorlang.memo import Memo
from tensorlang.opt import factor, simplify
from tensorlang.ssa.ir import splice
from tensorlang.ssa.recur import recurrences

from newuser2_programs import PROGRAMS as NEWUSER2

ROOT = Path(__file__).resolve().parent.parent

RECURRENCE_PROGRAMS = [(f"examples/{name}.tl", (ROOT / "examples" / f"{name}.tl").read_text())
                       for name in ("rnn", "lstm", "hmm", "soft_dtw")]
RECURRENCE_PROGRAMS += [(f"newuser2:{name}", NEWUSER2[name]["src"])
                        for name in ("iir2", "pendulum", "neural_ode", "heat2d", "birnn",
                                     "hmm2", "cumlse")]


def comparing(monkeypatch, afresh: bool) -> list:
    """Every trial factor_common_products costs: (costed from its changes?, equal to the
    whole-program cost?, the trial statement in a recurrence group of its program?).
    `afresh`: a group member's trial is costed whole with nothing remembered of
    statement and group costs, so a share splice_delta remembered under another
    costing's key shows (it costs a third more time)."""
    seen = []

    def splice_cost(old, k, put):
        delta = costs.splice_delta(old, k, put)
        grouped = any(old.stmts[k].name in g.members for g in recurrences(old))
        remembered = costs._STATEMENT_COSTS
        if afresh and grouped:
            costs._STATEMENT_COSTS = Memo(remembered.limit)
        try:
            whole = costs.CostModel(splice(old, k, k + 1, put)).program()
        finally:
            costs._STATEMENT_COSTS = remembered
        if delta is not None:
            seen.append((True, costs.program_cost(old) + delta == whole, grouped))
        else:
            seen.append((False, True, grouped))
        return whole
    monkeypatch.setattr(factor, "splice_cost", splice_cost)
    return seen


@pytest.fixture
def compared(monkeypatch):
    return comparing(monkeypatch, afresh=False)


@pytest.fixture
def compared_afresh(monkeypatch):
    return comparing(monkeypatch, afresh=True)


@pytest.mark.parametrize("label,src", RECURRENCE_PROGRAMS, ids=[lb for lb, _ in RECURRENCE_PROGRAMS])
def test_a_trial_costed_from_its_changes_costs_what_the_whole_program_does(label, src, compared):
    module = tl.parse(src)
    for fn in (module[name] for name in module.names):
        f64 = tuple(p.name for p in fn.program.params if p.elem == "f64")
        derivatives = [tl.jvp(fn, wrt=f64)]
        if fn.program.returns_scalar():
            derivatives += [tl.grad(fn, wrt=f64), tl.hessian(fn, wrt=f64[0])]
        for d in [fn] + derivatives:
            every_trial_of(d.optimized_program(), compared)
    # (some programs have no common factor to try: rnn.tl)
    assert all(equal for _, equal, _ in compared)


def every_trial_of(prog, compared):
    """Each factoring of prog's statements that _rewrite builds, costed both ways (the
    finished programs still hold common factors the cost guard declined)."""
    used = {p.name for p in prog.params} | {s.name for s in prog.stmts} | set(prog.sizes())
    for k, s in enumerate(prog.stmts):
        for common, members in factor._candidates(s):
            new = factor._rewrite(prog, k, common, members, used)
            if new is not None:
                factor.splice_cost(prog, k, new.stmts[k:k + 2])


def test_rk4_jvp_trials_on_recurrence_members_are_costed_from_their_changes(compared,
                                                                           monkeypatch):
    monkeypatch.setattr(simplify, "_SIMPLIFIED", Memo(2_000))     # (derived here, not before)
    fn = tl.parse(NEWUSER2["rk4"]["src"]).rk4
    tl.jvp(fn, wrt=("y0", "r", "K", "h", "obs")).optimized_program()
    kinds = collections.Counter((incremental, grouped) for incremental, _, grouped in compared)
    assert kinds[True, True] >= 500         # (909 trials, every one on a group member)
    assert kinds[False, True] == 0
    assert all(equal for _, equal, _ in compared)


def test_a_trial_whose_statement_leaves_its_group_is_costed_whole():
    # k reads h[t - 1] and h reads k[t]: a rewrite of k that no longer reads h takes k
    # out of the group; the group is then h alone, and the delta does not follow.
    fn = tl.parse("""
def f(x: f64[T], a: f64) -> f64:
    k[t: T] = [t >= 1] * a * h[t - 1] + x[t]
    h[t: T] = [t == 0] * x[t] + [t >= 1] * k[t] * a
    return sum[t](h[t])
""").f
    prog = fn.program
    assert recurrences(prog)
    k = next(j for j, s in enumerate(prog.stmts) if s.name == "k")
    s = prog.stmts[k]
    alone = type(s)(s.name, s.indices, tuple(t for t in s.body if "h" not in str(t)), s.span)
    assert costs.splice_delta(prog, k, (alone,)) is None
    new = splice(prog, k, k + 1, (alone,))
    assert costs.splice_cost(prog, k, (alone,)) == costs.CostModel(new).program()


def test_a_trial_with_derived_sizes_outside_groups_is_costed_from_its_changes(compared,
                                                                              monkeypatch):
    # ssim's window sums range over h - k + 1: while the trial program's sizes are the
    # old program's, its cost is the old cost minus the statement's plus the new ones'
    from newuser4_programs import PROGRAMS as NEWUSER4
    monkeypatch.setattr(simplify, "_SIMPLIFIED", Memo(2_000))     # (derived here, not before)
    fn = tl.parse(NEWUSER4["ssim"]["src"]).ssim
    d = tl.jvp(fn, wrt=("x", "y", "win"))
    every_trial_of(d.optimized_program(), compared)
    kinds = collections.Counter((incremental, grouped) for incremental, _, grouped in compared)
    assert kinds[True, False] >= 100
    assert all(equal for _, equal, _ in compared)
    assert any(costs.splice_delta(d.optimized_program(), k, (s,)) is not None
               for k, s in enumerate(d.optimized_program().stmts) if "-" in str(s.dims))


def test_a_member_share_is_the_one_its_group_costing_gives(compared_afresh, monkeypatch):
    # Levinson's recursion sums over k < t inside its step: under the step facts
    # (t - 1 < P) the step's sum is counted over the triangle, and the share a trial
    # remembers must be that count, not the one of the step program without them
    # (the two were remembered under one key, and later trials read whichever came
    # first: a gradient's cost depended on the order the rules had tried things in).
    from newuser11_programs import PROGRAMS as NEWUSER11
    monkeypatch.setattr(simplify, "_SIMPLIFIED", Memo(2_000))     # (derived here, not before)
    fn = tl.parse(NEWUSER11["levinson"]["src"]).levinson
    tl.grad(fn, wrt="x").optimized_program()
    kinds = collections.Counter((incremental, grouped)
                                for incremental, _, grouped in compared_afresh)
    assert kinds[True, True] >= 5
    assert all(equal for _, equal, _ in compared_afresh)

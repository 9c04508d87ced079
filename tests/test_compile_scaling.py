"""Compile time of long and deep programs, by operation counts (speed lives in
benchmarks/compile_time_scaling.py): a chain of statements is simplified without a
whole-program cost per statement and without reaching the round limit, a function that
calls another twice inlines one copy of it, and a round limit that is reached says where."""
import warnings

import numpy as np
import pytest

import tensorlang as tl
from benchmarks.compile_time_scaling import chain_source, nest_source
from tensorlang import costs
from tensorlang.opt import engine
from tensorlang.opt.engine import Rule, RoundLimit, run_rules
from tensorlang.opt.simplify import propagate_copies
from tensorlang.ssa.inline import distinct_statements
from tensorlang.ssa import build as B
from tensorlang.ssa.ir import Apply, Program, Stmt, Term


@pytest.fixture
def whole_costings(monkeypatch):
    """The number of programs costed whole (CostModel.program) so far."""
    count = [0]
    program = costs.CostModel.program

    def counted(self):
        count[0] += 1
        return program(self)
    monkeypatch.setattr(costs.CostModel, "program", counted)
    return count


def test_a_chain_of_copies_is_simplified_without_costing_it_once_per_copy(whole_costings):
    # 150 statements, 50 of them scaled copies `y[i] * 1.01`: each substitution asks
    # whether the program got cheaper.  Costed whole every time (and one copy per
    # round) this took 41 whole costings for the function and stopped at the round limit.
    f = tl.parse(chain_source(150) + "\n# scaling chain\n").f
    with warnings.catch_warnings():
        warnings.simplefilter("error", RoundLimit)
        prog = f.optimized_program()
        grad = tl.grad(f, wrt="x").optimized_program()
    assert whole_costings[0] <= 8
    # every copy is gone: the sin and square statements remain, one each
    assert len(prog.stmts) == 101
    assert not any(s.name.startswith("y") and len(s.body) == 1 and len(s.body[0].factors) == 1
                   and s.body[0].factors[0][0].__class__.__name__ == "Access"
                   for s in grad.stmts)
    x = np.linspace(0.0, 1.0, 6)
    g = tl.grad(f, wrt="x").compile(backend="numpy")(x)
    eps = 1e-6
    fd = [(f.compile(backend="numpy")(x + eps * e) - f.compile(backend="numpy")(x - eps * e))
          / (2 * eps) for e in np.eye(6)]
    np.testing.assert_allclose(g, fd, rtol=1e-5, atol=1e-8)


def test_propagate_copies_substitutes_every_copy_in_one_application():
    f = tl.parse("""
def f(x: f64[n]) -> f64:
    a[i] = sin(x[i])
    b[i] = 2.0 * a[i]
    c[i] = b[i]
    d[i] = 3.0 * c[i]
    e[i] = cos(d[i]) * d[i]
    return sum[i](e[i])
""").f
    once = propagate_copies(f.program)
    assert [s.name for s in once.stmts] == ["a", "e", "out"]
    assert propagate_copies(once) is once


def test_the_cost_of_a_substitution_is_the_cost_of_the_program_it_makes():
    # costs.rewrite_cost derives the cost of the rewritten program from the statements
    # the rewrite changed: it must be the polynomial the whole program costs.
    prog = tl.parse(chain_source(12)).f.program
    copy = next(s for s in prog.stmts if s.name == "y2")
    reader = next(s for s in prog.stmts if s.name == "y3")
    read = reader.body[0].factors[0][0].args[0][0].factors[0][0]        # sin(y2[i])
    substituted = B.mul(copy.body, (Term(1.0, (), (), ()),), set())
    new_reader = Stmt("y3", reader.indices, B.canon_body([Term(
        reader.body[0].coeff, (), (), ((Apply("sin", (substituted,)), 1.0),))]), reader.span)
    assert read.name == "y2"
    new = Program(prog.name, prog.params, tuple(new_reader if s is reader else s
                                                for s in prog.stmts if s is not copy),
                  prog.outputs)
    assert costs.statementwise(prog)
    delta = costs.rewrite_cost(prog, {reader: new_reader}, (copy,))
    assert costs.program_cost(prog) + delta == costs.CostModel(new).program()


def test_a_function_called_twice_alike_is_inlined_once():
    # f_k calls f_(k-1) twice with the same argument: inlined as written, top would
    # hold 2^10 copies of f_0's statement.
    mod = tl.parse(nest_source(10))
    assert len(mod.top.program.stmts) <= 3 * 10
    x = np.linspace(0.0, 1.0, 5)
    y = np.sin(x) * 1.01
    for _ in range(10):
        y = 1.5 * y
    assert mod.top.compile(backend="numpy")(x) == pytest.approx(y.sum())


def test_distinct_statements_keeps_the_first_of_equal_ones():
    mod = tl.parse("""
def g(x: f64[n]) -> f64[n]:
    a[i] = exp(x[i])
    b[i] = exp(x[i])
    c[i] = a[i] + 1.0
    d[i] = b[i] + 1.0
    e[i] = c[i] * d[i]
    return e
""")
    kept, same = distinct_statements(mod.g.program)
    assert [s.name for s in kept] == ["a", "c", "e"]
    assert same == {"b": "a", "d": "c"}


LIMIT_SOURCE = "def f(x: f64[n]) -> f64:\n    y[i] = sin(x[i]) * 2.0\n    return sum[i](y[i])\n"


def round_limit_warning(prog):
    """The RoundLimit warning of three rounds of a rule that flips y's sign each time."""
    flip = Rule("flip_coefficient", lambda p: Program(p.name, p.params, tuple(
        Stmt(s.name, s.indices, tuple(Term(-t.coeff, t.sums, t.pred, t.factors) for t in s.body), s.span)
        if s.name == "y" else s for s in p.stmts), p.outputs), "a rule that never settles")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run_rules(prog, [flip], max_rounds=3)
    [w] = [w for w in caught if w.category is RoundLimit]
    return w


def test_the_round_limit_says_what_still_changed_and_where():
    w = round_limit_warning(tl.parse(LIMIT_SOURCE, filename="limit.tl").f.program)
    assert (w.filename, w.lineno) == ("limit.tl", 2)
    assert "stopped after 3 rounds" in str(w.message)
    assert "flip_coefficient (y)" in str(w.message)
    assert engine.MAX_ROUNDS == 20


def test_a_late_rule_that_settles_past_the_limit_is_no_round_limit():
    """Past the limit a round continues when it made the program cheaper, or when only
    late rules changed it (the others had settled): here a rule that makes a change
    per round for three rounds, then a late rule that rewrites once at no gain, with a
    limit of four rounds: the fourth round is the late rule's and the fifth settles."""
    prog = tl.parse(LIMIT_SOURCE, filename="late.tl").f.program
    seen = []

    def scale(coeff):
        def apply(p):
            return Program(p.name, p.params, tuple(
                Stmt(s.name, s.indices, tuple(Term(coeff, t.sums, t.pred, t.factors)
                                              for t in s.body), s.span)
                if s.name == "y" else s for s in p.stmts), p.outputs)
        return apply

    def steps(p):
        # 2.0 -> 3.0 -> 4.0 -> 5.0, one step a round
        c = p.stmt("y").body[0].coeff
        return scale(c + 1.0)(p) if 2.0 <= c < 5.0 else p

    def late(p):
        seen.append(p.stmt("y").body[0].coeff)
        c = p.stmt("y").body[0].coeff
        return scale(-5.0)(p) if c == 5.0 else p
    rules = [Rule("step", steps, "one step a round"),
             Rule("late_flip", late, "a late rewrite, once", late=True)]
    with warnings.catch_warnings():
        warnings.simplefilter("error", RoundLimit)
        out = run_rules(prog, rules, max_rounds=4)
    assert out.stmt("y").body[0].coeff == -5.0
    assert seen == [5.0, -5.0]
    # a rule that never settles still stops at the limit (with its warning)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run_rules(prog, [Rule("late_flip", lambda p: scale(-p.stmt("y").body[0].coeff)(p),
                              "never settles", late=True)], max_rounds=2)
    [w] = [w for w in caught if w.category is RoundLimit]
    assert "stopped after" in str(w.message)


def test_a_compiler_stage_runs_with_the_cycle_collector_paused():
    import gc
    from tensorlang.driver import run_stage
    assert gc.isenabled()
    inside = run_stage("probe", lambda: run_stage("nested", gc.isenabled))
    assert inside is False and gc.isenabled()
    with pytest.raises(tl.TLError):
        run_stage("probe", lambda: (_ for _ in ()).throw(ZeroDivisionError()))
    assert gc.isenabled()


def test_a_spliced_trial_keeps_the_sizes_it_would_find():
    from tensorlang.ssa.ir import splice
    prog = tl.parse("""
def f(x: f64[n], w: f64[k]) -> f64:
    y[i: n - k + 1] = sum[j](w[j] * x[i + j])
    z[i: n] = x[i] * 2.0
    return sum[i](y[i]) + sum[i](z[i])
""").f.program
    sizes = prog.sizes()
    plain = next(s for s in prog.stmts if s.name == "z")
    derived = next(s for s in prog.stmts if s.name == "y")
    for start, stop, new in [(0, 0, (plain,)), (1, 2, ()), (0, 1, ())]:
        out = splice(prog, start, stop, new)
        fresh = Program(out.name, out.params, out.stmts, out.outputs)
        assert out.sizes() == fresh.sizes()
    assert sizes == ["n", "k", "n - k + 1"] and derived.name == "y"


ROUND_LIMITED = [("newuser3", "option", "hvp", "dt"), ("newuser3", "option", "hessian", "dt"),
                 ("newuser2", "rk4", "hessian", "r")]


# The round limit these derivatives are simplified under here: factor_common_products
# factors every statement it can in one application, so they no longer reach the
# engine's own limit; past this one they still have rounds of work to do.
SMALL_ROUND_LIMIT = 1


@pytest.mark.parametrize("corpus,name,kind,wrt", ROUND_LIMITED,
                         ids=[f"{n}-{k}" for _, n, k, _ in ROUND_LIMITED])
def test_rounds_that_keep_making_the_program_cheaper_run_past_the_limit(corpus, name, kind, wrt,
                                                                       monkeypatch):
    # These derivatives need more rounds than SMALL_ROUND_LIMIT (they stopped at the
    # engine's limit with the RoundLimit warning when factor_common_products factored
    # one statement per application).  Every round past the limit makes the program
    # cheaper, so they run to a fixed point: the same values, no costlier.
    import test_newuser_programs as nu
    import newuser2_programs
    import newuser3_programs
    from tensorlang.memo import Memo
    from tensorlang.opt import simplify
    programs = {"newuser2": newuser2_programs, "newuser3": newuser3_programs}[corpus].PROGRAMS
    args = nu.inputs(name, 0, programs)
    if kind == "hvp":
        args[f"d_{wrt}"] = 0.7 * np.ones(np.shape(args[wrt]))
    defaults = list(engine.run_rules.__defaults__)
    defaults[-1] = SMALL_ROUND_LIMIT                # run_rules(..., max_rounds=...)
    monkeypatch.setattr(engine.run_rules, "__defaults__", tuple(defaults))

    def derived():
        monkeypatch.setattr(simplify, "_SIMPLIFIED", Memo(2_000))
        fn = nu.function(name, programs)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            d = getattr(tl, kind)(fn, wrt=wrt)
            d.optimized_program()
        return d, [w for w in caught if w.category is RoundLimit]
    d, limited = derived()
    assert not limited
    monkeypatch.setattr(engine, "PROGRESS_ROUNDS", 0)
    before, limited = derived()
    assert limited                      # (stopped at the limit)
    np.testing.assert_allclose(d.compile(backend="numpy")(**args),
                               before.compile(backend="numpy")(**args), rtol=1e-12, atol=1e-12)
    assert engine.cheaper_cost(tl.cost(d), tl.cost(before), strictly=False)


def test_the_key_of_like_terms_tries_only_placements_that_sort_the_ranges(monkeypatch):
    """alpha_key names a term's summed indices every way that can give the least key.
    The key compares the sums first, so only placements with the ranges in ascending
    order can: a term of five sums over five sizes is put in canonical form once (it
    was 120 times, and a gradient of a seven-index program took 16 s to build), two
    sums over one size twice, and renamed sums still give one key."""
    from tensorlang.opt import simplify
    from tensorlang.ssa.ir import Access, Affine, IndexVar

    def term(names, dims):
        idx = tuple(Affine.of(IndexVar(n)) for n in names)
        return Term(1.0, tuple(zip(names, dims)), (), ((Access("X", idx), 1.0),))

    calls = [0]
    canon = B.canon_term

    def counted(t):
        calls[0] += 1
        return canon(t)
    monkeypatch.setattr(simplify.B, "canon_term", counted)
    key = simplify.alpha_key(term("pqrst", "abcde"))
    assert calls[0] == 1
    assert simplify.alpha_key(term("tsrqp", "abcde")) == key
    calls[0] = 0
    simplify.alpha_key(term("pq", "nn"))
    assert calls[0] == 2


def test_a_round_limit_on_statements_without_a_place_is_located_in_the_function():
    """A derivative's statements have no place in the source; when only they still
    change, the warning is located at the program's last statement that has one."""
    prog = tl.parse(LIMIT_SOURCE, filename="limit.tl").f.program
    prog = Program(prog.name, prog.params, tuple(
        Stmt(s.name, s.indices, s.body, None) if s.name == "y" else s for s in prog.stmts),
        prog.outputs)
    w = round_limit_warning(prog)
    located = [s.span for s in prog.stmts if s.span is not None][-1]
    assert (w.filename, w.lineno) == ("limit.tl", located.line)
    assert str(w.message).startswith(f"limit.tl:{located.line}:")

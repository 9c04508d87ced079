"""The driver names every stage, and the strict verify runs after each of them."""
import pytest

import tensorlang as tl
from tensorlang import driver
from tensorlang.errors import TLInternalError
from tensorlang.ssa.ir import Access, Affine, Apply, IndexVar, Program, Stmt, Term
from tensorlang.ssa.verify import VerifyError, verify

SRC = """
def f(x: f64[n], A: f64[n, n]) -> f64:
    y[i] = sum[j](A[i, j] * x[j])
    return sum[i](tanh(x[i]) * y[i])
"""


SPLIT = "split terms into shared passes"


def program():
    return tl.parse(SRC)["f"].program


@pytest.mark.parametrize("kind,stages", [
    ("grad", ["simplify input", "name builtin arguments", "reverse mode", "simplify derivative",
              SPLIT]),
    ("vjp", ["simplify input", "name builtin arguments", "reverse mode", "simplify derivative",
             SPLIT]),
    ("jvp", ["simplify input", "name builtin arguments", "forward mode", "simplify derivative",
             SPLIT]),
    # (the gradient a Hessian differentiates keeps its terms together: no split)
    ("hvp", ["simplify input", "name builtin arguments", "reverse mode", "simplify derivative",
             "forward mode", "select tangent", "simplify derivative", SPLIT]),
    ("hessian", ["simplify input", "name builtin arguments", "reverse mode",
                 "simplify derivative", "forward mode", "select tangent", "hessian seeds",
                 "simplify derivative", SPLIT]),
])
def test_each_recipe_lists_its_stages_and_records_a_verified_program_per_stage(kind, stages):
    prog = program()
    assert [s.name for s in driver.recipe(kind, prog, ("x",))] == stages
    record = driver.Run()
    out = driver.derive(kind, prog, "x", record=record)
    assert [name for name, _ in record.steps] == ["unique binders"] + stages + ["readable binders"]
    for _, step in record.steps:
        verify(step)
    assert record.steps[-1][1] == out


def test_naive_recipes_skip_preparation_and_simplification():
    assert [s.name for s in driver.recipe("grad", program(), ("x",), optimize=False)] == \
        ["reverse mode"]


def test_binders_are_unique_inside_the_recipes_and_readable_outside():
    from tensorlang.ssa.names import is_internal
    from tensorlang.ssa.traverse import binder_names
    record = driver.Run()
    out = driver.derive("hessian", program(), "x", record=record)
    for name, step in record.steps[:-1]:
        for s in step.stmts:
            binders = [n for n, _ in s.indices] + sorted(binder_names(s.body))
            assert all(is_internal(n) for n in binders), (name, s.name)
    for s in out.stmts:
        assert not any(is_internal(n) for n, _ in s.indices)
        assert not any(is_internal(n) for n in binder_names(s.body))


def test_the_same_program_gets_the_same_names_every_time():
    a = driver.derive("hessian", program(), "x")
    b = driver.derive("hessian", program(), "x")
    assert a == b


def test_api_derivatives_are_the_driver_recipes():
    f = tl.parse(SRC)["f"]
    assert tl.grad(f, wrt="x").program == driver.derive("grad", f.program, "x")
    assert tl.hessian(f, wrt="x").program == driver.derive("hessian", f.program, "x")


def test_a_stage_that_breaks_an_invariant_is_reported_by_name(monkeypatch):
    monkeypatch.setenv("TENSORLANG_VERIFY", "1")
    prog = program()

    def drop_y(p):      # leaves a read of a statement that no longer exists
        return Program(p.name, p.params, p.stmts[1:], p.outputs, p.tuple_return)
    with pytest.raises(TLInternalError, match="verify after drop y"):
        driver.run_stages(prog, (driver.Stage("drop y", drop_y),))


def test_the_rule_trace_names_rules_and_statements():
    record = driver.Run()
    driver.derive("grad", program(), "x", record=record)
    trace = record.rules["simplify derivative"]
    assert ("eliminate_equality_brackets", "x_bar") in trace
    assert all(isinstance(r, str) and isinstance(s, str) for r, s in trace)


# ------------------------------------------------------------ verify itself
def _one_stmt(body, indices=(("i", "n"),)):
    from tensorlang.ssa.ir import Param
    return Program("g", (Param("x", "f64", ("n",)),), (Stmt("y", indices, body),), ("y",))


def _read(name, *names):
    return Access(name, tuple(Affine.of(IndexVar(v)) for v in names))


def test_verify_accepts_a_plain_statement():
    verify(_one_stmt((Term(1.0, (), (), ((_read("x", "i"), 1.0),)),)))


@pytest.mark.parametrize("body,message", [
    ((Term(1.0, (), (), ((_read("x", "k"), 1.0),)),), "unbound index k"),
    ((Term(1.0, (("i", "n"),), (), ((_read("x", "i"), 1.0),)),), "shadows"),
    ((Term(1.0, (), (), ((Apply("tanh", ((Term(1.0),), (Term(2.0),))), 1.0),)),),
     "tanh takes 1"),
    ((Term(1.0, (), (), ((Apply("no_such", ((Term(1.0),),)), 1.0),)),), "unknown builtin"),
    ((Term(1.0, (), (), (("not a node", 1.0),)),), "unknown factor node str"),
    ((Term(float("inf")),), "not a finite float"),
    ((Term(1.0, (), (), ((_read("z", "i"), 1.0),)),), "not defined before"),
    ((Term(1.0, (), (), ((_read("x", "i", "i"), 1.0),)),), "rank"),
])
def test_verify_rejects_broken_programs(body, message):
    with pytest.raises(VerifyError, match=message):
        verify(_one_stmt(body))


def test_names_made_after_choosing_a_candidate_are_fresh_for_the_one_chosen():
    """Forward mode builds its candidates from one position of the name supply; the
    one kept may have gone further than the last one built, and the Hessian's seed
    indices, made after the choice, must not be names it already uses (here the
    tangent of an importance-weighted bound reaches a statement with an index of
    the seed's name: a 'repeated statement index')."""
    import numpy as np
    src = ("def f(ls: f64[b, d], eps: f64[b, K, d]) -> f64:\n"
           "    logp[s, k] = -0.5 * sum[j](exp(ls[s, j]) * eps[s, k, j])\n"
           "    logq[s, k: K] = -sum[j](ls[s, j])\n"
           "    return sum[s](logsumexp[k](logp[s, k] - logq[s, k]))\n")
    f = tl.parse(src)["f"]
    verify(driver.derive("hessian", f.program, "ls"))
    rng = np.random.default_rng(0)
    ls, eps = 0.3 * rng.standard_normal((2, 3)), rng.standard_normal((2, 4, 3))
    g = tl.grad(f, wrt="ls")
    H = np.asarray(tl.hessian(f, wrt="ls")(ls=ls, eps=eps)).reshape(6, 6)
    for c in range(6):
        e = np.zeros(6)
        e[c] = 1e-6
        fd = (g(ls=ls + e.reshape(2, 3), eps=eps) - g(ls=ls - e.reshape(2, 3), eps=eps)) / 2e-6
        assert np.allclose(H[:, c], fd.ravel(), rtol=1e-5, atol=1e-6)


def test_a_read_before_its_statement_is_an_internal_error_not_a_key_error():
    """A program whose statements a compiler defect put out of order (the strict verify
    refuses it when on) is a TLInternalError naming the read, not a bare KeyError."""
    import dataclasses
    import numpy as np
    from tensorlang.backend.numpy_ref import Interpreter
    f = tl.parse("def f(x: f64[n]) -> f64:\n    y[i] = x[i] * 2.0\n    z[i] = y[i] + 1.0\n"
                 "    return sum[i](z[i])\n")["f"]
    p = f.program
    swapped = dataclasses.replace(p, stmts=(p.stmts[1], p.stmts[0]) + p.stmts[2:])
    with pytest.raises(tl.TLInternalError, match="f reads y before any statement writes it"):
        Interpreter(swapped).run({"x": np.ones(3)}, {"n": 3})

"""Forward mode through a divisor that every term of a statement shares.

`y = (a - b) / tau` has the tangent `(da - db) / tau - d_tau / tau * y`: the
divisor's tangent is one term reading the statement, where the product rule term by
term writes it once per term (ad/forward.common_divisor).  Checked: values against
finite differences and the vjp, the jvp's cost below the multiplied-out one and the
same for any index names, and statements the rule must leave alone.
"""
import warnings

import numpy as np
import pytest

import tensorlang as tl
from tensorlang.ad import forward
from derivcheck import dot_product_identity, f64_params, inputs_for, jvp_matches_fd

# {i}, {j}, {a}: index names, substituted per case
PAIRWISE = """
def pairwise(x: f64[n], v: f64[n], tau: f64) -> f64:
    r[{i}] = sum[{j}](sigmoid((x[{j}] - x[{i}]) / tau))
    return sum[{i}](v[{i}] * r[{i}])
"""
PER_ROW = """
def per_row(S: f64[q, n], t: f64[q]) -> f64:
    z[{a}, {i}, {j}] = (S[{a}, {j}] - S[{a}, {i}]) / t[{a}]
    return sum[{a}, {i}, {j}](tanh(z[{a}, {i}, {j}]))
"""
SQUARED = """
def squared(x: f64[n], w: f64[n], h: f64) -> f64:
    k[{i}, {j}] = (x[{i}] * w[{j}] - x[{j}]) / h ** 2
    return sum[{i}, {j}](exp(-k[{i}, {j}] * k[{i}, {j}]))
"""
# the divisor is in one term only: the rule must not apply
PARTLY = """
def partly(x: f64[n], tau: f64) -> f64:
    y[{i}, {j}] = x[{j}] / tau - x[{i}] * x[{j}]
    return sum[{i}, {j}](sin(y[{i}, {j}]))
"""
# the divisor is read at a summed index: not a factor of the statement
SUMMED = """
def summed(x: f64[n], s: f64[n]) -> f64:
    y[{i}] = sum[{j}](x[{j}] / s[{j}]) - x[{i}] / s[{i}]
    return sum[{i}](cos(y[{i}]))
"""
CASES = {"pairwise": PAIRWISE, "per_row": PER_ROW, "squared": SQUARED, "partly": PARTLY,
         "summed": SUMMED}
NAMES = [dict(i="i", j="j", a="a"), dict(i="zz", j="b", a="k"), dict(i="p", j="row", a="col")]


def parse(name, names):
    return tl.parse(CASES[name].format(**names), filename=f"{name}.tl")[name]


def jvp_cost(f):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", tl.TLCostWarning)
        return tl.cost(tl.jvp(f, wrt=tuple(f64_params(f))))


@pytest.mark.parametrize("name", sorted(CASES))
def test_values_against_finite_differences_and_the_vjp(name):
    for names in NAMES[:2]:
        f = parse(name, names)
        args = inputs_for(f, size=5, seed=3)
        for k in ("tau", "h"):
            if k in args:
                args[k] = 0.7      # away from zero
        if "t" in args:
            args["t"] = 0.5 + np.abs(args["t"])
        if "s" in args:
            args["s"] = 0.5 + np.abs(args["s"])
        wrt = f64_params(f)
        jvp_matches_fd(f, wrt, args, np.random.default_rng(4))
        dot_product_identity(f, wrt, args, np.random.default_rng(5))


@pytest.mark.parametrize("name", ["pairwise", "per_row", "squared"])
def test_the_divisor_tangent_is_one_term_and_cheaper(name, monkeypatch):
    """The jvp costs less with the rule than without it (the multiplied-out tangent),
    the same whatever the indices are called, and meets the certificate."""
    costs = set()
    for names in NAMES:
        f = parse(name, names)
        with warnings.catch_warnings():
            warnings.simplefilter("error", tl.TLCostWarning)
            costs.add(str(tl.cost(tl.jvp(f, wrt=tuple(f64_params(f))))))
    assert len(costs) == 1, costs
    with_rule = jvp_cost(parse(name, NAMES[0]))
    monkeypatch.setattr(forward, "common_divisor", lambda s, tangent: None)
    without = jvp_cost(parse(name, NAMES[0]))
    sizes = {s: 40 for s in with_rule.base_sizes() + without.base_sizes()}
    assert with_rule.evaluate(**sizes) < without.evaluate(**sizes), (str(with_rule), str(without))


def test_statements_the_rule_leaves_alone():
    """Divisors in some terms only, or read at a summed index, are no common factor."""
    from tensorlang.ssa.ir import Stmt
    for name in ("partly", "summed"):
        prog = parse(name, NAMES[0]).program
        y = next(s for s in prog.stmts if s.name == "y")
        tangent = {p.name: f"d_{p.name}" for p in prog.params}
        assert forward.common_divisor(y, tangent) is None, name
    pairwise = parse("per_row", NAMES[0]).program
    z = next(s for s in pairwise.stmts if s.name == "z")
    assert isinstance(z, Stmt)
    assert forward.common_divisor(z, {"t": "d_t", "S": "d_S"}) is not None
    # without a tangent of the divisor there is nothing to write once
    assert forward.common_divisor(z, {"S": "d_S"}) is None

"""Each derivative rule of the builtin table, checked on its own.

Every builtin is differentiated through a small program on inputs inside its
domain, and checked three ways: the gradient against central finite
differences, the dot-product identity between vjp and jvp, and the Hessian
against finite differences of the gradient (second derivatives of the rules).
"""
import numpy as np
import pytest

import tensorlang as tl
from derivcheck import check_close, dot_product_identity, grad_matches_fd

UNARY = ["exp", "log", "log1p", "sqrt", "sin", "cos", "tan", "tanh", "sigmoid", "abs"]
BINARY = ["max", "min", "pow"]

# (expression in x[i] and y[i], inputs that stay inside the domain)
CASES = {f: f"{f}(x[i])" for f in UNARY}
CASES.update({f: f"{f}(x[i], y[i])" for f in BINARY})
CASES.update({
    "power-constant": "x[i] ** 3",
    "power-fraction": "x[i] ** 1.5",
    "power-negative": "x[i] ** -2",
    "power-variable": "x[i] ** y[i]",
    "divide": "x[i] / (y[i] + x[i] * x[i])",
    "nested": "exp(sin(x[i]) * y[i]) / (1.0 + tanh(x[i] * y[i]) ** 2)",
})


def program(expr: str) -> str:
    return f"def f(x: f64[n], y: f64[n], w: f64[n]) -> f64:\n    return sum[i](w[i] * {expr})\n"


def domain_inputs(seed=0, n=6):
    rng = np.random.default_rng(seed)
    x = rng.uniform(0.3, 1.3, n)          # positive and away from tan's poles
    y = x + rng.choice([-1, 1], n) * rng.uniform(0.1, 0.5, n)   # no ties for max/min
    y = np.abs(y) + 0.2                    # positive exponents and bases
    w = rng.standard_normal(n)
    return {"x": x, "y": y, "w": w}


@pytest.mark.parametrize("name", list(CASES))
def test_rule_matches_finite_differences(name):
    f = tl.parse(program(CASES[name]))["f"]
    rng = np.random.default_rng(1)
    inputs = domain_inputs()
    wrt = ["x", "y", "w"]
    grad_matches_fd(f, wrt, inputs, rng)
    grad_matches_fd(f, wrt, inputs, rng, optimize=False)
    dot_product_identity(f, wrt, inputs, rng)


@pytest.mark.parametrize("name", [c for c in CASES if c not in ("abs", "max", "min")])
def test_second_derivative_of_rule(name):
    f = tl.parse(program(CASES[name]))["f"]
    inputs = domain_inputs(seed=2)
    H = tl.hessian(f, wrt="x")(**inputs)
    g = tl.grad(f, wrt="x")
    eps = 1e-6
    n = len(inputs["x"])
    fd = np.zeros((n, n))
    for k in range(n):
        plus, minus = dict(inputs), dict(inputs)
        plus["x"] = inputs["x"] + eps * np.eye(n)[k]
        minus["x"] = inputs["x"] - eps * np.eye(n)[k]
        fd[:, k] = (g(**plus) - g(**minus)) / (2 * eps)
    check_close(H, fd, f"Hessian of {name}", rtol=1e-5, atol=1e-6)
    check_close(H, H.T, f"symmetry of the Hessian of {name}", rtol=1e-9, atol=1e-9)


def test_every_builtin_has_a_rule_and_a_case():
    from tensorlang.ad.rules import PARTIALS
    from tensorlang.builtins import BUILTIN_NAMES
    assert set(PARTIALS) == set(BUILTIN_NAMES)
    assert set(BUILTIN_NAMES) <= set(CASES)


def test_value_predicates_pass_through_with_zero_derivative():
    f = tl.parse("def f(x: f64[n]) -> f64:\n    return sum[i]([x[i] > 0.0] * x[i] ** 2)\n")["f"]
    x = np.array([-1.0, 2.0, -0.5, 3.0])
    assert np.array_equal(tl.grad(f, wrt="x")(x), np.where(x > 0, 2 * x, 0.0))

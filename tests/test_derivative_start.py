"""Which program a derivative is taken of: the function's terms multiplied out, or the
program the function runs, whichever simplifies to the cheaper derivative
(driver._derived_from_cheaper_form)."""
import warnings

import numpy as np
import pytest

import tensorlang as tl
from derivcheck import (dot_product_identity, fd_jacobian, grad_matches_fd,
                        jvp_matches_fd, of_terms_multiplied_out)
from tensorlang.cli import main
from tensorlang.costs import rank_costs, scheduled_cost
from tensorlang.driver import derive
from tensorlang.errors import TLError

# A scalar factor before a sum of a difference: multiplied out, four matrix-vector
# products; as it runs, one (D times p_fac = (1 - r) (x - y)).
FACTORED = """
def f(D: f64[N, N], x: f64[N], y: f64[N], r: f64) -> f64:
    p[c] = (1.0 - r) * sum[t](D[c, t] * (x[t] - y[t]))
    return sum[c](p[c] ** 2)
"""

# A flux between neighbours through exp of the mean log-permeability: the Hessian in k
# taken of the program as it runs holds only the fill of the n x n result beside its
# banded entries; multiplied out, 13 n^2.
DARCY = """
def darcy(k: f64[n], u: f64[n], f: f64[n]) -> f64:
    q[i] = [i + 1 < n] * exp(0.5 * (k[i] + k[i + 1])) * (u[i + 1] - u[i])
    r[i] = [1 <= i] * [i + 1 < n] * (q[i] - q[i - 1] + f[i])
    return sum[i](r[i] ** 2)
"""


def _quiet(make):
    with warnings.catch_warnings():
        warnings.simplefilter("error", tl.TLCostWarning)
        return make()


def _costs(kind, fn, wrt):
    """(cost of tl.<kind>, of the derivative of the terms multiplied out, of the
    derivative of the program as it runs)."""
    runs = fn.optimized_program()
    chosen = tl.cost(getattr(tl, kind)(fn, wrt=wrt))
    w = (wrt,) if isinstance(wrt, str) else tuple(wrt)
    written, running = (scheduled_cost(derive(kind, fn.program, w, True, runs=runs,
                                              start=start))
                        for start in ("written", "runs"))
    return chosen, written, running


def test_a_factor_before_a_sum_is_differentiated_as_it_runs():
    f = tl.parse(FACTORED)["f"]
    wrt = ("D", "x", "y", "r")
    chosen, written, running = _costs("grad", f, wrt)
    assert str(written) == "17*N^2 + 26*N + 1"
    assert chosen == running and str(chosen) == "7*N^2 + 24*N + 1"
    rng = np.random.default_rng(0)
    args = dict(D=rng.standard_normal((5, 5)), x=rng.standard_normal(5),
                y=rng.standard_normal(5), r=0.3)
    grad_matches_fd(f, list(wrt), args, np.random.default_rng(1))
    jvp_matches_fd(f, list(wrt), args, np.random.default_rng(2))
    dot_product_identity(f, list(wrt), args, np.random.default_rng(3))


def test_the_cheaper_start_is_kept_either_way():
    """Of the two starts the cheaper derivative by rank_costs is kept, whichever it is:
    the factored flux makes the Hessian cheaper as it runs; a program the simplifier
    leaves as written has one start only."""
    chosen, written, running = _costs("hessian", tl.parse(DARCY)["darcy"], "k")
    keys = rank_costs([written, running])
    assert chosen == (running if keys[1] < keys[0] else written)
    assert str(chosen) == "n^2 + 152*n" and str(written) == "13*n^2 + 234*n"
    plain = tl.parse("def g(x: f64[n]) -> f64:\n    return sum[i](exp(x[i]) * x[i])\n")["g"]
    chosen, written, running = _costs("grad", plain, "x")
    assert chosen == written == running


def test_the_darcy_hessian_as_it_runs_is_right():
    f = tl.parse(DARCY)["darcy"]
    rng = np.random.default_rng(5)
    args = dict(k=0.3 * rng.standard_normal(6), u=rng.standard_normal(6),
                f=rng.standard_normal(6))
    H = np.asarray(_quiet(lambda: tl.hessian(f, wrt="k"))(**args))
    fd = fd_jacobian(tl.grad(f, wrt="k"), args, "k")
    assert np.allclose(H, fd, rtol=1e-5, atol=1e-6)
    assert np.allclose(H, H.T, rtol=1e-10, atol=1e-12)
    # the multiplied-out Hessian has the same values
    written = of_terms_multiplied_out("hessian", f, "k")
    assert np.allclose(np.asarray(written(**args)), H, rtol=1e-10, atol=1e-12)


def test_the_choice_does_not_depend_on_names():
    # c -> z and t -> a: the two indices sort the other way round
    renamed = FACTORED.replace("[c]", "[z]").replace("[c, t]", "[z, a]").replace("[t]", "[a]")
    assert "c" not in renamed.split("->")[1].replace("sum", "")
    for kind in ("grad", "jvp"):
        one, two = (tl.cost(getattr(tl, kind)(tl.parse(src)["f"], wrt=("D", "x", "y", "r")))
                    for src in (FACTORED, renamed))
        assert one == two


def test_explain_says_which_start_was_taken(capsys, tmp_path):
    path = tmp_path / "factored.tl"
    path.write_text(FACTORED)
    assert main(["explain", str(path), "--wrt", "x"]) == 0
    out = capsys.readouterr().out
    line = next(l for l in out.splitlines() if l.startswith("derivative taken of"))
    assert line.startswith("derivative taken of the program as it runs: 4*N^2"), line
    assert "from its terms multiplied out" in line


def test_an_unknown_start_is_refused():
    f = tl.parse(FACTORED)["f"]
    with pytest.raises(TLError, match="start must be"):
        derive("grad", f.program, ("x",), start="factored")

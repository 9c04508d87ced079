"""The command line: what `explain`, `grad` and `cost` print agrees with the Python API."""
import pathlib

import pytest

import tensorlang as tl
from tensorlang.cli import main

ROOT = pathlib.Path(__file__).resolve().parent.parent
CALLS = str(ROOT / "examples" / "calls.tl")


def sections(text: str) -> dict[str, str]:
    """`== title ===` headed sections of explain's output."""
    out, title = {}, None
    for line in text.splitlines():
        if line.startswith("== ") and line.rstrip().endswith("="):
            title = line.strip("= ").strip()
            out[title] = ""
        elif title is not None:
            out[title] += line + "\n"
    return out


@pytest.mark.parametrize("name,wrt", [("residual_mean", ["x"]), ("rayleigh", ["v", "G"]),
                                      ("matvec", ["A"])])
def test_explain_shows_the_derivative_that_runs(capsys, name, wrt):
    argv = ["explain", CALLS, "-f", name]
    for w in wrt:
        argv += ["--wrt", w]
    assert main(argv) == 0
    parts = sections(capsys.readouterr().out)
    fn = tl.load(CALLS)[name]
    prog = fn.program
    scalar = len(prog.outputs) == 1 and not prog.shapes()[prog.outputs[0]][1]
    w = wrt[0] if len(wrt) == 1 else tuple(wrt)
    derived = (tl.grad if scalar else tl.vjp)(fn, wrt=w)
    shown = parts["simplified derivative"].split("\n", 1)[1]     # after "rules applied"
    assert shown.startswith(derived.source)
    assert str(tl.cost(derived)) in shown
    assert "def run(env, sizes):" in parts["generated kernel"]


def test_grad_prints_the_gradient_source(capsys):
    assert main(["grad", CALLS, "-f", "residual_mean", "--wrt", "x"]) == 0
    out = capsys.readouterr().out
    assert tl.grad(tl.load(CALLS).residual_mean, wrt="x").source.strip() in out


def test_cost_of_a_file_with_wrt_leaves_out_the_functions_without_it(capsys):
    """`tensorlang cost examples/calls.tl --wrt x` failed on rayleigh, whose vector is v:
    the table of every function gives such a function no derivative columns; a --wrt
    that no function has, or one that the function named by -f lacks, is an error."""
    assert main(["cost", CALLS, "--wrt", "x"]) == 0
    rows = {line.split()[0]: line.split()[1:] for line in capsys.readouterr().out.splitlines()}
    assert rows["rayleigh"][0] == "-" and rows["rayleigh"][-1] == "-"
    assert rows["qform"][0] == "x" and rows["qform"][-1] == "ok"
    assert main(["cost", CALLS, "--wrt", "nosuch"]) == 1
    assert "no function of" in capsys.readouterr().err
    assert main(["cost", CALLS, "-f", "rayleigh", "--wrt", "x"]) == 1
    assert "rayleigh has no parameter 'x'" in capsys.readouterr().err


def test_grad_of_a_function_with_several_outputs_points_to_forward_mode(capsys):
    """`residual` returns two values: reverse mode names the mode the user asked for
    (it named tl.vjp) and the one that takes every output."""
    assert main(["grad", CALLS, "-f", "residual", "--wrt", "x"]) == 1
    err = capsys.readouterr().err
    assert "--mode reverse differentiates a function with one output, and residual " \
           "returns 2 values; --mode forward differentiates them all" in err
    assert "tl.vjp" not in err
    assert main(["grad", CALLS, "-f", "residual", "--wrt", "x", "--mode", "forward"]) == 0
    capsys.readouterr()
    assert main(["explain", CALLS, "-f", "residual", "--wrt", "x"]) == 1
    err = capsys.readouterr().err
    assert "residual returns 2 values" in err and "--mode forward" in err
    assert "tl.vjp" not in err


# ---------------------------------------------------------------- user errors exit with status 1
DOUBLE = "def f(x: f64[n]) -> f64[n]:\n    y[i] = 2.0 * x[i]\n    return y\n"


@pytest.fixture
def double(tmp_path):
    path = tmp_path / "double.tl"
    path.write_text(DOUBLE)
    return path


@pytest.mark.parametrize("argv,phrase", [
    (["--seed", "-1"], "--seed must be a non-negative integer, got -1"),
    (["-o", "no-such-dir/out.npy"], "the folder no-such-dir does not exist"),
    (["x=1.0", "x=2.0"], "x is given twice"),
    (["--size", "n=3", "--size", "n=4"], "--size n is given twice"),
])
def test_run_rejects_bad_options_as_user_errors(capsys, tmp_path, monkeypatch, double, argv,
                                                phrase):
    monkeypatch.chdir(tmp_path)
    assert main(["run", str(double)] + argv) == 1
    err = capsys.readouterr().err
    assert phrase in err and "internal error" not in err


def test_run_reports_the_file_it_wrote(capsys, tmp_path, monkeypatch, double):
    import numpy as np
    monkeypatch.chdir(tmp_path)
    assert main(["run", str(double), "-o", "adir.tl", "x=3.0"]) == 1      # x is a vector
    capsys.readouterr()
    assert main(["run", str(double), "-o", "adir.tl", "--size", "n=3"]) == 0
    out = capsys.readouterr().out
    assert "wrote adir.tl.npy" in out
    assert np.load(tmp_path / "adir.tl.npy").shape == (3,) and not (tmp_path / "adir.tl").exists()
    assert main(["run", str(double), "-o", "out.npy"]) == 0
    assert "wrote out.npy" in capsys.readouterr().out


def test_cost_at_zero_is_a_user_error(capsys, double):
    assert main(["cost", str(double), "--at", "0"]) == 1
    err = capsys.readouterr().err
    assert "--at" in err and "at least 1, got 0" in err


def test_check_of_a_file_that_is_not_utf8_exits_1_with_a_location(capsys, tmp_path):
    bad = tmp_path / "bad.tl"
    bad.write_bytes(b"def f(x: f64[n]) -> f64:\n    return x[0] \xff 2.0\n")
    assert main(["check", str(bad)]) == 1
    err = capsys.readouterr().err
    assert f"{bad}:2:17: error: the file is not valid UTF-8" in err


def test_explain_prints_a_long_flat_sum(capsys, tmp_path):
    path = tmp_path / "flat.tl"
    terms = " + ".join(f"x[{k % 5}]" for k in range(3000))
    path.write_text(f"def f(x: f64[5]) -> f64:\n    return {terms}\n")
    assert main(["explain", str(path)]) == 0
    parsed = sections(capsys.readouterr().out)["parsed"]
    assert parsed.count("(+ ") == 2999


@pytest.mark.parametrize("size,phrase", [("n=99999999999999999999999", "sizes are at most 2^48"),
                                         ("n=3000000000000", "would need 24 TB")])
def test_run_with_sizes_too_large_for_memory_is_a_user_error(capsys, double, size, phrase):
    assert main(["run", str(double), "--size", size]) == 1
    err = capsys.readouterr().err
    assert phrase in err and "internal error" not in err


def test_grad_of_the_rnn_prints_the_adjoint_recurrence(capsys):
    """`tensorlang grad examples/rnn.tl -f rnn_loss --wrt W` prints a program whose
    cotangent of h is a recurrence stepping back in time (it reads h_bar's next step),
    the one docs/language.md shows; forward mode prints a tangent stepping forward."""
    from tensorlang.ssa.recur import recurrences
    rnn = str(ROOT / "examples" / "rnn.tl")
    assert main(["grad", rnn, "-f", "rnn_loss", "--wrt", "W"]) == 0
    out = capsys.readouterr().out
    fn = tl.load(rnn).rnn_loss
    assert out.strip() == tl.grad(fn, wrt="W").source.strip()
    printed = tl.parse(out)["rnn_loss_grad"].program
    steps = {g.members: g.steps for g in recurrences(printed)}
    adjoint = [m for m in steps if "h_bar" in m]
    assert adjoint and steps[adjoint[0]] == (1,)         # runs from T - 1 down to 0
    assert [m for m in steps if "h" in m] and steps[[m for m in steps if "h" in m][0]] == (-1,)
    docs = (ROOT / "docs" / "language.md").read_text()
    for line in out.splitlines():
        if line.lstrip().startswith(("h_bar[", "h_arg_bar[", "W_bar[")):
            assert line.strip() in docs, line
    assert main(["grad", rnn, "-f", "rnn_loss", "--wrt", "W", "--mode", "forward"]) == 0
    tangent = tl.parse(capsys.readouterr().out)
    (prog,) = [f.program for f in tangent]
    assert any("d_h" in g.members and g.steps == (-1,) for g in recurrences(prog))



TWO = ("def first(x: f64[n]) -> f64:\n    return sum[i](x[i])\n\n"
       "def second(u: f64[n], v: f64[n]) -> f64:\n    return sum[i](u[i] * v[i])\n")


@pytest.mark.parametrize("value,phrase", [
    ("u=1.0", "'u' is a parameter of second: add -f second"),
    ("z=1.0", "the file defines first, second"),
])
def test_run_without_f_says_which_function_it_took(capsys, tmp_path, value, phrase):
    path = tmp_path / "two.tl"
    path.write_text(TWO)
    assert main(["run", str(path), value]) == 1
    err = capsys.readouterr().err
    assert "first has no parameter" in err
    assert "without -f, run takes the file's first function, first" in err and phrase in err
    assert main(["run", str(path), "-f", "first", value]) == 1      # chosen: no hint
    assert "without -f" not in capsys.readouterr().err


def test_a_size_given_as_a_value_is_told_to_use_its_own_size_option(capsys, tmp_path):
    """`--size n=5 m=3`: argparse takes one NAME=INT per --size, so m=3 arrives as a
    value; the error says m is a size and how to give it."""
    path = tmp_path / "two_sizes.tl"
    path.write_text("def f(A: f64[n, m]) -> f64:\n    return sum[i, j](A[i, j])\n")
    assert main(["run", str(path), "--size", "n=5", "m=3"]) == 1
    err = capsys.readouterr().err
    assert "f has no parameter 'm'" in err
    assert "m is a size of f: give it as --size m=3, one --size per size" in err


def test_cost_ratios_are_taken_where_every_derived_size_is_a_size(capsys, tmp_path):
    """With every size at 100, `n - 2 * k + 2` would be -98: no call has those sizes,
    and the ratio of polynomials there was negative.  The table takes the nearest sizes
    a call can have and says which."""
    path = tmp_path / "dilated.tl"
    path.write_text("def f(x: f64[n], w: f64[k], g: f64[n - 2 * k + 2]) -> f64:\n"
                    "    return sum[i: n - 2 * k + 2, t](g[i] * w[t] * x[i + 2 * t])\n")
    main(["cost", str(path), "--wrt", "w"])
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if line.startswith("f "))
    ratios = [float(c) for c in row.split()[-3:-1]]
    assert all(r > 0 for r in ratios), row
    assert "f: ratios at k=100, n=200" in out, out

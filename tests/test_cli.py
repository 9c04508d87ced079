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

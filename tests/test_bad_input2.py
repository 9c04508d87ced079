"""Wrong programs and API misuse, second round: what people writing from the docs
alone still tripped on after tests/test_bad_input.py.

* every independent error of a file at once, whatever stage finds it;
* call-time label errors in the user's words (the index as written), also when
  raised by a derivative;
* the tangents and cotangents of derived functions checked against the
  declaration they come from;
* what `wrt` means when it is left out.
"""
from __future__ import annotations

import numpy as np
import pytest

import tensorlang as tl
from tensorlang import cli
from sources import compile_error, program


def located(err) -> list[tuple[int, int]]:
    return [(d.span.line, d.span.col) for d in err.diagnostics]


# ------------------------------------------------------------------ all errors of a file
TYPE_THEN_BOUNDS = program(
    "def f(x: f64[n]) -> f64:",
    "    y[i] = x[i] + q[i]",
    "    return sum[i](y[i])",
    "",
    "def g(x: f64[n]) -> f64:",
    "    return sum[i: n](x[i + 1])",
)


def test_a_check_error_does_not_hide_a_bounds_error_in_another_function():
    err = compile_error(TYPE_THEN_BOUNDS)
    assert located(err) == [(2, 19), (6, 22)], str(err)
    assert "unknown name q" in err.diagnostics[0].message
    assert "index 0 of x may be out of range" in err.diagnostics[1].message
    assert type(err) is tl.TLNameError          # the first in source order


def test_source_order_holds_across_stages():
    """The bounds error comes first in the file, so it is shown first (and gives the
    class), although the bounds stage runs after the checks."""
    source = program(
        "def g(x: f64[n]) -> f64:",
        "    return sum[i: n](x[i + 1])",
        "",
        "def f(x: f64[n]) -> f64:",
        "    a[t] = a[t] + x[t]",
        "    return sum[t](a[t])",
    )
    err = compile_error(source)
    assert located(err) == [(2, 22), (5, 12)], str(err)
    assert type(err) is tl.TLBoundsError
    assert "cycle a -> a" in err.diagnostics[1].message


def test_a_syntax_error_does_not_hide_errors_of_other_functions():
    source = program(
        "def f(x: f64[n]) -> f64:",
        "    return sum[i](x[i] +",
        "",
        "def g(x: f64[n]) -> f64:",
        "    return q",
        "",
        "def h(x: f64[n]) -> f64:",
        "    return x[n]",
    )
    err = compile_error(source)
    assert located(err) == [(2, 18), (5, 12), (8, 12)], str(err)
    assert type(err) is tl.TLSyntaxError
    assert "never closed" in err.diagnostics[0].message
    assert "unknown name q" in err.diagnostics[1].message
    assert "index 0 of x is n" in err.diagnostics[2].message


def test_two_syntax_errors_in_two_functions_are_both_shown():
    source = program(
        "def f(x: f64[n]) -> f64:",
        "    return x[0] + * 2.0",
        "def g(x: f64[n]) -> f64:",
        "    return x[0] ^ 2",
    )
    err = compile_error(source)
    assert located(err) == [(2, 19), (4, 17)], str(err)
    assert "a power is written **" in err.diagnostics[1].hint


def test_a_call_of_a_function_that_did_not_parse_stays_silent():
    """g's own syntax error is the one report: calling it adds no 'unknown function'."""
    source = program(
        "def g(x: f64[n]) -> f64:",
        "    return x[0] +",
        "",
        "def f(x: f64[n]) -> f64:",
        "    return g(x) * 2.0",
    )
    err = compile_error(source)
    assert len(err.diagnostics) == 1 and located(err) == [(2, 18)], str(err)


def test_an_empty_body_before_the_next_def_is_one_error():
    err = compile_error(program("def f(x: f64[n]) -> f64:",
                                "def g(x: f64[n]) -> f64:",
                                "    return y"))
    assert located(err) == [(2, 1), (3, 12)], str(err)
    assert "expected an indented block" in err.diagnostics[0].message


def test_a_callee_bounds_error_is_reported_once_in_the_callee_names():
    """The caller inlines the callee under its own tensor names; the access is the
    callee's, reported by its own check in the names its line shows."""
    source = program(
        "def g(x: f64[n]) -> f64:",
        "    return sum[i: n](x[i + 1])",
        "",
        "def k(a: f64[m]) -> f64:",
        "    return g(a) + a[m]",
    )
    err = compile_error(source)
    assert located(err) == [(2, 22), (5, 19)], str(err)
    assert "x has size n" in err.diagnostics[0].message
    assert "index 0 of a is m" in err.diagnostics[1].message


def test_load_and_the_command_line_show_every_error(tmp_path, capsys):
    path = tmp_path / "two.tl"
    path.write_text(TYPE_THEN_BOUNDS)
    with pytest.raises(tl.TLError) as info:
        tl.load(path)
    assert located(info.value) == [(2, 19), (6, 22)]
    assert cli.main(["check", str(path)]) == 1
    err = capsys.readouterr().err
    assert f"{path}:2:19: error: unknown name q" in err
    assert f"{path}:6:22: error: index 0 of x may be out of range" in err

"""Diagnostics: malformed programs and bad calls fail with the right class, place and words.

The big table below holds one malformed program per kind of mistake.  For each
row the expected line and column are where the caret ought to point (the
offending token or expression), not merely where the compiler happens to put
it today; rows where the two disagree, or where the message is misleading, are
strict xfails whose reason says what should happen instead, so they flip to a
failure (and get promoted to ordinary rows) once the compiler is fixed.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import tensorlang as tl
from sources import compile_error, program

ROOT = Path(__file__).resolve().parent.parent


def row(id_, source, cls, line, col, phrase, bug=None):
    marks = ()
    if bug is not None:
        marks = (pytest.mark.xfail(strict=True, reason=bug),)
    return pytest.param(source, cls, line, col, phrase, id=id_, marks=marks)


Syn, Name, Type, Shape, Bounds, Call = (tl.TLSyntaxError, tl.TLNameError, tl.TLTypeError,
                                        tl.TLShapeError, tl.TLBoundsError, tl.TLCallError)

# A helper function that several call rows use; it occupies lines 1-3, so the
# caller's statements start on line 5.
HELPER_G = ("def g(x: f64[n]) -> f64:", "    return x[0]", "")
HELPER_SQ = ("def g(a: f64) -> f64:", "    return a * a", "")
HELPER_PAIR = ("def g(x: f64[n]) -> (f64, f64):", "    return x[0], x[n - 1]", "")
HELPER_TWO = ("def g(x: f64[n], z: f64[n]) -> f64:", "    return x[0] + z[0]", "")
HELPER_VEC = ("def g(x: f64[n]) -> f64[n]:", "    return x", "")

ROWS = [
    # ------------------------------------------------------------------ syntax
    row("syntax-missing-colon-after-def",
        program("def f(x: f64[n]) -> f64",
                "    return sum[i](x[i])"),
        Syn, 1, 24, "end of line"),
    row("syntax-unclosed-paren-at-eof",
        program("def f(x: f64[n]) -> f64:",
                "    return sum[i](x[i]"),
        Syn, 2, 18, "never closed"),
    row("syntax-bad-character",
        program("def f(x: f64[n]) -> f64:",
                "    return x[0] $ 2.0"),
        Syn, 2, 17, "unexpected character '$'"),
    row("syntax-caret-is-not-power",
        program("def f(x: f64[n]) -> f64:",
                "    return x[0] ^ 2.0"),
        Syn, 2, 17, "unexpected character '^'"),
    row("syntax-unexpected-indent",
        program("def f(x: f64[n]) -> f64:",
                "    y = x[0]",
                "        z = y",
                "    return z"),
        Syn, 3, 9, "unexpected indent"),
    row("syntax-bad-dedent",
        program("def f(x: f64[n]) -> f64:",
                "        y = x[0]",
                "    return y"),
        Syn, 3, 5, "unindent does not match"),
    row("syntax-keyword-as-tensor-name",
        program("def f(x: f64[n]) -> f64:",
                "    and = x[0]",
                "    return 1.0"),
        Syn, 2, 5, "keyword"),
    row("syntax-keyword-as-function-name",
        program("def sum(x: f64[n]) -> f64:",
                "    return x[0]"),
        Syn, 1, 5, "keyword"),
    row("syntax-sum-without-brackets",
        program("def f(x: f64[n]) -> f64:",
                "    return sum(x[0])"),
        Syn, 2, 15, "unexpected '('"),
    row("syntax-empty-body-at-eof",
        program("def f(x: f64[n]) -> f64:"),
        Syn, 1, 25, "end of file"),
    row("syntax-empty-body-before-def",
        program("def f(x: f64[n]) -> f64:",
                "def g(x: f64[n]) -> f64:",
                "    return x[0]"),
        Syn, 2, 1, "indented block"),
    row("syntax-operator-without-operand",
        program("def f(x: f64[n]) -> f64:",
                "    return x[0] + * 2.0"),
        Syn, 2, 19, "unexpected '*'"),
    row("syntax-augmented-assignment",
        program("def f(x: f64[n]) -> f64:",
                "    y = x[0]",
                "    y += 1.0",
                "    return y"),
        Syn, 3, 7, "unexpected '+'"),
    row("syntax-tab-after-spaces",
        program("def f(x: f64[n]) -> f64:",
                "    y = x[0]",
                "  \treturn y"),
        Syn, 3, 3, "tab in indentation"),
    row("syntax-tab-indent",
        program("def f(x: f64[n]) -> f64:",
                "\treturn x[0]"),
        Syn, 2, 1, "tab in indentation"),
    row("syntax-statement-after-return",
        program("def f(x: f64[n]) -> f64:",
                "    return x[0]",
                "    y = x[1]"),
        Syn, 3, 5, "statement after return"),
    row("syntax-missing-return",
        program("def f(x: f64[n]) -> f64:",
                "    y = x[0]"),
        Syn, 1, 5, "has no return"),
    row("syntax-bracket-inside-bracket",
        program("def f(x: f64[n]) -> f64:",
                "    return sum[i]([[x[i] > 0.0]] * x[i])"),
        Syn, 2, 20, "bracket inside a bracket"),
    # ------------------------------------------------------------------ names
    row("name-unknown",
        program("def f(x: f64[n]) -> f64:",
                "    return x[0] + z"),
        Name, 2, 19, "unknown name z"),
    row("name-unknown-function",
        program("def f(x: f64[n]) -> f64:",
                "    return foo(x[0])"),
        Name, 2, 12, "unknown function foo"),
    row("name-unknown-builtin-in-expression",
        program("def f(x: f64[n]) -> f64:",
                "    return 1.0 + sqr(x[0])"),
        Name, 2, 18, "unknown function sqr"),
    row("name-unbound-index",
        program("def f(x: f64[n]) -> f64:",
                "    return sum[i](x[i] * x[j])"),
        Name, 2, 28, "unbound index j"),
    row("name-reassignment",
        program("def f(x: f64[n]) -> f64:",
                "    y = x[0]",
                "    y = x[1]",
                "    return y"),
        Name, 3, 5, "y is already defined"),
    row("name-assign-to-parameter",
        program("def f(x: f64[n], a: f64) -> f64:",
                "    a = x[0]",
                "    return a"),
        Name, 2, 5, "a is a parameter"),
    row("name-assign-to-size",
        program("def f(x: f64[n]) -> f64:",
                "    n = x[0]",
                "    return n"),
        Name, 2, 5, "size symbol"),
    row("name-builtin-as-tensor",
        program("def f(x: f64[n]) -> f64:",
                "    exp = x[0]",
                "    return exp"),
        Name, 2, 5, "builtin"),
    row("name-builtin-redefined",
        program("def exp(x: f64[n]) -> f64:",
                "    return x[0]"),
        Name, 1, 5, "builtin"),
    row("name-duplicate-parameter",
        program("def f(x: f64[n], x: f64) -> f64:",
                "    return x[0]"),
        Name, 1, 18, "declared twice"),
    row("name-parameter-also-size",
        program("def f(x: f64[n], n: f64) -> f64:",
                "    return x[0]"),
        Name, 1, 18, "both a parameter and a size"),
    row("name-duplicate-function",
        program("def f(x: f64[n]) -> f64:",
                "    return x[0]",
                "",
                "def f(x: f64[n]) -> f64:",
                "    return x[1]"),
        Name, 4, 5, "defined twice"),
    row("name-recursion",
        program("def f(x: f64[n]) -> f64:",
                "    return 1.0 + f(x)"),
        Name, 2, 18, "recursive call of f"),
    row("name-call-defined-later",
        program("def f(x: f64[n]) -> f64:",
                "    return g(x)",
                "",
                "def g(x: f64[n]) -> f64:",
                "    return x[0]"),
        Name, 2, 12, "g is defined after f"),
    row("name-shadowed-sum-index",
        program("def f(x: f64[n]) -> f64[n]:",
                "    y[i] = sum[i](x[i])",
                "    return y"),
        Name, 2, 16, "already bound"),
    row("name-shadowed-sum-index-after-use",
        program("def f(x: f64[n]) -> f64[n]:",
                "    y[i] = x[i] * sum[i](x[i])",
                "    return y"),
        Name, 2, 23, "already bound"),
    row("name-index-twice-in-target",
        program("def f(A: f64[n, n]) -> f64[n, n]:",
                "    y[i, i] = A[i, i]",
                "    return y"),
        Name, 2, 10, "appears twice"),
    row("syntax-expression-in-statement-target",
        program("def f(x: f64[n]) -> f64:",
                "    y[2 * i] = x[i]",
                "    return y[0]"),
        Syn, 2, 7, "unexpected"),
    row("name-unknown-size-in-range",
        program("def f(x: f64[n]) -> f64:",
                "    y[i: k] = x[0]",
                "    return x[0]"),
        Name, 2, 10, "unknown size k"),
    # ------------------------------------------------------------------ shapes
    row("shape-no-inferable-range",
        program("def f(x: f64[n]) -> f64[n, n]:",
                "    e[i, j] = [i == j]",
                "    return e"),
        Shape, 2, 7, "cannot infer the range of index i"),
    # The product of two indices is the mistake; that it leaves c without a range
    # follows from it and would hide it.
    row("type-product-of-indices-with-no-range",
        program("def f(H: f64[n, m]) -> f64:",
                "    y[v, c, o] = H[v * c, o]",
                "    return sum[v, c, o](y[v, c, o])"),
        Type, 2, 20, "not affine"),
    # So are a remainder and a division of an index (the hint "give it explicitly"
    # only led to this error).
    row("type-remainder-in-an-index-with-no-range",
        program("def f(x: f64[n]) -> f64:",
                "    return sum[i](x[(i + 1) % n])"),
        Type, 2, 21, "% may only appear in a divisibility guard"),
    row("type-division-of-an-index-with-no-range",
        program("def f(x: f64[n]) -> f64:",
                "    return sum[j](x[j / 2])"),
        Type, 2, 21, "operator / is not allowed in an index"),
    row("shape-conflicting-ranges",
        program("def f(A: f64[n, m], B: f64[m]) -> f64:",
                "    return sum[i, j](A[i, j] * B[i])"),
        Shape, 2, 34, "conflicting ranges"),
    # An explicit range wins over plain uses; the read of x is then what is wrong.
    row("bounds-explicit-range-wider-than-use",
        program("def f(x: f64[n], z: f64[m]) -> f64[m]:",
                "    y[i: m] = x[i]",
                "    return y"),
        Bounds, 2, 15, "may be out of range"),
    row("shape-too-many-indices",
        program("def f(x: f64[n]) -> f64:",
                "    return sum[i](x[i, i])"),
        Shape, 2, 19, "rank 1"),
    row("shape-too-many-indices-with-other-use",
        program("def f(x: f64[n]) -> f64:",
                "    return sum[i](x[i] * x[i, 0])"),
        Shape, 2, 26, "rank 1"),
    row("shape-too-few-indices",
        program("def f(A: f64[n, n]) -> f64[n]:",
                "    y[i] = A[i]",
                "    return y"),
        Shape, 2, 12, "rank 2"),
    row("shape-too-few-indices-with-other-use",
        program("def f(A: f64[n, n]) -> f64:",
                "    return sum[i](A[i, i] * A[i])"),
        Shape, 2, 29, "rank 2"),
    row("shape-scalar-indexed",
        program("def f(a: f64) -> f64:",
                "    return a[0]"),
        Shape, 2, 12, "scalar"),
    row("shape-tensor-without-indices",
        program("def f(x: f64[n]) -> f64:",
                "    return x + 1.0"),
        Shape, 2, 12, "without indices"),
    row("shape-relation-without-indices",
        program("def f(M: bool[n, n], x: f64[n]) -> f64:",
                "    return sum[i]([M] * x[i])"),
        Shape, 2, 20, "without indices"),
    row("shape-zero-dimension",
        program("def f(x: f64[0]) -> f64:",
                "    return 1.0"),
        Shape, 1, 14, "at least 1"),
    row("shape-call-conflicting-sizes",
        program(*HELPER_TWO,
                "def f(x: f64[n], z: f64[m]) -> f64:",
                "    return g(x, z)"),
        Shape, 5, 17, "conflicting sizes"),
    row("shape-tensor-call-inside-expression",
        program(*HELPER_VEC,
                "def f(x: f64[n]) -> f64:",
                "    return 1.0 + g(x)"),
        Shape, 5, 18, "cannot be used inside an expression"),
    # ------------------------------------------------------------------ kinds
    row("type-relation-as-value",
        program("def f(M: bool[n, n]) -> f64:",
                "    return sum[i, j](M[i, j])"),
        Type, 2, 22, "relation M used as a value"),
    row("type-i64-as-value",
        program("def f(y: i64[n]) -> f64:",
                "    return sum[i](y[i])"),
        Type, 2, 19, "integer tensor y used as a value"),
    row("type-float-index",
        program("def f(x: f64[n]) -> f64:",
                "    return x[1.5]"),
        Type, 2, 14, "not an integer"),
    row("type-non-affine-index",
        program("def f(A: f64[n, n], x: f64[n]) -> f64:",
                "    return sum[i, j](A[i, j] * x[i * j])"),
        Type, 2, 34, "not affine"),
    row("type-gather-with-arithmetic",
        program("def f(E: f64[v, d], y: i64[b]) -> f64:",
                "    return sum[s, c](E[y[s] + 1, c])"),
        Type, 2, 24, "must stand alone"),
    row("type-f64-entry-as-index",
        program("def f(x: f64[n], z: f64[n]) -> f64:",
                "    return sum[i](x[z[i]])"),
        Type, 2, 21, "not an index"),
    row("type-comparison-outside-bracket",
        program("def f(x: f64[n]) -> f64:",
                "    return sum[i](x[i] > 0.0)"),
        Type, 2, 19, "outside a bracket"),
    row("type-bracket-around-value",
        program("def f(x: f64[n]) -> f64:",
                "    return sum[i]([x[i]])"),
        Type, 2, 20, "needs a predicate"),
    # A band written with abs, and a remainder compared with a value other than 0:
    # each says what to write instead.
    row("type-abs-of-an-index-difference",
        program("def f(x: f64[n]) -> f64:",
                "    return sum[i, j]([abs(i - j) <= 1] * x[i] * x[j])"),
        Type, 2, 23, "abs of an index expression is not an index"),
    row("type-remainder-compared-with-one",
        program("def f(x: f64[n]) -> f64:",
                "    return sum[i]([i % 2 == 1] * x[i])"),
        Type, 2, 20, "a remainder may only be compared with 0"),
    row("type-index-as-value",
        program("def f(x: f64[n]) -> f64[n]:",
                "    y[i] = x[i] * i",
                "    return y"),
        Type, 2, 19, "index i used as a value"),
    row("type-call-argument-depends-on-index",
        program(*HELPER_SQ,
                "def f(x: f64[n]) -> f64[n]:",
                "    y[i] = g(x[i])",
                "    return y"),
        Type, 5, 14, "depends on index i"),
    row("type-return-annotation-wrong-rank",
        program("def f(x: f64[n]) -> f64[n]:",
                "    return sum[i](x[i])"),
        Type, 1, 21, "return type mismatch"),
    row("type-return-annotation-wrong-count",
        program("def f(x: f64[n]) -> (f64, f64):",
                "    return sum[i](x[i])"),
        Type, 2, 5, "annotation declares 2"),
    row("type-unknown-type-f32",
        program("def f(x: f32[n]) -> f64:",
                "    return 1.0"),
        Type, 1, 10, "unknown type f32"),
    row("type-i64-without-dimensions",
        program("def f(y: i64) -> f64:",
                "    return 1.0"),
        Type, 1, 10, "needs dimensions"),
    row("type-builtin-without-call",
        program("def f(x: f64[n]) -> f64:",
                "    return exp + 1.0"),
        Type, 2, 12, "without arguments"),
    row("type-function-without-call",
        program(*HELPER_G,
                "def f(x: f64[n]) -> f64:",
                "    return g + 1.0"),
        Type, 5, 12, "without a call"),
    row("type-return-i64",
        program("def f(y: i64[n]) -> f64:",
                "    return y"),
        Type, 2, 12, "cannot be returned"),
    row("type-unpack-wrong-count",
        program(*HELPER_PAIR,
                "def f(x: f64[n]) -> f64:",
                "    a, b, c = g(x)",
                "    return a"),
        Type, 5, 5, "3 names"),
    # ------------------------------------------------------------------ calls
    row("call-user-function-arity",
        program(*HELPER_G,
                "def f(x: f64[n]) -> f64:",
                "    return g(x, x)"),
        Call, 5, 12, "g takes 1 argument"),
    row("call-builtin-arity",
        program("def f(x: f64[n]) -> f64:",
                "    return max(x[0])"),
        Call, 2, 12, "max takes 2 arguments but 1 was given"),
    # ------------------------------------------------------------------ bounds
    row("bounds-unguarded-plus-one",
        program("def f(x: f64[n]) -> f64[n]:",
                "    y[i] = x[i] - x[i + 1]",
                "    return y"),
        Bounds, 2, 19, "index 0 of x may be out of range"),
    row("bounds-unguarded-minus-one",
        program("def f(x: f64[n]) -> f64[n]:",
                "    y[i] = x[i] - x[i - 1]",
                "    return y"),
        Bounds, 2, 19, "index 0 of x may be out of range"),
    row("bounds-guard-on-wrong-side",
        program("def f(x: f64[n]) -> f64[n]:",
                "    y[i] = x[i] * [i >= 1] * x[i + 1]",
                "    return y"),
        Bounds, 2, 30, "index 0 of x may be out of range"),
    row("bounds-stride-without-guard",
        program("def f(x: f64[n]) -> f64[n]:",
                "    y[i] = x[i] * x[2 * i]",
                "    return y"),
        Bounds, 2, 19, "index 0 of x may be out of range"),
]


def test_table_is_large_and_ids_are_unique():
    ids = [p.id for p in ROWS]
    assert len(ids) >= 35
    assert len(set(ids)) == len(ids)


@pytest.mark.parametrize("source, cls, line, col, phrase", ROWS)
def test_malformed_program(source, cls, line, col, phrase):
    err = compile_error(source)
    shown = str(err)
    assert type(err) is cls, f"expected {cls.__name__}, got {type(err).__name__}:\n{shown}"
    first = err.diagnostics[0]
    assert first.span is not None and first.span.filename == "bad.tl", shown
    assert (err.line, err.col) == (line, col), shown
    assert (first.span.line, first.span.col) == (line, col), shown
    assert phrase in first.message, shown
    assert shown.startswith(f"bad.tl:{line}:{col}: error: "), shown


# Each bounds row has a guarded twin that compiles, and the hint of the
# unguarded one names exactly the guard that is missing.
BOUNDS_HINTS = [
    pytest.param("x[i] - x[i + 1]", "guard it with [i + 1 < n]",
                 "x[i] - [i + 1 < n] * x[i + 1]", id="plus-one"),
    pytest.param("x[i] - x[i - 1]", "guard it with [i >= 1]",
                 "x[i] - [i >= 1] * x[i - 1]", id="minus-one"),
    pytest.param("x[i] * [i >= 1] * x[i + 1]", "guard it with [i + 1 < n]",
                 "x[i] * [i >= 1 and i + 1 < n] * x[i + 1]", id="wrong-side"),
    pytest.param("x[i] * x[2 * i]", "guard it with [2 * i < n]",
                 "x[i] * [2 * i < n] * x[2 * i]", id="stride"),
]


@pytest.mark.parametrize("bad, hint, good", BOUNDS_HINTS)
def test_bounds_hint_names_the_missing_guard(bad, hint, good):
    head = "def f(x: f64[n]) -> f64[n]:"
    err = compile_error(program(head, f"    y[i] = {bad}", "    return y"))
    assert type(err) is tl.TLBoundsError
    assert len(err.diagnostics) == 1, str(err)
    assert err.diagnostics[0].hint == hint, str(err)
    tl.parse(program(head, f"    y[i] = {good}", "    return y"), filename="good.tl")


def test_range_hint_names_the_dimension_the_index_moves_along():
    """An index used only in shifted reads gets, as its suggested range, the dimension
    it shifts along (T in x[c, t - 2 * j]), not merely the function's first size."""
    err = compile_error(program(
        "def f(x: f64[ch, T], W: f64[o, ch, k]) -> f64[o, T]:",
        "    y[a, t] = sum[c, j]([t >= 2 * j] * W[a, c, j] * x[c, t - 2 * j])",
        "    return y"))
    assert type(err) is tl.TLShapeError
    assert err.diagnostics[0].hint.endswith("e.g. t: T"), str(err)


def test_range_hint_of_a_returned_statement_is_its_declared_size():
    """`y[i, j] = x[i]` returned as f64[n, m]: j's suggested range is m, the size the
    return type gives it, whatever the index is called."""
    for j in ("j", "col", "q"):
        err = compile_error(program(
            "def f(x: f64[n]) -> f64[n, m]:",
            f"    y[i, {j}] = x[i]",
            "    return y"))
        assert type(err) is tl.TLShapeError
        assert err.diagnostics[0].hint.endswith(f"e.g. {j}: m"), str(err)
        assert err.line == 2


def test_an_expression_continued_without_a_bracket_is_told_to_open_one():
    """A line that starts with an operator under an unfinished statement was meant to
    continue it; the hint says that only an open bracket lets it."""
    err = compile_error(program(
        "def f(x: f64[n]) -> f64[n]:",
        "    y[i] = x[i]",
        "        + 2.0 * x[i]",
        "    return y"))
    assert type(err) is tl.TLSyntaxError and (err.line, err.col) == (3, 9), str(err)
    assert "wrap the expression in ( ... )" in err.diagnostics[0].hint, str(err)


# ---------------------------------------------------------------------- several at once

def test_several_errors_are_reported_together_in_source_order():
    source = program(
        "def f(x: f64[n]) -> f64:",
        "    a = q",
        "    b = max(x[0])",
        "    c = x[0, 0]",
        "    return x[0]",
    )
    err = compile_error(source)
    where = [(d.span.line, d.span.col) for d in err.diagnostics]
    assert where == [(2, 9), (3, 9), (4, 9)], str(err)
    assert "unknown name q" in err.diagnostics[0].message
    assert "max takes 2 arguments" in err.diagnostics[1].message
    assert "rank 1" in err.diagnostics[2].message
    # The class is that of the first diagnostic.
    assert type(err) is tl.TLNameError
    # Every diagnostic is rendered, in the same order.
    headers = [ln for ln in str(err).splitlines() if ln.startswith("bad.tl:")]
    assert headers == [f"bad.tl:{ln}:{c}: error: {d.message}"
                       for (ln, c), d in zip(where, err.diagnostics)]


def test_diagnostics_are_sorted_even_when_found_out_of_order():
    # The annotation (line 1) is checked only after the body, yet comes first.
    source = program(
        "def f(x: f64[n]) -> f64[n]:",
        "    a = q",
        "    b = max(x[0])",
        "    return x[0]",
    )
    err = compile_error(source)
    where = [(d.span.line, d.span.col) for d in err.diagnostics]
    assert where == [(1, 21), (2, 9), (3, 9)], str(err)
    assert type(err) is tl.TLTypeError


def test_several_bounds_errors_are_reported_together():
    source = program(
        "def f(x: f64[n]) -> f64:",
        "    a = sum[i](x[i] * x[i + 1])",
        "    b = sum[i](x[i] * x[i - 1])",
        "    return a + b",
    )
    err = compile_error(source)
    assert type(err) is tl.TLBoundsError
    assert [(d.span.line, d.span.col) for d in err.diagnostics] == [(2, 23), (3, 23)]


CASCADES = [
    pytest.param(program("def f(x: f32[n]) -> f64:", "    return x[0]"),
                 id="unknown-type-then-use"),
    pytest.param(program("def f(x: f64[0]) -> f64:", "    return x[0]"),
                 id="zero-dimension-then-use"),
    pytest.param(program("def g(x: f64[n]) -> f64:", "    return x[5]",
                         "def f(x: f64[n]) -> f64:", "    return g(x) + g(x)"),
                 id="bad-read-in-a-callee-inlined-twice"),
]


@pytest.mark.parametrize("source", CASCADES)
def test_one_mistake_gives_one_diagnostic(source):
    err = compile_error(source)
    assert len(err.diagnostics) == 1, str(err)


# ---------------------------------------------------------------------- rendering

CARET_LINE = re.compile(r"^ *\^+$")
HEADER = re.compile(r"^bad\.tl:\d+:\d+: error: ")

RENDERED = [
    pytest.param(program("def f(x: f64[n]) -> f64[n]:",
                         "    y[i] = x[i] - x[i + 1]",
                         "    return y"),
                 2, "x[i + 1]", "hint: guard it with [i + 1 < n]", id="bounds"),
    pytest.param(program("def f(x: f64[n]) -> f64:",
                         "    return sum[i](x[i] * x[j])"),
                 2, "j", "hint: bind it on the left (y[j] = ...) or with sum[j](...)",
                 id="unbound-index"),
    pytest.param(program("def f(x: f64[n]) -> f64:",
                         "    return x[0] $ 2.0"),
                 2, "$", None, id="bad-character"),
    pytest.param(program("def f(x: f64[n]) -> f64:",
                         "    return max(x[0])"),
                 2, "max(x[0])", "hint: for the largest entry over an index write max[j](e)",
                 id="builtin-arity"),
]


@pytest.mark.parametrize("source, line, underlined, hint_line", RENDERED)
def test_rendered_diagnostic(source, line, underlined, hint_line):
    err = compile_error(source)
    lines = str(err).splitlines()
    src_line = source.splitlines()[line - 1]
    assert HEADER.match(lines[0]), lines
    assert lines[0].startswith(f"bad.tl:{line}:{err.col}: error: {err.diagnostics[0].message}")
    # The source line, possibly indented for display.
    assert lines[1].endswith(src_line) and lines[1].strip() == src_line.strip(), lines
    prefix = len(lines[1]) - len(src_line)
    # The caret line: only spaces and carets, under exactly the offending text.
    assert CARET_LINE.match(lines[2]), lines
    start = lines[2].index("^") - prefix
    width = lines[2].count("^")
    assert start == err.col - 1, lines
    assert src_line[start:start + width] == underlined, lines
    if hint_line is None:
        assert len(lines) == 3, lines
    else:
        assert lines[3:] == [hint_line], lines


# ---------------------------------------------------------------------- call time

API_SOURCE = program(
    "def f(x: f64[n], A: f64[n, n], y: i64[m], M: bool[n, n]) -> f64:",
    "    return sum[i, j]([M[i, j]] * A[i, j] * x[j]) + sum[s](x[y[s]])",
    "",
    "def square(A: f64[n, n]) -> f64:",
    "    return A[0, 0]",
    "",
    "def emb(E: f64[v, d], y: i64[b]) -> f64:",
    "    return sum[s, c](E[y[s], c])",
    "",
    "def total(x: f64[n]) -> f64:",
    "    return sum[i](x[i])",
    "",
    "def scale(x: f64[n], a: f64) -> f64:",
    "    return a * x[0]",
)


@pytest.fixture(scope="module")
def api():
    return tl.parse(API_SOURCE, filename="api.tl")


@pytest.fixture()
def good():
    return dict(x=np.ones(3), A=np.ones((3, 3)), y=np.array([0, 2]), M=np.eye(3, dtype=bool))


def call_error(fn, *args, **kwargs) -> tl.TLError:
    with pytest.raises(tl.TLError) as info:
        fn(*args, **kwargs)
    return info.value


def names(message: str, word: str) -> bool:
    return re.search(rf"(?<![\w]){re.escape(word)}(?![\w])", message) is not None


def test_good_call_works(api, good):
    assert api["f"](**good) == pytest.approx(3.0 + 2.0)


def test_call_wrong_rank(api, good):
    err = call_error(api["f"], **{**good, "x": np.ones((3, 1))})
    assert type(err) is tl.TLShapeError
    assert names(err.first.message, "x") and "rank" in err.first.message
    # Located at the parameter's declaration.
    assert str(err).startswith("api.tl:1:7: error: ")


def test_call_scalar_for_a_vector_is_a_rank_error(api):
    err = call_error(api["total"], 5.0)
    assert type(err) is tl.TLShapeError
    assert names(err.first.message, "x")


def test_call_scalar_parameter_accepts_a_float(api):
    assert api["scale"](np.ones(3), 2.0) == 2.0


def test_call_inconsistent_sizes_between_params(api, good):
    err = call_error(api["f"], **{**good, "x": np.ones(4)})
    assert type(err) is tl.TLShapeError
    msg = err.first.message
    assert names(msg, "A") and names(msg, "x") and names(msg, "n"), msg
    assert "4" in msg and "(3, 3)" in msg, msg


def test_call_inconsistent_sizes_within_one_param(api, good):
    err = call_error(api["square"], np.ones((3, 4)))
    assert type(err) is tl.TLShapeError
    msg = err.first.message
    assert names(msg, "A") and names(msg, "n"), msg
    assert "3" in msg and "4" in msg, msg
    assert str(err).startswith("api.tl:4:12: error: "), str(err)
    # The same when another parameter fixed n first.
    err = call_error(api["f"], **{**good, "A": np.ones((3, 4))})
    assert type(err) is tl.TLShapeError
    msg = err.first.message
    assert names(msg, "A") and names(msg, "n") and "(3, 4)" in msg, msg


def test_call_non_numeric_input(api, good):
    err = call_error(api["f"], **{**good, "x": ["a", "b", "c"]})
    assert type(err) is tl.TLTypeError
    assert names(err.first.message, "x") and "numeric" in err.first.message


def test_call_empty_dimension(api, good):
    err = call_error(api["f"], **{**good, "x": np.ones(0), "A": np.ones((0, 0))})
    assert type(err) is tl.TLShapeError
    assert names(err.first.message, "x") and "empty" in err.first.message
    err = call_error(api["f"], **{**good, "y": np.zeros(0, dtype=np.int64)})
    assert type(err) is tl.TLShapeError
    assert names(err.first.message, "y")


@pytest.mark.parametrize("label", [4, -1])
def test_call_gather_out_of_range(api, label):
    err = call_error(api["emb"], np.ones((4, 2)), np.array([0, label]))
    assert type(err) is tl.TLBoundsError
    msg = err.first.message
    assert names(msg, "E") and str(label) in msg, msg
    # Located at the gathering access, not at a bare Python frame.
    assert str(err).startswith("api.tl:8:"), str(err)


def test_call_missing_argument(api, good):
    err = call_error(api["f"], good["x"], good["A"], good["y"])
    assert type(err) is tl.TLCallError
    assert names(err.first.message, "M") and "missing" in err.first.message


def test_call_missing_argument_is_located(api, good):
    err = call_error(api["f"], good["x"], good["A"], good["y"])
    assert str(err).startswith("api.tl:1:"), str(err)


def test_call_unknown_keyword(api, good):
    err = call_error(api["f"], **good, z=np.ones(3))
    assert type(err) is tl.TLCallError
    assert "'z'" in err.first.message


def test_call_too_many_positional(api, good):
    err = call_error(api["f"], good["x"], good["A"], good["y"], good["M"], good["M"])
    assert type(err) is tl.TLCallError
    msg = err.first.message
    assert names(msg, "f") and "4" in msg and "5" in msg, msg


def test_call_argument_given_twice(api, good):
    err = call_error(api["f"], good["x"], good["A"], good["y"], good["M"], x=good["x"])
    assert type(err) is tl.TLCallError
    assert "'x'" in err.first.message and "twice" in err.first.message


@pytest.mark.parametrize("labels", [np.array([0.5, 1.0]), [0.5, 1.0], np.array([np.nan, 1.0])],
                         ids=["array", "list", "nan"])
def test_call_non_integer_labels(api, good, labels):
    err = call_error(api["f"], **{**good, "y": labels})
    assert type(err) is tl.TLTypeError
    assert names(err.first.message, "y") and "integer" in err.first.message


def test_call_integral_floats_are_fine_labels(api, good):
    assert api["f"](**{**good, "y": np.array([0.0, 2.0])}) == api["f"](**good)


# ---------------------------------------------------------------------- command line

def test_cli_check_reports_diagnostic_without_traceback(tmp_path):
    if not (ROOT / "tensorlang" / "cli.py").exists():
        pytest.skip("the command line is not written yet")
    bad = tmp_path / "bad.tl"
    bad.write_text(program("def f(x: f64[n]) -> f64[n]:",
                           "    y[i] = x[i] - x[i + 1]",
                           "    return y"))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])}
    proc = subprocess.run([sys.executable, "-m", "tensorlang", "check", str(bad)],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path, env=env)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    assert re.search(r"bad\.tl:2:19: error: index 0 of x may be out of range", out), out
    assert "guard it with [i + 1 < n]" in out, out
    assert "Traceback" not in out, out


def test_a_read_of_a_call_result_is_reported_in_the_name_it_was_given():
    """`k = rates(th)` then `k[4]`: the read is of the callee's inlined statement,
    but the message names k, as the line under it writes it."""
    src = ("def rates(th: f64[4]) -> f64[4]:\n    r[c] = exp(th[c])\n    return r\n\n"
           "def f(th: f64[4], x: f64[n]) -> f64:\n    k = rates(th)\n"
           "    return sum[i](k[4] * x[i] + [i + 1 < n] * k[i + 1])\n")
    with pytest.raises(tl.TLBoundsError) as err:
        tl.parse(src, "calls.tl")
    text = str(err.value)
    assert "index 0 of k is 4, which can lie outside 0 .. 3 (dimension 0 of k has size 4)" in text
    assert "index 0 of k may be out of range: i + 1 ranges over 1 .. n - 1, but k has size 4" in text
    assert "rates_r" not in text


@pytest.mark.parametrize("body, shown", [
    ("[i < 2] * x[i + n - 2]", "i + n - 2 ranges over n - 2 .. n - 1"),
    ("[i < 2] * x[i + 1]", "i + 1 ranges over 1 .. 2"),
    ("[i + 1 < n] * x[i - 1]", "i - 1 ranges over -1 .. n - 3"),
    ("x[i + 1]", "i + 1 ranges over 1 .. n"),
])
def test_the_range_shown_for_a_read_takes_its_brackets_into_account(body, shown):
    """A bracket that bounds the index by sizes bounds the range the message shows:
    under [i < 2], x[i + n - 2] reaches n - 1 at most, not 2 * n - 3."""
    with pytest.raises(tl.TLBoundsError) as err:
        tl.parse(f"def f(x: f64[n]) -> f64:\n    return sum[i: n]({body})\n", "range.tl")
    assert shown in str(err.value), str(err.value)

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


def test_a_function_defined_twice_keeps_the_bounds_errors_of_its_first_definition():
    source = program(
        "def g(x: f64[n]) -> f64:",
        "    return sum[i: n](x[i + 1])",
        "",
        "def g(x: f64[n]) -> f64:",
        "    return x[0]",
    )
    err = compile_error(source)
    assert located(err) == [(2, 22), (4, 5)], str(err)
    assert "defined twice" in err.diagnostics[1].message


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


# ------------------------------------------------------------------ labels in the user's words
# The simplifier renames summed indices (e -> g, h here, where the two reads of q
# share a sum); a label error must still quote the reads as the line writes them,
# and name the entry of the label array that holds the bad label.
FLOW = program(
    "def flow(q: f64[T, n], src: i64[m], dst: i64[m], k: f64[m]) -> f64:",
    "    F[t: T, i: n] = sum[e](k[e] * ([src[e] == i] - [dst[e] == i]) * (q[t, dst[e]] - q[t, src[e]]))",
    "    return sum[t, i](F[t, i] ** 2)",
)
FLOW_ARGS = dict(q=np.ones((2, 3)), src=np.array([0, 1]), dst=np.array([1, 2]), k=np.ones(2))


def _label_error(fn, **args):
    with pytest.raises(tl.TLBoundsError) as info:
        fn(**args)
    return info.value


@pytest.mark.parametrize("derive", [
    pytest.param(lambda f: f, id="function"),
    pytest.param(lambda f: tl.grad(f, wrt="q"), id="grad"),
    pytest.param(lambda f: tl.grad(f, wrt="k"), id="grad-k"),
    pytest.param(lambda f: tl.value_and_grad(f, wrt="q"), id="value_and_grad"),
    pytest.param(lambda f: tl.hessian(f, wrt="k"), id="hessian"),
])
@pytest.mark.parametrize("bad, written, col", [("src", "src[e]", 85), ("dst", "dst[e]", 70)])
def test_a_label_error_quotes_the_index_as_written(derive, bad, written, col):
    fn = derive(tl.parse(FLOW, "flow.tl")["flow"])
    err = _label_error(fn, **{**FLOW_ARGS, bad: np.array([0, 9])})
    assert str(err).startswith(f"flow.tl:2:{col}: error: gathered index {written} = 9 is out "
                               f"of range for dimension 1 of q (size 3); the label is {bad}[1]\n"), \
        str(err)


def test_a_label_error_in_a_called_function_speaks_in_its_names():
    """The access is inner's line, so the message names inner's tensors, not the
    caller's arguments it was inlined with."""
    source = program(
        "def inner(X: f64[n, f], lab: i64[b]) -> f64:",
        "    return sum[s, c](X[lab[s], c] ** 2)",
        "",
        "def outer(A: f64[k, f], idx: i64[b]) -> f64:",
        "    return inner(A, idx) * 2.0",
    )
    mod = tl.parse(source, "call.tl")
    for fn in (mod.outer, tl.grad(mod.outer, wrt="A")):
        err = _label_error(fn, A=np.ones((3, 2)), idx=np.array([0, 7]))
        assert str(err).startswith("call.tl:2:22: error: gathered index lab[s] = 7 is out of "
                                   "range for dimension 0 of X (size 3); the label is lab[1]\n"), \
            str(err)


def test_a_label_read_through_a_label_is_located_at_that_read():
    source = program(
        "def emb(E: f64[v, d], y: i64[b], z: i64[m]) -> f64:",
        "    return sum[s, c](E[y[z[s]], c] ** 2)",
    )
    mod = tl.parse(source, "emb.tl")
    args = dict(E=np.ones((4, 2)), y=np.array([0, 1, 2]), z=np.array([0, 5]))
    for fn in (mod.emb, tl.grad(mod.emb, wrt="E")):
        err = _label_error(fn, **args)
        assert str(err).startswith("emb.tl:2:24: error: gathered index z[s] = 5 is out of range "
                                   "for dimension 0 of y (size 3); the label is z[1]\n"), str(err)
        assert err.span.end_col == 31          # under y[z[s]], not under all of E[...]


# ------------------------------------------------------------------ tangents and cotangents
MAPS = program(
    "def f(x: f64[n], A: f64[n, m]) -> f64[m]:",
    "    y[j] = sum[i](A[i, j] * x[i])",
    "    return y",
    "",
    "def s(x: f64[n], A: f64[n, m]) -> f64:",
    "    return sum[i, j](x[i] * A[i, j] * x[i])",
    "",
    "def u(x: f64[n]):",
    "    return sum[i](x[i] ** 2)",
)
X, A = np.ones(3), np.ones((3, 2))


def _shape_error(fn, *args):
    with pytest.raises(tl.TLShapeError) as info:
        fn(*args)
    return info.value


@pytest.mark.parametrize("derive, args, want", [
    pytest.param(lambda m: tl.jvp(m.f, wrt="x"), (X, A, np.ones(4)),
                 ("maps.tl:1:7: error: d_x, the tangent of x, has shape (4,) but must have x's "
                  "shape (3,) (f64[n] with n = 3)"), id="jvp"),
    pytest.param(lambda m: tl.jvp(m.f, wrt=("x", "A")), (X, A, X, np.ones((3, 3))),
                 ("maps.tl:1:18: error: d_A, the tangent of A, has shape (3, 3) but must have "
                  "A's shape (3, 2) (f64[n, m] with n = 3, m = 2)"), id="jvp-second"),
    pytest.param(lambda m: tl.jvp(m.f, wrt="x"), (X, A, np.ones((3, 1))),
                 ("maps.tl:1:7: error: d_x, the tangent of x, has shape (3, 1) but must have "
                  "x's shape (3,)"), id="jvp-rank"),
    pytest.param(lambda m: tl.hvp(m.s, wrt="x"), (X, A, np.ones(2)),
                 ("maps.tl:5:7: error: d_x, the tangent of x, has shape (2,) but must have x's "
                  "shape (3,)"), id="hvp"),
    pytest.param(lambda m: tl.jvp(tl.grad(m.s, wrt="x"), wrt="x"), (X, A, np.ones(2)),
                 "maps.tl:5:7: error: d_x, the tangent of x, has shape (2,)", id="jvp-of-grad"),
    pytest.param(lambda m: tl.vjp(m.f, wrt="x"), (X, A, np.ones(3)),
                 ("maps.tl:1:35: error: d_out, the cotangent of f's output, has shape (3,) but "
                  "must have the output's shape (2,) (f64[m] with m = 2)"), id="vjp"),
    pytest.param(lambda m: tl.vjp(m.s, wrt="A"), (X, A, np.ones(1)),
                 ("maps.tl:5:35: error: d_out, the cotangent of s's output, has shape (1,) but "
                  "must have the output's shape () (f64)"), id="vjp-scalar"),
    pytest.param(lambda m: tl.vjp(m.u, wrt="x"), (X, np.ones(2)),
                 "maps.tl:9:12: error: d_out, the cotangent of u's output, has shape (2,)",
                 id="vjp-unannotated"),
    pytest.param(lambda m: tl.vjp(tl.grad(m.s, wrt="x"), wrt="x"), (X, A, np.ones(2)),
                 ("maps.tl:5:5: error: d_out, the cotangent of s_grad's output, has shape (2,) "
                  "but must have the output's shape (3,)"), id="vjp-of-grad"),
])
def test_a_tangent_or_cotangent_of_the_wrong_shape_points_at_what_it_stands_for(derive, args,
                                                                               want):
    err = _shape_error(derive(tl.parse(MAPS, "maps.tl")), *args)
    assert str(err).startswith(want), str(err)


def test_a_parameter_that_only_looks_like_a_tangent_keeps_its_own_declaration():
    """f's own parameter d_x is not a tangent: its error points at d_x's declaration,
    and the tangent of x, named d_x2 to keep the names apart, at x's."""
    mod = tl.parse(program("def f(x: f64[n], d_x: f64[n]) -> f64:",
                           "    return sum[i](x[i] * d_x[i])"), "own.tl")
    j = tl.jvp(mod.f, wrt="x")
    tangent = [p for p in j.params if p not in ("x", "d_x")]
    assert len(tangent) == 1
    err = _shape_error(j, X, np.ones(4), X)
    assert str(err).startswith("own.tl:1:18: error: d_x has shape (4,)"), str(err)
    err = _shape_error(j, X, X, np.ones(4))
    assert str(err).startswith(f"own.tl:1:7: error: {tangent[0]}, the tangent of x, has shape "
                               f"(4,)"), str(err)


# ------------------------------------------------------------------ wrt left out
DEFAULTS = program(
    "def energy(w: f64[n], A: f64[n, n]) -> f64:",
    "    return sum[i, j](w[i] * A[i, j] * w[j])",
    "",
    "def picked(w: f64[n], y: i64[b], x: i64[b]) -> f64:",
    "    return sum[s]([x[s] == y[s]] * w[y[s]] ** 2)",
    "",
    "def qform(A: f64[n, n], x: f64[n]) -> f64:",
    "    return sum[i, j](x[i] * A[i, j] * x[j])",
    "",
    "def labels_only(y: i64[b]) -> f64:",
    "    return 1.0",
)
ALL_KINDS = [tl.grad, tl.value_and_grad, tl.vjp, tl.jvp, tl.hvp, tl.hessian, tl.jacobian]


@pytest.mark.parametrize("transform", ALL_KINDS, ids=lambda t: t.__name__)
def test_without_wrt_the_only_f64_parameter_is_differentiated(transform):
    """picked has an i64 parameter called x: the default is its one f64 parameter w."""
    f = tl.parse(DEFAULTS, "d.tl")["picked"]
    assert transform(f).source == transform(f, wrt="w").source


@pytest.mark.parametrize("transform", ALL_KINDS, ids=lambda t: t.__name__)
def test_without_wrt_a_parameter_x_is_still_the_default(transform):
    f = tl.parse(DEFAULTS, "d.tl")["qform"]
    assert transform(f).source == transform(f, wrt="x").source


@pytest.mark.parametrize("transform", ALL_KINDS, ids=lambda t: t.__name__)
def test_without_wrt_several_candidates_are_listed(transform):
    f = tl.parse(DEFAULTS, "d.tl")["energy"]
    with pytest.raises(tl.TLCallError) as info:
        transform(f)
    err = info.value
    name = transform.__name__
    assert str(err).startswith(f"d.tl:1:5: error: tl.{name}: wrt is not given and energy has 2 "
                               f"f64 parameters (w, A); say which to differentiate"), str(err)
    assert err.first.hint.startswith(f'tl.{name}(energy, wrt="w")'), err.first.hint


def test_without_wrt_a_function_of_labels_only_has_nothing_to_differentiate():
    f = tl.parse(DEFAULTS, "d.tl")["labels_only"]
    with pytest.raises(tl.TLCallError, match="labels_only has no f64 parameter to differentiate"):
        tl.grad(f)


# ------------------------------------------------------------------ what an i64 parameter takes
LABELS = program("def pick(x: f64[n], y: i64[b]) -> f64[b]:",
                 "    r[s] = x[y[s]]",
                 "    return r")


def test_bools_for_labels_are_the_labels_0_and_1_not_a_mask():
    """Kept on purpose: the contract converts i64 inputs to int64, which maps False to 0 and
    True to 1 as numpy does; a bool array is not taken as a mask selecting entries."""
    pick = tl.parse(LABELS, "l.tl")["pick"]
    x = np.array([10.0, 20.0, 30.0])
    assert list(pick(x, np.array([True, False, True, True]))) == [20.0, 10.0, 20.0, 20.0]


@pytest.mark.parametrize("labels", [np.array([0.0, 1.5]), [1, 2.5], np.array([np.inf, 0.0])],
                         ids=["array", "list", "inf"])
def test_fractional_labels_stay_an_error_located_at_the_parameter(labels):
    pick = tl.parse(LABELS, "l.tl")["pick"]
    with pytest.raises(tl.TLTypeError) as info:
        pick(np.ones(3), labels)
    assert str(info.value).startswith("l.tl:1:21: error: y must hold integers (i64), got "
                                      "non-integer values"), str(info.value)


def test_count_ops_with_a_bad_label_gives_the_located_error_of_a_call():
    """count_ops runs its own loop interpreter, which knows no source: the error it
    raises is the one a call raises, located at the read."""
    mod = tl.parse(program("def emb(E: f64[v, d], y: i64[b]) -> f64:",
                           "    return sum[s, c](E[y[s], c] ** 2)"), "e.tl")
    for fn in (mod.emb, tl.grad(mod.emb, wrt="E")):
        with pytest.raises(tl.TLBoundsError) as info:
            fn.count_ops(np.ones((3, 2)), np.array([0, 5]))
        assert str(info.value).startswith("e.tl:2:22: error: gathered index y[s] = 5 is out of "
                                          "range for dimension 0 of E (size 3)"), str(info.value)


def test_equal_functions_of_two_files_locate_their_errors_in_their_own_file():
    """Programs compare equal whatever their spans, so the compiler's memos once gave
    the second file's function the first file's program: its label errors named the
    other file and line, whichever order the tests ran in."""
    text = ("def emb(E: f64[v, d], y: i64[b]) -> f64:\n"
            "    return sum[s, c](E[y[s], c] ** 2)\n")
    first = tl.parse(text, "first.tl")
    second = tl.parse("# the same function, two lines down\n\n" + text, "second.tl")
    for mod, where in ((first, "first.tl:2:22"), (second, "second.tl:4:22")):
        for fn in (mod.emb, tl.grad(mod.emb, wrt="E")):
            for run in (fn, fn.count_ops):
                with pytest.raises(tl.TLBoundsError) as info:
                    run(np.ones((3, 2)), np.array([0, 5]))
                assert str(info.value).startswith(f"{where}: error: gathered index y[s] = 5")


def test_equal_callees_of_two_files_locate_their_errors_in_their_own_file():
    """The inliner's memo of a callee's distinct statements is keyed by where they
    were written too: an equal callee of another file would lend its spans."""
    text = ("def sq(E: f64[v, d], y: i64[b]) -> f64[b, d]:\n"
            "    r[s, c] = E[y[s], c] ** 2\n"
            "    return r\n\n"
            "def emb(E: f64[v, d], y: i64[b]) -> f64:\n"
            "    a = sq(E, y)\n"
            "    q = sq(E, y)\n"
            "    return sum[s, c](a[s, c] + q[s, c])\n")
    first = tl.parse(text, "first.tl")
    second = tl.parse("\n\n" + text, "second.tl")
    for mod, where in ((first, "first.tl:2:15"), (second, "second.tl:4:15")):
        with pytest.raises(tl.TLBoundsError) as info:
            mod.emb(np.ones((3, 2)), np.array([0, 5]))
        assert str(info.value).startswith(f"{where}: error: gathered index y[s] = 5")

"""Hard inputs: odd names, huge literals, deep or long expressions, bad bytes and
labels, impossible memory requests.  Each must work or fail with a located TLError."""
from __future__ import annotations

import numpy as np
import pytest

import tensorlang as tl
from sources import compile_error, program




# ---------------------------------------------------------------- names: self
def test_a_parameter_named_self_binds_by_keyword():
    m = tl.parse(program("def f(self: f64[n], other: f64) -> f64:",
                         "    return self[0] * other"))
    assert m.f(self=np.array([3.0, 1.0]), other=2.0) == 6.0
    assert m.f(np.array([3.0, 1.0]), other=2.0) == 6.0
    assert m.f.count_ops(self=np.array([3.0, 1.0]), other=2.0) >= 1


def test_a_size_named_self_evaluates_its_cost():
    m = tl.parse(program("def f(x: f64[self]) -> f64:",
                         "    return sum[i](x[i] * x[i])"))
    c = tl.cost(m.f)
    assert c.evaluate(self=10) > 0


# ---------------------------------------------------------------- labels beyond i64
GATHER = program("def f(E: f64[k], y: i64[n]) -> f64[n]:",
                 "    r[s] = E[y[s]]",
                 "    return r")


@pytest.mark.parametrize("labels,shown", [
    (np.array([0.0, 1e20]), "1e+20"),
    (np.array([0.0, -1e20]), "-1e+20"),
    (np.array([0.0, 2.0 ** 63]), "9.223372036854776e+18"),
    (np.array([0, np.iinfo(np.uint64).max], dtype=np.uint64), "18446744073709551615"),
])
def test_labels_that_do_not_fit_in_i64_are_reported_as_given(labels, shown):
    m = tl.parse(GATHER, "g.tl")
    with pytest.raises(tl.TLTypeError) as info:
        m.f(np.ones(3), labels)
    msg = info.value.first.message
    assert f"label {shown} at 1" in msg and "i64" in msg
    assert info.value.line == 1


@pytest.mark.parametrize("labels", [[0, 2 ** 63], [0, 2 ** 64], [[0], [-2 ** 63 - 1]], 10 ** 30])
def test_python_integer_labels_beyond_i64_are_reported_exactly(labels):
    m = tl.parse(GATHER, "g.tl")
    with pytest.raises(tl.TLTypeError) as info:
        m.f(np.ones(3), labels)
    big = labels if isinstance(labels, int) else np.array(labels, dtype=object).flat[-1]
    assert f"holds the label {big}," in info.value.first.message


def test_unsigned_and_float_labels_in_range_still_work():
    m = tl.parse(GATHER, "g.tl")
    assert list(m.f(np.array([1.0, 2.0, 3.0]), np.array([2, 0], dtype=np.uint64))) == [3.0, 1.0]
    assert list(m.f(np.array([1.0, 2.0, 3.0]), np.array([1.0, 0.0]))) == [2.0, 1.0]


# ---------------------------------------------------------------- bytes that are not UTF-8
def test_a_file_that_is_not_utf8_is_a_located_syntax_error(tmp_path):
    path = tmp_path / "latin1.tl"
    path.write_bytes(b"def f(x: f64[n]) -> f64:\n    return x[0] * 2.0  # caf\xe9\n")
    with pytest.raises(tl.TLSyntaxError) as info:
        tl.load(path)
    err = info.value
    assert (err.line, err.col) == (2, 29)
    assert "not valid UTF-8" in err.first.message and "0xe9" in err.first.message
    assert str(err).startswith(f"{path}:2:29: error:")


def test_crlf_files_still_load(tmp_path):
    path = tmp_path / "crlf.tl"
    path.write_bytes(b"def f(x: f64[n]) -> f64:\r\n    return x[0] * 2.0\r\n")
    assert tl.load(path).f(np.array([1.5])) == 3.0


def test_a_byte_order_mark_is_dropped_and_columns_stay_right(tmp_path):
    path = tmp_path / "bom.tl"
    path.write_bytes(b"\xef\xbb\xbfdef f(x: f64[n]) -> f64:\n    return x[0] * 2.0\n")
    assert tl.load(path).f(np.array([1.5])) == 3.0
    path.write_bytes(b"\xef\xbb\xbfdef f(x: f64[n]) -> f64: # \xff\n    return x[0]\n")
    with pytest.raises(tl.TLSyntaxError) as info:
        tl.load(path)
    assert (info.value.line, info.value.col) == (1, 28)


# ---------------------------------------------------------------- literals beyond float64 / int64
BIG = "9" * 400
HUGE = "9" * 5000


@pytest.mark.parametrize("expr,col,phrase", [
    ("x[0] * 1e999", 19, "the value literal 1e999 is not finite in float64"),
    (f"x[0] * {BIG}", 19, "is not finite in float64"),
    ("x[0] ** 1e999", 20, "the value literal 1e999 is not finite"),
    ("x[0] + 1e300 * 1e300", 19, "multiply to a value that is not finite"),
    ("x[0] * 1e300 * 1e300", 12, "multiply to a value that is not finite"),
    ("-(1e300 * x[0]) * (1e10 * x[1])", 12, "multiply to a value that is not finite"),
    ("x[9223372036854775808]", 14, "index constant 9223372036854775808 does not fit in int64"),
    (f"x[{HUGE}]", 14, "(5000 characters) does not fit in int64"),
    ("x[9223372036854775807 + 1]", 14, "combine to a value that does not fit in int64"),
    ("sum[i]([4611686018427387904 * 2 * i < n] * x[i])", 20, "does not fit in int64"),
    ("sum[i]([i % 99999999999999999999 == 0] * x[i])", 24, "does not fit in int64"),
])
def test_literals_beyond_the_machine_types_are_located_errors(expr, col, phrase):
    err = compile_error(program("def f(x: f64[n]) -> f64:", f"    return {expr}"))
    assert type(err) is tl.TLTypeError
    assert (err.line, err.col) == (2, col) and phrase in err.first.message
    assert len(str(err).splitlines()[0]) < 200            # a long literal is abbreviated


@pytest.mark.parametrize("dim", ["9223372036854775808", HUGE])
def test_a_dimension_beyond_int64_is_a_located_error(dim):
    err = compile_error(program(f"def f(x: f64[{dim}]) -> f64:", "    return x[0]"))
    assert type(err) is tl.TLSyntaxError
    assert (err.line, err.col) == (1, 14) and "does not fit in int64" in err.first.message


def test_the_largest_index_constant_is_accepted():
    m = tl.parse(program("def f(x: f64[n]) -> f64:",
                         "    return x[9223372036854775807 - 9223372036854775807]"))
    assert m.f(np.array([1.0, 2.0])) == 1.0


# ---------------------------------------------------------------- long and deep expressions
def test_a_flat_sum_of_5000_terms_compiles_and_runs():
    terms = " + ".join(f"x[{k % 7}] * x[{(3 * k) % 7}]" for k in range(5000))
    m = tl.parse(program("def f(x: f64[7]) -> f64:", f"    return {terms} - x[0] / x[1] / x[2]"))
    x = np.arange(1.0, 8.0)
    want = sum(x[k % 7] * x[(3 * k) % 7] for k in range(5000)) - x[0] / x[1] / x[2]
    assert m.f(x) == pytest.approx(want)


def test_long_index_and_predicate_chains_compile():
    index = " + ".join(["i"] + ["1 - 1"] * 2000)
    alts = " or ".join(f"x[i] > {k}.5" for k in range(200))
    m = tl.parse(program("def f(x: f64[n]) -> f64:",
                         f"    return sum[i]([{alts}] * x[{index}])"))
    assert m.f(np.array([0.0, 2.0, 3.0])) == 5.0


def nested(depth: int) -> str:
    """An expression nested `depth` levels deep (the access x[0] and its index included)."""
    return "-" * (depth - 2) + "x[0]"


def test_nesting_up_to_the_limit_is_accepted():
    from tensorlang.syntax.parse import MAX_NESTING
    m = tl.parse(program("def f(x: f64[n]) -> f64:", f"    return {nested(MAX_NESTING)}"))
    assert m.f(np.array([2.0])) == 2.0


@pytest.mark.parametrize("shape", ["neg", "paren", "pow", "call", "sum"])
def test_nesting_beyond_the_limit_is_a_located_syntax_error(shape):
    from tensorlang.syntax.parse import MAX_NESTING
    d = MAX_NESTING + 5
    expr = {"neg": "-" * d + "x[0]",
            "paren": "(" * d + "x[0]" + ")" * d,
            "pow": " ** ".join(["x[0]"] * d),
            "call": "exp(" * d + "x[0]" + ")" * d,
            "sum": "".join(f"sum[i{k}](x[i{k}] * " for k in range(d)) + "1.0" + ")" * d}[shape]
    err = compile_error(program("def f(x: f64[n]) -> f64:", "    y = 1.0", f"    return {expr}"))
    assert type(err) is tl.TLSyntaxError
    assert err.line == 3 and err.col > 11
    assert f"more than {MAX_NESTING} levels" in err.first.message
    assert err.first.hint


def test_the_first_too_deep_expression_is_the_one_reported():
    from tensorlang.syntax.parse import MAX_NESTING
    deep = "(" * (MAX_NESTING + 1) + "x[0]" + ")" * (MAX_NESTING + 1)
    err = compile_error(program("def f(x: f64[n]) -> f64:", f"    return {deep} + {deep}"))
    assert (err.line, err.col) == (2, 12 + MAX_NESTING)


# ---------------------------------------------------------------- impossible memory requests
def test_an_output_larger_than_memory_is_a_shape_error_before_allocating():
    m = tl.parse(program("def f(x: f64[n]) -> f64[n, n]:",
                         "    y[i, j] = x[i] * x[j]",
                         "    return y"), "outer.tl")
    with pytest.raises(tl.TLShapeError) as info:
        m.f(np.ones(3_000_000))
    err = info.value
    assert (err.line, err.col) == (2, 5)
    assert "y of shape (3000000, 3000000) would need 72 TB" in err.first.message
    assert err.first.hint


def test_an_output_beyond_what_numpy_can_address_is_a_shape_error():
    m = tl.parse(program("def f(x: f64[n]) -> f64[4000000000, 4000000000]:",
                         "    y[i: 4000000000, j: 4000000000] = x[0]",
                         "    return y"), "huge.tl")
    with pytest.raises(tl.TLShapeError) as info:
        m.f(np.ones(2))
    assert "more than numpy can allocate" in info.value.first.message
    assert "128000000000000000000 bytes" in info.value.first.message


def test_an_argument_that_cannot_be_made_contiguous_is_a_shape_error():
    m = tl.parse(program("def f(x: f64[n]) -> f64:", "    return x[0]"), "arg.tl")
    view = np.broadcast_to(np.ones(1), (2 ** 45,))             # 256 TB once copied
    with pytest.raises(tl.TLShapeError) as info:
        m.f(view)
    assert info.value.line == 1 and "does not fit in memory" in info.value.first.message


@pytest.mark.parametrize("backend", ["numpy", "numba"])
def test_running_out_of_memory_names_the_largest_tensor(monkeypatch, backend):
    import tensorlang.backend.numba_backend as compiled
    import tensorlang.backend.numpy_ref as ref
    m = tl.parse(program("def f(x: f64[n]) -> f64[n, n]:",
                         "    y[i, j] = x[i] * x[j]",
                         "    return y"), "oom.tl")

    def exhausted(*args, **kwargs):
        raise MemoryError()
    # The backend that runs the call is the one that runs out of memory.
    monkeypatch.setattr(ref, "evaluate", exhausted)
    monkeypatch.setattr(compiled, "run", exhausted)
    with pytest.raises(tl.TLShapeError) as info:
        m.f.compile(backend)(np.ones(1000))
    assert "out of memory" in info.value.first.message
    assert "y of shape (1000, 1000), needs 8 MB" in info.value.first.message


def test_numba_running_out_of_stack_falls_back_to_the_interpreter_once():
    import types
    from tensorlang.backend import numba_backend
    calls = []

    def deep(env, sizes):
        calls.append(1)
        raise RecursionError("maximum recursion depth exceeded")
    module = types.SimpleNamespace(run=deep, GatherOutOfRange=type("G", (Exception,), {}))
    prog = tl.parse(program("def f(x: f64[n]) -> f64:", "    return x[0]")).f.program
    with pytest.warns(RuntimeWarning, match="ran out of stack"):
        assert numba_backend.run(module, prog, {"x": np.ones(2)}, {"n": 2}, lambda: "ok") == "ok"
    assert numba_backend.run(module, prog, {"x": np.ones(2)}, {"n": 2}, lambda: "ok") == "ok"
    assert len(calls) == 1


# ------------------------------------------------------------ the IEEE rule
@pytest.mark.parametrize("backend", ["numpy", "numba"])
def test_a_quotient_of_a_value_by_itself_is_not_rewritten_to_one(backend):
    f = tl.parse("def f(x: f64[n]) -> f64[n]:\n    y[i] = x[i] / x[i] + x[i] ** 2 / x[i]\n"
                 "    return y\n")["f"].compile(backend)
    x = np.array([0.0, np.inf, np.nan, 2.0])
    with np.errstate(all="ignore"):
        want = x / x + x ** 2 / x
    np.testing.assert_array_equal(f(x), want)


def test_zero_coefficients_are_strong_zeros():
    f = tl.parse("def f(x: f64[4]) -> f64:\n"
                 "    return x[0] - x[0] + 0.0 * x[1] + 0.0 / x[2] + x[3]\n")["f"]
    x = np.array([np.inf, np.nan, 0.0, 5.0])
    assert f.compile("numpy")(x) == 5.0
    assert f.compile("numba")(x) == 5.0


def test_a_derivative_whose_constant_overflows_is_a_tl_error():
    f = tl.parse("def f(x: f64[n]) -> f64:\n    return 1.5e308 * x[0] * x[0]\n")["f"]
    with pytest.raises(tl.TLError, match="beyond float64"):
        tl.grad(f, wrt="x")


# ------------------------------------------------------------ reads under a zero
def _rejected_like_the_read_alone(lines, read):
    """The program's error is the one `read` alone gives, located at `read`."""
    err = compile_error(program("def f(x: f64[4]) -> f64:", *lines))
    alone = compile_error(program("def f(x: f64[4]) -> f64:", f"    return {read}"))
    assert type(err) is tl.TLBoundsError
    line = next(k for k, text in enumerate(lines, start=2) if read in text)
    assert (err.line, err.col) == (line, lines[line - 2].index(read) + 1)
    assert (err.first.message, err.first.hint) == (alone.first.message, alone.first.hint)
    assert err.first.span.end_col - err.first.span.col == len(read)      # the caret


@pytest.mark.parametrize("lines", [
    ["    return x[0] + 0.0 * x[5]"],
    ["    return 0 * x[5]"],
    ["    return x[5] * 0.0"],
    ["    return 0.0 / x[5]"],
    ["    return x[5] - x[5]"],
    ["    return x[0] + (x[1] - x[1]) * x[5]"],
    ["    return x[0] + (x[5] + 2.0 * x[5] - 3.0 * x[5]) * x[1]"],
    ["    return sum[i](x[i] + 0.0 * x[5])"],
    ["    return exp(0.0 * x[5]) + max(x[0], 0.0)"],
    ["    return max(x[0], 0.0 * x[5])"],
    ["    return [0.0 * x[5] > 1.0] * x[0]"],
    ["    return x[5] ** 0.0"],
    ["    return pow(x[5], 0)"],
    ["    return x[0] ** (x[5] - x[5])"],
    ["    y[i] = x[i] + 0.0 * x[5]", "    return y[0]"],
    ["    s = 0.0 * x[5]", "    return s + x[0]"],
])
def test_a_read_under_a_zero_is_still_bounds_checked(lines):
    _rejected_like_the_read_alone(lines, "x[5]")


@pytest.mark.parametrize("dim", ["m", "4"])
def test_a_read_under_a_zero_in_a_called_function_is_checked(dim):
    err = compile_error(program("def g(v: f64[m]) -> f64:",
                                "    return v[0] + 0.0 * v[5]",
                                "",
                                f"def f(x: f64[{dim}]) -> f64:",
                                "    return g(x)"))
    assert type(err) is tl.TLBoundsError
    # For g itself and for its copy inlined into f (which names f's tensor).
    assert {(d.span.line, d.span.col) for d in err.diagnostics} == {(2, 25)}
    assert err.first.message.startswith("index 0 of v is 5")


def test_a_read_under_a_zero_is_checked_with_its_range_and_brackets():
    err = compile_error(program("def f(x: f64[n]) -> f64[n]:",
                                "    y[i] = x[i] + 0.0 * x[i + 1]",
                                "    return y"))
    assert type(err) is tl.TLBoundsError
    assert (err.line, err.col) == (2, 25) and err.first.hint == "guard it with [i + 1 < n]"


def test_reads_in_range_under_a_zero_are_accepted_and_stay_strong_zeros():
    m = tl.parse(program("def f(x: f64[n]) -> f64[n]:",
                         "    y[i] = x[i] + 0.0 * x[n - 1] + [i + 1 < n] * 0.0 * x[i + 1]"
                         " + (x[0] - x[0]) * x[i] ** 0.0",
                         "    return y"))
    x = np.array([np.nan, 2.0, np.inf])
    np.testing.assert_array_equal(m.f(x), x)
    # The running program has no zero terms; only the bounds stage saw them.
    assert len(m.f.program.stmts[0].body) == 1


def test_a_false_bracket_still_guards_the_reads_it_multiplies():
    m = tl.parse(program("def f(x: f64[4]) -> f64:", "    return x[0] + [1 < 0] * x[9]"))
    assert m.f(np.arange(4.0)) == 0.0


# ------------------------------------------------------------ division is a division
TINY, HUGE_F = 5e-324, 1e308
EDGES = np.array([TINY, -TINY, HUGE_F, -HUGE_F, np.inf, -np.inf, 0.0, -0.0, np.nan, 3.0, -7.5])


def _pairs():
    """Every pair of edge values, as two vectors."""
    a, b = np.meshgrid(EDGES, EDGES)
    return a.ravel(), b.ravel()


@pytest.mark.parametrize("backend", ["numpy", "numba"])
def test_an_elementwise_quotient_is_numpys_bit_for_bit(backend):
    m = tl.parse(program("def f(x: f64[n], y: f64[n]) -> (f64[n], f64[n], f64[n]):",
                         "    q[i] = x[i] / y[i]",
                         "    r[i] = 2.0 * x[i] / y[i]",
                         "    s[i] = 1.0 / y[i]",
                         "    return q, r, s"))
    f = m.f.compile(backend)
    x, y = _pairs()
    with np.errstate(all="ignore"):
        want = (x / y, 2.0 * x / y, 1.0 / y)
    for got, exp in zip(f(x, y), want):
        np.testing.assert_array_equal(got, exp)      # equal values, NaN where NumPy's is


@pytest.mark.parametrize("backend", ["numpy", "numba"])
@pytest.mark.parametrize("value", [TINY, HUGE_F, -TINY, 1.5])
def test_a_value_divided_by_itself_is_one(backend, value):
    f = tl.parse(program("def f(x: f64[2]) -> f64:",
                         "    return x[0] / x[0] + x[0] / x[1] - 1.0")).f.compile(backend)
    assert f(np.array([value, value])) == 1.0


@pytest.mark.parametrize("backend", ["numpy", "numba"])
def test_quotients_inside_sums_and_powers_divide(backend):
    m = tl.parse(program("def f(A: f64[m, n], d: f64[n], x: f64[m]) -> (f64[m], f64[m], f64):",
                         "    r[i] = sum[j](A[i, j] / d[j])",
                         "    p[i] = x[i] ** -2",
                         "    return r, p, sum[i](x[i] / x[i])"))
    f = m.f.compile(backend)
    A = np.array([[HUGE_F, TINY, 0.0], [-HUGE_F, 1.0, 0.0]])
    d = np.array([HUGE_F, TINY, np.inf])
    x = np.array([TINY, HUGE_F, np.inf, 0.0])[:2]
    r, p, s = f(A, d, x)
    np.testing.assert_array_equal(r, [2.0, np.inf])
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(p, x ** -2.0)
    assert s == 2.0


@pytest.mark.parametrize("backend", ["numpy", "numba"])
def test_a_quotient_behind_a_false_bracket_stays_a_strong_zero(backend):
    f = tl.parse(program("def f(x: f64[n]) -> f64[n]:",
                         "    y[i] = [i >= 1] * x[i] / x[i - 1]",
                         "    return y")).f.compile(backend)
    np.testing.assert_array_equal(f(np.array([0.0, 0.0, TINY, TINY])), [0.0, np.nan, np.inf, 1.0])


def test_a_division_costs_one_operation_and_the_count_agrees():
    m = tl.parse(program("def f(x: f64[n], y: f64[n]) -> (f64[n], f64[n], f64[n]):",
                         "    q[i] = x[i] / y[i]",
                         "    r[i] = 3.0 * x[i] / y[i] ** 2 / x[i]",
                         "    s[i] = 1.0 / y[i]",
                         "    return q, r, s"))
    # per element, one write and one add; then q: one division; r: one
    # multiplication, two divisions, one multiplication for the square; s: one division
    assert str(tl.cost(m.f)) == "12*n"
    x, y = np.array([1.0, 2.0, TINY]), np.array([3.0, 0.0, TINY])
    assert m.f.count_ops(x, y) == 12 * 3


@pytest.mark.parametrize("block", [1, 7, 1 << 20])
def test_a_quotient_in_a_contraction_is_evaluated_in_blocks_alike(monkeypatch, block):
    from tensorlang.backend import numpy_ref
    monkeypatch.setattr(numpy_ref, "POINTWISE_BLOCK", block)
    m = tl.parse(program("def f(A: f64[m, n], B: f64[n, p], d: f64[n]) -> "
                         "(f64[m], f64[p, m], f64):",
                         "    r[i] = sum[j](A[i, j] / d[j])",
                         "    t[k, i] = sum[j]([i != j] * A[i, j] * B[j, k] / d[j])",
                         "    return r, t, sum[i, j](A[i, j] / d[j])"))
    rng = np.random.default_rng(3)
    A, B, d = rng.normal(size=(4, 5)), rng.normal(size=(5, 3)), rng.normal(size=5)
    r, t, total = m.f.compile("numpy")(A, B, d)
    np.testing.assert_allclose(r, (A / d).sum(axis=1), rtol=1e-13)
    assert total == pytest.approx((A / d).sum(), rel=1e-13)
    off = ~np.eye(4, 5, dtype=bool)
    np.testing.assert_allclose(t, np.einsum("ij,jk->ki", A * off / d, B), rtol=1e-13)


# ------------------------------------------------------------ powers of powers
POWER_VALUES = np.array([-3.0, -0.0, 0.0, 2.5, np.inf, -np.inf, np.nan, TINY, HUGE_F, -HUGE_F])


def P(x, p):
    """IEEE pow elementwise (NumPy takes an array to the scalar power 0.5 as sqrt)."""
    return np.power(x, np.full(np.shape(x), p))



@pytest.mark.parametrize("backend", ["numpy", "numba"])
@pytest.mark.parametrize("expr,numpy_expr", [
    ("(x[i] ** 2) ** 0.5", lambda x, y: P(P(x, 2.0), 0.5)),
    ("(x[i] ** 0.5) ** 2", lambda x, y: P(P(x, 0.5), 2.0)),
    ("x[i] ** 0.5 * x[i] ** 0.5", lambda x, y: P(x, 0.5) * P(x, 0.5)),
    ("x[i] * x[i] ** 0.5", lambda x, y: x * P(x, 0.5)),
    ("(x[i] * y[i]) ** 0.5", lambda x, y: P(x * y, 0.5)),
    ("(x[i] ** 3) ** (1.0 / 3.0)", lambda x, y: P(P(x, 3.0), 1.0 / 3.0)),
    # a parenthesised sum is added up from +0.0, so 1 / -inf in it is +0.0
    ("(x[i] ** -1) ** -1", lambda x, y: P(0.0 + P(x, -1.0), -1.0)),
    ("x[i] ** 0.5 * x[i] ** 0.25", lambda x, y: P(x, 0.5) * P(x, 0.25)),
    ("x[i] ** 0.5", lambda x, y: P(x, 0.5)),
    ("x[i] ** -0.5", lambda x, y: P(x, -0.5)),
    ("y[i] / x[i] ** 0.5", lambda x, y: y / P(x, 0.5)),
    ("1.0 / sqrt(x[i])", lambda x, y: 1.0 / np.sqrt(0.0 + x)),
    ("pow(x[i], y[i])", lambda x, y: np.power(x, y)),
])
def test_powers_are_combined_only_where_every_ieee_result_stays(backend, expr, numpy_expr):
    f = tl.parse(program("def f(x: f64[n], y: f64[n]) -> f64[n]:",
                         f"    r[i] = {expr}",
                         "    return r")).f.compile(backend)
    x = POWER_VALUES
    y = np.resize(POWER_VALUES[::-1], len(x))
    with np.errstate(all="ignore"):
        want = numpy_expr(x, y)
    np.testing.assert_allclose(f(x, y), want, rtol=1e-15, atol=0)


@pytest.mark.parametrize("backend", ["numpy", "numba"])
def test_a_power_computed_at_run_time_is_ieee_pow(backend):
    f = tl.parse(program("def f(x: f64[n], s: f64) -> f64[n]:",
                         "    r[i] = pow(x[i], s)",
                         "    return r")).f.compile(backend)
    with np.errstate(invalid="ignore"):
        want = P(POWER_VALUES, 0.5)
    np.testing.assert_allclose(f(POWER_VALUES, 0.5), want, rtol=1e-15, atol=0)


def test_powers_that_combine_exactly_still_combine():
    m = tl.parse(program("def f(x: f64[n]) -> f64[n]:",
                         "    r[i] = (x[i] ** 2) ** 2 * x[i] + (2.0 * x[i]) ** 0.5 + x[i] ** 0.5 * x[i] ** 0.25",
                         "    return r"))
    powers = sorted(p for t in m.f.program.stmts[0].body for _, p in t.factors)
    assert powers == [0.5, 0.75, 5.0]


@pytest.mark.parametrize("backend", ["numpy", "numba"])
def test_a_result_is_never_the_callers_array(backend):
    """`return x` and `return v, v`: the results are arrays of their own, so writing
    into one changes neither the argument nor the other result (the backend's
    arrays for them were the argument itself and one array twice)."""
    m = tl.parse("def ident(x: f64[n]) -> f64[n]:\n    return x\n"
                 "def twice(x: f64[n]) -> (f64[n], f64[n]):\n    v[i] = 2.0 * x[i]\n    return v, v\n")
    x = np.arange(3.0)
    y = m.ident.compile(backend)(x)
    y[0] = 7.0
    np.testing.assert_array_equal(x, [0.0, 1.0, 2.0])
    a, b = m.twice.compile(backend)(x)
    a[0] = 7.0
    np.testing.assert_array_equal(b, [0.0, 2.0, 4.0])

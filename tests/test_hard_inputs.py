"""Hard inputs: odd names, huge literals, deep or long expressions, bad bytes and
labels, impossible memory requests.  Each must work or fail with a located TLError."""
from __future__ import annotations

import numpy as np
import pytest

import tensorlang as tl


def program(*lines: str) -> str:
    return "\n".join(lines) + "\n"


def compile_error(source: str, filename: str = "bad.tl") -> tl.TLError:
    with pytest.raises(tl.TLError) as info:
        tl.parse(source, filename=filename)
    return info.value


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

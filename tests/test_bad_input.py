"""Wrong programs and API misuse as users write them from the docs alone.

Each mistake must end in a tl.TLError (or, for a Python-level type mistake, a
TypeError) that says what is wrong, located where the source is to blame; never
an internal exception, a hang, a silently wrong number, or a damaged file.
tests/test_errors.py and tests/test_hard_inputs.py hold the older cases; the
rows here are the ones they did not cover.
"""
from __future__ import annotations

import errno

import numpy as np
import pytest

import tensorlang as tl
from tensorlang import cli

VEC = "def vec(x: f64[n]) -> f64[n]:\n    y[i] = 2.0 * x[i]\n    return y\n"
PAIR = "def pair(x: f64[n]) -> (f64, f64):\n    return x[0], x[n - 1]\n"


@pytest.fixture
def tl_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)

    def write(text, name="prog.tl"):
        (tmp_path / name).write_text(text)
        return name
    return write


# ------------------------------------------------------------------ the command line
def test_a_failed_write_leaves_no_partial_file_and_keeps_the_old_one(tl_file, tmp_path,
                                                                    monkeypatch, capsys):
    """-o writes the whole result or nothing: a disk that fills up part way must not
    leave a truncated .npy, nor destroy the file it was going to replace."""
    src = tl_file(VEC)
    (tmp_path / "out.npy").write_bytes(b"earlier result")
    real_save = np.save

    def save_then_fill_the_disk(fh, value):
        real_save(fh, value[: len(value) // 2])
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(cli.np, "save", save_then_fill_the_disk)
    assert cli.main(["run", src, "--size", "n=64", "-o", "out.npy"]) == 1
    assert "No space left on device" in capsys.readouterr().err
    assert (tmp_path / "out.npy").read_bytes() == b"earlier result"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.npy", "prog.tl"]


def test_a_successful_write_replaces_the_old_file(tl_file, tmp_path, capsys):
    src = tl_file(VEC)
    (tmp_path / "out.npy").write_bytes(b"earlier result")
    assert cli.main(["run", src, "x=" + str(_npy(tmp_path, [1.0, 2.0])), "-o", "out.npy"]) == 0
    assert np.array_equal(np.load(tmp_path / "out.npy"), [2.0, 4.0])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.npy", "prog.tl", "x.npy"]


def test_output_of_a_tuple_is_refused_before_running(tl_file, monkeypatch, capsys):
    src = tl_file(PAIR)
    ran = []
    monkeypatch.setattr(cli, "random_inputs", lambda *a, **k: ran.append(1) or {})
    assert cli.main(["run", src, "-o", "out.npy"]) == 1
    assert "-o needs a function with one output; pair returns 2" in capsys.readouterr().err
    assert not ran


def _npy(folder, values):
    path = folder / "x.npy"
    np.save(path, np.asarray(values))
    return path.name


# ------------------------------------------------------------------ tl.to_jax's arguments
JAX_SRC = ("def emb(E: f64[v, d], y: i64[b]) -> f64:\n"
           "    return sum[s, c](E[y[s], c] ** 2)\n\n"
           "def sq(x: f64[n]) -> f64:\n"
           "    return sum[i](x[i] ** 2)\n\n"
           "def masked(M: bool[n], x: f64[n]) -> f64:\n"
           "    return sum[i]([M[i]] * x[i])\n\n"
           "def corr(x: f64[n], w: f64[k], t: f64[n - k + 1]) -> f64:\n"
           "    return sum[i](t[i] * sum[j](w[j] * x[i + j]))\n")


@pytest.fixture(scope="module")
def jax_mod():
    pytest.importorskip("jax")
    return tl.parse(JAX_SRC, filename="j.tl")


def _jax_calls():
    """(id, call on (jax, jnp, module), error class, message fragment, line:col)."""
    return [
        ("fractional-labels", lambda jax, jnp, m: tl.to_jax(m.emb)(jnp.ones((3, 2)),
                                                                  jnp.array([0.5, 1.0])),
         tl.TLTypeError, "y must hold integers (i64), got non-integer values", "1:23"),
        ("fractional-labels-numpy", lambda jax, jnp, m: tl.to_jax(m.emb)(np.ones((3, 2)),
                                                                        np.array([1.5, 1.0])),
         tl.TLTypeError, "y must hold integers (i64), got non-integer values", "1:23"),
        ("traced-float-labels", lambda jax, jnp, m: jax.jit(tl.to_jax(m.emb))(
            jnp.ones((3, 2)), jnp.array([0.0, 1.0])),
         tl.TLTypeError, "y must hold integers (i64), got a traced float64 array", "1:23"),
        ("complex", lambda jax, jnp, m: tl.to_jax(m.sq)(jnp.ones(3) + 1j),
         tl.TLTypeError, "x must be real (f64), got complex values", "4:8"),
        ("traced-complex", lambda jax, jnp, m: jax.jit(tl.to_jax(m.sq))(jnp.ones(3) + 1j),
         tl.TLTypeError, "x must be real (f64), got a traced complex128 array", "4:8"),
        ("traced-float-mask", lambda jax, jnp, m: jax.jit(tl.to_jax(m.masked))(
            jnp.array([0.5, 1.0]), jnp.ones(2)),
         tl.TLTypeError, "M must be a boolean mask (bool), got a traced float64", "7:12"),
        ("empty", lambda jax, jnp, m: tl.to_jax(m.sq)(jnp.ones(0)),
         tl.TLShapeError, "dimension 0 is empty, but sizes must be at least 1", "4:8"),
        ("traced-empty", lambda jax, jnp, m: jax.jit(tl.to_jax(m.sq))(jnp.ones(0)),
         tl.TLShapeError, "dimension 0 is empty, but sizes must be at least 1", "4:8"),
        ("traced-sizes-disagree", lambda jax, jnp, m: jax.jit(tl.to_jax(m.masked))(
            jnp.ones(2, bool), jnp.ones(3)),
         tl.TLShapeError, "x has shape (3,) but dim 0 must be n = 2", "7:24"),
        ("traced-rank", lambda jax, jnp, m: jax.grad(tl.to_jax(m.sq))(jnp.ones((2, 2))),
         tl.TLShapeError, "x has shape (2, 2) (rank 2) but needs rank 1", "4:8"),
        # a dimension declared as a derived size was not checked (JAX then failed to
        # broadcast), nor was a derived size that is empty (a bare ValueError)
        ("derived-size-disagrees", lambda jax, jnp, m: tl.to_jax(m.corr)(
            jnp.ones(5), jnp.ones(2), jnp.ones(3)),
         tl.TLShapeError, "t has shape (3,) but dim 0 must be n - k + 1 = 4", "10:32"),
        ("traced-derived-size-disagrees", lambda jax, jnp, m: jax.jit(tl.to_jax(m.corr))(
            jnp.ones(5), jnp.ones(2), jnp.ones(3)),
         tl.TLShapeError, "t has shape (3,) but dim 0 must be n - k + 1 = 4", "10:32"),
        ("derived-range-empty", lambda jax, jnp, m: tl.to_jax(m.corr)(
            jnp.ones(2), jnp.ones(5), jnp.ones(1)),
         tl.TLShapeError, "the range n - k + 1 is -2 at k = 5, n = 2, but ranges are at least 1",
         "10:21"),
    ]


@pytest.mark.parametrize("call, cls, phrase, where",
                         [pytest.param(*row[1:], id=row[0]) for row in _jax_calls()])
def test_to_jax_refuses_what_a_plain_call_refuses(jax_mod, call, cls, phrase, where):
    """jnp.asarray would truncate 0.5 to label 0 and drop an imaginary part silently,
    and an empty array ran as if sizes could be 0; shape errors had no location."""
    import jax
    import jax.numpy as jnp
    with pytest.raises(cls) as info:
        call(jax, jnp, jax_mod)
    assert phrase in str(info.value)
    span = info.value.diagnostics[0].span
    assert f"{span.line}:{span.col}" == where


def test_to_jax_still_takes_what_converts_exactly(jax_mod):
    import jax
    import jax.numpy as jnp
    emb, sq = tl.to_jax(jax_mod.emb), tl.to_jax(jax_mod.sq)
    assert float(emb(jnp.ones((3, 2)), jnp.array([0.0, 2.0]))) == 4.0      # integral floats
    assert float(jax.jit(emb)(jnp.ones((3, 2)), jnp.array([0, 2]))) == 4.0
    assert float(sq([1, 2])) == 5.0                                       # ints for f64
    assert np.allclose(jax.grad(sq)(jnp.ones(3, jnp.float32)), 2.0)
    assert np.allclose(jax.vmap(sq)(jnp.ones((4, 3))), 3.0)                 # batched shapes


# ------------------------------------------------------------------ tl.to_torch's arguments
def _torch_calls():
    """(id, call on (torch, module), error class, message fragment, line:col)."""
    E = "torch.ones((3, 2), dtype=torch.float64)"
    return [
        ("fractional-label-tensor", f"tl.to_torch(m.emb)({E}, torch.tensor([0.5, 1.0]))",
         tl.TLTypeError, "y must hold integers (i64), got non-integer values", "1:23"),
        ("fractional-label-array", f"tl.to_torch(m.emb)({E}, np.array([1.5, 1.0]))",
         tl.TLTypeError, "y must hold integers (i64), got non-integer values", "1:23"),
        ("nan-label", f"tl.to_torch(m.emb)({E}, torch.tensor([float('nan'), 1.0]))",
         tl.TLTypeError, "y must hold integers (i64), got non-integer values", "1:23"),
        ("fractional-label-recorded",
         f"tl.to_torch(m.emb)({E}.requires_grad_(), torch.tensor([0.5, 1.0]))",
         tl.TLTypeError, "y must hold integers (i64), got non-integer values", "1:23"),
        ("complex-tensor", "tl.to_torch(m.sq)(torch.ones(3, dtype=torch.complex128))",
         tl.TLTypeError, "x must be real (f64), got complex values", "4:8"),
        ("complex-array", "tl.to_torch(m.sq)(np.ones(3) + 1j)",
         tl.TLTypeError, "x must be real (f64), got complex values", "4:8"),
        ("float-mask", "tl.to_torch(m.masked)(torch.tensor([0.5, 0.0]), torch.ones(2))",
         tl.TLTypeError, "M must be a boolean mask (bool), got float32", "7:12"),
    ]


@pytest.mark.parametrize("call, cls, phrase, where",
                         [pytest.param(*row[1:], id=row[0]) for row in _torch_calls()])
def test_to_torch_refuses_what_a_plain_call_refuses(call, cls, phrase, where):
    """torch.as_tensor(value, dtype) cast complex to real, 0.5 to label 0 and 0.5 to
    True silently, where a plain call of the same function is a located TLTypeError."""
    torch = pytest.importorskip("torch")
    m = tl.parse(JAX_SRC, filename="j.tl")
    with pytest.raises(cls) as info:
        eval(call, {"tl": tl, "torch": torch, "np": np, "m": m})
    assert phrase in str(info.value)
    span = info.value.diagnostics[0].span
    assert f"{span.line}:{span.col}" == where


def test_to_torch_still_takes_what_converts_exactly():
    torch = pytest.importorskip("torch")
    m = tl.parse(JAX_SRC, filename="j.tl")
    E = torch.ones((3, 2), dtype=torch.float64)
    assert tl.to_torch(m.emb)(E, torch.tensor([0.0, 2.0])).item() == 4.0    # integral floats
    assert tl.to_torch(m.emb)(E, [0, 2]).item() == 4.0
    assert tl.to_torch(m.sq)([0.1, 0.2]).item() == 0.1 ** 2 + 0.2 ** 2         # no float32 trip
    x = torch.ones(3, requires_grad=True)                                     # float32, recorded
    tl.to_torch(m.sq)(x).backward()
    assert torch.equal(x.grad, torch.full((3,), 2.0))


# ------------------------------------------------------------------ derivative requests
DERIV_SRC = ("def loss(x: f64[n], A: f64[n, n], y: i64[n], M: bool[n]) -> f64:\n"   # line 1
             "    return sum[i, j]([M[i]] * A[y[i], j] * x[j] ** 2)\n"
             "\n"
             "def vec(x: f64[n]) -> f64[n]:\n"                                        # line 4
             "    v[i] = x[i] ** 2\n"
             "    return v\n"
             "\n"
             "def pair(x: f64[n]) -> (f64, f64):\n"                                   # line 8
             "    return x[0], x[n - 1]\n")

# (transform, function, wrt, error class, message fragment, line:col)
DERIVATIVE_REQUESTS = [
    pytest.param("grad", "loss", None, tl.TLCallError,
                 "tl.grad: wrt must be a parameter name or a tuple of names, got None", "1:5",
                 id="wrt-none"),
    pytest.param("grad", "loss", 0, tl.TLCallError,
                 "tl.grad: wrt must be a parameter name or a tuple of names, got 0", "1:5",
                 id="wrt-int"),
    pytest.param("grad", "loss", "x,A", tl.TLCallError,
                 "tl.grad: loss has no parameter 'x,A'", "1:5", id="wrt-comma-separated"),
    pytest.param("grad", "loss", "i", tl.TLCallError,
                 "tl.grad: loss has no parameter 'i'; its parameters are x, A, y, M", "1:5",
                 id="wrt-an-index"),
    pytest.param("grad", "loss", ("x", "x"), tl.TLCallError,
                 "tl.grad: wrt names the parameter 'x' twice", "1:5", id="wrt-twice"),
    pytest.param("grad", "loss", "y", tl.TLTypeError,
                 "tl.grad: cannot differentiate with respect to y, an i64 tensor", "1:35",
                 id="wrt-labels"),
    pytest.param("jacobian", "vec", "x", None, None, None, id="jacobian-of-a-vector-works"),
    pytest.param("hessian", "loss", "M", tl.TLTypeError,
                 "tl.hessian: cannot differentiate with respect to M, a bool tensor", "1:46",
                 id="hessian-wrt-mask"),
    pytest.param("hessian", "vec", "x", tl.TLShapeError,
                 "tl.hessian: vec returns a tensor of shape [n], but tl.hessian needs a "
                 "scalar output", "4:5", id="hessian-of-a-vector"),
    pytest.param("hvp", "vec", "x", tl.TLShapeError,
                 "tl.hvp: vec returns a tensor of shape [n], but tl.hvp needs a scalar output",
                 "4:5", id="hvp-of-a-vector"),
    pytest.param("value_and_grad", "vec", "x", tl.TLShapeError,
                 "tl.value_and_grad: vec returns a tensor of shape [n]", "4:5",
                 id="value-and-grad-of-a-vector"),
    pytest.param("hessian", "loss", ("x", "A"), tl.TLCallError,
                 "tl.hessian: wrt must name one parameter, not 2", "1:5", id="hessian-two-wrt"),
    pytest.param("hessian", "loss", ("x",), None, None, None, id="hessian-one-wrt-in-a-tuple"),
    pytest.param("jacobian", "pair", "x", tl.TLShapeError,
                 "tl.jacobian: pair returns 2 values, but tl.jacobian needs a function with "
                 "one output", "8:5", id="jacobian-of-a-pair"),
    pytest.param("vjp", "pair", "x", tl.TLShapeError,
                 "tl.vjp: pair returns 2 values", "8:5", id="vjp-of-a-pair"),
]


@pytest.mark.parametrize("kind, name, wrt, cls, phrase, where", DERIVATIVE_REQUESTS)
def test_a_derivative_that_cannot_be_taken_is_refused_in_the_words_of_its_transform(
        kind, name, wrt, cls, phrase, where):
    """Refused before any work, naming the transform asked for (a Hessian of a vector
    used to say `grad: ...`), located in the function's def; wrt=None used to be a
    bare TypeError from inside the compiler."""
    f = tl.parse(DERIV_SRC, filename="d.tl")[name]
    transform = getattr(tl, kind)
    if cls is None:
        transform(f, wrt=wrt)
        return
    with pytest.raises(cls) as info:
        transform(f, wrt=wrt)
    assert phrase in str(info.value)
    span = info.value.diagnostics[0].span
    assert f"{span.line}:{span.col}" == where


def test_a_comma_separated_wrt_is_told_to_be_a_tuple():
    f = tl.parse(DERIV_SRC, filename="d.tl").loss
    with pytest.raises(tl.TLCallError) as info:
        tl.grad(f, wrt="x, A")
    assert info.value.diagnostics[0].hint == "name several parameters as a tuple: wrt=('x', 'A')"


def test_explain_refuses_a_bad_wrt_before_printing_any_stage(tl_file, capsys):
    src = tl_file(DERIV_SRC)
    assert cli.main(["explain", src, "-f", "loss", "--wrt", "z"]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert "prog.tl:1:5: error: tl.grad: loss has no parameter 'z'" in err


# ------------------------------------------------------------------ tl.parse and tl.load
ONE = "def f(x: f64) -> f64:\n    return 2.0 * x\n"


@pytest.mark.parametrize("source", [
    pytest.param(ONE.encode(), id="bytes"),
    pytest.param(bytearray(ONE.encode()), id="bytearray"),
    pytest.param("\ufeff" + ONE, id="byte-order-mark"),       # open(path).read() keeps it
    pytest.param(ONE.replace("\n", "\r"), id="old-mac-line-ends"),
])
def test_parse_reads_text_as_load_reads_a_file(source):
    """tl.parse(bytes) was an internal error, and a leading byte-order mark or bare \\r
    line ends a syntax error, although tl.load takes all of them in a file."""
    assert tl.parse(source).f(3.0) == 6.0


def test_parse_of_bytes_that_are_not_utf8_is_located():
    with pytest.raises(tl.TLSyntaxError) as info:
        tl.parse(b"def f(x: f64) -> f64:\n    return \xff\n", filename="b.tl")
    assert str(info.value).startswith("b.tl:2:12: error: the file is not valid UTF-8")


def test_byte_order_mark_keeps_columns_right():
    with pytest.raises(tl.TLNameError) as info:
        tl.parse("\ufeffdef f(x: f64) -> f64:\n    return q\n")
    span = info.value.diagnostics[0].span
    assert (span.line, span.col) == (2, 12)


@pytest.mark.parametrize("source", [None, 3, ["def f(x: f64) -> f64:", "    return x"]])
def test_parse_of_something_other_than_text_is_a_type_error(source):
    """It was an AttributeError from inside the compiler ('NoneType' has no splitlines)."""
    with pytest.raises(TypeError, match="tl.parse takes the program's text as a str, got"):
        tl.parse(source)


def test_load_of_a_bytes_path_names_the_file_as_text(tmp_path):
    path = tmp_path / "f.tl"
    path.write_text("def f(x: f64) -> f64:\n    return q\n")
    with pytest.raises(tl.TLNameError) as info:
        tl.load(bytes(path))
    assert str(info.value).startswith(f"{path}:2:12: error: unknown name q")


# ------------------------------------------------------------------ one mistake, one diagnostic
def check_rows(rows):
    return [pytest.param(src, cls, msgs, id=id_) for id_, src, cls, msgs in rows]


# (id, source, class of the error, [(line:col, message fragment)] for every diagnostic)
ONE_DIAGNOSTIC = [
    ("call-of-a-function-with-an-error",
     "def f(x: f64[n]) -> f64:\n    return g(x)\n\n"
     "def g(x: f64[n]) -> f64:\n    return f(x) + 1.0\n",
     tl.TLNameError, [("2:12", "g is defined after f")]),        # not also "unknown function f"
    ("destructuring-a-function-with-an-error",
     "def f(x: f64[n]) -> (f64, f64):\n    return q, x[0]\n\n"
     "def g(x: f64[n]) -> f64:\n    a, b = f(x)\n    return a + b\n",
     tl.TLNameError, [("2:12", "unknown name q")]),
    ("parameter-assigned",
     "def f(x: f64[n]) -> f64:\n    x = sum[i](x[i])\n    return x\n",
     tl.TLNameError, [("2:5", "x is a parameter and cannot be assigned")]),   # no type mismatch
    ("call-argument-from-a-failed-statement",
     "def g(v: f64[n]) -> f64[n]:\n    r[i] = 2.0 * v[i]\n    return r\n\n"
     "def f(x: f64[T, n]) -> f64[T, n]:\n"
     "    h[t: T, i: n] = x[t, i] + [t >= 1] * u[t - 1, i]\n    u = g(h)\n    return h\n",
     tl.TLRecurrenceError, [("7:5", "u is read before it is defined")]),  # not "h must be whole"
    ("call-argument-misspelt",
     "def g(v: f64[n]) -> f64[n]:\n    r[i] = 2.0 * v[i]\n    return r\n\n"
     "def f(x: f64[n]) -> f64[n]:\n    u = g(xx)\n    return u\n",
     tl.TLNameError, [("6:11", "unknown name xx")]),        # not "v of g must be a whole tensor"
    ("statement-assigned-twice",
     "def f(x: f64[n]) -> f64:\n    s[i] = x[i]\n    s = sum[i](s[i])\n    return s\n",
     tl.TLNameError, [("3:5", "s is already defined")]),
]


@pytest.mark.parametrize("source, cls, expected", check_rows(ONE_DIAGNOSTIC))
def test_one_mistake_is_one_diagnostic(source, cls, expected):
    """A call of an earlier function that had errors of its own said "unknown function";
    reading a parameter after a failed assignment to it reported a return type mismatch
    the user never wrote; a misspelt or failed tensor argument of a call was "argument v
    of g must be a whole tensor"."""
    with pytest.raises(cls) as info:
        tl.parse(source, filename="c.tl")
    got = [(f"{d.span.line}:{d.span.col}", d.message) for d in info.value.diagnostics]
    assert len(got) == len(expected), got
    for (where, message), (want_where, phrase) in zip(got, expected):
        assert where == want_where and phrase in message, got


# ------------------------------------------------------------------ messages that name the mistake
# (id, source, class, message fragment, line:col, hint fragment or None)
CLEARER_MESSAGES = [
    ("one-hot-of-float-labels",
     "def f(P: f64[b, v], y: f64[b]) -> f64[b]:\n    p[s] = sum[t]([t == y[s]] * P[s, t])\n"
     "    return p\n",
     tl.TLTypeError, "y is an f64 tensor: its entries are values, which cannot be compared "
     "with an index", "2:25", "declare it y: i64[b] to use its entries as labels"),
    ("shifted-label-of-floats",
     "def f(P: f64[b, v], y: f64[b]) -> f64[b]:\n    p[s] = sum[t]([y[s] != t + 1] * P[s, t])\n"
     "    return p\n",
     tl.TLTypeError, "y is an f64 tensor", "2:20", "declare it y: i64[b]"),
    ("one-hot-of-a-computed-tensor",
     "def f(P: f64[b, v], x: f64[b]) -> f64[b]:\n    y[s] = 2.0 * x[s]\n"
     "    p[s] = sum[t]([y[s] == t] * P[s, t])\n    return p\n",
     tl.TLTypeError, "y is an f64 tensor", "3:20", "only entries of i64 parameters are labels"),
    ("constant-read-past-a-literal-dimension",
     "def f(x: f64[3]) -> f64:\n    return x[3]\n",
     tl.TLBoundsError, "index 0 of x is 3, which can lie outside 0 .. 2 (dimension 0 of x has "
     "size 3)", "2:12", "the last position of dimension 0 is 2"),
    ("position-fixed-by-the-sizes",
     "def f(s: f64[T]) -> f64:\n    return s[T - 1] + s[T - 2]\n",
     tl.TLBoundsError, "index 0 of s is T - 2, which can lie outside 0 .. T - 1", "2:23",
     "guard it with [T >= 2]"),
    ("python-negative-index",
     "def f(x: f64[n]) -> f64:\n    return x[-1]\n",
     tl.TLBoundsError, "index 0 of x is -1, which can lie outside 0 .. n - 1", "2:12",
     "the last position of dimension 0 is n - 1"),
    ("scalar-inside-a-recurrence",
     "def f(x: f64[T]) -> f64[T]:\n    s = sum[t](h[t])\n"
     "    h[t: T] = x[t] + [t >= 1] * h[t - 1] * s\n    return h\n",
     tl.TLRecurrenceError, "s has no index, so the cycle s -> h -> s has no index to step along",
     "3:44", "h cannot read s inside its steps"),
    ("scalar-inside-a-recurrence-through-a-statement",
     "def f(x: f64[T]) -> f64[T]:\n    s = sum[t](h[t])\n    u = 2.0 * s\n"
     "    h[t: T] = x[t] * u\n    return h\n",
     tl.TLRecurrenceError, "the cycle s -> h -> u -> s", "3:15", "u cannot read s"),
    ("index-against-a-value-stays-as-it-was",
     "def f(x: f64[n]) -> f64[n]:\n    y[i] = [i > x[i]] * x[i]\n    return y\n",
     tl.TLTypeError, "index i used as a value", "2:13", "indices are not numbers"),
]


@pytest.mark.parametrize("source, cls, phrase, where, hint",
                         [pytest.param(*r[1:], id=r[0]) for r in CLEARER_MESSAGES])
def test_the_message_names_the_mistake(source, cls, phrase, where, hint):
    """[t == y[s]] with labels declared f64 said "index t used as a value", pointing at
    the index, where what is wrong is y's type; a scalar that reads every step of a
    recurrence inside its steps was reported as "cycle h -> h has no index to step
    along" at h[t - 1], a read that steps perfectly well."""
    with pytest.raises(cls) as info:
        tl.parse(source, filename="m.tl")
    d = info.value.diagnostics[0]
    assert phrase in d.message and f"{d.span.line}:{d.span.col}" == where
    assert (hint is None and d.hint is None) or hint in d.hint


# ------------------------------------------------------------------ habits from Python and NumPy
def body(*lines):
    return "def f(x: f64[n], A: f64[n, n]) -> f64:\n" + "".join(f"    {ln}\n" for ln in lines)


# (id, source, message fragment, line:col, hint fragment); every one a TLSyntaxError
HABITS = [
    ("caret-for-power", body("return sum[i](x[i] ^ 2)"), "unexpected character '^'", "2:24",
     "a power is written **"),
    ("python-double-index", body("return sum[i, j](A[i][j])"), "unexpected '['", "2:26",
     "one bracket: A[i, j]"),
    ("index-a-call", "def g(x: f64[n]) -> f64[n]:\n    return x\n\n" + body("return sum[i](g(x)[i])"),
     "unexpected '['", "5:23", "name the value first"),
    ("plus-equals", body("s = x[0]", "s += x[1]", "return s"), "unexpected '+'", "3:7",
     "there is no +="),
    ("numpy-call", body("return np.sum(x)"), "unexpected character '.'", "2:14",
     "there are no methods or modules"),
    ("for-loop", body("s = 0.0", "for i in range(n):", "    s = s + x[i]", "return s"),
     "unexpected 'i'", "3:9", "there are no loops or if statements"),
    ("if-statement", body("if x[0] > 0.0:", "    return x[0]", "return 0.0"),
     "unexpected 'x'", "2:8", "there are no loops or if statements"),
    ("semicolon", body("s = x[0]; t = x[1]", "return s"), "unexpected character ';'", "2:13",
     "one statement per line"),
    ("ampersands", body("return sum[i]([i > 0 && i < n - 1] * x[i])"),
     "unexpected character '&'", "2:26", "and, or, not"),
    ("typeset-minus", body("return x[0] \u2212 1.0"), "unexpected character '\u2212'", "2:17",
     "type -"),
    ("typeset-less-equal", body("return sum[i]([i \u2264 1] * x[i])"),
     "unexpected character '\u2264'", "2:22", "type <="),
    # `max` and `min` name nothing but the builtin and the reduction: a scalar named
    # so failed where it was read with only the tokens the grammar expected
    ("max-as-a-scalar", "def f(max: f64) -> f64:\n    return max * 2.0\n", "unexpected '*'",
     "2:16", "max is the builtin max(a, b)"),
    ("min-as-a-statement", body("min = x[0]", "return min"), "unexpected end of line", "3:15",
     "it cannot name a tensor, scalar or size"),
]


@pytest.mark.parametrize("source, phrase, where, hint",
                         [pytest.param(*r[1:], id=r[0]) for r in HABITS])
def test_a_habit_from_elsewhere_gets_a_hint(source, phrase, where, hint):
    """These were located but said only what was unexpected (or listed the tokens the
    grammar expected), not what to write instead."""
    with pytest.raises(tl.TLSyntaxError) as info:
        tl.parse(source, filename="h.tl")
    d = info.value.diagnostics[0]
    assert phrase in d.message and f"{d.span.line}:{d.span.col}" == where
    assert d.hint is not None and hint in d.hint


# ------------------------------------------------------------------ exit statuses
@pytest.mark.parametrize("argv, phrase", [
    pytest.param([], "the following arguments are required: COMMAND", id="no-command"),
    pytest.param(["frobnicate", "prog.tl"], "invalid choice: 'frobnicate'", id="unknown-command"),
    pytest.param(["run"], "the following arguments are required: file\n", id="run-no-file"),
    pytest.param(["run", "prog.tl", "--seed", "abc"], "invalid int value: 'abc'", id="bad-seed"),
    pytest.param(["grad", "prog.tl", "--wrt", "x", "--mode", "sideways"], "invalid choice",
                 id="bad-mode"),
    pytest.param(["check", "prog.tl", "extra"], "unrecognized arguments: extra",
                 id="surplus-argument"),
])
def test_a_mistake_on_the_command_line_exits_with_status_1(tl_file, capsys, argv, phrase):
    """The docs promise status 1 for every error; argparse's own errors exited with 2,
    and `run` without a file claimed that name=VALUE arguments were required too."""
    tl_file(VEC)
    with pytest.raises(SystemExit) as info:
        cli.main(argv)
    assert info.value.code == 1
    err = capsys.readouterr().err
    assert phrase in err and err.startswith("usage: tensorlang")


def test_check_of_a_file_without_functions(tl_file, capsys):
    src = tl_file("# nothing here yet\n")
    assert cli.main(["check", src]) == 0
    assert capsys.readouterr().out == "prog.tl: ok (no functions)\n"


@pytest.mark.parametrize("extra, phrase", [
    pytest.param(["--size", "N=100"], "--size N: vec has no size 'N'; its sizes are n",
                 id="misspelt-size"),
    pytest.param(["x=x.npy", "--size", "n=4"],
                 "--size n=4 disagrees with x, whose dimension 0 (n) is 2", id="size-vs-array"),
])
def test_run_refuses_sizes_it_would_not_use(tl_file, tmp_path, capsys, extra, phrase):
    """--size N=100 for a function whose size is n ran at the default n = 8 without a
    word; a size that disagreed with a given array failed later as a shape error of the
    call, at the parameter of an input the user never gave."""
    src = tl_file(VEC)
    _npy(tmp_path, [1.0, 2.0])
    assert cli.main(["run", src] + extra) == 1
    out, err = capsys.readouterr()
    assert phrase in err and out == ""


# ------------------------------------------------------------------ calls of derivatives
@pytest.mark.parametrize("make, call, phrase", [
    pytest.param(lambda f: tl.grad(f, wrt="x"), lambda g: g(np.ones(3)),
                 "missing argument A of qform_grad", id="grad-missing-argument"),
    pytest.param(lambda f: tl.hvp(f, wrt="x"), lambda g: g(np.ones(3), np.eye(3)),
                 "missing argument d_x of qform_hvp", id="hvp-missing-tangent"),
    pytest.param(lambda f: tl.jvp(f, wrt="x"), lambda g: g(np.ones(3), np.eye(3), dx=np.ones(3)),
                 "qform_jvp has no parameter named 'dx'", id="jvp-misnamed-tangent"),
    pytest.param(lambda f: tl.grad(f, wrt="x"), lambda g: tl.grad(g, wrt="x"),
                 "tl.grad: qform_grad returns a tensor of shape [n]", id="grad-of-a-gradient"),
])
def test_a_derivative_misused_points_at_the_function_it_came_from(make, call, phrase):
    """Binding errors of a derived function had no location at all, while those of the
    function itself point at its def."""
    qform = tl.parse("def qform(x: f64[n], A: f64[n, n]) -> f64:\n"
                     "    return sum[i, j](x[i] * A[i, j] * x[j])\n", filename="q.tl").qform
    with pytest.raises(tl.TLError) as info:
        call(make(qform))
    assert str(info.value).startswith("q.tl:1:5: error: ") and phrase in str(info.value)

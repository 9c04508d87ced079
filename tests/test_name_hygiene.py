"""Any legal name works on both backends, whatever the generated code calls its own things.

Program names are swept through every role (tensor and scalar parameters,
statements, size symbols, index variables): Python keywords, builtins, module
names (`np`, `numba`, `prange`), the patterns the Numba generator uses or used
for its own names (`s_n`, `v_x`, `k_t`, `t_par`, `acc`, `b1`, `tl_max`, `k0`,
...) and two 5000-character names that differ only at the end.  Many names
share one program, so only a few kernels compile.  Each result is compared with
the same formula written in NumPy, on both backends.  The generated module is
also checked as Python text: every identifier in it is either a program name in
its own namespace or one of the generator's own names, never both.
"""
import ast
import keyword
import re

import numpy as np
import pytest

import tensorlang as tl
from tensorlang.backend.numba_backend import module_source
from tensorlang.backend.kernels import Names, is_program_identifier

TL_KEYWORDS = {"def", "return", "sum", "and", "or", "not"}
KEYWORDS = sorted(set(keyword.kwlist + keyword.softkwlist) - TL_KEYWORDS)
BUILTINS = ["range", "float", "int", "len", "print", "object", "list", "dict", "type", "id",
            "iter", "next", "super", "bool", "str", "f64", "i64"]
MODULES = ["np", "numba", "prange", "njit", "math", "os", "sys", "JIT", "GatherOutOfRange"]
GENERATED = ["s_n", "s_m", "s_q", "v_x", "v_s", "v_r", "i_i", "i_q", "k_t", "k_r", "k0", "k1",
             "k0_par", "k1_par", "t_par", "acc", "b1", "b2", "e1", "g1", "o1", "out", "env",
             "sizes", "run", "work", "tic", "tl_times", "tl_clock", "tl_max", "tl_min",
             "tl_sigmoid", "tl_pow", "v1_", "v1_aaa", "s1", "i0", "__name__", "__builtins__", "_", "__"]
LONG = ["a" * 5000 + "1", "a" * 5000 + "2"]
NAMES = list(dict.fromkeys(KEYWORDS + BUILTINS + MODULES + GENERATED + LONG))

# The generator's own identifiers (and the helpers' parameters in the module header),
# with those of a row group's loop (numba_module.emit_rows: `k0_rows` and its `_par` twin,
# its members' kernels `k0_1` inlined with their locals suffixed, `acc_k0_1`, `b4_k0_1`,
# the row loop's `r0_s`, `r0_a1`, `nch`).
GENERATED_IDENT = re.compile(
    r"((([bego]\d+|acc)_)?k\d+(_par|_\d+|_rows(_par)?)?|[bego]\d+|acc|out|env|sizes|run|np|njit"
    r"|prange|range|float|abs|JIT|work|tic|r\d+_[a-z]+\d*|nch"
    r"|GatherOutOfRange|Exception|dict|max|min|tl_[a-z]+|[abveo]|True|False)")


def both(fn, args):
    """fn's results on the Numba backend and on the interpreter (optimized once: the
    optimizer is slow on programs with a hundred names)."""
    out = []
    for backend in ("numba", "numpy"):
        g = fn.compile(backend)
        g._optimized = fn.optimized_program()
        out.append(np.asarray(g(**args)))
    return out


def check_identifiers(fn, present: dict):
    """Every identifier of fn's module is a program name (in the namespace of its kind)
    or one of the generator's own; each name of `present` (name -> kind) is there."""
    src = module_source(fn.optimized_program())
    found = set()
    for node in ast.walk(ast.parse(src)):
        if isinstance(node, ast.Name):
            found.add(node.id)
        elif isinstance(node, ast.arg):
            found.add(node.arg)
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            found.add(node.name)
    program = {x for x in found if is_program_identifier(x)}
    others = found - program
    assert all(GENERATED_IDENT.fullmatch(x) for x in others), \
        sorted(x for x in others if not GENERATED_IDENT.fullmatch(x))
    for n, kind in present.items():
        letter = {"value": "v", "size": "s", "index": "i"}[kind]
        if len(n) <= 40:
            assert f"{letter}_{n}" in program, (n, kind)
        else:
            assert any(re.fullmatch(rf"{letter}\d+_{n[:24]}", x) for x in program), (n, kind)
    assert max(map(len, found)) <= 40            # long names are shortened
    return src


def test_names_keeps_kinds_and_names_apart():
    names = Names()
    made = {(kind, n): getattr(names, kind)(n) for n in NAMES + ["x", "v_x", "s_x", "i_x"]
            for kind in ("value", "size", "index")}
    assert len(set(made.values())) == len(made)
    assert all(is_program_identifier(x) and x.isidentifier() and not keyword.iskeyword(x)
               for x in made.values())
    assert made[("value", "x")] == "v_x" and made[("size", "v_x")] == "s_v_x"
    assert names.value(LONG[0]) == made[("value", LONG[0])]      # stable within a module


def test_names_are_legal_tensorlang():
    for n in NAMES:
        tl.parse(f"def f({n}: f64[n]) -> f64[n]:\n    y[q] = {n}[q]\n    return y\n")


@pytest.mark.parametrize("flip", [0, 1])
def test_names_of_tensors_scalars_and_statements(flip):
    """Half the names are tensor parameters, half scalars (swapped in the second run);
    the statements are named `t`, `t_par` (one kernel each in the old scheme
    collided) or `acc`, `out` and a 5000-character name."""
    stmts = ("t", "t_par") if flip == 0 else ("acc", "out")
    params = [nm for nm in NAMES if nm not in stmts]
    tensors = params[flip::2]
    scalars = params[1 - flip::2]
    rng = np.random.default_rng(10 + flip)
    n = 5
    args = {t: rng.standard_normal(n) for t in tensors}
    args.update({s: float(rng.standard_normal()) for s in scalars})
    params = ", ".join([f"{t}: f64[n]" for t in tensors] + [f"{s}: f64" for s in scalars])
    terms = " + ".join(f"{k + 1}.0 * {t}[q] * {s}" for k, (t, s) in enumerate(zip(tensors, scalars)))
    want_first = sum((k + 1) * args[t] * args[s] for k, (t, s) in enumerate(zip(tensors, scalars)))
    if flip == 0:
        first, second, result = "t", "t_par", "t_par"
        body = (f"    {first}[q] = {terms}\n"
                f"    {second}[q] = [q + 1 < n] * {first}[q + 1] - {first}[q] * {scalars[0]}\n")
        want = np.append(want_first[1:], 0.0) - want_first * args[scalars[0]]
    else:
        long_stmt = "z" * 4999 + "9"
        first, second, result = "acc", "out", long_stmt
        body = (f"    {first} = sum[q]({terms})\n"
                f"    {second}[q] = {first} * {tensors[0]}[q]\n"
                f"    {long_stmt}[q] = {second}[q] + [q >= 1] * {second}[q - 1]\n")
        o = want_first.sum() * args[tensors[0]]
        want = o + np.concatenate([[0.0], o[:-1]])
    src = f"def f({params}) -> f64[n]:\n{body}    return {result}\n"
    fn = tl.parse(src)["f"]
    for got in both(fn, args):
        assert np.allclose(got, want, rtol=1e-12, atol=1e-12)
    check_identifiers(fn, {t: "value" for t in tensors} | {s: "value" for s in scalars}
                      | {result: "value", "n": "size"})


def test_names_of_indices():
    """Every name as a summed index (one term each, with guards, offsets, strides and
    gathers through it), and a few as the statement's own indices; the sizes are
    `n` and `m` and a scalar is `s`, so `s_m`, `s_n` and `v_s` are in the way."""
    rng = np.random.default_rng(3)
    n, m, v = 3, 4, 5
    A = rng.standard_normal((n, m))
    x = rng.standard_normal(m)
    E = rng.standard_normal(v)
    y = rng.integers(0, v, m)
    s = 1.5
    gi, gj = "in", "a" * 5000 + "3"
    names = [nm for nm in NAMES if nm not in (gi, gj)]
    terms, want = [], np.zeros((n, m))
    for k, j in enumerate(names):
        c = float(k + 1)
        kind = k % 4
        if kind == 0:
            terms.append(f"{c} * sum[{j}](A[{gi}, {j}] * x[{j}])")
            want += c * (A @ x)[:, None]
        elif kind == 1:
            terms.append(f"{c} * sum[{j}: m]([{j} + 1 < m] * A[{gi}, {j} + 1] * s)")
            want += c * s * A[:, 1:].sum(axis=1)[:, None]
        elif kind == 2:
            terms.append(f"{c} * sum[{j}]([{j} >= 1] * x[{j} - 1] * E[y[{j}]])")
            want += c * np.sum(x[:-1] * E[y[1:]])
        else:
            terms.append(f"{c} * sum[{j}: m]([2 * {j} < m] * x[2 * {j}] * [{j} != {gj}])")
            even = np.arange(0, m, 2)
            want += c * np.array([[np.sum(x[even] * (even // 2 != col)) for col in range(m)]])
    src = (f"def f(A: f64[n, m], x: f64[m], E: f64[v], y: i64[m], s: f64) -> f64[n, m]:\n"
           f"    r[{gi}, {gj}] = A[{gi}, {gj}] + {' + '.join(terms)}\n"
           f"    return r\n")
    want += A
    fn = tl.parse(src)["f"]
    args = dict(A=A, x=x, E=E, y=y, s=s)
    for got in both(fn, args):
        assert np.allclose(got, want, rtol=1e-12, atol=1e-12)
    check_identifiers(fn, {gi: "index", gj: "index", "s": "value", "m": "size"})


def test_names_of_sizes():
    """Every name as a size symbol: in shapes, guards, index arithmetic and as a value
    (no sums, which the optimizer would give statements, and kernels, of their own)."""
    rng = np.random.default_rng(4)
    sizes = {z: 1 + k % 4 for k, z in enumerate(NAMES)}
    params = ", ".join(f"p{k}: f64[{z}]" for k, z in enumerate(NAMES))
    args = {f"p{k}": rng.standard_normal(sizes[z]) for k, z in enumerate(NAMES)}
    z0 = NAMES[0]
    want = args["p0"][::-1].copy()
    terms = []
    for k, z in enumerate(NAMES[1:], start=1):
        p, d = args[f"p{k}"], sizes[z]
        terms.append(f"[q < {z}] * p{k}[{z} - 1 - q] * {z}")
        top = min(d, sizes[z0])
        want[:top] += p[::-1][:top] * d
    src = (f"def f({params}) -> f64[{z0}]:\n"
           f"    r[q: {z0}] = p0[{z0} - 1 - q] + {' + '.join(terms)}\n"
           f"    return r\n")
    fn = tl.parse(src)["f"]
    for got in both(fn, args):
        assert np.allclose(got, want, rtol=1e-12, atol=1e-12)
    check_identifiers(fn, {z: "size" for z in NAMES} | {"p1": "value"})


def test_issue_reproducers():
    """The collisions of the old naming scheme, as reported."""
    B = np.ones((6, 1))
    f = tl.parse("def f(B: f64[n, m]) -> f64[n]:\n    y[s_m] = 2.0 * B[s_m, m - 1]\n"
                 "    return y\n")["f"]
    for got in both(f, dict(B=B)):
        assert np.array_equal(got, np.full(6, 2.0))
    g = tl.parse("def f(x: f64[n], s: f64) -> f64[n]:\n    y[v_s] = x[v_s] * s\n    return y\n")["f"]
    for got in both(g, dict(x=np.arange(5.0), s=10.0)):
        assert np.array_equal(got, 10.0 * np.arange(5.0))


def test_long_names_differing_at_the_end_stay_apart():
    a, b = "w" * 5000 + "1", "w" * 5000 + "2"
    src = (f"def f({a}: f64[{a}z], {b}: f64[{b}z]) -> f64:\n"
           f"    {a}{a} = sum[{a}{b}]({a}[{a}{b}])\n"
           f"    {b}{b} = sum[{b}{a}]({b}[{b}{a}])\n"
           f"    return {a}{a} + 2.0 * {b}{b}\n")
    fn = tl.parse(src)["f"]
    args = {a: np.arange(3.0), b: np.arange(4.0)}
    for got in both(fn, args):
        assert float(got) == 3.0 + 2.0 * 6.0
    check_identifiers(fn, {a: "value", b: "value", a + "z": "size", b + "z": "size"})

"""The JAX backend (compile(backend="jax"), TENSORLANG_BACKEND=jax) and tl.to_jax.

Every example function and its derivatives (gradient or vjp for each f64
parameter, jvp, and the Hessian of scalar functions), and every program of the
cost-regression suite with its gradient, run through the JAX emission and
must equal the NumPy interpreter to 1e-12 (float64).  tl.to_jax is checked
under jax.grad, jax.jit, jax.vmap, jax.hessian and on arrays sharded across
four (forced host) devices, against tensorlang's own derivatives and finite
differences.  Skipped when JAX is not installed.
"""
from __future__ import annotations

import os
import pathlib
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import tensorlang as tl
from derivcheck import check_close, f64_params, inputs_for

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")

from suite_programs import CASES  # noqa: E402

from tensorlang.backend import jax_backend  # noqa: E402
from tensorlang.builtins import BUILTINS  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parent.parent
EXAMPLES = sorted((ROOT / "examples").glob("*.tl"))
TOL = dict(rtol=1e-12, atol=1e-12)


def is_scalar(fn) -> bool:
    prog = fn.program
    return len(prog.outputs) == 1 and not prog.shapes()[prog.outputs[0]][1]


# No looser tolerance for any example.  Soft-DTW's derivatives once differed by 1e-10: XLA
# rewrites a division by a broadcast (R[i, j] / g) as a product with the reciprocal 1 / g,
# one ulp off the correctly rounded quotient (R / g is about 1700 there, its ulp 2.3e-13);
# the softmin weights exp(-R / g - logsumexp(...)), exactly 1 on the dominant path when both
# quotients round alike, then carried 2.3e-13, multiplied by 1 / g and 1 / g^2 (about 1500)
# and cancelling in the Hessian.  The emission keeps such divisors behind an optimization
# barrier (jax_backend.Emitter.pointwise), so the quotients are IEEE's as in NumPy.
LOOSER: dict = {}


def same_values(fn, inputs, tol=TOL):
    """fn on the interpreter and through the JAX emission agree to 1e-12."""
    want = fn.compile("numpy")(**inputs)
    got = fn.compile("jax")(**inputs)
    flat_w, flat_g = _flat(want), _flat(got)
    assert len(flat_w) == len(flat_g)
    for w, g in zip(flat_w, flat_g):
        assert np.shape(w) == np.shape(g)
        np.testing.assert_allclose(g, w, **tol)


def _flat(v):
    if isinstance(v, tuple):
        return [x for item in v for x in _flat(item)]
    return [np.asarray(v)]


# A function of more f64 parameters than this has its per-parameter derivatives taken
# for the first ones only, and a jvp in all of them at once: an LSTM's six parameters
# would otherwise make twelve scan programs for XLA to compile (half the module's time)
# where the emitted forms differ only in which parameter they lead from (the gradient
# in every parameter is test_every_derivative_kind_of_the_examples_equals_the_interpreter's).
PER_PARAMETER = 3


def derivatives(fn):
    """(label, Function) for the derivatives of fn the suite takes (the Hessian
    for the first f64 parameter only, to keep the module quick)."""
    out = []
    params = f64_params(fn)
    for k, p in enumerate(params[:PER_PARAMETER]):
        if is_scalar(fn):
            out.append((f"grad {p}", tl.grad(fn, p)))
            if k == 0:
                out.append((f"hessian {p}", tl.hessian(fn, p)))
        elif len(fn.program.outputs) == 1:
            out.append((f"vjp {p}", tl.vjp(fn, p)))
        out.append((f"jvp {p}", tl.jvp(fn, p)))
    if len(params) > PER_PARAMETER:
        out.append(("jvp of all", tl.jvp(fn, tuple(params))))
    return out


def example_functions():
    for path in EXAMPLES:
        for fn in tl.load(path):
            yield pytest.param(path, fn.name, id=f"{path.stem}.{fn.name}")


@pytest.mark.parametrize("path,name", list(example_functions()))
def test_examples_and_derivatives_equal_the_interpreter(path, name):
    fn = tl.load(path)[name]
    for label, f in [("value", fn)] + derivatives(fn):
        inputs = inputs_for(f, seed=3)
        try:
            same_values(f, inputs, LOOSER.get(name, TOL))
        except AssertionError as exc:
            raise AssertionError(f"{name}: {label}: {exc}") from None


def other_derivatives(fn):
    """(label, Function) for the derivative kinds `derivatives` leaves out: value_and_grad
    and vjp with respect to every f64 parameter at once, the Hessian-vector product in the
    first one, and the dense Jacobian of a one-output function that is not a scalar."""
    params = f64_params(fn)
    if not params:
        return []
    out = []
    wrt = tuple(params) if len(params) > 1 else params[0]
    if is_scalar(fn):
        out.append(("value_and_grad of all", tl.value_and_grad(fn, wrt)))
        out.append((f"hvp {params[0]}", tl.hvp(fn, params[0])))
    elif len(fn.program.outputs) == 1:
        out.append(("vjp of all", tl.vjp(fn, wrt)))
        out.append((f"jacobian {params[0]}", tl.jacobian(fn, params[0])))
    return out


@pytest.mark.parametrize("path,name", list(example_functions()))
def test_every_derivative_kind_of_the_examples_equals_the_interpreter(path, name):
    fn = tl.load(path)[name]
    for label, f in other_derivatives(fn):
        inputs = inputs_for(f, seed=4)
        try:
            same_values(f, inputs, LOOSER.get(name, TOL))
        except AssertionError as exc:
            raise AssertionError(f"{name}: {label}: {exc}") from None


@pytest.mark.parametrize("case", sorted(CASES))
def test_cost_suite_gradients_equal_the_interpreter(case):
    spec = CASES[case]
    fn = tl.parse(spec["src"])
    fn = fn[fn.names[-1]]
    for f in (fn, tl.grad(fn, spec["wrt"][0]) if is_scalar(fn) else tl.vjp(fn, spec["wrt"][0])):
        same_values(f, inputs_for(f, seed=5))


def test_environment_variable_selects_the_jax_backend(monkeypatch):
    monkeypatch.setenv("TENSORLANG_BACKEND", "jax")
    fn = tl.load(ROOT / "examples" / "qform.tl")["qform"]
    assert fn.backend == "jax"
    inputs = inputs_for(fn, seed=1)
    np.testing.assert_allclose(fn(**inputs), fn.compile("numpy")(**inputs), **TOL)


QFORM = tl.load(ROOT / "examples" / "qform.tl")["qform"]


def _qform_inputs(n=6, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal(n), rng.standard_normal((n, n))


def test_to_jax_grad_is_tensorlangs_gradient():
    x, A = _qform_inputs()
    F = tl.to_jax(QFORM)
    np.testing.assert_allclose(F(x, A), QFORM(x, A), **TOL)
    gx, gA = jax.grad(F, argnums=(0, 1))(x, A)
    want_x, want_A = tl.grad(QFORM, ("x", "A"))(x, A)
    np.testing.assert_allclose(gx, want_x, **TOL)
    np.testing.assert_allclose(gA, want_A, **TOL)
    # finite differences, independently of tensorlang's derivative
    d = np.random.default_rng(1).standard_normal(x.shape)
    eps = 1e-6
    fd = (QFORM(x + eps * d, A) - QFORM(x - eps * d, A)) / (2 * eps)
    check_close(np.dot(np.asarray(gx), d), fd, "jax.grad along a direction")
    # jax.grad differentiates nothing itself: the gradient is the emitted program's
    # output, whose tangent rule is tensorlang's value_and_grad for x alone
    G = tl.to_jax(QFORM)
    np.testing.assert_allclose(jax.grad(G)(x, A), want_x, **TOL)
    derived = G.traceable._derivatives
    assert list(derived) == [("x",)] and derived[("x",)].prog.name == "qform_value_and_grad"
    assert [p.name for p in derived[("x",)].prog.params] == ["x", "A"]
    assert derived[("x",)].prog.outputs == ("out", "x_bar")


def test_to_jax_under_jit_vmap_and_keywords():
    x, A = _qform_inputs()
    F = tl.to_jax(QFORM)
    np.testing.assert_allclose(jax.jit(F)(x, A), QFORM(x, A), **TOL)
    np.testing.assert_allclose(F(A=A, x=x), QFORM(x, A), **TOL)
    xs = np.random.default_rng(2).standard_normal((5,) + x.shape)
    batched = jax.vmap(F, in_axes=(0, None))(xs, A)
    np.testing.assert_allclose(batched, [QFORM(v, A) for v in xs], **TOL)
    grads = jax.jit(jax.vmap(jax.grad(F), in_axes=(0, None)))(xs, A)
    np.testing.assert_allclose(grads, [tl.grad(QFORM, "x")(v, A) for v in xs], **TOL)


def test_to_jax_hessian_follows_tensorlangs_hessian_vector_program():
    x, A = _qform_inputs(n=5)
    F = tl.to_jax(QFORM)
    H = jax.hessian(F)(x, A)
    np.testing.assert_allclose(H, tl.hessian(QFORM, "x")(x, A), **TOL)
    np.testing.assert_allclose(H, A + A.T, **TOL)
    # the second derivative is tensorlang's forward mode over its simplified
    # gradient: no derivative of A is formed, and its cost is O(n^2) per direction
    hvp = F.traceable._derivatives[("x",)]._derivatives[("x",)]
    assert [p.name for p in hvp.prog.params] == ["x", "A", "d_x"]
    assert tl.cost(tl.Function(hvp.prog)).degree() <= 2
    v = np.random.default_rng(3).standard_normal(x.shape)
    _, hv = jax.jvp(jax.grad(lambda z: F(z, A)), (x,), (v,))
    np.testing.assert_allclose(hv, tl.hvp(QFORM, "x")(x, A, v), **TOL)


def test_to_jax_vector_output_uses_the_jvp_program():
    fn = tl.load(ROOT / "examples" / "softmax.tl")
    fn = fn[fn.names[0]]
    inputs = inputs_for(fn, seed=4)
    args = [inputs[p] for p in fn.params]
    F = tl.to_jax(fn)
    np.testing.assert_allclose(F(*args), fn(**inputs), **TOL)
    p = f64_params(fn)[0]
    k = fn.params.index(p)
    cot = np.random.default_rng(5).standard_normal(np.shape(fn(**inputs)))
    _, pull = jax.vjp(lambda z: F(*args[:k], z, *args[k + 1:]), args[k])
    np.testing.assert_allclose(pull(cot)[0], tl.vjp(fn, p)(**inputs, d_out=cot), **TOL)
    tangent = np.random.default_rng(6).standard_normal(np.shape(args[k]))
    _, dout = jax.jvp(lambda z: F(*args[:k], z, *args[k + 1:]), (args[k],), (tangent,))
    np.testing.assert_allclose(dout, tl.jvp(fn, p)(**inputs, **{"d_" + p: tangent})[1], **TOL)


def test_integer_parameters_have_no_tangent():
    fn = tl.load(ROOT / "examples" / "onehot_loss.tl")["onehot_loss"]
    inputs = inputs_for(fn, seed=6)
    args = [inputs[p] for p in fn.params]
    F = tl.to_jax(fn)
    np.testing.assert_allclose(F(*args), fn(**inputs), **TOL)
    k = [i for i, p in enumerate(fn.program.params) if p.elem == "f64"][0]
    g = jax.grad(F, argnums=k)(*args)
    np.testing.assert_allclose(g, tl.grad(fn, fn.params[k])(**inputs), **TOL)


def test_jax_missing_is_a_clear_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "jax", None)
    with pytest.raises(tl.TLError, match="needs JAX"):
        jax_backend.load_jax()


def test_sharded_batch(tmp_path):
    """A batch dimension sharded over four host devices: values as unsharded."""
    script = textwrap.dedent(f"""
        import numpy as np, jax, jax.numpy as jnp
        from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
        import tensorlang as tl
        assert len(jax.devices()) == 4, jax.devices()
        f = tl.load({str(ROOT / 'examples' / 'qform.tl')!r})["qform"]
        F = tl.to_jax(f)
        rng = np.random.default_rng(0)
        xs = rng.standard_normal((8, 6)); A = rng.standard_normal((6, 6))
        mesh = Mesh(np.array(jax.devices()), ("b",))
        sx = jax.device_put(xs, NamedSharding(mesh, P("b", None)))
        vals = jax.jit(jax.vmap(F, in_axes=(0, None)))(sx, A)
        grads = jax.jit(jax.vmap(jax.grad(F), in_axes=(0, None)))(sx, A)
        assert len(sx.sharding.device_set) == 4
        np.testing.assert_allclose(vals, [f(x, A) for x in xs], rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(grads, [tl.grad(f, "x")(x, A) for x in xs],
                                   rtol=1e-12, atol=1e-12)
        print("sharded ok")
    """)
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=4",
               JAX_PLATFORMS="cpu", PYTHONPATH=str(ROOT))
    res = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                         text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    assert "sharded ok" in res.stdout


def test_explain_prints_the_jax_code(capsys):
    from tensorlang.cli import main
    assert main(["explain", str(ROOT / "examples" / "qform.tl"), "--backend", "jax"]) == 0
    out = capsys.readouterr().out
    assert "def run(env, sizes):" in out and "jnp.einsum" in out


@pytest.mark.parametrize("name", sorted(BUILTINS))
def test_every_builtin_has_a_jax_spelling(name):
    b = BUILTINS[name]
    assert b.jax, f"builtin {name} has no JAX spelling"
    args = ", ".join(f"x{k}[i]" for k in range(b.arity))
    params = ", ".join(f"x{k}: f64[n]" for k in range(b.arity))
    fn = tl.parse(f"def f({params}) -> f64[n]:\n    y[i] = {name}({args})\n    return y\n")["f"]
    lo, hi = b.domain
    rng = np.random.default_rng(7)
    inputs = {f"x{k}": rng.uniform(lo, hi, 9) for k in range(b.arity)}
    np.testing.assert_allclose(fn.compile("jax")(**inputs), fn.compile("numpy")(**inputs),
                               rtol=1e-13, atol=1e-14)


def test_training_example_runs(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "examples"))
    import train_in_jax
    first, last = train_in_jax.main(steps=40)
    assert last < 0.5 * first


@pytest.mark.skipif(jax_backend.Reduce is None, reason="this IR has no max/min/logsumexp")
def test_reductions_with_filters_and_ties():
    fn = tl.parse("""
def f(x: f64[n, m], w: f64[m]) -> f64:
    a[i] = max[j](x[i, j] * w[j])
    b[i] = min[j | j < i](x[i, j])
    c[i] = logsumexp[j](x[i, j] + w[j])
    return sum[i](a[i] + [i >= 1] * b[i] + c[i] ** 2)
""")["f"]
    rng = np.random.default_rng(8)
    x, w = rng.standard_normal((5, 7)), rng.standard_normal(7)
    x[0, 1] = x[0, 2] = 3.0
    w[1] = w[2] = 1.0                      # a tie in the max of row 0
    for f in (fn, tl.grad(fn, "x"), tl.grad(fn, "w"), tl.hessian(fn, "w")):
        same_values(f, dict(x=x, w=w))
    np.testing.assert_allclose(jax.grad(tl.to_jax(fn), argnums=1)(x, w),
                               tl.grad(fn, "w")(x, w), **TOL)


def _has_recurrences() -> bool:
    import importlib.util
    return importlib.util.find_spec("tensorlang.ssa.recur") is not None


@pytest.mark.skipif(not _has_recurrences(), reason="this IR has no recurrence groups")
def test_recurrences_run_as_scan():
    fn = tl.parse("""
def f(x: f64[T, d], W: f64[d, d], h0: f64[d], g: f64) -> f64:
    h[t: T, i: d] = tanh(x[t, i] + sum[j](W[i, j] * ([t == 0] * h0[j] + [t >= 1] * h[t - 1, j])))
    G[t: T] = sum[i](h[t, i]) + [t + 1 < T] * g * G[t + 1]
    return sum[t](G[t] ** 2)
""")["f"]
    rng = np.random.default_rng(9)
    args = dict(x=rng.standard_normal((6, 3)), W=0.5 * rng.standard_normal((3, 3)),
                h0=rng.standard_normal(3), g=0.7)
    for f in (fn, tl.grad(fn, "W"), tl.grad(fn, "g"), tl.hessian(fn, "h0")):
        same_values(f, args)
    F = tl.to_jax(fn)
    text = jax_backend.emit(fn.optimized_program())
    assert text.count("lax.scan(") == 2
    vals = [args[p] for p in fn.params]
    np.testing.assert_allclose(jax.jit(jax.grad(F, argnums=1))(*vals),
                               tl.grad(fn, "W")(**args), **TOL)


def test_out_of_range_labels_are_located_errors():
    fn = tl.parse("def f(x: f64[n], y: i64[b]) -> f64:\n"
                  "    return sum[s](x[y[s]])\n"
                  "def g(x: f64[n], y: i64[b]) -> f64:\n"
                  "    return sum[s]([y[s] < n] * x[y[s]])\n")
    x, y = np.arange(4.0), np.array([0, 3, 4, 1])
    for backend in ("numpy", "jax"):
        with pytest.raises(tl.TLBoundsError, match="out of range"):
            fn["f"].compile(backend)(x, y)
    # a bracket that excludes the label: no error, the same value
    assert fn["g"].compile("jax")(x, y) == fn["g"].compile("numpy")(x, y) == 4.0
    assert fn["f"].compile("jax")(x, np.array([0, 3, 3, 1])) == 7.0


def test_a_bad_label_inside_a_recurrence_step_is_the_located_error():
    """A gather inside a recurrence's steps (one lax.scan) is flagged too: the eager
    call raises the interpreter's and the Numba backend's error; a label its bracket
    excludes stays legal, and traced code (tl.to_jax) cannot raise: it reads 0."""
    fns = tl.parse("def f(E: f64[v, k], y: i64[n]) -> f64[n, k]:\n"
                   "    h[t, i] = [t >= 1] * h[t - 1, i] * 0.5 + E[y[t], i]\n"
                   "    return h\n"
                   "def g(E: f64[v, k], y: i64[n]) -> f64[n, k]:\n"
                   "    h[t, i] = [t >= 1] * h[t - 1, i] * 0.5 + [y[t] < v] * E[y[t], i]\n"
                   "    return h\n", filename="r.tl")
    rng = np.random.default_rng(4)
    E, y = rng.standard_normal((4, 3)), rng.integers(0, 4, 6)
    y[3] = 9
    errors = []
    for backend in ("numpy", "numba", "jax"):
        with pytest.raises(tl.TLBoundsError) as info:
            fns["f"].compile(backend)(E, y)
        errors.append(str(info.value))
    assert errors[0].startswith("r.tl:2:46: error: gathered index y[t] = 9 is out of range for "
                                "dimension 0 of E (size 4); the label is y[3]\n"), errors[0]
    assert errors[2] == errors[0] and errors[1].startswith("r.tl:2:46: error: gathered index y")
    np.testing.assert_allclose(fns["g"].compile("jax")(E, y), fns["g"].compile("numpy")(E, y),
                               **TOL)
    y[3] = 0
    want = fns["f"].compile("numpy")(E, y)
    y[3] = 9
    got = np.asarray(tl.to_jax(fns["f"])(E, y))
    np.testing.assert_allclose(got[:3], want[:3], **TOL)
    np.testing.assert_allclose(got[3], 0.5 * got[2], **TOL)


def first_function_of_each_example():
    for path in EXAMPLES:
        fn = next(iter(tl.load(path)))
        yield pytest.param(path, fn.name, id=f"{path.stem}.{fn.name}")


@pytest.mark.parametrize("path,name", list(first_function_of_each_example()))
def test_to_jax_on_every_example(path, name):
    """Values, jax.jvp and jax.vjp of tl.to_jax(f) against tensorlang's (first f64 parameter),
    for the first function of every example file (all of them were checked once)."""
    fn = tl.load(path)[name]
    inputs = inputs_for(fn, seed=2)
    args = [inputs[p] for p in fn.params]
    F = tl.to_jax(fn)
    for a, b in zip(_flat(fn.compile("numpy")(**inputs)), _flat(F(*args))):
        np.testing.assert_allclose(np.asarray(b), a, **TOL)
    params = f64_params(fn)
    if not params:
        return
    p = params[0]
    k = fn.params.index(p)

    def along(z):
        return F(*args[:k], z, *args[k + 1:])

    t = np.random.default_rng(1).standard_normal(np.shape(args[k]))
    _, dout = jax.jvp(along, (args[k],), (t,))
    want = tl.jvp(fn, p).compile("numpy")(**inputs, **{"d_" + p: t})[1]
    for a, b in zip(_flat(want), _flat(dout)):
        np.testing.assert_allclose(np.asarray(b), a, rtol=1e-10, atol=1e-10)
    if len(fn.program.outputs) == 1:
        out, pull = jax.vjp(along, args[k])
        c = np.random.default_rng(2).standard_normal(np.shape(out))
        np.testing.assert_allclose(pull(c)[0], tl.vjp(fn, p).compile("numpy")(**inputs, d_out=c),
                                   rtol=1e-10, atol=1e-10)


def _dot_flops(jaxpr, pick_branch=None):
    """Multiply-adds of every dot_general in `jaxpr` and the jaxprs nested in it; of
    a cond, only branch `pick_branch` when given."""
    total = 0
    for eqn in jaxpr.eqns:
        if eqn.primitive.name == "dot_general":
            (lc, _), _ = eqn.params["dimension_numbers"]
            k = int(np.prod([eqn.invars[0].aval.shape[d] for d in lc]))
            total += int(np.prod(eqn.outvars[0].aval.shape)) * k
        subs = []
        if eqn.primitive.name == "cond" and pick_branch is not None:
            subs = [eqn.params["branches"][pick_branch]]
        else:
            for v in eqn.params.values():
                for item in (v if isinstance(v, (tuple, list)) else (v,)):
                    if hasattr(item, "eqns") or hasattr(getattr(item, "jaxpr", None), "eqns"):
                        subs.append(item)
        for sub in subs:
            total += _dot_flops(getattr(sub, "jaxpr", sub), pick_branch)
    return total


def test_jax_hessian_of_to_jax_costs_n_squared():
    """jax.hessian(tl.to_jax(qform)) batches the H v program over the standard basis;
    the batching rule recognises the basis (a run-time check, a cond under jit) and
    answers with tensorlang's Jacobian of the gradient, A + A^T: no dot_general of
    n^3 on that path, while the other branch (any other batch) is the batched H v."""
    n = 64
    x, A = _qform_inputs(n=n, seed=4)
    F = tl.to_jax(QFORM)
    H = jax.jit(jax.hessian(F))(x, A)
    np.testing.assert_allclose(H, tl.hessian(QFORM, "x")(x, A), **TOL)
    jaxpr = jax.make_jaxpr(jax.hessian(F))(x, A).jaxpr
    assert "cond" in str(jaxpr)
    basis_path, other_path = _dot_flops(jaxpr, 1), _dot_flops(jaxpr, 0)
    # the gradient program a few times (jax.grad's, the values at the batch): O(n^2)
    assert basis_path <= 10 * n * n, basis_path
    assert other_path >= n ** 3, other_path


def test_batched_tangents_of_to_jax_any_batch():
    """Arbitrary batched tangents, a permuted basis, matrix-shaped and several
    parameters, jit and a derivative of the Hessian: values as JAX's own."""
    n = 5
    x, A = _qform_inputs(n=n, seed=5)
    F = tl.to_jax(QFORM)

    def own(z, B):
        return z @ (B @ z)

    def hv(V):
        return jax.vmap(lambda v: jax.jvp(jax.grad(lambda z: F(z, A)), (x,), (v,))[1])(V)

    rng = np.random.default_rng(6)
    for V in (rng.standard_normal((3, n)), rng.standard_normal((n, n)), np.eye(n)[::-1],
              2.0 * np.eye(n)):
        np.testing.assert_allclose(jax.jit(hv)(V), V @ (A + A.T).T, **TOL)
        np.testing.assert_allclose(hv(V), V @ (A + A.T).T, **TOL)
    for argnums in (1, (0, 1)):
        want = jax.hessian(own, argnums=argnums)(x, A)
        for got in (jax.hessian(F, argnums=argnums)(x, A),
                    jax.jit(jax.hessian(F, argnums=argnums))(x, A)):
            for w, g in zip(_flat(want), _flat(got)):
                np.testing.assert_allclose(np.asarray(g), np.asarray(w), **TOL)

    # batched primals (the basis batch inside another vmap), and forward over forward
    xs, As = rng.standard_normal((3, n)), rng.standard_normal((3, n, n))
    np.testing.assert_allclose(jax.jit(jax.vmap(jax.hessian(F)))(xs, As),
                               As + As.transpose(0, 2, 1), **TOL)
    np.testing.assert_allclose(jax.jacfwd(jax.jacfwd(F))(x, A), A + A.T, **TOL)

    def third(h):
        return lambda z, B: jnp.sum(h(z, B) ** 2 * z[:, None])

    for arg in (0, 1):
        got = jax.jit(jax.grad(third(jax.hessian(F)), argnums=arg))(x, A)
        want = jax.grad(third(jax.hessian(own)), argnums=arg)(x, A)
        np.testing.assert_allclose(got, want, rtol=1e-11, atol=1e-11)
    # a function with a vector output: jax.jacfwd is tensorlang's Jacobian program
    fn = tl.load(ROOT / "examples" / "softmax.tl")
    fn = fn[fn.names[0]]
    Z = inputs_for(fn, seed=7)["Z"]
    np.testing.assert_allclose(jax.jit(jax.jacfwd(tl.to_jax(fn)))(Z),
                               tl.jacobian(fn, "Z")(Z), **TOL)


SHIFTED = tl.parse("""
def corr(x: f64[n], w: f64[K], T: f64[n]) -> f64:
    y[i: n] = sum[t]([i + t < n] * w[t] * x[i + t])
    return 0.5 * sum[i]((y[i] - T[i]) ** 2)

def stencil(img: f64[h, v], w: f64[3, 3]) -> f64:
    y[r: h, c: v] = sum[p, q]([0 <= r + p - 1 < h and 0 <= c + q - 1 < v] * w[p, q] * img[r + p - 1, c + q - 1])
    return sum[r, c](y[r, c] ** 2 + [r >= 1] * y[r, c] * y[r - 1, c])
""")


@pytest.mark.parametrize("n,K", [(9, 4), (80, 3), (10, 70), (70, 66)])
def test_shifted_reads_equal_the_interpreter(n, K):
    """Reads shifted by a summed or free index of small extent run as static slices in
    an unrolled loop (extent <= UNROLL when traced), otherwise as gathered windows;
    each branch, and the 2-D stencil, against the interpreter."""
    rng = np.random.default_rng(n + K)
    corr = SHIFTED["corr"]
    args = dict(x=rng.standard_normal(n), w=rng.standard_normal(K), T=rng.standard_normal(n))
    for f in (corr, tl.grad(corr, ("x", "w")), tl.hessian(corr, "w")):
        same_values(f, args)
    st = SHIFTED["stencil"]
    args = dict(img=rng.standard_normal((n % 11 + 3, 5)), w=rng.standard_normal((3, 3)))
    for f in (st, tl.grad(st, ("img", "w"))):
        same_values(f, args)


def test_shifted_reads_are_slices_not_gathers():
    corr = SHIFTED["corr"]
    g = tl.to_jax(tl.grad(corr, ("x", "w")))
    n, K = 500, 16
    rng = np.random.default_rng(0)
    jaxpr = str(jax.make_jaxpr(g)(rng.standard_normal(n), rng.standard_normal(K),
                                  rng.standard_normal(n)))
    assert "gather" not in jaxpr and "slice" in jaxpr
    assert "shift_read(" in jax_backend.emit(tl.grad(corr, ("x", "w")).optimized_program())


BORDERS = tl.parse("""
def corr(a: f64[m, k], g: f64[3, 4], z: f64[m, k]) -> f64:
    o[s: m, e: k] = sum[u, b]([0 <= s + u - 1 < m and 0 <= e + b - 3 < k] * g[u, b] * a[s + u - 1, e + b - 3])
    return 0.5 * sum[s, e]((o[s, e] - z[s, e]) ** 2)

def edge(a: f64[m, k], g: f64[3, 4]) -> f64:
    o[s: m, e: k] = sum[u, b]([s + u >= 2 and e + b < k - 1] * g[u, b] * a[s + u - 2, e + b])
    return sum[s, e](o[s, e] ** 2)
""")


@pytest.mark.parametrize("m,k", [(70, 90), (6, 5)])
def test_border_guards_of_small_kernels_equal_the_interpreter(m, k):
    """Correlations whose kernel has constant extents (3 x 4, off-centre offsets, border
    brackets that restate the reads' bounds or cut further) unroll the kernel's indices,
    summed in the function and free in the kernel's gradient: values and gradients
    against the interpreter, and the gradient has no gather of windows."""
    rng = np.random.default_rng(m * k)
    a, g, z = rng.standard_normal((m, k)), rng.standard_normal((3, 4)), rng.standard_normal((m, k))
    for fn, args in ((BORDERS["corr"], dict(a=a, g=g, z=z)), (BORDERS["edge"], dict(a=a, g=g))):
        grad = tl.grad(fn, ("a", "g"))
        for f in (fn, grad):
            same_values(f, args)
        jaxpr = str(jax.make_jaxpr(tl.to_jax(grad))(*args.values()))
        assert "gather" not in jaxpr


TRANSPOSED = tl.parse("""
def sym(M: f64[n, n]) -> f64[n, n]:
    S[i: n, j: n] = M[i, j] + 2.0 * M[j, i]
    return S

def cyc(T: f64[n, n, n], v: f64[n]) -> f64[n, n, n]:
    C[i, j, l] = T[i, j, l] * v[l] - T[j, l, i] + T[l, i, j] * T[i, j, l]
    return C
""")


@pytest.mark.parametrize("n", [3, 70, 17])
def test_transposed_reads_equal_the_interpreter(n):
    """A read whose axes are permuted against its statement's (M[j, i], T[j, l, i]) in an
    elementwise term: a transpose of its own for large arrays (inside a conditional, see
    jax_backend.transpose_read), a plain one for small; values against the interpreter,
    also of the Hessian of x^T A x (A + A^T), under jax.jit of jax.vmap, and in reverse
    mode through the jvp program."""
    rng = np.random.default_rng(n)
    M, T, v = rng.standard_normal((n, n)), rng.standard_normal((n, n, n)), rng.standard_normal(n)
    same_values(TRANSPOSED["sym"], dict(M=M))
    same_values(TRANSPOSED["cyc"], dict(T=T, v=v))
    qform = tl.load(ROOT / "examples" / "qform.tl")
    hess = tl.hessian(qform[qform.names[0]], "x")
    args = {p.name: rng.standard_normal((n,) * len(p.dims)) for p in hess.program.params}
    same_values(hess, args)
    fenced = n * n >= jax_backend.FENCE
    jaxpr = str(jax.make_jaxpr(tl.to_jax(TRANSPOSED["sym"]))(M))
    assert ("cond" in jaxpr) == fenced
    batch = rng.standard_normal((2, n, n))
    got = jax.jit(jax.vmap(tl.to_jax(TRANSPOSED["sym"])))(batch)
    np.testing.assert_allclose(got, batch + 2.0 * np.swapaxes(batch, 1, 2), **TOL)
    # reverse mode transposes the jvp program of a function with a matrix output, whose
    # tangent is read transposed: the fence must stay linear in it
    W = rng.standard_normal((n, n))
    loss = lambda X: jnp.sum(tl.to_jax(TRANSPOSED["sym"])(X) * W)  # noqa: E731
    np.testing.assert_allclose(jax.jit(jax.grad(loss))(M), W + 2.0 * W.T, **TOL)


DIAGONALS = tl.parse("""
def mf(U: f64[m, r], V: f64[n, r], R: f64[m, n], M: bool[m, n]) -> f64:
    quad = sum[i, j, a, b]([M[i, j]] * U[i, a] * V[j, a] * U[i, b] * V[j, b])
    lin = sum[i, j, a]([M[i, j]] * R[i, j] * U[i, a] * V[j, a])
    return 0.5 * quad - lin

def band(x: f64[n, k], w: f64[k]) -> f64[n, n, k]:
    B[i: n, j: n, c: k] = [j == i + 1] * sum[t](x[i, t] * w[t]) * x[j, c] + [i == 2] * x[j, c] / w[c] + [j == n - 1 - i and c < 2] * exp(x[i, c])
    return B
""")


def test_diagonal_brackets_place_the_term_instead_of_masking_it():
    """A bracket [k == p] between two free indices (the block diagonal of the Hessian of
    a matrix factorisation in U) is not a mask inside the term's contraction, which
    would sum n values for each of the m^2 r^2 entries, but the term computed once per
    k and placed on the diagonal: the emitted code's dot_generals do O(m n r^2) work.
    Values against the interpreter, with shifted, constant and reversed diagonals."""
    m, n, r = 12, 7, 3
    hess = tl.hessian(DIAGONALS["mf"], "U")
    rng = np.random.default_rng(11)
    args = dict(U=rng.standard_normal((m, r)), V=rng.standard_normal((n, r)),
                R=rng.standard_normal((m, n)), M=rng.random((m, n)) < 0.5)
    same_values(hess, args)
    jaxpr = jax.make_jaxpr(tl.to_jax(hess))(*args.values()).jaxpr
    flops = _dot_flops(jaxpr)
    assert 0 < flops <= 2 * m * n * r * r, flops
    assert "where(" in jax_backend.emit(hess.optimized_program())
    band = DIAGONALS["band"]
    args = dict(x=rng.standard_normal((6, 4)), w=rng.uniform(1.0, 2.0, 4))
    for f in (band, tl.jvp(band, "x"), tl.vjp(band, "w")):
        same_values(f, inputs_for(f, seed=12) if f is not band else args)


SCATTERS = tl.parse("""
def rows(E: f64[v, d], T: f64[b, d], y: i64[b]) -> f64:
    return 0.5 * sum[s, c]((E[y[s], c] - T[s, c]) ** 2)

def mid(E: f64[d, v, q], T: f64[b, c, d, q], y: i64[b, c]) -> f64:
    return sum[s, u, l, z](T[s, u, l, z] * E[l, y[s, u], z] ** 2)

def strided(x: f64[n, d], T: f64[m, d]) -> f64:
    return sum[i, c]([2 * i + 1 < n] * T[i, c] * x[2 * i + 1, c] ** 2)
""")


def test_scatters_add_rows_at_the_labelled_positions():
    """The adjoint of a gather, sum[m]([k == y[m]] * Y[m, l]), adds whole rows: one index
    array over the summed indices at k's place of the output and slices elsewhere (the
    values laid out to match, no transposed copy), also with k in the middle of the
    output, two summed indices, and strided positions; values against the interpreter,
    duplicate labels included."""
    rng = np.random.default_rng(13)
    v, d, b = 9, 4, 12
    y = rng.integers(0, v - 1, b)
    y[:3] = y[3]                                   # duplicates add up
    cases = [("rows", "E", dict(E=rng.standard_normal((v, d)), T=rng.standard_normal((b, d)),
                                y=y)),
             ("mid", "E", dict(E=rng.standard_normal((d, v, 3)),
                               T=rng.standard_normal((5, 2, d, 3)),
                               y=rng.integers(0, v, (5, 2)))),
             ("strided", "x", dict(x=rng.standard_normal((v, d)),
                                   T=rng.standard_normal((b, d))))]
    for name, wrt, args in cases:
        grad = tl.grad(SCATTERS[name], wrt)
        same_values(grad, args)
        text = jax_backend.emit(grad.optimized_program())
        assert ".at[" in text and "slice(None)" in text, name
        # the values of W3's gradient are Y_bar as stored, not a transposed copy
        assert name != "rows" or "transpose_read" not in text


def test_the_documented_snippet_runs():
    """The code of docs/api.md's "Inside JAX and PyTorch" section runs as written, with the
    names it takes from the sections before it (mod, x, A, rng)."""
    import re
    text = (ROOT / "docs" / "api.md").read_text()
    section = text[text.index("### Inside JAX and PyTorch"):text.index("## Derivatives")]
    blocks = re.findall(r"```python\n(.*?)```", section, re.S)
    assert blocks
    x, A = _qform_inputs(n=5, seed=14)
    space = dict(tl=tl, mod=tl.load(ROOT / "examples" / "qform.tl"), x=x, A=A,
                 rng=np.random.default_rng(15))
    for block in blocks:
        exec(compile(block, "docs/api.md", "exec"), space)  # noqa: S102
    F = space["F"]
    np.testing.assert_allclose(F(A=A, x=x), QFORM(x, A), **TOL)
    np.testing.assert_allclose(jax.hessian(F)(x, A), A + A.T, **TOL)


@pytest.mark.parametrize("body", ["[n >= 2] * sum[i](x[i])", "sum[i]([n >= 2 and m >= 1] * x[i])",
                                  "sum[s]([m >= 2] * x[y[s]])"])
def test_a_bracket_on_sizes_alone(body):
    """A bracket that compares sizes and constants only (`[n >= 2]`, which a
    derivative's label checks also write) is a Python bool when JAX traces with
    static sizes; the emitted code makes it an array before using it as one."""
    f = tl.parse(f"def f(x: f64[n], y: i64[m]) -> f64:\n    return {body}\n")["f"]
    args = dict(x=np.arange(3.0), y=np.array([0, 2]))
    check_close(f.compile("jax")(**args), f.compile("numpy")(**args), body, rtol=1e-13, atol=0)
    check_close(jax.jit(tl.to_jax(f))(jnp.asarray(args["x"]), jnp.asarray(args["y"])),
                f.compile("numpy")(**args), body, rtol=1e-13, atol=0)

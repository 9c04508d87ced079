"""Every example, differentiated every way, checked against finite differences.

For each function of each example: the gradient (optimized and naive) along
random directions, the tangent of jvp, the dot-product identity between vjp
and jvp, the printed derivative program re-parsed and re-run, and the
cheap-gradient certificate of DESIGN.md section 6 on the symbolic costs.
"""
import pathlib

import numpy as np
import pytest

import tensorlang as tl
from derivcheck import (as_flat, as_printed, check_close, dot_product_identity, f64_params,
                        grad_matches_fd, inputs_for, jvp_matches_fd, sizes_for)

ROOT = pathlib.Path(__file__).resolve().parent.parent
EXAMPLES = sorted((ROOT / "examples").glob("*.tl"))


def all_functions():
    for path in EXAMPLES:
        mod = tl.load(path)
        for fn in mod:
            yield pytest.param(path.name, fn.name, id=f"{path.stem}.{fn.name}")


FUNCTIONS = list(all_functions())


def load(file, name):
    return tl.load(ROOT / "examples" / file)[name]


def is_scalar(fn) -> bool:
    prog = fn.program
    return len(prog.outputs) == 1 and not prog.shapes()[prog.outputs[0]][1]


@pytest.mark.parametrize("file,name", FUNCTIONS)
def test_gradient_matches_finite_differences(file, name):
    fn = load(file, name)
    if not is_scalar(fn):
        pytest.skip("grad needs a scalar output; covered by jvp/vjp below")
    rng = np.random.default_rng(1)
    inputs = inputs_for(fn)
    wrt = f64_params(fn)
    optimized = grad_matches_fd(fn, wrt, inputs, rng)
    naive = grad_matches_fd(fn, wrt, inputs, rng, optimize=False)
    for a, b in zip(optimized, naive):
        check_close(a, b, "optimized and naive gradients", rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("file,name", FUNCTIONS)
def test_jvp_and_dot_product_identity(file, name):
    fn = load(file, name)
    if len(fn.program.outputs) != 1:
        pytest.skip("jvp/vjp checks use single-output functions")
    rng = np.random.default_rng(2)
    inputs = inputs_for(fn)
    wrt = f64_params(fn)
    jvp_matches_fd(fn, wrt, inputs, rng)
    dot_product_identity(fn, wrt, inputs, rng)


@pytest.mark.parametrize("file,name", FUNCTIONS)
def test_printed_derivative_parses_back_and_computes_the_same(file, name):
    fn = load(file, name)
    if not is_scalar(fn):
        pytest.skip("scalar functions only")
    g = tl.grad(fn, wrt=tuple(f64_params(fn)))
    again = tl.parse(g.source, filename=f"<{g.name}>")[g.name]
    assert again.program == as_printed(g.program)
    inputs = inputs_for(fn, seed=3)
    check_close(as_flat(g(**inputs)), as_flat(again(**inputs)), "re-parsed gradient",
                rtol=1e-12, atol=1e-12)


def wrt_elements(fn, wrt) -> tl.Cost:
    total = tl.Cost()
    params = {p.name: p for p in fn.program.params}
    for w in wrt:
        size = tl.Cost.const(1)
        for d in params[w].dims:
            size = size * (tl.Cost.const(d) if isinstance(d, int) else tl.Cost.symbol(d))
        total = total + size
    return total


# The certificate is about growth: at tiny sizes the boundary rows that a guard
# removes from f's loops (n - 1 of n iterations, say) are a large share of the
# work, while the gradient still writes every element, so sampling starts at 5.
SAMPLE_SIZES = (5, 20, 100, 1000)


@pytest.mark.parametrize("file,name", FUNCTIONS)
def test_cheap_gradient_certificate(file, name):
    """cost(grad) <= 4 (cost(f) + elements of the inputs differentiated), no degree grows."""
    fn = load(file, name)
    if not is_scalar(fn):
        pytest.skip("scalar functions only")
    wrt = f64_params(fn)
    f_cost = tl.cost(fn)
    g_cost = tl.cost(tl.grad(fn, wrt=tuple(wrt)))
    bound = (f_cost + wrt_elements(fn, wrt)) * 4
    for s in fn.program.sizes():
        assert g_cost.degree(s) <= bound.degree(s), (s, str(g_cost), str(f_cost))
    for n in SAMPLE_SIZES:
        sizes = {s: n for s in fn.program.sizes()}
        assert g_cost.evaluate(**sizes) <= bound.evaluate(**sizes), (n, str(g_cost), str(bound))


@pytest.mark.parametrize("file,name", FUNCTIONS)
def test_counted_operations_match_or_stay_below_the_polynomial(file, name):
    fn = load(file, name)
    variants = [fn]
    if is_scalar(fn):
        variants.append(tl.grad(fn, wrt=tuple(f64_params(fn))))
    for size in (2, 3):
        for f in variants:
            inputs = inputs_for(fn, size=size, seed=size)
            sizes = sizes_for(fn, size=size)
            static = tl.cost(f).evaluate(**sizes)
            counted = f.count_ops(**inputs)
            assert counted <= static, (f.name, counted, static)
            if not has_filters(f):
                assert counted == static, (f.name, counted, static)


def has_filters(f) -> bool:
    """Does some loop test a bracket, or run between bounds that move with an outer
    index (a band)?  Then the polynomial is an upper bound, else the exact count."""
    from tensorlang.loops import plan_program
    for sp in plan_program(f.optimized_program()):
        for tp in sp.gather_terms + sp.scatter_terms:
            if (tp.filters or tp.outer_filters or not all(lp.exact for lp in tp.loops)
                    or _nested_filters(tp.term)):
                return True
    return False



def _nested_filters(term) -> bool:
    from tensorlang.ssa.ir import Apply, Group, Reduce
    for f, _ in term.factors:
        if isinstance(f, Reduce) and f.where:
            return True                 # a reduction's filter is tested at each point
        bodies = f.args if isinstance(f, Apply) else (f.body,) if isinstance(f, (Group, Reduce)) \
            else ()
        for b in bodies:
            for t in b:
                if t.pred or _nested_filters(t):
                    return True
    return False


@pytest.mark.parametrize("file,name", FUNCTIONS)
def test_loop_runner_agrees_with_the_interpreter(file, name):
    """The instrumented loop nests compute what the NumPy interpreter computes."""
    from tensorlang.backend.loop_interp import count_ops
    fn = load(file, name)
    inputs = inputs_for(fn, size=3, seed=5)
    arrays, sizes = fn.prepare((), inputs)
    _, outs = count_ops(fn.optimized_program(), arrays, sizes)
    check_close(as_flat(tuple(outs)), as_flat(fn(**inputs)), "loop runner vs interpreter",
                rtol=1e-10, atol=1e-12)


TRANSFORMS = {
    "jvp": lambda f, w: tl.jvp(f, wrt=w),
    "vjp": lambda f, w: tl.vjp(f, wrt=w),
    "hvp": lambda f, w: tl.hvp(f, wrt=w[0]),
    "hessian": lambda f, w: tl.hessian(f, wrt=w[0]),
    "value_and_grad": lambda f, w: tl.value_and_grad(f, wrt=w),
    "grad_of_grad_sum": lambda f, w: tl.jvp(tl.grad(f, wrt=w[0]), wrt=w[0]),
}


@pytest.mark.parametrize("transform", list(TRANSFORMS))
@pytest.mark.parametrize("file,name", [("qform.tl", "qform"), ("mlp.tl", "mlp_loss"),
                                       ("fd_energy.tl", "fd_regularized"),
                                       ("onehot_loss.tl", "onehot_loss")])
def test_every_transform_prints_a_program_that_computes_the_same(transform, file, name):
    fn = load(file, name)
    wrt = tuple(f64_params(fn))
    d = TRANSFORMS[transform](fn, wrt)
    again = tl.parse(d.source, filename=f"<{d.name}>")[d.name]
    assert again.program == as_printed(d.program)
    rng = np.random.default_rng(11)
    inputs = inputs_for(fn, seed=11)
    shapes = {p.name: p.dims for p in d.program.params}
    sizes = {}
    for p in fn.program.params:
        for dim, k in zip(p.dims, np.shape(inputs[p.name])):
            sizes[dim] = k
    extra = {}
    for p in d.program.params:
        if p.name not in inputs:
            extra[p.name] = rng.standard_normal(tuple(sizes.get(x, x) for x in shapes[p.name]))
    check_close(as_flat(d(**inputs, **extra)), as_flat(again(**inputs, **extra)),
                f"{transform} re-parsed", rtol=1e-12, atol=1e-12)


def test_a_compiled_derivative_runs_the_program_its_cost_describes():
    """compile() keeps the simplified program: a derivative is not simplified a second
    time for its backend, so what runs is what tl.cost and the certificate measured."""
    f = tl.parse("def f(x: f64[n], A: f64[n, n]) -> f64:\n"
                 "    y[i] = sum[j](A[i, j] * x[j])\n"
                 "    return sum[i](x[i] * y[i])\n")["f"]
    g = tl.grad(f, wrt="x")
    for backend in ("numpy", "numba"):
        assert g.compile(backend).optimized_program() is g.optimized_program()
    simplified = f.optimized_program()
    assert f.compile("numba").optimized_program() is simplified

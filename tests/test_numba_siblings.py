"""Sibling groups (backend/siblings.py): sums over the same loops that read the same
arrays run as one loop nest, each factor they share computed once per point.

The fused kernel must compute what the interpreter computes (serially and in its
prange form), be chosen exactly where the rule says (equal loops and a shared read, no
member reading another), and still refuse a bad label with the located error.
"""
import re
import sys
import warnings

import numpy as np
import pytest

import tensorlang as tl
from derivcheck import as_flat, f64_params
from tensorlang.backend import numba_module, siblings
from tensorlang.backend.numba_module import generate, prepare
from test_numba_backend import always_parallel

# Two maps over i and two scalar sums over a triangle: a and b read y[i, j] under the
# same bracket (b also reads b_sum, defined between them, which moves before a); s and
# t read y[i, j] and x[j] at the same points, and w at mirrored ones.
SIBLINGS = """
def sib(x: f64[n], z: f64[n], y: f64[n, n], w: f64[n, n]) -> (f64[n], f64[n], f64):
    a[i] = sum[j]([j <= i] * y[i, j] * x[j])
    b[i] = sum[j]([j <= i] * y[i, j] * z[j] * x[j]) + x[i]
    s = sum[i, j]([j < i] * y[i, j] * x[j] * w[i, j])
    t = sum[i, j]([j < i] * y[i, j] * x[j] * w[j, i])
    return a, b, s * t
"""


def _groups(fn):
    prog = prepare(fn.optimized_program())
    return [g.names for g in siblings.sibling_groups(prog, numba_module.sibling_eligible(prog))]


def _inputs(n, seed=0):
    rng = np.random.default_rng(seed)
    return dict(x=rng.random(n), z=rng.random(n), y=rng.random((n, n)), w=rng.random((n, n)))


def _close(fn, inputs, rtol=1e-11):
    got, want = fn.compile("numba")(**inputs), fn.compile("numpy")(**inputs)
    assert np.allclose(as_flat(got), as_flat(want), rtol=rtol, atol=1e-12)


def test_maps_and_sums_over_the_same_loops_run_as_one_kernel_each():
    fn = tl.parse(SIBLINGS)["sib"]
    # (s and t, sums over j of a sum over i at each j, are siblings of the maps over
    # i too: summed over their outer loop, they share b's read of x at the generator)
    assert _groups(fn) == [("a", "b", "s", "t")]
    source = generate(fn.optimized_program(), "test", "")
    # y[i, j] loaded once per point for both maps and for both sums (into a local, in
    # each copy of a point: an unrolled loop's and its tail's)
    kernel = source.split("# statements a, b, s, t", 1)[1].split("\n\n", 1)[0]
    copies = len(re.findall(r"for i\w+ in range\(o\d+, o\d+\):", kernel))
    assert copies == 4
    assert kernel.count("v_y[") == len(re.findall(r"\be\d+ = v_y\[", kernel)) == copies
    for n in (1, 2, 7, 40):
        _close(fn, _inputs(n, seed=n))


def test_the_gradient_of_siblings_agrees_with_the_interpreter():
    src = (SIBLINGS.replace("-> (f64[n], f64[n], f64)", "-> f64")
           .replace("return a, b, s * t", "return sum[i](a[i] * b[i]) + s * t"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", tl.TLCostWarning)
        g = tl.grad(tl.parse(src)["sib"], wrt=("x", "z", "y", "w"))
    _close(g, _inputs(9, seed=3))


def test_unrelated_sums_and_a_sum_read_by_another_stay_apart():
    """Equal loops without a shared read save nothing and lose the partial sums of
    the innermost loop; a sum that reads another's value needs it complete."""
    src = """
def apart(x: f64[n], z: f64[n], y: f64[n, n], w: f64[n, n]) -> f64:
    s = sum[i, j]([j < i] * y[i, j] * tanh(x[j] * y[i, j]))
    t = sum[i, j]([j < i] * w[i, j] * tanh(z[j] * w[i, j]))
    return s * t
def reads(x: f64[n], y: f64[n, n]) -> f64:
    s = sum[i, j]([j < i] * y[i, j] * tanh(x[j] * y[i, j]))
    t = sum[i, j]([j < i] * s * x[j] * tanh(x[j] * y[i, j]))
    return t
"""
    mod = tl.parse(src)
    assert _groups(mod["apart"]) == []
    assert _groups(mod["reads"]) == []


def test_option_gradient_sums_over_the_triangle_in_one_pass():
    """The sums over the option's tree that read V and V_arg1_bar, computed in one pass.
    (There were three: disc_bar summed disc_bar_sum's product again beside
    `-p * disc_bar_sum`, and split out, that sum joined the pass; the two terms are now
    one, `(1 - p) * disc_bar_sum`, opt/summerge.py.)"""
    sys.path.insert(0, "tests")
    from newuser3_programs import PROGRAMS
    from test_newuser_programs import check_on_numba
    f = tl.parse(PROGRAMS["option"]["src"])["option"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", tl.TLCostWarning)
        g = tl.grad(f, wrt=tuple(f64_params(f)))
    assert ("disc_bar_sum", "disc_bar_sum1") in _groups(g)
    source = generate(g.optimized_program(), "test", "")
    kernel = source.split("# statements disc_bar_sum, disc_bar_sum1", 1)[1].split("\n\n", 1)[0]
    # the read both sums share once per point (in the unrolled loop and its tail)
    copies = len(re.findall(r"for i\w+ in range\(o\d+, o\d+\):", kernel))
    assert copies == 2
    assert len(re.findall(r"\be\d+ = v_V_arg1_bar\[", kernel)) == copies
    check_on_numba(("option",), PROGRAMS)


GATHERS = """
def lab(E: f64[v, n], h: i64[n], y: f64[n, n]) -> (f64[n], f64[n]):
    a[i] = sum[j]([j <= i] * E[h[j], i] * y[i, j])
    b[i] = sum[j]([j <= i] * E[h[j], i] * y[i, j] * y[i, j])
    return a, b
def labsum(E: f64[v, n], h: i64[n], y: f64[n, n]) -> f64:
    s = sum[i, j]([j < i] * E[h[j], i] * y[i, j])
    t = sum[i, j]([j < i] * E[h[j], i] * tanh(y[i, j]))
    return s * t
"""


@pytest.mark.parametrize("name", ["lab", "labsum"])
def test_parallel_forms_agree_and_a_bad_label_is_still_located(monkeypatch, name):
    from numba.core.errors import NumbaPerformanceWarning
    from tensorlang.backend import threads
    from tensorlang.backend.background import wait_for_background
    always_parallel(monkeypatch)
    fn = tl.parse(GATHERS)[name]
    assert len(_groups(fn)) == 1
    rng = np.random.default_rng(1)
    inputs = dict(E=rng.random((5, 60)), h=rng.integers(0, 5, 60), y=rng.random((60, 60)))
    want = as_flat(fn.compile("numpy")(**inputs))
    compiled = fn.compile("numba")
    with warnings.catch_warnings():
        warnings.simplefilter("error", NumbaPerformanceWarning)
        for _ in range(1 + threads.MIN_SAMPLES):
            assert np.allclose(as_flat(compiled(**inputs)), want, rtol=1e-11, atol=1e-12)
        wait_for_background()
        kernels = [getattr(compiled._kernels, k) for k in dir(compiled._kernels)
                   if k.endswith("_par")]
        assert kernels and all(k.signatures for k in kernels)
        assert np.allclose(as_flat(compiled(**inputs)), want, rtol=1e-11, atol=1e-12)
        bad = inputs["h"].copy()
        bad[37] = 5
        with pytest.raises(tl.TLBoundsError, match="out of range"):
            compiled(**{**inputs, "h": bad})


def test_explain_names_the_sibling_groups(capsys, tmp_path):
    from tensorlang.cli import main
    path = tmp_path / "sib.tl"
    path.write_text(SIBLINGS)
    assert main(["explain", str(path), "-f", "sib"]) == 0
    out = capsys.readouterr().out
    assert "one loop nest (sibling group, backend/siblings.py): a, b, s, t" in out
    assert "    # statements a, b, s, t" in out


# Sibling shapes beyond the ones above: elementwise maps (a nest without loops),
# terms of one nest under different brackets, a band, a sum of sums, a scalar with
# loop-free terms beside its sum, sums over a rectangle reading a label.
VARIANTS = {
    "elementwise": """
def f(x: f64[n], y: f64[n, m]) -> (f64[n, m], f64[n, m]):
    a[i, j] = [j >= 1] * y[i, j] * x[i] + 2.0 * x[i]
    b[i, j] = y[i, j] * log1p(y[i, j] * y[i, j]) - x[i]
    return a, b
""",
    "brackets": """
def f(x: f64[n], y: f64[n, n]) -> f64:
    s = sum[i, j]([j <= i] * [x[j] > 0.5] * y[i, j] * x[j])
    t = sum[i, j]([j <= i] * y[i, j] * exp(x[i] - y[i, j]))
    u = sum[i, j]([j <= i] * [x[i] < 0.5] * y[i, j] * exp(x[i] - y[i, j]))
    return s * t + u
""",
    "band": """
def f(x: f64[n], y: f64[n, n]) -> (f64[n], f64[n]):
    a[i] = sum[j]([i - 2 <= j and j <= i + 2] * y[i, j] * x[j])
    b[i] = sum[j]([i - 2 <= j and j <= i + 2] * y[i, j] * y[j, i])
    return a, b
""",
    "loop-free": """
def f(x: f64[n], y: f64[n, n], c: f64) -> f64:
    s = sum[i, j]([j < i] * y[i, j] * x[j] * x[i])
    t = c * s + sum[i, j]([j < i] * y[i, j] * x[j] * x[j])
    return t
""",
    "labels": """
def f(E: f64[v, m], h: i64[n], y: f64[n, m]) -> f64:
    s = sum[i, j]([j >= 1] * E[h[i], j] * y[i, j])
    t = sum[i, j]([j >= 1] * E[h[i], j] * tanh(E[h[i], j]))
    return s / (1.0 + t * t)
""",
}


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_sibling_variants_agree_with_the_interpreter(name):
    fn = tl.parse(VARIANTS[name])["f"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", tl.TLCostWarning)
        # (derivatives of one output: the maps' groups are in the functions)
        grad = (tl.grad(fn, wrt=tuple(f64_params(fn))) if len(fn.program.outputs) == 1
                else fn)
    assert _groups(fn) or _groups(grad)
    for n in (1, 3, 40):
        rng = np.random.default_rng(n)
        args = {}
        for p in fn.program.params:
            shape = tuple({"n": n, "m": n + 2, "v": 4}[d] for d in p.dims)
            args[p.name] = (rng.integers(0, 4, shape) if p.elem == "i64"
                            else rng.random(shape) if shape else 0.7)
        _close(fn, args)
        _close(grad, args)


def test_a_sibling_kernel_makes_up_names_only_in_the_generator_namespace():
    from test_name_hygiene import check_identifiers
    fn = tl.parse(SIBLINGS)["sib"]
    src = check_identifiers(fn, {"x": "value", "y": "value", "n": "size"})
    assert "# statements a, b, s, t" in src


def test_a_shared_factor_is_matched_whole():
    """mixture1d's gradient: a_bar, mu_bar and ls_bar are siblings over the components,
    and ls_bar's factor `(sum[m](...) + lw_bar[l] * mu[l] ** 2 - ...)`, a group of several
    terms, must not be taken for the read `lw_bar[l]` the others share (canonical form
    opens such a group into terms: its key is the whole body)."""
    from newuser_programs import PROGRAMS
    from test_newuser_programs import check_on_numba
    f = tl.parse(PROGRAMS["mixture1d"]["src"])["mixture1d"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", tl.TLCostWarning)
        g = tl.grad(f, wrt=tuple(f64_params(f)))
    assert ("a_bar", "mu_bar", "ls_bar") in _groups(g)
    check_on_numba(("mixture1d",), PROGRAMS)

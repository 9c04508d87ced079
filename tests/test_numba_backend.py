"""The compiled backend computes what the reference interpreter computes.

Every example function, its jvp, its gradient and a Hessian-vector product, the
regression suite's derivatives and a Hessian run on both backends and agree to 1e-12 relative.  Also: gathers out
of range, the on-disk cache used by a second process, parallel kernels, and
the dense-contraction path.
"""
import os
import pathlib
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import tensorlang as tl
from derivcheck import as_flat, f64_params, inputs_for
from suite_programs import CASES

ROOT = pathlib.Path(__file__).resolve().parent.parent
EXAMPLES = sorted((ROOT / "examples").glob("*.tl"))


def same(fn, inputs, what):
    want = as_flat(fn.compile("numpy")(**inputs))
    got = as_flat(fn.compile("numba")(**inputs))
    assert np.allclose(got, want, rtol=1e-12, atol=1e-12), (what, got, want)


def is_scalar(fn):
    prog = fn.program
    return len(prog.outputs) == 1 and not prog.shapes()[prog.outputs[0]][1]


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_examples_and_gradients_agree(path):
    for fn in tl.load(path):
        inputs = inputs_for(fn, size=5, seed=1)
        same(fn, inputs, fn.name)
        wrt = tuple(f64_params(fn))
        if not wrt:
            continue
        rng = np.random.default_rng(2)
        tangents = {f"d_{w}": rng.standard_normal(np.shape(inputs[w])) for w in wrt}
        same(tl.jvp(fn, wrt=wrt), {**inputs, **tangents}, f"jvp {fn.name}")
        if is_scalar(fn):
            g = tl.grad(fn, wrt=wrt)
            same(g, inputs, g.name)
            h = tl.hvp(fn, wrt=wrt[0])
            same(h, {**inputs, f"d_{wrt[0]}": tangents[f"d_{wrt[0]}"]}, f"hvp {fn.name}")


def test_regression_suite_derivatives_agree():
    for name, case in CASES.items():
        f = tl.parse(case["src"])["f"]
        inputs = inputs_for(f, size=6, seed=2)
        w = case["wrt"]
        same(tl.grad(f, wrt=w), inputs, name)
    f = tl.parse(CASES["T15"]["src"])["f"]
    same(tl.hessian(f, wrt="x"), inputs_for(f, size=6, seed=3), "hessian")


def test_the_default_backend_is_numba_outside_the_test_suite():
    code = "import tensorlang as tl; print(tl.parse('def f(x: f64[n]) -> f64:\\n    return x[0]\\n').f.backend)"
    env = {k: v for k, v in os.environ.items() if k != "TENSORLANG_BACKEND"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         cwd=ROOT, check=True)
    assert out.stdout.strip() == "numba"


def test_gather_out_of_range_is_reported_by_the_compiled_backend():
    mod = tl.parse(textwrap.dedent("""\
        def pick(E: f64[v, d], y: i64[b]) -> f64[b, d]:
            H[s, c] = E[y[s], c]
            return H
        """), filename="pick.tl")
    f = mod.pick.compile("numba")
    E = np.ones((3, 2))
    assert np.array_equal(f(E, np.array([0, 2])), np.ones((2, 2)))
    with pytest.raises(tl.TLBoundsError, match="out of range"):
        f(E, np.array([0, 3]))


def test_nan_behind_a_false_bracket_stays_out():
    f = tl.parse("def f(x: f64[n]) -> f64:\n    return sum[i]([x[i] > 0.0] * log(x[i]))\n")["f"]
    x = np.array([-1.0, np.e, -2.0, 1.0])
    assert f.compile("numba")(x) == pytest.approx(1.0)


def always_parallel(monkeypatch):
    """Every statement that has a parallel form takes it, whatever its size."""
    from tensorlang.backend import threads
    monkeypatch.setattr(threads, "MIN_WORK", 0)
    monkeypatch.setattr(threads, "MIN_SECONDS", 0.0)
    monkeypatch.setattr(threads, "MIN_SECONDS_REDUCTION", 0.0)
    monkeypatch.setattr(threads, "MIN_ITERATIONS_PER_THREAD", 0)
    monkeypatch.setattr(threads, "thread_count", lambda: 2)


def test_parallel_kernels_agree_with_serial(monkeypatch):
    from tensorlang.backend.background import wait_for_background
    src = ("def f(img: f64[h, w]) -> f64[h, w]:\n"
           "    b[r, c] = [c >= 1] * img[r, c - 1] + 2.0 * img[r, c] + [c + 1 < w] * img[r, c + 1]\n"
           "    return b\n")
    img = np.random.default_rng(0).standard_normal((40, 30))
    want = tl.parse(src)["f"].compile("numpy")(img)
    always_parallel(monkeypatch)
    f = tl.parse(src.replace("b[", "bp[").replace("return b", "return bp"))["f"].compile("numba")
    # A scalar reduction in parallel: a per-thread sum, equal up to reassociation.
    red = "def g(x: f64[n]) -> f64:\n    return sum[i]([i + 1 < n] * (x[i + 1] - x[i]) ** 2)\n"
    x = np.random.default_rng(1).standard_normal(1000)
    g = tl.parse(red)["g"].compile("numba")
    from tensorlang.backend import threads
    for _ in range(1 + threads.MIN_SAMPLES):
        assert np.allclose(f(img), want, rtol=1e-14, atol=0)
        assert g(x) == pytest.approx(np.sum(np.diff(x) ** 2), rel=1e-12)
    # The first calls compiled the serial forms, the next ones were timed and then
    # started compiling the parallel ones.
    wait_for_background()
    for fn in (f, g):
        mod = fn._kernels
        assert all(getattr(mod, k).signatures for k in dir(mod) if k.endswith("_par"))
    assert np.allclose(f(img), want, rtol=1e-14, atol=0)
    assert g(x) == pytest.approx(np.sum(np.diff(x) ** 2), rel=1e-12)


def test_a_parallel_form_never_makes_a_call_wait(monkeypatch):
    """A call whose size asks for threads runs the serial form while the parallel
    form compiles in the background (growing a problem never waits for a compile)."""
    from tensorlang.backend.background import started, wait_for_background
    always_parallel(monkeypatch)
    f = tl.parse("def h(x: f64[n]) -> f64[n]:\n    y[i] = 3.0 * x[i] + [i >= 1] * x[i - 1]\n"
                 "    return y\n")["h"].compile("numba")
    x = np.arange(7.0)
    want = 3.0 * x + np.concatenate([[0.0], x[:-1]])
    from tensorlang.backend import threads
    assert np.allclose(f(x), want)       # compiles the serial form: not timed
    for _ in range(threads.MIN_SAMPLES):
        assert np.allclose(f(x), want)   # timed: threads would pay
    mod = f._kernels
    parallel = [getattr(mod, k) for k in dir(mod) if k.endswith("_par")]
    assert parallel and all(started(k) for k in parallel)
    wait_for_background()
    assert all(k.signatures for k in parallel)
    assert np.allclose(f(x), want)


def test_sin_and_cos_vectorise_and_fall_back_beyond_their_range(monkeypatch):
    """A statement's sin and cos are vmath's (a loop LLVM vectorises); a call with an
    argument beyond vmath.TRIG_LIMIT, NaN or an infinity anywhere runs the statement
    again with NumPy's functions.  Serial and parallel forms agree with the interpreter."""
    from tensorlang.backend.background import wait_for_background
    from tensorlang.backend.numba_backend import module_source
    src = ("def f(t: f64[h, w], u: f64[h, w]) -> f64[h, w]:\n"
           "    co[r, c] = cos(t[r, c])\n"
           "    g[r, c] = [c + 1 < w] * (co[r, c + 1] - sin(2.0 * t[r, c] + u[r, c]))"
           " + [r >= 1] * co[r - 1, c]\n"
           "    return g\n")
    fn = tl.parse(src)["f"]
    text = module_source(fn.optimized_program())
    assert "tl_vcos(" in text and "tl_vsin(" in text and "tl_wide += tl_trig_wide(" in text
    rng = np.random.default_rng(3)
    t, u = rng.standard_normal((9, 7)), rng.standard_normal((9, 7))
    wide = t.copy()
    wide[4, 2], wide[0, 6], wide[8, 0] = 3e6, np.nan, -np.inf
    ref = fn.compile("numpy")
    for parallel in (False, True):
        if parallel:
            always_parallel(monkeypatch)
        f = tl.parse(src.replace("co[", f"c{int(parallel)}["))["f"].compile("numba")
        for _ in range(3):
            for x in (t, wide):
                np.testing.assert_allclose(f(x, u), ref(x, u), rtol=1e-13, atol=1e-15)
            wait_for_background()
        assert np.isnan(f(wide, u)[0, 5]) and np.isnan(f(wide, u)[1, 6])


def test_an_output_its_gather_loops_assign_whole_is_not_zeroed_before_its_scatter():
    """A statement with gather terms assigns every element in its loop nest before its
    scatter terms add to some of them, so its output is not zero-filled first (a softmax
    cross-entropy's logit adjoint); one with only scatter terms still is.  The values
    agree with the interpreter on repeated calls (reused buffers hold old results)."""
    from tensorlang.backend.numba_backend import module_source
    src = ("def f(z: f64[b, k], y: i64[b], x: f64[b]) -> (f64[b, k], f64[k]):\n"
           "    g[l, m] = exp(z[l, m]) + [m == y[l]] * (0.0 - x[l])\n"
           "    h[m: k] = sum[l]([m == y[l]] * x[l])\n"
           "    return g, h\n")
    fn = tl.parse(src)["f"]
    text = module_source(fn.optimized_program())
    assert text.count("out = tl_empty((s_b, s_k,))") == 1
    assert text.count("out = tl_zeros((s_k,))") == 1
    rng = np.random.default_rng(7)
    f, ref = fn.compile("numba"), fn.compile("numpy")
    for _ in range(3):
        z, x = rng.standard_normal((300, 7)), rng.standard_normal(300)
        y = rng.integers(0, 7, size=300)
        for got, want in zip(f(z, y, x), ref(z, y, x)):
            np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-15)


def test_dense_contractions_go_to_blas():
    from tensorlang.backend.numba_backend import module_source
    f = tl.parse("def mm(A: f64[n, k], B: f64[k, m]) -> f64[n, m]:\n"
                 "    C[i, j] = sum[l](A[i, l] * B[l, j])\n    return C\n")["mm"]
    assert "env['C'] = tl_matmul(env['A'], env['B'])" in module_source(f.optimized_program())
    rng = np.random.default_rng(1)
    A, B = rng.standard_normal((4, 3)), rng.standard_normal((3, 5))
    assert np.allclose(f.compile("numba")(A, B), A @ B, rtol=1e-13)


def test_a_second_process_reuses_the_compiled_kernels(tmp_path):
    script = textwrap.dedent("""\
        import re
        import numpy as np, tensorlang as tl
        from tensorlang.backend import numba_backend
        f = tl.load(%r).fd_energy.compile("numba")
        print(f(np.arange(6.0)))
        mod = numba_backend.load_module(f.optimized_program())
        kernels = [getattr(mod, k) for k in dir(mod) if re.fullmatch(r"k[0-9]+(_par)?", k)]
        print(sum(k.stats.cache_hits.get(s, 0) for k in kernels for s in k.signatures),
              sum(k.stats.cache_misses.get(s, 0) for k in kernels for s in k.signatures))
        """ % str(ROOT / "examples" / "fd_energy.tl"))
    env = dict(os.environ, TENSORLANG_CACHE_DIR=str(tmp_path), TENSORLANG_BACKEND="numba")
    runs = [subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                           env=env, cwd=ROOT, check=True).stdout.split("\n") for _ in range(2)]
    assert runs[0][0] == runs[1][0] == "5.0"
    hits1, misses1 = map(int, runs[0][1].split())
    hits2, misses2 = map(int, runs[1][1].split())
    assert misses1 >= 1 and hits1 == 0          # compiled the first time
    assert misses2 == 0 and hits2 >= 1          # loaded from disk the second time
    assert any(p.name.startswith("tl_") for p in tmp_path.iterdir())


def test_cache_commands(tmp_path):
    env = dict(os.environ, TENSORLANG_CACHE_DIR=str(tmp_path))
    run = lambda *a: subprocess.run([sys.executable, "-m", "tensorlang", *a],  # noqa: E731
                                    capture_output=True, text=True, env=env, cwd=ROOT)
    (tmp_path / "tl_0123456789abcdef0123.py").write_text("x = 1\n")
    info = run("cache", "info")
    assert info.returncode == 0 and "modules:   1" in info.stdout
    cleared = run("cache", "clear")
    assert cleared.returncode == 0 and "removed 1 file" in cleared.stdout
    assert not (tmp_path / "tl_0123456789abcdef0123.py").exists()
    (tmp_path / "tl_notes.txt").write_text("a user's file\n")        # not tensorlang's
    assert run("cache", "clear").returncode == 0
    assert (tmp_path / "tl_notes.txt").exists()


def test_a_corrupt_cache_entry_is_rebuilt(tmp_path, monkeypatch):
    from tensorlang.backend import numba_backend
    monkeypatch.setenv("TENSORLANG_CACHE_DIR", str(tmp_path))
    f = tl.parse("def g(x: f64[n]) -> f64[n]:\n    y[i] = 3.0 * x[i] + 1.0\n    return y\n")["g"]
    prog = f.optimized_program()
    key = numba_backend._key(numba_backend.module_source(prog))
    (tmp_path / f"tl_{key}.py").write_text("this is not python (\n")
    numba_backend._LOADED.pop(key, None)
    assert np.array_equal(f.compile("numba")(np.arange(3.0)), np.array([1.0, 4.0, 7.0]))


@pytest.mark.parametrize("name", ["blur.tl", "fd_energy.tl", "laplacian.tl", "indexing.tl"])
def test_peeled_stencil_loops_at_tiny_sizes(name):
    """Loops split at their guards fall back to the guarded loop where the split is invalid."""
    for fn in tl.load(ROOT / "examples" / name):
        for size in (1, 2, 3):
            inputs = inputs_for(fn, size=size, seed=size)
            same(fn, inputs, f"{fn.name} at size {size}")
            if is_scalar(fn):
                same(tl.grad(fn, wrt=tuple(f64_params(fn))), inputs, f"grad {fn.name} at {size}")


def test_direct_blas_calls_match_einsum_and_are_contiguous():
    """Every two-operand vector/matrix contraction `blas_call` accepts equals einsum,
    and its result is C-contiguous (so kernels reading it keep one compiled layout)."""
    import itertools

    from tensorlang.backend.blas import blas_call
    rng = np.random.default_rng(0)
    dims = {"a": 3, "b": 4, "c": 5}
    subs = ["a", "b", "c", "ab", "ba", "bc", "cb", "ac", "ca"]
    accepted = 0
    for sa, sb in itertools.product(subs, subs):
        shared = set(sa) & set(sb)
        free = (set(sa) | set(sb)) - shared
        for out in itertools.permutations(sorted(free)):
            spec = f"{sa},{sb}->{''.join(out)}"
            A = rng.standard_normal([dims[x] for x in sa])
            B = rng.standard_normal([dims[x] for x in sb])
            expr = blas_call(spec, "A", "B")
            if expr is None:
                continue
            got = eval(expr)
            assert np.allclose(got, np.einsum(spec, A, B), rtol=1e-13), (spec, expr)
            assert np.ndim(got) == 0 or got.flags.c_contiguous, (spec, expr)
            accepted += 1
    assert accepted >= 30


def test_a_program_of_blas_calls_does_not_import_numba(tmp_path):
    script = textwrap.dedent("""\
        import sys, numpy as np, tensorlang as tl
        f = tl.load(%r).qform.compile("numba")
        x, A = np.arange(3.0), np.eye(3)
        print(f(x, A), "numba" in sys.modules)
        """ % str(ROOT / "examples" / "qform.tl"))
    env = dict(os.environ, TENSORLANG_CACHE_DIR=str(tmp_path), TENSORLANG_BACKEND="numba")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         env=env, cwd=ROOT, check=True).stdout.split()
    assert out == ["5.0", "False"]


# ------------------------------------------------------------ defects the fuzzer found
def _agree(src, name, args, transform=None):
    f = tl.parse(src)[name]
    if transform is not None:
        f = transform(f)
    want = f.compile("numpy")(**args)
    got = f.compile("numba")(**args)
    for g, w in zip(got if isinstance(got, tuple) else (got,),
                    want if isinstance(want, tuple) else (want,)):
        assert np.allclose(g, w, rtol=1e-12, atol=1e-12)


def test_fusing_into_a_reader_does_not_capture_its_summed_index():
    # t1's sum over i is fused into `sum[i](t1[i])`: substituting r := i must not
    # let the inner sum capture the reader's i (it used to read x[2 * i]).
    _agree("def f(x: f64[n], w: f64[m]) -> f64:\n"
           "    t1[r: m] = exp(sum[i: m]([r + i < n] * x[r + i]))\n"
           "    return sum[i](t1[i])\n", "f", dict(x=np.array([1.0, 2.0, 4.0, 8.0]), w=np.ones(3)))


def test_serial_and_parallel_forms_take_the_same_arguments():
    _agree("def f(A: f64[n, m]) -> f64[n, n]:\n"
           "    t1[i: m] = [i - 1 >= m - 1] * A[0, i]\n"
           "    t3[i: n, r: n] = t1[m - 1]\n"
           "    return t3\n", "f", dict(A=np.arange(20.0).reshape(5, 4)))


def test_a_scatter_computes_its_solved_generators_in_dependency_order():
    src = ("def f(A: f64[n, m]) -> f64[m]:\n"
           "    t3[r] = [n > 2 * r] * A[2 * r, r] * ([n - 1 == r + 2 or r - 2 >= r] * m)\n"
           "    return t3\n")
    rng = np.random.default_rng(4)
    _agree(src, "f", dict(A=rng.standard_normal((7, 3)), d_out=rng.standard_normal(3)),
           lambda f: tl.vjp(f, wrt=("A",)))


def test_loop_free_scalar_statements_are_plain_python_not_kernels():
    """Hundreds of scalar statements must not cost a Numba compilation each: a
    statement with no indices and no loop is a plain function in the module."""
    from tensorlang.backend.numba_backend import module_source
    lines = ["def chain(x: f64[n], s: f64) -> f64:", "    a0 = s / x[0]"]
    for k in range(1, 300):
        lines.append(f"    a{k} = exp(-a{k - 1} * a{k - 1}) + {k % 7}.0 / x[0]")
    lines.append("    return a299")
    f = tl.parse("\n".join(lines) + "\n")["chain"]
    src = module_source(f.optimized_program())
    assert "@njit" not in src and "from numba" not in src
    for x in (np.array([2.0, 1.0]), np.array([0.0, 1.0])):     # x[0] = 0: inf and NaN
        got, want = f.compile("numba")(x, 0.3), f.compile("numpy")(x, 0.3)
        assert got == want or (np.isnan(got) and np.isnan(want))


@pytest.mark.parametrize("case", ["T20", "T21", "T22", "T23", "T24"])
def test_band_and_stride_bounds_agree_with_the_interpreter(case):
    """Loops bounded by a band (max/min of the range and the guard) or by a stride
    (ceil and floor division) compute what the interpreter computes, at sizes where
    the band is clipped by the range and where a stride leaves no iteration."""
    f = tl.parse(CASES[case]["src"])["f"]
    g = tl.grad(f, wrt=CASES[case]["wrt"])
    from tensorlang.backend.numba_backend import module_source
    text = module_source(g.optimized_program())
    assert "min(" in text or "max(" in text
    for size in (1, 2, 5):
        inputs = inputs_for(f, size=size, seed=size)
        same(f, inputs, f"{case} at {size}")
        same(g, inputs, f"grad {case} at {size}")


def test_transposed_products_behind_brackets_read_rows_in_order():
    """`x_bar[k] = sum[l](B[l - 1, k] * g[l] * g[l])` cannot go to BLAS (three factors;
    with two, a product of windows: tests/test_blas.py); its kernel runs the sum loop
    outside the generator loop, so B is read row by row, with the same values as the
    interpreter, at sizes where the bracket bounds are empty too."""
    import re
    from tensorlang.backend.numba_backend import module_source
    src = ("def f(B: f64[n, n], g: f64[n]) -> f64[n]:\n"
           "    x[k] = sum[l]([l >= 1 and k + 2 < n] * B[l - 1, k] * g[l] * g[l])\n"
           "    return x\n")
    fn = tl.parse(src)["f"]
    text = module_source(fn.optimized_program())
    assert re.search(r"for i_l in range\(1, s_n\):\n\s+for i_k in range\(0, min\(\(s_n - 1\), "
                     r"\(s_n - 3\)\) \+ 1\):\n\s+v_x\[i_k\] \+= ", text), text
    assert "k0_par" not in text and "tl_zeros((s_n,))" in text
    rng = np.random.default_rng(4)
    for n in (1, 2, 3, 9):
        B, g = rng.standard_normal((n, n)), rng.standard_normal(n)
        want = fn.compile("numpy")(B, g)
        assert np.allclose(fn.compile("numba")(B, g), want, rtol=1e-13, atol=1e-14)


def test_a_scatter_reads_rows_in_order_and_tests_each_label_once():
    """The gradient of a gather, `E_bar[k, l] += G[m, l]` at `k = y[m]`: the loop over the
    labels runs outside, each label is tested once, and G and E_bar are read along rows."""
    import re
    from tensorlang.backend.numba_backend import module_source
    f = tl.parse(CASES["T19"]["src"])["f"]
    g = tl.grad(f, wrt="E")
    text = module_source(g.optimized_program())
    assert re.search(r"for i_m in range\(0, s_b\):\n(\s+if .*\n)+\s+i_k = v_y\[i_m\]\n"
                     r"\s+for i_l in range\(0, s_d\):\n\s+v_E_bar\[i_k, i_l\] \+= v_G\[i_m, i_l\]",
                     text), text
    rng = np.random.default_rng(5)
    E, G = rng.standard_normal((6, 4)), rng.standard_normal((9, 4))
    y = rng.integers(0, 6, size=9)
    assert np.allclose(g.compile("numba")(E, G, y), g.compile("numpy")(E, G, y), rtol=1e-13)


def test_a_scatter_pass_reads_each_gathered_row_along_the_row():
    """Two scatters into one row of W_bar at k = who[s] share the loop over s (a pass);
    the first also sums over the C candidates, reading E[cand[c, s], e].  Its inner loops
    run the candidates outside and the row's last index e inside, so each gathered row
    of E (and the written row of W_bar) is read in memory order, not down the columns,
    with the gathered position and its range check computed once per row (when the
    row is not empty); the values are the interpreter's."""
    import re
    from tensorlang.backend.numba_backend import module_source
    f = tl.parse("def f(E: f64[V, h], W: f64[U, h], who: i64[N], good: i64[N], "
                 "cand: i64[C, N]) -> f64:\n"
                 "    sp[s] = sum[e](W[who[s], e] * E[good[s], e])\n"
                 "    sc[c, s] = sum[e](W[who[s], e] * E[cand[c, s], e])\n"
                 "    return sum[c, s](log(1.0 + exp(sc[c, s] - sp[s]))) / N\n")["f"]
    g = tl.grad(f, wrt=("E", "W"))
    text = module_source(g.optimized_program())
    assert re.search(r"for \w+ in range\(0, s_C\):\n\s+if s_h > 0:\n\s+(\w+) = v_cand\[.*\n"
                     r".*\n.*GatherOutOfRange.*\n\s+for \w+ in range\(0, s_h\):\n"
                     r"\s+v_W_bar\[\w+, \w+\] \+= v_E\[\1, \w+\]", text), text
    assert not re.search(r"for \w+ in range\(0, s_h\):\n\s+for \w+ in range\(0, s_C\):", text)
    rng = np.random.default_rng(6)
    for V, U, h, N, C in [(1, 1, 1, 1, 1), (5, 3, 4, 7, 2), (9, 4, 3, 11, 3)]:
        inputs = dict(E=rng.standard_normal((V, h)), W=rng.standard_normal((U, h)),
                      who=rng.integers(0, U, N), good=rng.integers(0, V, N),
                      cand=rng.integers(0, V, (C, N)))
        same(g, inputs, f"scatter pass at {(V, U, h, N, C)}")


def test_reordered_scatter_keeps_its_staged_range_checks():
    """A scatter whose solved generator (l = p - 1) is range-checked where its loops are
    staged keeps that check when its loops are reordered for memory order."""
    g = tl.parse("def g(s: f64, lab: i64[n], E: f64[k, m], P: f64[n, k, k]) -> f64[k, m]:\n"
                 "    Eb[l: k, p: m] = sum[q: n, j: k]([l == p - 1 and l + q < n and "
                 "l - lab[l + q] <= 0] * E[j, m - 1] * s * P[q, l, j])\n"
                 "    return Eb\n")["g"]
    rng = np.random.default_rng(0)
    for n, m, k in [(1, 1, 1), (2, 1, 2), (1, 2, 1), (3, 4, 3)]:
        inputs = dict(s=0.7, lab=rng.integers(0, k, size=n), E=rng.standard_normal((k, m)),
                      P=rng.standard_normal((n, k, k)))
        same(g, inputs, f"staged checks at {(n, m, k)}")


def _values_at(src, shapes_of, sizes, wrt=None, seed=0):
    """The function (or its gradient) on both backends at each size assignment of `sizes`."""
    f = tl.parse(src)["f"]
    fn = f if wrt is None else tl.grad(f, wrt=wrt)
    rng = np.random.default_rng(seed)
    for z in sizes:
        args = [rng.standard_normal(shape) for shape in shapes_of(**z)]
        want = as_flat(fn.compile("numpy")(*args))
        got = as_flat(fn.compile("numba")(*args))
        assert np.allclose(got, want, rtol=1e-12, atol=1e-12), (z, got, want)
    return fn


STRIDED_SCATTERS = {
    # the adjoint of a strided read beside a plain one: x_bar[k] = sum[l]([k == 3 l + 1] r[l])
    "stride3": ("def f(x: f64[n], t: f64[m]) -> f64:\n"
                "    r[i] = [3 * i + 1 < n] * x[3 * i + 1] - t[i]\n"
                "    return sum[i](r[i] ** 2)\n",
                lambda n, m: [(n,), (m,)], "x"),
    # a reversed stride: k = n - 1 - 2 l
    "reversed": ("def f(x: f64[n], t: f64[m]) -> f64:\n"
                 "    r[i] = [2 * i < n] * x[n - 1 - 2 * i] * t[i]\n"
                 "    return sum[i](r[i] * t[i])\n",
                 lambda n, m: [(n,), (m,)], "x"),
    # overlapping 3 x 3 windows at stride 2 (each input element in up to four)
    "window": ("def f(img: f64[h, w], T: f64[m, q]) -> f64:\n"
               "    p[i: m, j: q] = [2 * i + 2 < h and 2 * j + 2 < w] * sum[a: 3, b: 3]"
               "(img[2 * i + a, 2 * j + b])\n"
               "    return sum[i, j]((p[i, j] - T[i, j]) ** 2)\n",
               lambda h, w, m, q: [(h, w), (m, q)], "img"),
}


@pytest.mark.parametrize("case", sorted(STRIDED_SCATTERS))
def test_strided_scatters_loop_over_the_coarse_index(case):
    """A generator pinned to a strided position of summed indices (`[k == 3 l + 1]`,
    a pooling window `[0 <= k - 2 r <= 2]`) is computed from them: the kernel loops
    over the coarse indices and adds at the strided positions of a zeroed output (or,
    for one term over one loop, writes them once with zeros between: see
    test_a_strided_adjoint_writes_every_entry_once), with no floor division per output
    element; values as the interpreter's at sizes 1, odd and even, where the strides
    leave the output's tail untouched."""
    import re
    from tensorlang.backend.numba_backend import module_source
    src, shapes_of, wrt = STRIDED_SCATTERS[case]
    names = list(shapes_of.__code__.co_varnames)
    grid = [dict(zip(names, v)) for v in
            ([(1, 1), (1, 3), (7, 3), (8, 4), (9, 2), (4, 6)] if len(names) == 2 else
             [(1, 1, 1, 1), (2, 3, 1, 2), (5, 7, 2, 3), (8, 8, 4, 4), (9, 6, 3, 2)])]
    g = _values_at(src, shapes_of, grid, wrt=wrt, seed=len(case))
    prog = g.optimized_program()
    text = module_source(prog)
    kernel = text[text.index(f"# statement {wrt}_bar"):]
    kernel = kernel[:kernel.index("return")]
    stmt = next(s for s in prog.stmts if s.name == f"{wrt}_bar")
    for gen, _ in stmt.indices:
        assert f"for i_{gen} in" not in kernel and f"i_{gen} = " in kernel, kernel
    assert re.search(r"v_\w+_bar\[i_\w+(, i_\w+)?\] \+?= ", kernel), kernel


def test_a_triangular_transposed_product_reads_rows_in_order():
    """`x_bar[k] = sum[l]([l <= k] * B[l, k] * g[l])` (the triangle of a gradient) runs
    the sum loop outside and starts each row at the diagonal: B is read along rows."""
    import re
    from tensorlang.backend.numba_backend import module_source
    src = ("def f(B: f64[n, n], g: f64[n]) -> f64[n]:\n"
           "    x[k] = sum[l]([l <= k and k + 1 < n] * B[l, k] * g[l])\n"
           "    return x\n")
    fn = _values_at(src, lambda n: [(n, n), (n,)], [dict(n=v) for v in (1, 2, 3, 8)])
    text = module_source(fn.optimized_program())
    assert re.search(r"for i_l in range\(0, s_n\):\n\s+for i_k in range\(max\(.*i_l.*\), "
                     r".*\):\n\s+v_x\[i_k\] \+= ", text), text


def test_a_short_output_of_long_sums_takes_its_terms_in_rows():
    """`w_bar[l: k] = sum[m: n]([l + m < n] * x[l + m] * y[m])` (a filter's gradient) runs
    the long sum loop outside when the output is short, and the plain nest otherwise;
    both give the interpreter's values (the same additions in the same order)."""
    from tensorlang.backend.kernels import SMALL_OUTPUT
    from tensorlang.backend.numba_backend import module_source
    src = ("def f(x: f64[n], y: f64[n], w: f64[k]) -> f64[k]:\n"
           "    v[l: k] = sum[m: n]([l + m < n] * x[l + m] * y[m])\n"
           "    return v\n")
    fn = _values_at(src, lambda n, k: [(n,), (n,), (k,)],
                    [dict(n=1, k=1), dict(n=7, k=3), dict(n=3, k=7), dict(n=40, k=SMALL_OUTPUT + 3)])
    text = module_source(fn.optimized_program())
    assert f"if s_k <= {SMALL_OUTPUT}:" in text, text


def test_value_brackets_select_instead_of_branching():
    """A value bracket over reads and products is a selection, not a branch; NaN and inf
    computed where it is false stay out, and -0.0 terms leave the sum +0.0 as before."""
    from tensorlang.backend.numba_backend import module_source
    f = tl.parse("def f(x: f64[n], y: f64[n]) -> f64[n]:\n"
                 "    z[i] = sum[j]([x[j] > 0.0] * y[j] / x[j]) + [y[i] < 1.0] * x[i] * y[i]\n"
                 "    return z\n")["f"]
    assert "else 0.0)" in module_source(f.optimized_program())
    x = np.array([-1.0, 0.0, 2.0, -0.0, np.inf])
    y = np.array([np.inf, 1.0, -0.0, np.nan, 3.0])
    got, want = f.compile("numba")(x, y), f.compile("numpy")(x, y)
    assert np.array_equal(got, want, equal_nan=True)
    assert np.array_equal(np.signbit(got), np.signbit(want))


@pytest.mark.parametrize("read", ["x[2 * i]", "x[3 * i + 1]", "x[2 * i + 3]"])
def test_a_strided_adjoint_writes_every_entry_once(read):
    """The adjoint of a strided read (`x_bar[k] = sum[l]([k == c l + b] r[l])`) is written
    once per entry, zeros between the strided positions, into an unfilled output; the
    values agree with the interpreter for outputs shorter and longer than the read."""
    from tensorlang.backend.numba_backend import module_source
    bound = read[2:-1]
    src = (f"def f(x: f64[n], t: f64[m]) -> f64:\n"
           f"    r[i] = [{bound} < n] * {read} - t[i]\n"
           f"    return sum[i](r[i] ** 2)\n")
    g = tl.grad(tl.parse(src)["f"], wrt=("x", "t"))
    source = module_source(g.optimized_program())
    assert "out = tl_empty((s_n,))" in source and "zeros((" not in source
    rng = np.random.default_rng(5)
    got_f, want_f = g.compile("numba"), g.compile("numpy")
    for n, m in [(1, 1), (2, 1), (5, 2), (6, 3), (7, 5), (9, 2), (3, 8)]:
        x, t = rng.standard_normal(n), rng.standard_normal(m)
        want = want_f(x, t)
        junk = np.full(n, np.nan)    # freed just before the call: NumPy hands its memory
        del junk                     # to the unfilled output, so a missed entry shows
        for got, want in zip(got_f(x, t), want):
            assert np.allclose(got, want, rtol=1e-12, atol=1e-14), (n, m)


def test_a_scalar_product_inside_a_recurrence_step_compiles():
    """A dot product of two vectors inside a recurrence's step (here `u . s[t - 1]`,
    a scalar per step) is a step product with no dimensions; the fused step loop
    must start it as a float, not as an array of an empty shape."""
    f = tl.parse(textwrap.dedent("""
        def gate(x: f64[T, d], u: f64[d], W: f64[d, d]) -> f64:
            g[t: T] = sigmoid(sum[i](u[i] * x[t, i]) + [t >= 1] * sum[i](u[i] * s[t - 1, i]))
            s[t: T, i: d] = g[t] * x[t, i] + (1.0 - g[t]) * [t >= 1] * sum[j](W[i, j] * s[t - 1, j])
            return sum[t, i](s[t, i] ** 2)
        """), filename="gate.tl")["gate"]
    inputs = inputs_for(f, 4)
    same(f, inputs, "gate")
    same(tl.grad(f, wrt=("x", "u", "W")), inputs, "grad of gate")


def test_a_parallel_gather_kernel_is_parallel_and_still_refuses_a_bad_label(monkeypatch):
    """A parallel form cannot raise inside its prange loop (Numba then runs it serially and
    warns the user): it notes a bad label, reads an in-range position instead, and raises
    after the loop, so the call is still the located TLBoundsError."""
    import warnings
    from numba.core.errors import NumbaPerformanceWarning
    from tensorlang.backend import threads
    from tensorlang.backend.background import wait_for_background
    always_parallel(monkeypatch)
    src = ("def emb(T: f64[v, d], lab: i64[b], U: f64[b, d]) -> f64:\n"
           "    return sum[p, q](T[lab[p], q] * U[p, q])\n"
           "def rows(T: f64[v, d], lab: i64[b]) -> f64[b, d]:\n"
           "    R[p, q] = T[lab[p], q] * 2.0\n"
           "    return R\n")
    rng = np.random.default_rng(3)
    T, U = rng.standard_normal((7, 5)), rng.standard_normal((40, 5))
    lab = rng.integers(0, 7, 40)
    mod = tl.parse(src)
    want = {"emb": np.sum(T[lab] * U), "rows": 2.0 * T[lab]}
    with warnings.catch_warnings():
        warnings.simplefilter("error", NumbaPerformanceWarning)
        for name in ("emb", "rows"):
            fn = mod[name].compile("numba")
            args = (T, lab, U) if name == "emb" else (T, lab)
            for _ in range(1 + threads.MIN_SAMPLES):
                np.testing.assert_allclose(fn(*args), want[name], rtol=1e-12)
            wait_for_background()
            kernels = [getattr(fn._kernels, k) for k in dir(fn._kernels) if k.endswith("_par")]
            assert kernels and all(k.signatures for k in kernels)
            np.testing.assert_allclose(fn(*args), want[name], rtol=1e-12)
            bad = lab.copy()
            bad[23] = 7
            with pytest.raises(tl.TLBoundsError, match="out of range"):
                fn(*((T, bad, U) if name == "emb" else (T, bad)))


def test_a_derivative_term_no_point_can_meet_is_not_compiled():
    """A vjp whose adjoint has a term under `[k == -1 and k == l - 1]` over k: acc (from
    reads at `tmp_bar - 1` and a diagonal) is 0: the term goes, where the kernel used to
    solve l from k before k was defined (a Numba NotDefinedError); values match the
    interpreter.  (Found by the `names` fuzzer, seed 193.)"""
    src = ("def f(d_x: i64[n], acc1: f64[acc, m]) -> f64:\n"
           "    one[r: n, v: n] = [0 <= r - 1 < acc and m > v + r] * acc1[r - 1, v + r]\n"
           "    return sum[i, j](one[i, j] * pow(one[j, j + 1] * [n > j + 1], 2)) + abs(one[0, 0])\n")
    f = tl.parse(src)["f"]
    v = tl.vjp(f, wrt="acc1")
    rng = np.random.default_rng(3)
    args = dict(d_x=np.ones(4, dtype=np.int64), acc1=rng.standard_normal((3, 6)), d_out=1.0)
    np.testing.assert_allclose(v.compile("numba")(**args), v.compile("numpy")(**args),
                               rtol=1e-12, atol=1e-12)

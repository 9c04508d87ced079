"""Recurrence step kernels on the Numba backend compute what the interpreter computes.

A member's step kernel takes sin and cos in vmath's vectorisable form (falling back to
the C library's for arguments beyond vmath.TRIG_LIMIT or NaN), and the fused loop over
the steps of a group whose member kernels read the group takes its step number from an
array (numba_module.reads_group), so that the kernels' loops run vectorised, and its
subscripts are unsigned (KernelWriter.subscript).  Every form is checked against the
interpreter: steps of fewer and more elements than a vector, a single step, a single
element, a group that steps backwards, steps large enough for the driver's own loop,
wide arguments, parallel step kernels and program names that look like the generated
ones.  A scalar that sums over a group's steps what each step computes (a gradient's
parameter sums), or a tensor each of whose elements does (a per-element parameter's),
is added up inside the fused step loop, the loops of such sums over a step's row run as
one, and a member that only its own step reads is held as one row there.
"""
import textwrap

import numpy as np
import pytest

import tensorlang as tl
from tensorlang.backend.numba_backend import module_source

ARM = textwrap.dedent("""
    def arm(th: f64[K, B], L: f64[K], tx: f64[B], ty: f64[B]) -> f64:
        phi[k: K, b: B] = th[k, b] + [k >= 1] * phi[k - 1, b]
        px[k: K, b: B] = L[k] * cos(phi[k, b]) + [k >= 1] * px[k - 1, b]
        py[k: K, b: B] = L[k] * sin(phi[k, b]) + [k >= 1] * py[k - 1, b]
        return sum[b]((px[K - 1, b] - tx[b]) ** 2 + (py[K - 1, b] - ty[b]) ** 2)
    """)

# a group stepping backwards whose step reads sin of another member's later step
BACK = textwrap.dedent("""
    def back(th: f64[K, B], L: f64[K]) -> f64[K, B]:
        q[k: K, b: B] = L[k] * cos(th[k, b]) + [k + 1 < K] * sin(r[k + 1, b])
        r[k: K, b: B] = q[k, b] + [k + 1 < K] * 0.5 * r[k + 1, b]
        return r
    """)

# program names spelled like the identifiers the generator makes up (the step loop's
# row `o`, accumulators, temporaries, the kernels' names and the trig counter)
NAMES = textwrap.dedent("""
    def k1_steps(acc: f64[k1_0, tl_wide], t2: f64[k1_0]) -> f64[k1_0, tl_wide]:
        o[r1_t0: k1_0, i_b: tl_wide] = (t2[r1_t0] * cos(acc[r1_t0, i_b])
                                        + [r1_t0 >= 1] * sin(o[r1_t0 - 1, i_b]))
        return o
    """)


# a parameter-sharing recurrence with a kink and a neighbour read: its gradient's sums
# for a, b and c run over every step of the adjoint group (ctm's form, small); the
# names are those of Python, NumPy and the generator's locals
KINKED = textwrap.dedent("""
    def kinked(np: f64[n], acc: f64, b: f64, tl_sums: f64, K1: f64[K]) -> f64:
        o[i: K, k: n] = [i == 0] * np[k] + [i >= 1] * (acc * r1_total0[i - 1, k]
                        + [k >= 1] * b * r1_total0[i - 1, k - 1])
        r1_total0[i: K, k: n] = min(o[i, k], tl_sums)
        return sum[k](o[K - 1, k] ** 2)
    """)


def agree(fn, args, what):
    got = fn.compile("numba")(**args)
    want = fn.compile("numpy")(**args)
    for g, w in zip(np.atleast_1d(got) if not isinstance(got, tuple) else got,
                    np.atleast_1d(want) if not isinstance(want, tuple) else want):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12, err_msg=what)


def agree_with_its_vjp(f, args, rng):
    """f and its vjp with respect to every parameter, f's result being of the shape of
    its first parameter."""
    first = np.shape(next(iter(args.values())))
    agree(f, args, f"{f.name} at {first}")
    agree(tl.vjp(f, wrt=tuple(args)), dict(args, d_out=rng.standard_normal(first)),
          f"vjp of {f.name} at {first}")


def arm_inputs(K, B, seed=0):
    rng = np.random.default_rng(seed)
    return dict(th=rng.standard_normal((K, B)), L=rng.random(K) + 0.5,
                tx=rng.standard_normal(B), ty=rng.standard_normal(B))


def step_function(src: str, k: int) -> str:
    """The source of the fused step loop of the group whose first member is statement
    k of the function's optimised program."""
    f = tl.parse(src)
    text = module_source(f[f.names[0]].optimized_program())
    start = text.index(f"def k{k}_steps(")
    return text[start:text.index("\n\n", start)]


def test_step_kernels_take_sin_and_cos_in_vmath_form():
    f = tl.parse(ARM)["arm"]
    text = module_source(f.optimized_program())
    kernels = {name: text[text.index(f"def {name}("):].split("\n\n")[0]
               for name in ("k1_0", "k2_0")}
    assert "tl_vcos(" in kernels["k1_0"] and "tl_vsin(" in kernels["k2_0"]
    # the library's functions stay for the arguments vmath does not cover
    assert "np.cos(" in kernels["k1_0"] and "tl_wide > 0" in kernels["k1_0"]


def test_a_step_reading_its_group_takes_its_step_number_from_an_array():
    """So that LLVM tests the overlap of a step's rows per step (numba_module.reads_group)."""
    steps = step_function(ARM, 1)
    lines = [line.strip() for line in steps.splitlines()]
    assert "tl_steps = np.arange(1, s_K + 1)" in lines
    assert lines[lines.index("for tl_step in range(s_K):") + 1] == "r1_t0 = tl_steps[tl_step]"
    back = step_function(BACK, 0)
    assert "tl_steps = np.arange(s_K, 0, -1)" in back
    # scalar cells have no loop to vectorise: their steps stay a plain loop
    cells = step_function("def run(x: f64[n]) -> f64[n]:\n"
                          "    c[i: n] = cos(x[i]) + [i >= 1] * c[i - 1]\n"
                          "    return c\n", 0)
    assert "tl_steps" not in cells and "for r0_t0 in range(1, s_n + 1):" in cells


def test_step_subscripts_are_unsigned():
    """LLVM cannot bound a step number counted down (or read from an array), and NumPy's
    wrap-around test for a negative subscript then kept a backward scalar step from
    reusing the value it just stored (KernelWriter.subscript)."""
    f = tl.parse("def run(x: f64[n]) -> f64[n]:\n"
                 "    c[i: n] = x[i] + [i + 1 < n] * c[i + 1]\n"
                 "    return c\n")["run"]
    text = module_source(f.optimized_program())
    steps = text[text.index("def k0_steps("):]
    steps = steps[:steps.index("\n\n")]
    assert "v_c[np.uint64(r0_t0)]" in steps and "v_c[np.uint64(r0_t0 - 1)] = " in steps
    assert "v_x[np.uint64(r0_t0 - 1)]" in steps
    for n in (1, 2, 9):
        agree(f, dict(x=np.random.default_rng(n).standard_normal(n)), f"backward scan, n={n}")


@pytest.mark.parametrize("K,B", [(1, 1), (1, 9), (5, 1), (4, 7), (4, 8), (6, 9), (3, 33),
                                 (40, 3), (7, 64)])
def test_arm_and_its_gradient_agree_at_every_step_size(K, B):
    f = tl.parse(ARM)["arm"]
    args = arm_inputs(K, B)
    agree(f, args, f"arm K={K} B={B}")
    agree(tl.grad(f, wrt=("th", "L", "tx", "ty")), args, f"grad arm K={K} B={B}")


def test_steps_large_enough_for_the_drivers_loop_agree():
    """A step of a million operations or more runs from the driver, a kernel call per
    step (threads may pay there), with the same kernels."""
    f = tl.parse(ARM)["arm"]
    agree(f, arm_inputs(2, 160_000), "arm, large steps")


@pytest.mark.parametrize("K,B", [(1, 1), (1, 12), (5, 3), (5, 8), (6, 20)])
def test_a_group_stepping_backwards_agrees(K, B):
    rng = np.random.default_rng(1)
    agree_with_its_vjp(tl.parse(BACK)["back"],
                       dict(th=rng.standard_normal((K, B)), L=rng.random(K)), rng)


@pytest.mark.parametrize("B", [3, 8, 21])
def test_arguments_beyond_vmath_run_the_library_functions(B):
    """Arguments beyond vmath.TRIG_LIMIT or NaN, on one step only, in either form of the
    step: the step is computed again with NumPy's functions."""
    f = tl.parse(ARM)["arm"]
    args = arm_inputs(5, B)
    th = args["th"].copy()
    th[2, 1] = 3.0e7                 # phi beyond the limit from step 2 on
    agree(f, dict(args, th=th), "wide")
    th[3, B - 1] = np.nan
    got = f.compile("numba")(**dict(args, th=th))
    assert np.isnan(got) and np.isnan(f.compile("numpy")(**dict(args, th=th)))
    th = args["th"].copy()
    th[4, 0] = -1.0e9
    agree(tl.grad(f, wrt="th"), dict(args, th=th), "wide gradient")


@pytest.mark.parametrize("K,B", [(1, 2), (6, 5), (5, 11)])
def test_program_names_like_the_generated_ones(K, B):
    rng = np.random.default_rng(2)
    agree_with_its_vjp(tl.parse(NAMES)["k1_steps"],
                       dict(acc=rng.standard_normal((K, B)), t2=rng.standard_normal(K)), rng)


def test_parallel_step_kernels_with_sin_and_cos_agree(monkeypatch):
    """Every step through the driver's loop and the parallel form of each kernel."""
    from tensorlang.backend import threads
    from tensorlang.backend.background import wait_for_background
    for name, value in (("MIN_WORK", 0), ("MIN_SECONDS", 0.0), ("MIN_SECONDS_REDUCTION", 0.0),
                        ("MIN_ITERATIONS_PER_THREAD", 0)):
        monkeypatch.setattr(threads, name, value)
    monkeypatch.setattr(threads, "thread_count", lambda: 2)
    src = ARM.replace("def arm(", "def arm_par(")
    f = tl.parse(src)["arm_par"]
    args = arm_inputs(5, 40)
    th = args["th"].copy()
    th[1, 3] = 1.0e6
    for a in (args, dict(args, th=th)):
        want = f.compile("numpy")(**a)
        fn = f.compile("numba")
        for _ in range(1 + threads.MIN_SAMPLES):
            np.testing.assert_allclose(fn(**a), want, rtol=1e-12)
        wait_for_background()
        np.testing.assert_allclose(fn(**a), want, rtol=1e-12)
    parallel = [getattr(fn._kernels, k) for k in dir(fn._kernels) if k.endswith("_par")]
    assert parallel and all(k.signatures for k in parallel)


# rings of rows: q, read three steps back and by nothing after the group (four rows
# the driver allocates); s, two steps ahead in a group stepping backwards (three); p
# and r, read after their groups at their last step alone (two rows of the steps' own,
# the last copied out); c and d, a number per step, kept whole
RINGS = textwrap.dedent("""
    def rings(a: f64[K, B], w: f64[B]) -> f64:
        p[k: K, b: B] = a[k, b] + [k >= 1] * (p[k - 1, b] + 0.1 * q[k - 1, b]) + [k >= 3] * 0.05 * q[k - 3, b]
        q[k: K, b: B] = cos(a[k, b]) + [k >= 1] * (0.9 * q[k - 1, b] - 0.1 * p[k, b])
        s[k: K, b: B] = sin(a[k, b]) + [k + 2 < K] * 0.5 * s[k + 2, b] + [k + 1 < K] * 0.3 * r[k + 1, b]
        r[k: K, b: B] = s[k, b] + [k + 1 < K] * 0.5 * r[k + 1, b]
        c[k: K] = w[0] * a[k, 0] + [k >= 1] * 0.5 * c[k - 1] + [k >= 1] * 0.1 * d[k - 1]
        d[k: K] = cos(c[k]) + [k >= 2] * 0.2 * c[k - 2]
        return sum[b](w[b] * p[K - 1, b] ** 2 + r[0, b] * w[b]) + c[K - 1]
    """)


def test_members_read_a_few_steps_back_are_held_in_rings():
    """The steps' function keeps a member in as many rows as its steps read (row r in
    ring row r mod their number) when nothing after the group reads it, or only its
    last steps (those rows are copied out after the steps); a member whose row is one
    number stays whole (a remainder per read costs more than it saves)."""
    f = tl.parse(RINGS)["rings"]
    text = module_source(f.optimized_program())
    assert "env['q'] = tl_empty((4, s_B,))" in text
    assert "v_q[np.uint64(r0_t0 - 4) % np.uint64(4), " in text
    assert "env['s'] = tl_empty((3, s_B,))" in text
    forward = step_function(RINGS, 0)
    assert "tl_ring_v_p = np.empty((2,) + v_p.shape[1:])" in forward
    assert "for tl_row in range(max(s_K - 1, 0), s_K):" in forward
    assert "v_p[tl_row] = tl_ring_v_p[tl_row % 2]" in forward
    assert "for tl_row in range(0, min(1, s_K)):" in step_function(RINGS, 2)
    for whole in ("p", "r", "c", "d"):
        assert f"env['{whole}'] = tl_empty((s_K" in text


@pytest.mark.parametrize("K", [1, 2, 3, 4, 5, 7])
def test_members_in_rings_agree_at_every_step_count(K):
    f = tl.parse(RINGS)["rings"]
    rng = np.random.default_rng(K)
    args = dict(a=rng.standard_normal((K, 6)), w=rng.standard_normal(6))
    agree(f, args, f"rings K={K}")
    agree(tl.grad(f, wrt=("a", "w")), args, f"grad rings K={K}")


def kinked_inputs(K, n, seed=0):
    rng = np.random.default_rng(seed)
    return dict(np=rng.random(n), acc=0.7, b=0.4, tl_sums=0.6, K1=np.zeros(K))


def test_sums_over_the_steps_are_added_up_in_the_step_loop():
    """The gradient's sums for the scalar parameters read the adjoint group's members at
    each step: the fused step loop adds each step's rows into rows of running totals
    (numba_module `step_sums`) instead of a pass over the stored members after the
    group, and the members that nothing after the group reads then live in one row."""
    f = tl.parse(KINKED)["kinked"]
    g = tl.grad(f, wrt=("np", "acc", "b", "tl_sums"))
    text = module_source(g.optimized_program())
    steps = [part for part in text.split("\n\n\n") if "_steps(" in part.split("\n")[1]]
    adjoint = [part for part in steps if "np.zeros" in part]
    assert len(adjoint) == 1, steps
    returned = adjoint[0].rstrip().splitlines()[-1]
    assert returned.startswith("    return (np.sum(") and returned.count("np.sum(") >= 3, returned
    run = text[text.index("def run(env, sizes):"):]
    assert "tl_sums = k" in run and "not in env:" in run
    assert "= tl_empty((1, s_n,))" in run


@pytest.mark.parametrize("K,n", [(1, 1), (1, 6), (2, 1), (5, 3), (6, 9), (4, 40)])
def test_sums_over_the_steps_agree(K, n):
    f = tl.parse(KINKED)["kinked"]
    args = kinked_inputs(K, n)
    agree(f, args, f"kinked K={K} n={n}")
    agree(tl.grad(f, wrt=("np", "acc", "b", "tl_sums")), args, f"grad kinked K={K} n={n}")


def test_sums_over_the_steps_agree_through_the_drivers_loop(monkeypatch):
    """Steps large enough for the driver's loop store every member and run the sums
    after the group, as before."""
    from tensorlang.backend import threads
    monkeypatch.setattr(threads, "MIN_WORK", 0)
    src = KINKED.replace("def kinked(", "def kinked_loop(")
    f = tl.parse(src)["kinked_loop"]
    args = kinked_inputs(5, 7)
    agree(tl.grad(f, wrt=("np", "acc", "b", "tl_sums")), args, "grad kinked, driver's loop")


# two members stepping together (an explicit Euler step of a two-variable model): the
# gradient in the scalar parameters sums seven products over every step, two of them in
# a sibling group of their own (the sum of one adjoint member and a sum split off a
# statement of several); names of Python and of the generator's locals among them
EULER = textwrap.dedent("""
    def euler(p0: f64[m], o: f64[m], g: f64, acc: f64, s: f64, tl_steps: f64[R]) -> f64:
        p[r: R, j: m] = [r == 0] * p0[j] + [r >= 1] * (p[r - 1, j] + s * (p[r - 1, j]
                        - p[r - 1, j] ** 3 / 3.0 - q[r - 1, j] + g))
        q[r: R, j: m] = [r == 0] * o[j] + [r >= 1] * (q[r - 1, j] + s * acc * (p[r - 1, j]
                        + g - 0.8 * q[r - 1, j]))
        return sum[j](p[R - 1, j] ** 2) + sum[j](q[R - 1, j])
    """)


def euler_inputs(R, m, seed=0):
    rng = np.random.default_rng(seed)
    return dict(p0=rng.standard_normal(m), o=rng.standard_normal(m), g=0.5, acc=0.08,
                s=0.1, tl_steps=np.zeros(R))


def merged_row_loops(src: str, name: str, wrt) -> list:
    """Per fused step function of the gradient's module: the number of running totals
    each of its loops adds to (the loops that add to any)."""
    import ast
    f = tl.parse(src)[name]
    text = module_source(tl.grad(f, wrt=wrt).optimized_program())
    found = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.FunctionDef) and node.name.endswith("_steps"):
            for loop in ast.walk(node):
                if isinstance(loop, ast.For):
                    totals = {t.value.id for st in loop.body if isinstance(st, ast.Assign)
                              for t in st.targets if isinstance(t, ast.Subscript)
                              and isinstance(t.value, ast.Name) and "_total" in t.value.id}
                    if totals:
                        found.append(len(totals))
    return found, text


def test_a_steps_rows_of_totals_are_added_in_one_loop():
    """The sums over a step's row run as one loop adding to every row of totals, its
    test of the step number made once before it (numba_module._merged_row_loops): one
    such loop each took longer than all the members' loops together, unvectorised.
    The sibling group's two sums are among them (its kernel after the group runs only
    when the driver's own loop ran the steps)."""
    wrt = ("p0", "o", "g", "acc", "s")
    loops, text = merged_row_loops(EULER, "euler", wrt)
    # (five: the gradient of the program as it runs, whose step stores the factored
    # update; seven from its terms multiplied out)
    assert loops and max(loops) == 5, loops
    steps = text[text.index("_steps(") - 20:]
    assert "        if r" in steps and "- 2 >= 0:" in steps
    run = text[text.index("def run(env, sizes):"):]
    assert run.count("tl_sums[") == 5
    # the same loops under other names
    renamed = EULER.replace("r: R", "u: R").replace("[r", "[u").replace("r - 1", "u - 1") \
        .replace("r >= 1", "u >= 1").replace("r == 0", "u == 0")
    assert merged_row_loops(renamed, "euler", wrt)[0] == loops


@pytest.mark.parametrize("R,m", [(1, 1), (1, 5), (2, 1), (2, 3), (5, 9), (7, 40)])
def test_merged_sums_agree(R, m):
    f = tl.parse(EULER)["euler"]
    args = euler_inputs(R, m)
    agree(tl.grad(f, wrt=("p0", "o", "g", "acc", "s")), args, f"grad euler R={R} m={m}")


def test_merged_sums_agree_through_the_drivers_loop(monkeypatch):
    """Steps the driver's loop runs: the sibling group's kernel runs after the group."""
    from tensorlang.backend import threads
    monkeypatch.setattr(threads, "MIN_WORK", 0)
    f = tl.parse(EULER.replace("def euler(", "def euler_loop("))["euler_loop"]
    agree(tl.grad(f, wrt=("p0", "o", "g", "acc", "s")), euler_inputs(6, 11),
          "grad euler, driver's loop")


# a chain whose rates are per cell: the gradient in the rates sums, per cell, a
# product over every step (`up_bar[j] = sum[r](...)`); its reads at the neighbours
# j - 1 and j + 1 split those loops where their brackets change
CHAIN = textwrap.dedent("""
    def chain(c0: f64[M], up: f64[M], down: f64[M], h: f64, Rs: f64[R], goal: f64[M]) -> f64:
        c[r: R, j: M] = [r == 0] * c0[j] + [r >= 1] * (c[r - 1, j] + h * ([j >= 1] * up[j - 1]
                        * c[r - 1, j - 1] + [j + 1 < M] * down[j + 1] * c[r - 1, j + 1]
                        - ([j + 1 < M] * up[j] + [j >= 1] * down[j]) * c[r - 1, j]))
        return sum[j]((c[R - 1, j] - goal[j]) ** 2)
    """)


def chain_inputs(R, M, seed=0):
    rng = np.random.default_rng(seed)
    return dict(c0=rng.random(M), up=rng.random(M), down=rng.random(M), h=0.2,
                Rs=np.zeros(R), goal=rng.random(M))


def test_a_tensors_sums_over_the_steps_are_added_up_in_the_steps():
    """Each rate's gradient element sums over the steps: the steps' function adds each
    step's row into the rate's row of totals, which it returns as the gradient's
    part (no pass over the stored states after the group).  (The loops split at the
    same places are merged, test_a_steps_rows_of_totals_are_added_in_one_loop; this
    gradient's sums now test three different ranges, since h's adjoint reads two of
    them shifted, simplify.share_shifted_statements.)"""
    import ast
    f = tl.parse(CHAIN)["chain"]
    text = module_source(tl.grad(f, wrt=("up", "down", "h")).optimized_program())
    fns = [n for n in ast.walk(ast.parse(text))
           if isinstance(n, ast.FunctionDef) and n.name.endswith("_steps")]
    returned = [r.value for fn in fns for r in ast.walk(fn) if isinstance(r, ast.Return)
                and isinstance(r.value, ast.Tuple)]
    assert len(returned) == 1
    whole = [e for e in returned[0].elts if isinstance(e, ast.Name)]
    assert len(whole) >= 3, ast.unparse(returned[0])
    loops, _ = merged_row_loops(CHAIN, "chain", ("up", "down", "h"))
    assert sum(loops) >= 3, loops


@pytest.mark.parametrize("R,M", [(1, 1), (1, 4), (2, 1), (2, 2), (3, 5), (6, 9), (5, 40)])
def test_a_tensors_sums_over_the_steps_agree(R, M):
    f = tl.parse(CHAIN)["chain"]
    agree(tl.grad(f, wrt=("c0", "up", "down", "h", "goal")), chain_inputs(R, M),
          f"grad chain R={R} M={M}")


def test_a_tensors_sums_over_the_steps_agree_through_the_drivers_loop(monkeypatch):
    from tensorlang.backend import threads
    monkeypatch.setattr(threads, "MIN_WORK", 0)
    f = tl.parse(CHAIN.replace("def chain(", "def chain_loop("))["chain_loop"]
    agree(tl.grad(f, wrt=("c0", "up", "down", "h", "goal")), chain_inputs(6, 11),
          "grad chain, driver's loop")


def test_only_elementwise_parts_of_a_tensors_sums_join_the_steps():
    """A tensor summing over the steps joins them only when each step adds a row's
    worth of work: not an outer product of two rows (an RNN's weight gradient), which
    after the group is one matrix product."""
    from tensorlang.backend.numba_module import elementwise_part
    from tensorlang.ssa.recur import recurrences, step_sum
    src = textwrap.dedent("""
        def outer(h0: f64[d], a: f64[d], ts: f64[T]) -> (f64[d, d], f64[d]):
            h[t: T, i: d] = [t == 0] * h0[i] + [t >= 1] * a[i] * h[t - 1, i]
            P[i: d, j: d] = sum[t: T](h[t, i] * h[t, j])
            q[i: d] = sum[t: T]([t >= 1] * h[t - 1, i] * h[t, i])
            return P, q
        """)
    prog = tl.parse(src)["outer"].program
    g = recurrences(prog)[0]
    first = prog.stmt(g.members[0])
    parts = {name: step_sum(prog.stmt(name), g, first.indices[:g.lead], ["s"])
             for name in ("P", "q")}
    assert all(p is not None for p in parts.values())
    assert not elementwise_part(parts["P"], g.members)
    assert elementwise_part(parts["q"], g.members)


# a reaction on a grid: the steps' rows are two-dimensional, and the gradient's sums in
# the scalar rates run over each step's grid (the loops over the grid's rows and, in
# them, over its columns, merge)
GRID = textwrap.dedent("""
    def grid(a0: f64[H, W], b0: f64[H, W], f: f64, g: f64, dt: f64, Ts: f64[T]) -> f64:
        a[t: T, y: H, x: W] = [t == 0] * a0[y, x] + [t >= 1] * (a[t - 1, y, x] + dt * (f
                              * b[t - 1, y, x] - g * a[t - 1, y, x] ** 2))
        b[t: T, y: H, x: W] = [t == 0] * b0[y, x] + [t >= 1] * (b[t - 1, y, x] + dt * (g
                              * a[t - 1, y, x] - f * b[t - 1, y, x] * a[t - 1, y, x]))
        return sum[y, x](a[T - 1, y, x] * b[T - 1, y, x])
    """)


def grid_inputs(T, H, W, seed=0):
    rng = np.random.default_rng(seed)
    return dict(a0=rng.random((H, W)), b0=rng.random((H, W)), f=0.7, g=0.4, dt=0.1,
                Ts=np.zeros(T))


def test_a_two_dimensional_steps_sums_merge_row_by_row():
    wrt = ("a0", "b0", "f", "g", "dt")
    loops, text = merged_row_loops(GRID, "grid", wrt)
    assert loops and max(loops) >= 4, loops


@pytest.mark.parametrize("T,H,W", [(1, 1, 1), (2, 1, 3), (3, 2, 2), (5, 4, 7), (4, 9, 40)])
def test_a_two_dimensional_steps_sums_agree(T, H, W):
    f = tl.parse(GRID)["grid"]
    agree(tl.grad(f, wrt=("a0", "b0", "f", "g", "dt")), grid_inputs(T, H, W),
          f"grad grid T={T} H={H} W={W}")

"""Cache-blocked loop nests (backend/tiling.py, kernels.tile_plan): a statement whose read
walks the innermost loop with a stride runs its last two generators in blocks when, at
call time, that walk would crowd the cache.

The blocks only change which element is computed when, so the tiled and the untiled
kernels, serial and parallel, must give the values of the NumPy interpreter bit for bit
(sizes that do not divide the block, guards, a permuted 3-D read); the choice is made
by structure (a permuted read gets the blocks, an aligned one or a read under a sum does
not) and at call time by the reads' strides.
"""
import numpy as np
import pytest
from numba import njit

import tensorlang as tl
from tensorlang.backend import tiling
from tensorlang.backend.numba_backend import module_source
from tensorlang.backend.tiling import TILE, crowded

PERMUTED = """
def transpose(A: f64[n, m]) -> f64[m, n]:
    T[i, j] = A[j, i]
    return T

def permute3(X: f64[a, b, c], Y: f64[c, a, b]) -> f64[c, a, b]:
    P[k, i, j] = X[i, j, k] * Y[k, i, j] + X[i, j, k]
    return P

def guarded(A: f64[n, n], B: f64[n, n]) -> f64[n, n]:
    G[i, j] = [i >= 1] * [j + 1 < n] * A[j + 1, i - 1] + [i < j] * B[j, i] - A[i, j]
    return G
"""

ALIGNED = """
def aligned(A: f64[n, m], B: f64[n, m]) -> f64[n, m]:
    C[i, j] = A[i, j] * B[i, j] + A[i, 0]
    return C

def under_a_sum(A: f64[n, n], v: f64[n]) -> f64[n, n]:
    S[i, j] = sum[k](A[k, i] * v[k]) * v[j]
    return S
"""

SIZES = {"transpose": {"n": 70, "m": 37}, "permute3": {"a": 45, "b": 33, "c": 3},
         "guarded": {"n": 67}}

_always = njit(lambda stride, count: True)
_never = njit(lambda stride, count: False)


def _run(prog, inputs: dict, sizes: dict, blocks: bool, parallel: bool):
    """The program's generated module, run with the call-time test fixed to `blocks` and,
    with `parallel`, every kernel's prange form in place of its serial one."""
    src = module_source(prog).replace("cache=True", "cache=False")
    ns = {"__name__": "tl_tiling_test"}
    exec(compile(src, "<tiling test>", "exec"), ns)
    ns["tl_crowded"] = _always if blocks else _never
    if parallel:
        for name in [k for k in ns if k.endswith("_par")]:
            ns[name[:-4]] = ns[name]
    return ns["run"](dict(inputs), dict(sizes))


@pytest.mark.parametrize("name", sorted(SIZES))
def test_tiled_and_untiled_kernels_agree_bit_for_bit(name):
    fn = tl.parse(PERMUTED)[name]
    sizes = SIZES[name]
    rng = np.random.default_rng(11)
    inputs = {p.name: rng.standard_normal([sizes[d] for d in p.dims]) for p in fn.program.params}
    want = fn.compile("numpy")(**inputs)
    prog = fn.optimized_program()
    assert "tl_crowded(" in module_source(prog)
    # (the untiled parallel forms are compared with the interpreter elsewhere)
    for blocks, parallel in ((True, False), (True, True), (False, False)):
        (got,) = _run(prog, inputs, sizes, blocks, parallel)
        assert np.array_equal(got, want), (name, blocks, parallel)


def test_the_blocks_are_generated_for_permuted_reads_only():
    permuted = tl.parse(PERMUTED)
    text = module_source(permuted["transpose"].optimized_program())
    # the outer generator by blocks (prange in the parallel form), the inner one too
    assert f"in prange(0, (s_m + {TILE - 1}) // {TILE}):" in text
    assert f"range(0, s_n, {TILE}):" in text
    assert text.count("if tl_crowded(s_m, s_n):") == 2          # serial and parallel forms
    # P[k, i, j] = X[i, j, k] ...: X is walked along j with a stride of c elements and
    # has k last: k and j in blocks, with i's loop moved outside them
    text = module_source(permuted["permute3"].optimized_program())
    assert "if tl_crowded(s_c, s_b):\n        for i_i in range(0, s_a):" in text
    aligned = tl.parse(ALIGNED)
    for name in ("aligned", "under_a_sum"):
        assert "tl_crowded(" not in module_source(aligned[name].optimized_program()), name


def test_crowded_is_a_cache_set_test():
    # rows of 2048 doubles (16 KB) fall on 4 of the 1024 sets: a 2048-long column
    # overflows them; 2000 (16000 bytes, a multiple of 64 only) spreads over all sets
    assert crowded(2048, 2048) and crowded(1536, 1536) and crowded(1920, 1920)
    assert not crowded(2000, 2000) and not crowded(2016, 2016) and not crowded(256, 256)
    # a walk short enough for the sets it maps to (rows of 32 KB: 2 sets, 32 lines), or
    # whose reads share lines, never; a walk longer than the whole cache always
    assert not crowded(4096, 30) and crowded(4096, 40) and not crowded(4, 10 ** 7)
    assert crowded(1000, tiling.L2_WAYS * (tiling.L2_WAY // tiling.LINE) + 1)
    # the compiled form the kernels call agrees
    from tensorlang.backend.tilejit import crowded as compiled
    for stride, count in ((2048, 2048), (2000, 2000), (-1536, 1536), (1000, 20000)):
        assert compiled(stride, count) == crowded(stride, count)


def test_a_transpose_gradient_at_a_crowded_size():
    """The trace(A B) gradient at n = 512 (a crowded stride) takes the blocks at call
    time through the ordinary compiled path: two exact transposes."""
    f = tl.parse("def tp(A: f64[n, n], B: f64[n, n]) -> f64:\n"
                 "    return sum[i, j](A[i, j] * B[j, i])\n")["tp"]
    g = tl.grad(f, wrt=("A", "B"))
    assert crowded(512, 512) and "tl_crowded(s_n, s_n)" in module_source(g.optimized_program())
    rng = np.random.default_rng(3)
    A, B = rng.standard_normal((512, 512)), rng.standard_normal((512, 512))
    ga, gb = g.compile("numba")(A, B)
    assert np.array_equal(ga, B.T) and np.array_equal(gb, A.T)

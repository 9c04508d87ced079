"""Explanations shown in peers.md: one sentence per case whose target is missed (written after
measuring, from the numbers and the generated programs), notes on single rows, and the cost
polynomials tensorlang computes for its own rows."""
from __future__ import annotations

from .spec import WRT

# case -> why the target is not met (shown only when the verdict is "not met"); one sentence
# each, written from the measured rows and the generated programs (`tensorlang explain`)
WHY: dict[str, str] = {
    "W1": "tensorlang's gradient is the single BLAS product W B^T (einsum), the same "
          "OpenBLAS call NumPy's hand-derived gradient makes, and the two take the same time; "
          "JAX jit runs XLA's own matrix product, which on this machine was about 1.9x faster "
          "than OpenBLAS's on a quiet run (benchmarks/results/peers_check.md): a difference "
          "between BLAS libraries, not in the derivative.",
    "W2": "two of the gradient's four dense products (X W1 and X^T times the hidden "
          "layer's cotangent, 1.6 GFLOP each) are about 95 % of its time; tensorlang hands "
          "them to OpenBLAS, whose products ran about 1.2x slower than XLA's own timed "
          "alternately in one process, and the small loop nests around them take about "
          "3 ms together (benchmarks/results/peers_check.md, `python -m benchmarks.statements "
          "W2`).",
    "W4": "the gradient of a gather is a dense v x d array in every system, so tensorlang "
          "(zero fill plus b scatter-adds) and the peers (dense zeros plus a scatter) do work "
          "of the same order, O(v d), and only a constant factor (2.5x here) separates them.",
    "W5a": "the peers were given the same program (t = trace(A) computed once and added k "
           "times), whose reverse pass adds k scalars and then writes one dense n x n "
           "gradient, O(n^2) as in tensorlang; the order gap this workload shows is between "
           "tensorlang's own naive derivative (optimize=False, O(n^3), 843 ms) and the "
           "eliminated one (0.56 ms).",
    "W6": "a dense Jacobian is an n x n output in every system, so writing it (2 GB at "
          "n = 16 000) is O(n^2) for tensorlang too; tensorlang makes one pass (zero fill "
          "plus the diagonal) where the peers push n basis cotangents through the map, a "
          "constant factor of about 7x rather than an order.",
    "W10a": "tensorlang's gradient loops test the bracket [i + t < n] with an `if` in the "
            "innermost loop (K = 16 taps), so they neither vectorise nor beat the vectorised "
            "shifted-slice code of XLA and NumPy's C loops.",
    "W10b": "the 25-tap loops test the two border brackets with an `if` per tap in the "
            "innermost loop, so they do not vectorise, while XLA fuses the 25 shifted slices "
            "into one vectorised loop.",
    "W11": "each of the gradient's two kernels tests the four neighbour masks and border "
           "brackets with `if`s inside the innermost loop (192 per iteration in the generated "
           "code), so it does not vectorise, whereas XLA and Inductor fuse the shifted slices "
           "into branch-free loops.",
    "W13": "per step both run the same work, one d x d matrix-vector product forward and one "
           "back on one thread (tensorlang's weight gradient is a single product over all "
           "steps), but tensorlang's step loop also calls a scalar tanh per state entry and a "
           "BLAS matrix-vector product through Numba, where XLA fuses a vectorised tanh into "
           "its loop: its forward alone is about 2x JAX's; rows ran in separate processes on a "
           "machine with a load average near 10, and side by side in one process (see "
           "results/recurrences.md) the gradient took about half of JAX's time.",
    "W14": "tensorlang's kernels now run soft-DTW as JAX's scan does, anti-diagonal by "
           "anti-diagonal with a diagonal's cells as vector operations (rings of recent "
           "diagonals, exp and log in plain arithmetic that LLVM vectorises: value and "
           "gradient take about 33 ms of CPU at n = m = 1000 against 55 ms cell by cell), so "
           "the gap to JAX is a constant factor, not an order: both do the same vector work "
           "per diagonal. What is left per cell is memory traffic across the rows of the "
           "normal layout (each diagonal's R, R_logsumexp and R_bar written, and the inputs "
           "read, one row apart) and six divisions by g; JAX runs two threads, tensorlang "
           "one, and the other load of this machine slows both (side by side in one process "
           "at a load average of 7, 143 ms against JAX's 408 ms).",
    "W12": "the Hessian's rank-one weighting is built as m x n temporaries (d_out_arg, "
           "d_out_arg_bar, d_z_bar) by separate loop nests before the final BLAS product, "
           "where NumPy scales X once and makes one product.",
}

# (case, system, variant) -> a note in the row's last column
ROW_NOTES: dict[tuple, str] = {
    ("W10a", "jax", "conv"): "XLA's CPU gradient of a float64 lax.conv_general_dilated "
                             "crashes the process (reproduced outside the benchmark for "
                             "n >= 6e4 when the gradient is taken in both arguments), so the "
                             "JAX jit row uses shifted slices",
    ("W10b", "jax", "conv"): "same crash as in W10a, at 256 x 256",
    ("W8", "tensorlang", "natural"): "at commit 5a1f04c this form was 75x slower than the "
                                     "expanded one at m = 100 (a materialised 4-D tangent); "
                                     "at the commit timed here it runs at the same order",
    ("W9", "tensorlang", "natural"): "at commit 5a1f04c this form was 55x slower than the "
                                     "expanded one at N = 100; at the commit timed here it "
                                     "runs in O(N^2) although tl.cost still reports N^3",
}


def auto_notes(key: str, results) -> list[str]:
    """The static cost of every tensorlang row (forward and timed derivative)."""
    try:
        import tensorlang as tl

        from . import sys_tl
    except Exception:  # noqa: BLE001 - notes are optional
        return []
    lines = []
    size = results[0].size if results else None
    for row in sys_tl.ROWS[key]:
        variant, file, fname, transform = row[:4]
        fname = fname.format(k=size)
        try:
            mod = tl.load(sys_tl.WL / file)
            f = mod[fname]
            wrt = WRT[key] if len(WRT[key]) > 1 else WRT[key][0]
            if transform == "direct":
                d, f = f, mod[row[5]]
            elif transform == "grad-naive":
                d = tl.grad(f, wrt=wrt, optimize=False)
            else:
                d = getattr(tl, transform)(f, wrt=wrt)
            lines.append(f"- `{file}:{fname}` ({variant}): forward cost `{tl.cost(f)}`, "
                         f"derivative cost `{tl.cost(d)}` (tl.cost, scalar operations)")
        except Exception as exc:  # noqa: BLE001
            lines.append(f"- `{file}:{fname}` ({variant}): cost not available ({exc})")
    return ["tensorlang's static cost polynomials for its rows:", ""] + lines

"""HMM forward-backward: the gradient of examples/hmm.tl against hand-written NumPy.

    python -m benchmarks.hmm            # writes benchmarks/results/hmm.md
    python -m benchmarks.hmm --quick    # smaller sizes, fewer repeats, prints only

The gradient of the log-likelihood with respect to the emission log-probabilities is
the posterior marginals, so `tl.grad(hmm_loglik, wrt="E")` is the forward-backward
algorithm.  It is compared with two hand-written NumPy versions computing the same
marginals: in log space (a max-shifted log-sum-exp per step, as the .tl program does)
and in probability space with per-step rescaling (matrix-vector products, the usual
fast form).  The gradient with respect to the transition log-probabilities is the
expected number of transitions i -> j, Baum-Welch's sum over t of xi_t(i, j); it is
compared with the scaled forward-backward followed by that sum as one matrix product.
Both sides are warmed up, then timed alternately in one process; each keeps its best
time.  The machine is shared: read the ratios, not the times.

The second table compares the Numba backend with and without its matrix-product form
of sums of exponentials (backend/expproduct.py), the form switched off while the
"before" functions generate their kernels: the kernels main generated before the form
existed.  All eight functions run alternately in one process.
"""
from __future__ import annotations

import argparse
import os
from pathlib import Path

import numpy as np

import tensorlang as tl
from benchmarks.peers.spec import (_w15_d as _peer_log, _w15_f as _peer_loglik,
                                   _w15_scaled as _peer_scaled, scaled_passes)
from benchmarks.recurrences import best, report, side_by_side

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "benchmarks" / "results" / "hmm.md"


# The hand-written NumPy forward-backward passes (log space, and scaled probabilities) are
# the peer benchmark's W15 references, kept in one place.
def forward_backward_log(pi, A, E):
    return _peer_log(pi, A, E)[0]


def forward_backward_scaled(pi, A, E):
    return _peer_scaled(pi, A, E)[0]


def transition_counts_scaled(pi, A, E):
    """(d/d pi, d/d A, d/d E) of the log-likelihood from the scaled forward-backward:
    the posteriors at the first step, the expected transition counts
    sum_t alpha[t - 1, i] P[i, j] e[t, j] beta[t, j] / scale[t] (one matrix product),
    and the posteriors."""
    P, e, alpha, beta, scale = scaled_passes(pi, A, E)
    counts = P * (alpha[:-1].T @ (e[1:] * beta[1:] / scale[1:, None]))
    gamma = alpha * beta
    return gamma[0], counts, gamma


def _inputs(T, K):
    rng = np.random.default_rng(0)
    return (np.log(rng.dirichlet(np.ones(K))), np.log(rng.dirichlet(np.ones(K), size=K)),
            rng.standard_normal((T, K)))


def peer_rows(hmm, T, K, repeats):
    """The rows against hand-written NumPy at one size."""
    pi, A, E = _inputs(T, K)
    post = tl.grad(hmm, wrt="E")
    counts = tl.grad(hmm, wrt="A")
    every = tl.grad(hmm, wrt=("pi", "A", "E"))
    ours = post(pi, A, E)
    assert np.allclose(ours, forward_backward_log(pi, A, E), rtol=1e-8, atol=1e-12)
    assert np.allclose(ours, forward_backward_scaled(pi, A, E), rtol=1e-8, atol=1e-12)
    for got, want in zip(every(pi, A, E), transition_counts_scaled(pi, A, E)):
        assert np.allclose(got, want, rtol=1e-8, atol=1e-10)
    at = f"(T={T}, K={K})"
    return [
        (f"posteriors = grad wrt E {at}", "NumPy forward-backward in log space",
         *side_by_side(lambda: post(pi, A, E), lambda: forward_backward_log(pi, A, E), repeats)),
        (f"posteriors = grad wrt E {at}", "NumPy forward-backward, scaled probabilities",
         *side_by_side(lambda: post(pi, A, E), lambda: forward_backward_scaled(pi, A, E),
                       repeats)),
        (f"transition counts = grad wrt A {at}",
         "NumPy scaled forward-backward + expected transition counts (Baum-Welch xi sum)",
         *side_by_side(lambda: counts(pi, A, E), lambda: transition_counts_scaled(pi, A, E),
                       repeats)),
        (f"grad wrt (pi, A, E) {at}",
         "NumPy scaled forward-backward + expected transition counts (Baum-Welch xi sum)",
         *side_by_side(lambda: every(pi, A, E), lambda: transition_counts_scaled(pi, A, E),
                       repeats)),
        (f"log-likelihood {at}", "NumPy forward pass in log space",
         *side_by_side(lambda: hmm(pi, A, E), lambda: _peer_loglik(pi, A, E), repeats)),
    ]


def _without_exp_products(build):
    """`build()` with the matrix-product form of sums of exponentials switched off while
    it generates and loads kernels (the backend as it was before the form)."""
    from tensorlang.backend import numba_module, rows
    saved = numba_module.exp_product, rows.exp_product
    numba_module.exp_product = rows.exp_product = lambda st: None
    try:
        return build()
    finally:
        numba_module.exp_product, rows.exp_product = saved


def before_after(hmm, T, K, repeats):
    """Rows (what, before, after, forward) in seconds: the forward and the three
    gradients, each built with and without the form, all run alternately."""
    pi, A, E = _inputs(T, K)
    wrts = {"forward": None, "grad wrt E": "E", "grad wrt A": "A",
            "grad wrt (pi, A, E)": ("pi", "A", "E")}

    def build():
        fns = {what: (hmm if w is None else tl.grad(hmm, wrt=w)).compile("numba")
               for what, w in wrts.items()}
        for fn in fns.values():
            fn(pi, A, E)                       # generate, compile and load now
        return fns
    before = _without_exp_products(build)
    after = build()
    for what in wrts:
        if what != "forward":
            old, new = before[what](pi, A, E), after[what](pi, A, E)
            for x, y in zip(old if isinstance(old, tuple) else (old,),
                            new if isinstance(new, tuple) else (new,)):
                assert np.allclose(x, y, rtol=1e-9, atol=1e-12)
    times = {(side, what): [] for side in ("before", "after") for what in wrts}
    for _ in range(repeats):
        for what in wrts:
            for side, fns in (("before", before), ("after", after)):
                times[side, what].append(best(lambda: fns[what](pi, A, E), 1))
    fwd = min(min(times["before", "forward"]), min(times["after", "forward"]))
    return [(f"{what} (T={T}, K={K})", min(times["before", what]), min(times["after", what]),
             fwd) for what in wrts]


def before_after_table(rows) -> str:
    lines = ["| program | before | after | before / forward | after / forward |",
             "|---|---|---|---|---|"]
    for what, old, new, fwd in rows:
        lines.append(f"| {what} | {old * 1e3:.2f} ms | {new * 1e3:.2f} ms | "
                     f"{old / fwd:.2f} | {new / fwd:.2f} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args(argv)
    repeats = 3 if args.quick else 7
    sizes = ((1000, 16),) if args.quick else ((10_000, 64), (2_000, 256))
    hmm = tl.load(ROOT / "examples" / "hmm.tl").hmm_loglik
    rows = [row for T, K in sizes for row in peer_rows(hmm, T, K, repeats)]
    peers = report_text("HMM forward-backward against hand-written NumPy", "hmm", args.quick,
                        repeats, rows)
    print(peers)
    compared = [row for T, K in sizes for row in before_after(hmm, T, K, repeats)]
    table = before_after_table(compared)
    print(table)
    if not args.quick:
        OUT.write_text(peers + "\n## The Numba backend before and after its matrix-product form "
                       "of sums of exponentials\n\n"
                       f"Load average {os.getloadavg()[0]:.2f} after the run. Warm times, the best "
                       f"of {repeats} alternating runs; forward = the best forward time.\n\n"
                       + table + NOTES)


def report_text(title, module, quick, repeats, rows) -> str:
    """The peer table as `report` prints it."""
    import contextlib
    import io
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        report(title, module, True, repeats, rows, OUT)
    text = buf.getvalue()
    return text if quick else text.replace(" --quick", "", 1)


NOTES = """
## Notes

The machine is shared by other work (2 CPUs): only ratios of rows timed in the same rounds mean
anything, and the peer table's rows are timed pair by pair, so a burst of load can inflate one
row (compare a row's NumPy time with the same NumPy function in the next row).

Which peer is fair. The log-space NumPy version computes what the .tl program says, the forward
(and backward) recursion with a max-shifted log-sum-exp of a K x K matrix per step, and is the
like-for-like comparison. The scaled probability-space version (Rabiner's scaling: `exp(A)` once,
a matrix-vector product per step and direction, each step rescaled to sum to one) is the one a
practitioner writes for speed; it computes the same posteriors and is the stronger peer, so the
target (at most 1.0x the best peer) is judged against it, here and in the peer benchmark
(results/peers_recurrences.md, W15). For the transition gradient the peer adds Baum-Welch's
expected transition counts, `sum_t alpha[t - 1, i] P[i, j] e[t, j] beta[t, j] / scale[t]`, as one
matrix product of the scaled forward and backward variables; its time is that of the scaled
forward-backward plus one (K x T) @ (T x K) product.

How the steps run. The Numba backend runs the step `logsumexp[i](a[t - 1, i] + A[i, j])` as the
scaled algorithm does: `exp(A)` shifted by its column maxima once before the steps, then per step
the state shifted by its maximum, K exponentials, one BLAS matrix-vector product and K logarithms
(backend/stepmath.py); the adjoint's
`sum[m](a_logsumexp_bar[k + 1, m] * exp(A[l, m] + a[k, l] - a_logsumexp[k + 1, m]))` likewise. An
entry whose shifted sum underflows (below 1e-280) or is not finite is computed as written, so the
program keeps the range of log space without rescaling by hand.

The transition gradient. Its statement `A_bar[k, l] = sum[m]([m >= 1] * a_logsumexp_bar[m, l] *
exp(A[k, l] + a[m - 1, k] - a_logsumexp[m, l]))` took one exponential per (k, l, m), K^2 T, in a
kernel: 20-50 times the forward ("before" above). The backend now recognises the form
`X[k, l] = sum[m](G exp(P[k, l] + Q[m, k] + R[m, l]))` (backend/expproduct.py, from the
statement's structure, not its names) and runs it as stepmath.expproduct: with c[m] the largest
entry of Q's row m and d[l] the largest c[m] + R[m, l] of column l, `W[m, k] = exp(Q[m, k] -
c[m])` and `Z[m, l] = a_logsumexp_bar[m, l] exp(c[m] + R[m, l] - d[l])` are at most 1 in
magnitude (the factors scaled by their columns' largest magnitudes), so nothing overflows, and
`A_bar = exp(A + d) * (W^T Z)`: 2 K T + K^2 exponentials and one BLAS product. Entries whose
bound `exp(A[k, l] + d[l])` leaves [1e-280, inf), whose sum is below 1e-280, or that meet +inf or
NaN are summed as written; -inf transitions give 0 without summing. The gradient with respect
to A (and to all of pi, A, E, which computes the same statement) then costs about what the
posteriors cost plus the product: about 3 forwards. Below 16,384 terms (K^2 T) the kernel runs
instead; the product's NumPy calls would cost more than its exponentials.
"""

if __name__ == "__main__":
    main()

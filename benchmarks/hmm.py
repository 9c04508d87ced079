"""HMM forward-backward: the gradient of examples/hmm.tl against hand-written NumPy.

    python -m benchmarks.hmm            # writes benchmarks/results/hmm.md
    python -m benchmarks.hmm --quick    # smaller sizes, fewer repeats, prints only

The gradient of the log-likelihood with respect to the emission log-probabilities is
the posterior marginals, so `tl.grad(hmm_loglik, wrt="E")` is the forward-backward
algorithm.  It is compared with two hand-written NumPy versions computing the same
marginals: in log space (a max-shifted log-sum-exp per step, as the .tl program does)
and in probability space with per-step rescaling (matrix-vector products, the usual
fast form).  Both sides are warmed up, then timed alternately in one process; each
keeps its best time.  The machine is shared: read the ratios, not the times.
"""
from __future__ import annotations

import argparse
import datetime
import os
import platform
from pathlib import Path

import numpy as np

import tensorlang as tl
from benchmarks.recurrences import side_by_side

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "benchmarks" / "results" / "hmm.md"


def _lse_cols(M):
    top = M.max(axis=0)
    return top + np.log(np.exp(M - top).sum(axis=0))


def forward_backward_log(pi, A, E):
    """Posterior marginals by the forward and backward recursions in log space."""
    T, K = E.shape
    alpha, beta = np.empty((T, K)), np.zeros((T, K))
    alpha[0] = pi + E[0]
    for t in range(1, T):
        alpha[t] = _lse_cols(alpha[t - 1][:, None] + A) + E[t]
    At = A.T
    for t in range(T - 2, -1, -1):
        beta[t] = _lse_cols((E[t + 1] + beta[t + 1])[:, None] + At)
    top = alpha[-1].max()
    ll = top + np.log(np.exp(alpha[-1] - top).sum())
    return np.exp(alpha + beta - ll)


def forward_backward_scaled(pi, A, E):
    """Posterior marginals in probability space, each step rescaled to sum to one."""
    T, K = E.shape
    P = np.exp(A)
    shift = E.max(axis=1, keepdims=True)
    e = np.exp(E - shift)
    alpha, beta, scale = np.empty((T, K)), np.empty((T, K)), np.empty(T)
    a = np.exp(pi) * e[0]
    scale[0] = a.sum()
    alpha[0] = a / scale[0]
    for t in range(1, T):
        a = (alpha[t - 1] @ P) * e[t]
        scale[t] = a.sum()
        alpha[t] = a / scale[t]
    beta[-1] = 1.0
    for t in range(T - 2, -1, -1):
        beta[t] = P @ (e[t + 1] * beta[t + 1]) / scale[t + 1]
    return alpha * beta


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args(argv)
    repeats = 3 if args.quick else 7
    T, K = (1000, 16) if args.quick else (10_000, 64)
    rng = np.random.default_rng(0)
    pi = np.log(rng.dirichlet(np.ones(K)))
    A = np.log(rng.dirichlet(np.ones(K), size=K))
    E = rng.standard_normal((T, K))
    hmm = tl.load(ROOT / "examples" / "hmm.tl").hmm_loglik
    post = tl.grad(hmm, wrt="E")
    ours = post(pi, A, E)
    assert np.allclose(ours, forward_backward_log(pi, A, E), rtol=1e-8, atol=1e-12)
    assert np.allclose(ours, forward_backward_scaled(pi, A, E), rtol=1e-8, atol=1e-12)
    rows = [
        (f"posteriors = grad wrt E (T={T}, K={K})", "NumPy forward-backward in log space",
         *side_by_side(lambda: post(pi, A, E), lambda: forward_backward_log(pi, A, E), repeats)),
        (f"posteriors = grad wrt E (T={T}, K={K})", "NumPy forward-backward, scaled probabilities",
         *side_by_side(lambda: post(pi, A, E), lambda: forward_backward_scaled(pi, A, E),
                       repeats)),
        (f"log-likelihood (T={T}, K={K})", "NumPy forward pass in log space",
         *side_by_side(lambda: hmm(pi, A, E), lambda: _forward_only(pi, A, E), repeats)),
    ]
    lines = ["# HMM forward-backward against hand-written NumPy", "",
             f"`python -m benchmarks.hmm{' --quick' if args.quick else ''}`, "
             f"{datetime.date.today()}, {platform.processor() or platform.machine()}, "
             f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}. Warm times, the best "
             f"of {repeats} alternating runs; ratio = tensorlang / the other.", "",
             "| program | compared with | tensorlang | other | ratio |", "|---|---|---|---|---|"]
    for what, other, a, b in rows:
        lines.append(f"| {what} | {other} | {a * 1e3:.2f} ms | {b * 1e3:.2f} ms | {a / b:.2f} |")
    text = "\n".join(lines) + "\n"
    print(text)
    if not args.quick:
        OUT.write_text(text)


def _forward_only(pi, A, E):
    a = pi + E[0]
    for t in range(1, len(E)):
        a = _lse_cols(a[:, None] + A) + E[t]
    top = a.max()
    return float(top + np.log(np.exp(a - top).sum()))


if __name__ == "__main__":
    main()

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
from pathlib import Path

import numpy as np

import tensorlang as tl
from benchmarks.peers.spec import _w15_d as _peer_log, _w15_f as _peer_loglik, _w15_scaled as _peer_scaled
from benchmarks.recurrences import report, side_by_side

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "benchmarks" / "results" / "hmm.md"


# The hand-written NumPy forward-backward passes (log space, and scaled probabilities) are
# the peer benchmark's W15 references, kept in one place.
def forward_backward_log(pi, A, E):
    return _peer_log(pi, A, E)[0]


def forward_backward_scaled(pi, A, E):
    return _peer_scaled(pi, A, E)[0]


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
         *side_by_side(lambda: hmm(pi, A, E), lambda: _peer_loglik(pi, A, E), repeats)),
    ]
    report("HMM forward-backward against hand-written NumPy", "hmm", args.quick, repeats, rows, OUT)

if __name__ == "__main__":
    main()

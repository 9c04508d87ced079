"""tensorlang rows: the programs of benchmarks/workloads/*.tl, derivatives from tl.grad,
tl.hessian and tl.hvp, compiled with the Numba backend."""
from __future__ import annotations

from pathlib import Path

from .spec import WRT, flat_numpy

ROOT = Path(__file__).resolve().parents[2]
WL = ROOT / "benchmarks" / "workloads"

# key -> [(variant, file, function, transform, formulation shown in the table)]
# transform: "grad", "grad-naive" (optimize=False), "hessian", "hvp", "jacobian", or "direct" (the function
# is itself the derivative program; then `forward` names the function it differentiates)
ROWS = {
    "W1": [("main", "w01_matmul.tl", "matmul_loss", "grad", "tl.grad")],
    "W2": [("main", "w02_mlp.tl", "mlp_xent", "grad", "tl.grad; label bracket [c == y[s]]")],
    "W3": [("main", "w03_onehot.tl", "onehot_matmul", "grad",
            "tl.grad of sum[u]([u == y[s]] * E[u, c])")],
    "W4": [("main", "w04_gather.tl", "embed_loss", "grad", "tl.grad of the gather E[idx[s], c]")],
    "W5a": [("main", "w05_trace_copies.tl", "trace_copies_{k}", "grad", "tl.grad"),
            ("naive", "w05_trace_copies.tl", "trace_copies_{k}", "grad-naive",
             "tl.grad(optimize=False): no bracket elimination")],
    "W5b": [("main", "w05_trace.tl", "trace_product", "grad",
             "tl.grad of sum[i,j](A[i,j] * B[j,i])"),
            ("naive", "w05_trace.tl", "trace_product", "grad-naive",
             "tl.grad(optimize=False): no bracket elimination")],
    "W6": [("main", "w06_jacobian.tl", "fmap", "jacobian", "tl.jacobian of the map"),
           ("hessian", "w06_jacobian.tl", "potential", "hessian",
            "tl.hessian of a potential whose gradient is f")],
    "W7a": [("main", "w07_qform.tl", "qform", "hessian", "tl.hessian")],
    "W7b": [("main", "w07_qform.tl", "qform", "hvp", "tl.hvp")],
    "W8": [("main", "w08_matfact.tl", "mf_loss_expanded", "hessian",
            "tl.hessian of the loss with the square multiplied out (workaround)"),
           ("natural", "w08_matfact.tl", "mf_loss", "hessian",
            "tl.hessian of the loss as written (P = U V^T as a statement)")],
    "W9": [("main", "w09_pairwise.tl", "stress_expanded", "hessian",
            "tl.hessian of the energy with the square multiplied out (workaround)"),
           ("natural", "w09_pairwise.tl", "stress", "hessian",
            "tl.hessian of the energy as written (q[i,j] as a statement)")],
    "W10a": [("main", "w10_conv.tl", "corr1d_loss", "grad", "tl.grad")],
    "W10b": [("main", "w10_conv.tl", "stencil5_loss", "grad", "tl.grad")],
    "W11": [("main", "w11_arap.tl", "arap", "grad", "tl.grad")],
    "W12": [("main", "w12_logreg.tl", "logreg", "hessian", "tl.hessian")],
    "W13": [("main", "../../examples/rnn.tl", "rnn_loss", "grad", "tl.grad of examples/rnn.tl")],
    "W14": [("main", "../../examples/soft_dtw.tl", "soft_dtw", "value_and_grad",
             "tl.value_and_grad of examples/soft_dtw.tl")],
    "W15": [("main", "../../examples/hmm.tl", "hmm_loglik", "grad",
             "tl.grad of examples/hmm.tl (the forward algorithm)")],
}


def rows(key):
    return [(r[0], r[4]) for r in ROWS[key]]


def programs(key: str, variant: str, size):
    """(the forward function, its derivative as the row takes it, the row's transform,
    wrt) for a row of ROWS; shared with the tensorlang-via-JAX rows."""
    import tensorlang as tl
    row = next(r for r in ROWS[key] if r[0] == variant)
    _, file, fname, transform, _ = row[:5]
    mod = tl.load(WL / file)
    f = mod[fname.format(k=size)]
    wrt = WRT[key] if len(WRT[key]) > 1 else WRT[key][0]
    if transform == "direct":
        return mod[row[5]], f, transform, wrt
    make = {"grad": tl.grad, "hessian": tl.hessian, "hvp": tl.hvp, "jacobian": tl.jacobian,
            "value_and_grad": tl.value_and_grad,
            "grad-naive": lambda f, wrt: tl.grad(f, wrt=wrt, optimize=False)}
    if transform not in make:
        raise ValueError(transform)
    return f, make[transform](f, wrt=wrt), transform, wrt


def build(key: str, variant: str, size, inp: dict):
    f, d, transform, wrt = programs(key, variant, size)
    args = dict(inp)
    f, d = f.compile("numba"), d.compile("numba")
    fargs = {p: args[p] for p in f.params}
    if transform == "hvp":
        dargs = {p: args[p] for p in f.params}
        dargs["d_" + wrt] = args["v"]
    else:
        dargs = {p: args[p] for p in d.params}
    return (lambda: f(**fargs)), (lambda: d(**dargs))


def settle(deriv, fwd) -> None:
    """Before the warm samples: a call that would run a kernel's parallel form first runs
    the serial one while the parallel form compiles in a background thread (the cold call
    included), and each statement's thread choice is timed on its first parallel calls.
    Warm times are of the steady state, as in a loop of many calls: wait for those
    compilations, twice, around a call of each function."""
    try:
        from tensorlang.backend.background import wait_for_background
    except ImportError:              # a commit that compiles every form before its first call
        return
    for _ in range(2):
        wait_for_background()
        fwd()
        deriv()
    wait_for_background()


to_numpy = flat_numpy

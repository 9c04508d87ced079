"""Train a small neural network written in tensorlang on the scikit-learn digits.

The model (examples/digits_mlp.tl) is a 64 -> 32 -> 10 network with a tanh hidden layer, a
softmax cross-entropy written with the label bracket [c == y[s]], and an L2 penalty on the two
weight matrices.  Its gradient comes from tl.value_and_grad and drives
scipy.optimize.minimize(method="L-BFGS-B") on the flattened parameter vector.

The same model, loss and starting point are written in PyTorch and in JAX (float64, the same
formulas, a jitted JAX gradient) and trained the same way; each peer is skipped with a message
when it is not installed.  The script prints the test accuracy of each system and the warm time
of one loss-and-gradient evaluation, the quantity L-BFGS-B asks for once or more per iteration.

    python examples/digits_mlp.py            # full run, well under a minute
    python examples/digits_mlp.py --quick    # fewer iterations

The pieces (data, parameters, one loss-and-gradient function per system, training, timing) are
plain functions so that the scripts under papers/ can import them.
"""
from __future__ import annotations

import argparse
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
if str(HERE.parent) not in sys.path:      # run from a checkout without installing
    sys.path.insert(0, str(HERE.parent))

import tensorlang as tl  # noqa: E402

TL_FILE = HERE / "digits_mlp.tl"
PARAM_NAMES = ("W1", "b1", "W2", "b2")

HIDDEN = 32
LAM = 1e-4
DATA_SEED = 0
INIT_SEED = 1
MAXITER = 300


# ---------------------------------------------------------------------------
# data and parameters
# ---------------------------------------------------------------------------

def load_data(test_size: float = 0.25, seed: int = DATA_SEED):
    """The 1797 8x8 digit images as rows of 64 pixels scaled to [0, 1], split into
    train and test sets (stratified, fixed seed).  Returns Xtr, Xte, ytr, yte."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    digits = load_digits()
    X = digits.data.astype(np.float64) / 16.0
    y = digits.target.astype(np.int64)
    return train_test_split(X, y, test_size=test_size, random_state=seed, stratify=y)


def param_shapes(d: int, h: int, k: int) -> dict[str, tuple[int, ...]]:
    return {"W1": (d, h), "b1": (h,), "W2": (h, k), "b2": (k,)}


def init_params(d: int, h: int, k: int, seed: int = INIT_SEED) -> dict[str, np.ndarray]:
    """Weights drawn with variance 1/fan-in from a seeded generator; biases zero."""
    rng = np.random.default_rng(seed)
    return {
        "W1": rng.standard_normal((d, h)) / np.sqrt(d),
        "b1": np.zeros(h),
        "W2": rng.standard_normal((h, k)) / np.sqrt(h),
        "b2": np.zeros(k),
    }


def flatten(params: dict[str, np.ndarray]) -> np.ndarray:
    return np.concatenate([np.ravel(params[name]) for name in PARAM_NAMES])


def unflatten(theta: np.ndarray, shapes: dict[str, tuple[int, ...]]) -> dict[str, np.ndarray]:
    """Views into theta, one per parameter, in PARAM_NAMES order."""
    out, start = {}, 0
    for name in PARAM_NAMES:
        size = int(np.prod(shapes[name]))
        out[name] = theta[start:start + size].reshape(shapes[name])
        start += size
    if start != theta.size:
        raise ValueError(f"expected {start} parameters, got {theta.size}")
    return out


# ---------------------------------------------------------------------------
# the model in NumPy (a reference for values and for predictions)
# ---------------------------------------------------------------------------

def numpy_logits(X, p):
    return np.tanh(X @ p["W1"] + p["b1"]) @ p["W2"] + p["b2"]


def numpy_loss(theta, X, y, lam=LAM, h=HIDDEN):
    p = unflatten(np.asarray(theta, dtype=np.float64), param_shapes(X.shape[1], h, 10))
    z = numpy_logits(X, p)
    xent = np.mean(np.log(np.exp(z).sum(axis=1)) - z[np.arange(len(y)), y])
    return float(xent + 0.5 * lam * (np.sum(p["W1"] ** 2) + np.sum(p["W2"] ** 2)))


def accuracy(theta, X, y, h=HIDDEN) -> float:
    p = unflatten(np.asarray(theta, dtype=np.float64), param_shapes(X.shape[1], h, 10))
    return float(np.mean(np.argmax(numpy_logits(X, p), axis=1) == y))


# ---------------------------------------------------------------------------
# one loss-and-gradient function per system: theta (flat float64) -> (loss, flat grad)
# ---------------------------------------------------------------------------

def load_module():
    return tl.load(str(TL_FILE))


def tl_loss_and_grad(X, y, lam=LAM, h=HIDDEN, backend=None):
    """The tensorlang model: value_and_grad of digits_loss with respect to the four parameters."""
    vg = tl.value_and_grad(load_module().digits_loss, wrt=PARAM_NAMES)
    if backend is not None:
        vg = vg.compile(backend=backend)
    shapes = param_shapes(X.shape[1], h, 10)
    X = np.ascontiguousarray(X, dtype=np.float64)
    y = np.ascontiguousarray(y, dtype=np.int64)

    def fun(theta):
        value, grads = vg(X=X, y=y, lam=lam, **unflatten(theta, shapes))
        return value, np.concatenate([np.ravel(g) for g in grads])

    return fun


def torch_loss_and_grad(X, y, lam=LAM, h=HIDDEN):
    """The same model in PyTorch (float64, reverse mode through autograd); None if missing."""
    try:
        import torch
    except ImportError:
        return None
    shapes = param_shapes(X.shape[1], h, 10)
    Xt = torch.from_numpy(np.ascontiguousarray(X, dtype=np.float64))
    yt = torch.from_numpy(np.ascontiguousarray(y, dtype=np.int64))
    rows = torch.arange(len(y))

    def fun(theta):
        t = torch.from_numpy(np.array(theta, dtype=np.float64)).requires_grad_(True)
        p = {}
        start = 0
        for name in PARAM_NAMES:
            size = int(np.prod(shapes[name]))
            p[name] = t[start:start + size].view(shapes[name])
            start += size
        z = torch.tanh(Xt @ p["W1"] + p["b1"]) @ p["W2"] + p["b2"]
        lse = torch.log(torch.exp(z).sum(dim=1))
        xent = (lse - z[rows, yt]).mean()
        loss = xent + 0.5 * lam * ((p["W1"] ** 2).sum() + (p["W2"] ** 2).sum())
        (g,) = torch.autograd.grad(loss, t)
        return float(loss.detach()), g.numpy()

    return fun


def jax_loss_and_grad(X, y, lam=LAM, h=HIDDEN):
    """The same model in JAX (float64 via jax_enable_x64, jit of value_and_grad); None if missing."""
    try:
        import jax
    except ImportError:
        return None
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp

    shapes = param_shapes(X.shape[1], h, 10)
    Xj = jnp.asarray(X, dtype=jnp.float64)
    yj = jnp.asarray(y)
    rows = jnp.arange(len(y))

    def loss(theta):
        p, start = {}, 0
        for name in PARAM_NAMES:
            size = int(np.prod(shapes[name]))
            p[name] = theta[start:start + size].reshape(shapes[name])
            start += size
        z = jnp.tanh(Xj @ p["W1"] + p["b1"]) @ p["W2"] + p["b2"]
        lse = jnp.log(jnp.exp(z).sum(axis=1))
        xent = jnp.mean(lse - z[rows, yj])
        return xent + 0.5 * lam * (jnp.sum(p["W1"] ** 2) + jnp.sum(p["W2"] ** 2))

    vg = jax.jit(jax.value_and_grad(loss))

    def fun(theta):
        value, g = vg(jnp.asarray(theta, dtype=jnp.float64))
        return float(value), np.asarray(g)      # np.asarray waits for the result

    return fun


PEERS = {"PyTorch": torch_loss_and_grad, "JAX": jax_loss_and_grad}


# ---------------------------------------------------------------------------
# training and timing
# ---------------------------------------------------------------------------

def train(fun, theta0, maxiter=MAXITER):
    """L-BFGS-B on a (loss, grad) function; returns scipy's OptimizeResult."""
    from scipy.optimize import minimize

    return minimize(fun, np.array(theta0, dtype=np.float64), jac=True, method="L-BFGS-B",
                    options={"maxiter": maxiter})


def time_per_call(fun, theta, repeats=50, warmup=3) -> float:
    """Median wall time of one warm call, in seconds (the first calls, which may compile,
    are run before timing and not counted)."""
    for _ in range(warmup):
        fun(theta)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fun(theta)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def first_call_time(fun, theta) -> float:
    t0 = time.perf_counter()
    fun(theta)
    return time.perf_counter() - t0


def run_system(name, fun, theta0, Xte, yte, maxiter, repeats, h=HIDDEN) -> dict:
    """Time one fresh system cold and warm, then train it; the measurements as a dict."""
    cold = first_call_time(fun, theta0)
    warm = time_per_call(fun, theta0, repeats=repeats)
    t0 = time.perf_counter()
    res = train(fun, theta0, maxiter=maxiter)
    train_time = time.perf_counter() - t0
    return dict(system=name, loss=float(res.fun), acc=accuracy(res.x, Xte, yte, h=h),
                nit=int(res.nit), nfev=int(res.nfev), first_call=cold, grad_time=warm,
                train_time=train_time, theta=res.x)


def compare(maxiter=MAXITER, repeats=50, h=HIDDEN, lam=LAM, peers=("PyTorch", "JAX"),
            log=print) -> list[dict]:
    """Train the tensorlang model and each installed peer from the same start; one row each."""
    Xtr, Xte, ytr, yte = load_data()
    theta0 = flatten(init_params(Xtr.shape[1], h, 10))
    rows = []
    fun = tl_loss_and_grad(Xtr, ytr, lam=lam, h=h)
    v_tl, g_tl = fun(theta0)
    v_np = numpy_loss(theta0, Xtr, ytr, lam=lam, h=h)
    log(f"initial loss: tensorlang {v_tl:.12f}, NumPy {v_np:.12f}")
    rows.append(run_system("tensorlang", fun, theta0, Xte, yte, maxiter, repeats, h=h))
    for peer in peers:
        make = PEERS[peer]
        pfun = make(Xtr, ytr, lam=lam, h=h)
        if pfun is None:
            log(f"{peer} is not installed; skipping it")
            continue
        v, g = pfun(theta0)
        log(f"initial loss: {peer} {v:.12f}; max |grad - tensorlang grad| = "
            f"{np.max(np.abs(g - g_tl)):.1e}")
        rows.append(run_system(peer, pfun, theta0, Xte, yte, maxiter, repeats, h=h))
    return rows


def limit_threads(n: int) -> str:
    """Run BLAS, Numba kernels and PyTorch on n threads each (n = 0 keeps each library's default).

    On a small shared machine the thread pools of OpenBLAS, Numba and PyTorch otherwise compete
    for the same cores and the timings measure the contention more than the code.  XLA (JAX)
    reads its thread setting once, from XLA_FLAGS, when JAX is first imported; for n = 1 this
    turns off its multi-threaded Eigen kernels, and only if JAX has not been imported yet.  Returns a description of the setting."""
    if n <= 0:
        return "library default thread counts"
    import os
    try:
        from threadpoolctl import threadpool_limits
        _THREAD_LIMITS.append(threadpool_limits(limits=n))
    except ImportError:
        os.environ.setdefault("OPENBLAS_NUM_THREADS", str(n))
    import numba
    numba.set_num_threads(min(n, numba.config.NUMBA_NUM_THREADS))
    try:
        import torch
        torch.set_num_threads(n)
    except ImportError:
        pass
    if "jax" not in sys.modules and n == 1:
        flags = os.environ.get("XLA_FLAGS", "")
        os.environ["XLA_FLAGS"] = (flags + " --xla_cpu_multi_thread_eigen=false").strip()
    return f"{n} thread{'s' if n > 1 else ''} each for BLAS, Numba, PyTorch and XLA"


_THREAD_LIMITS: list = []


def machine() -> str:
    import os
    return f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, " \
           f"{platform.system()}"


def format_table(rows) -> str:
    base = rows[0]["grad_time"]
    lines = ["| system | test accuracy | final loss | iterations (evaluations) | "
             "first call | time per gradient | / tensorlang | training time |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['system']} | {100 * r['acc']:.2f} % | {r['loss']:.6f} | "
                     f"{r['nit']} ({r['nfev']}) | {1e3 * r['first_call']:.1f} ms | "
                     f"{1e3 * r['grad_time']:.3f} ms | {r['grad_time'] / base:.2f}x | "
                     f"{r['train_time']:.2f} s |")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="60 iterations, fewer timing repeats")
    ap.add_argument("--maxiter", type=int, default=None)
    ap.add_argument("--threads", type=int, default=1,
                    help="threads per library (default 1; 0 keeps the libraries' defaults)")
    args = ap.parse_args(argv)
    threads = limit_threads(args.threads)
    maxiter = args.maxiter or (60 if args.quick else MAXITER)
    repeats = 10 if args.quick else 50

    Xtr, Xte, ytr, yte = load_data()
    print(f"digits: {len(ytr)} training and {len(yte)} test images of {Xtr.shape[1]} pixels; "
          f"network {Xtr.shape[1]} -> {HIDDEN} (tanh) -> 10, L2 weight {LAM:g}, "
          f"L-BFGS-B for at most {maxiter} iterations\n")
    rows = compare(maxiter=maxiter, repeats=repeats)
    print()
    print(format_table(rows))
    print(f"\n(time per gradient: median of {repeats} warm loss-and-gradient calls on the flat "
          f"parameter vector, conversions included; first call: includes compilation or cache "
          f"loading; {threads}; machine: {machine()})")
    return 0


if __name__ == "__main__":
    sys.exit(main())

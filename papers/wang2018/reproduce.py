"""Wang, Zheng, Decker, Wu, Essertel, Rompf (2018), Lantern: staging derivative code to native
code.  The same tensorlang gradient programs run by the reference interpreter and as
generated, Numba-compiled loop nests, across the examples; and the digits network's gradient
beside PyTorch and JAX.

    python papers/wang2018/reproduce.py [--quick] [--out DIR]

Writes results.md (and speedup.png when matplotlib is installed) into this folder.

1. Every scalar function in examples/*.tl, differentiated with respect to all its f64 tensor
   parameters, at sizes where f costs about 10^6 operations (tl.cost; 2 * 10^4 with --quick):
   the warm time of f.compile(backend="numpy") and of f.compile(backend="numba"), the first
   call of the compiled one (code generation and compilation, or loading it from the cache)
   and the agreement of the two results.
2. The digits MLP (examples/digits_mlp.py): one loss-and-gradient evaluation in tensorlang on
   both backends, in PyTorch and in JAX.
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import common  # noqa: E402
from common import say  # noqa: E402

import numpy as np  # noqa: E402

import tensorlang as tl  # noqa: E402
from tensorlang.inputs import random_inputs  # noqa: E402

EXAMPLES = common.ROOT / "examples"
QUICK_SET = {("qform.tl", "qform"), ("fd_energy.tl", "fd_energy2"), ("blur.tl", "blur_energy"),
             ("softmax.tl", "xent"), ("laplacian.tl", "laplacian_energy")}


def scalar_functions(quick: bool):
    for path in sorted(EXAMPLES.glob("*.tl")):
        for f in tl.load(str(path)):
            prog = f.program
            if len(prog.outputs) != 1 or prog.shapes()[prog.outputs[0]][1]:
                continue
            if quick and (path.name, f.name) not in QUICK_SET:
                continue
            wrt = tuple(p.name for p in prog.params if p.elem == "f64" and p.dims)
            if wrt:
                yield path.name, f, wrt


def size_for(f, target: float, cap: int = 4096) -> dict[str, int]:
    """The smallest power of two s (every size symbol = s) at which cost(f) reaches target."""
    c = tl.cost(f)
    s = 4
    while s < cap and c.evaluate(**{k: s for k in f.program.sizes()}) < target:
        s *= 2
    return {k: s for k in f.program.sizes()}


def flat(v) -> np.ndarray:
    if isinstance(v, tuple):
        return np.concatenate([flat(x) for x in v])
    return np.ravel(np.asarray(v, dtype=np.float64))


def example_rows(quick: bool, repeats: int):
    target = 2e4 if quick else 1e6
    rows, speedups = [], []
    for filename, f, wrt in scalar_functions(quick):
        sizes = size_for(f, target)
        inputs = random_inputs(f, {}, sizes, seed=0)
        g = tl.grad(f, wrt=wrt)
        interp, compiled = g.compile(backend="numpy"), g.compile(backend="numba")
        t0 = time.perf_counter()
        got = compiled(**inputs)
        first = time.perf_counter() - t0
        want = interp(**inputs)
        err = float(np.max(np.abs(flat(got) - flat(want))) / max(1.0, np.max(np.abs(flat(want)))))
        t_np = common.median_time(lambda: interp(**inputs), repeats, warmup=1)
        t_nb = common.median_time(lambda: compiled(**inputs), repeats, warmup=1)
        c_f = tl.cost(f).evaluate(**sizes)
        c_g = tl.cost(g).evaluate(**sizes)
        speedups.append(t_np / t_nb)
        size_text = ", ".join(f"{k}={v}" for k, v in sizes.items())
        rows.append([f"{filename}: `{f.name}`", ", ".join(wrt), size_text, f"{c_f:.3g}",
                     f"{c_g:.3g}", common.ms(t_np), common.ms(t_nb), f"{t_np / t_nb:.1f}",
                     common.ms(first), f"{err:.0e}"])
        say(f"  {filename + ':' + f.name:<32} {size_text:<22} interpreter {common.ms(t_np):>9}"
            f"  compiled {common.ms(t_nb):>9}  x{t_np / t_nb:6.1f}  first call {common.ms(first)}")
    return rows, speedups


def digits_rows(repeats: int):
    import digits_mlp as dm

    try:
        Xtr, _, ytr, _ = dm.load_data()
    except ImportError:
        say("scikit-learn is not installed: skipping the digits network")
        return None
    theta = dm.flatten(dm.init_params(Xtr.shape[1], dm.HIDDEN, 10))
    systems = [("tensorlang, compiled (numba)", dm.tl_loss_and_grad(Xtr, ytr, backend="numba")),
               ("tensorlang, interpreter (numpy)", dm.tl_loss_and_grad(Xtr, ytr, backend="numpy"))]
    for name, make in (("PyTorch", dm.torch_loss_and_grad), ("JAX jit", dm.jax_loss_and_grad)):
        fun = make(Xtr, ytr)
        if fun is None:
            say(f"{name.split()[0]} is not installed: skipping it")
        else:
            systems.append((name, fun))
    ref = systems[0][1](theta)[1]
    rows = []
    for name, fun in systems:
        first = dm.first_call_time(fun, theta)
        t = common.median_time(lambda: fun(theta), repeats)
        diff = float(np.max(np.abs(fun(theta)[1] - ref)))
        rows.append((name, first, t, diff))
        say(f"  {name:<32} {common.ms(t):>9} per loss and gradient (first call {common.ms(first)})")
    base = rows[0][2]
    return [[name, common.ms(t), f"{t / base:.2f}", common.ms(first), f"{diff:.0e}"]
            for name, first, t, diff in rows], (len(ytr), Xtr.shape[1], dm.HIDDEN)


def plot(path, rows, speedups):
    plt = common.load_pyplot()
    if plt is None:
        return False
    order = np.argsort(speedups)
    fig, ax = plt.subplots(figsize=(7, 0.28 * len(rows) + 1.2))
    ax.barh([rows[i][0].replace("`", "") for i in order], [speedups[i] for i in order])
    ax.axvline(1.0, color="k", lw=0.8)
    ax.set(xscale="log", xlabel="interpreter time / compiled time (gradient, warm)")
    ax.tick_params(axis="y", labelsize=7)
    common.save_figure(fig, path)
    return True


def main() -> int:
    args, threads = common.one_thread_arguments(__doc__, HERE)
    repeats = 3 if args.quick else 10
    say("gradients of the example functions: interpreter against compiled")
    rows, speedups = example_rows(args.quick, repeats)
    geo = float(np.exp(np.mean(np.log(speedups))))
    say(f"geometric mean speed-up: {geo:.1f} (min {min(speedups):.1f}, max {max(speedups):.1f})")
    say("digits network: one loss-and-gradient evaluation")
    digits = digits_rows(repeats if args.quick else 30)
    png = plot(args.out / "speedup.png", rows, speedups)

    cmd = "python papers/wang2018/reproduce.py" + (" --quick" if args.quick else "")
    out = [
        "# Wang et al. 2018 (Lantern): results of reproduce.py", "",
        common.provenance(cmd) + f" Timings: {threads}.", "",
        "## 1. Gradients of the examples: reference interpreter against compiled loop nests", "",
        "Each scalar function of examples/*.tl, differentiated with respect to all its f64 "
        "tensor parameters (`tl.grad`), at the smallest power-of-two size where cost(f) "
        f"reaches {2e4 if args.quick else 1e6:.0e} operations. Times are medians of warm "
        "calls; the first call of the compiled gradient includes generating and compiling its "
        "kernels, or loading them from the on-disk cache when an earlier run compiled them. "
        "The last column is the largest difference between the two backends' gradients, "
        "relative to the largest entry.", "",
        common.table(["function", "wrt", "sizes", "cost(f)", "cost(grad)", "interpreter",
                      "compiled", "speed-up", "first compiled call", "difference"], rows), "",
        f"Speed-up of the compiled gradient over the interpreter: geometric mean {geo:.1f}, "
        f"smallest {min(speedups):.1f}, largest {max(speedups):.1f} ({len(rows)} functions).", "",
    ]
    if png:
        out += ["![speed-up per example](speedup.png)", ""]
    if digits is not None:
        table_rows, (b, d, h) = digits
        out += [
            f"## 2. The digits network (b = {b} training images, {d} -> {h} -> 10)", "",
            "One loss-and-gradient evaluation on the flat parameter vector, as L-BFGS-B calls "
            "it (`examples/digits_mlp.py`), at the initial parameters.", "",
            common.table(["system", "time per gradient", "/ tensorlang compiled", "first call",
                          "max difference to tensorlang"], table_rows), "",
        ]
    (args.out / "results.md").write_text("\n".join(out))
    say(f"wrote {args.out / 'results.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

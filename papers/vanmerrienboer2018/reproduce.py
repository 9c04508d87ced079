"""van Merriënboer, Breuleux, Bergeron, Lamblin (2018), Myia: higher-order derivatives without a
tape.  Hessian-vector products, dense Hessians and the jvp of a gradient in tensorlang, with
their costs and checks against finite differences.

    python papers/vanmerrienboer2018/reproduce.py [--quick] [--out DIR]

Writes results.md (and hessian.png when matplotlib is installed) into this folder.

1. For each function (a quadratic form, a logistic loss, a spring chain in two spellings, a
   Rayleigh quotient that calls another function, the digits network's loss): the cost
   polynomials of f, grad, hvp, jvp(grad) and hessian, and at small sizes the hvp against
   central differences of the gradient, jvp(grad) against hvp, and the dense Hessian
   against finite differences (plus its symmetry).
2. Times: the dense Hessian of x^T A x (tl.hessian against jax.hessian under jit and
   torch.autograd.functional.hessian) and the Hessian-vector product of the logistic loss
   (tl.hvp against jit(jvp(grad)) in JAX and double backward in PyTorch).
"""
from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import common  # noqa: E402
from common import say  # noqa: E402

import numpy as np  # noqa: E402

import tensorlang as tl  # noqa: E402
from tensorlang.inputs import random_inputs  # noqa: E402

EXAMPLES = common.ROOT / "examples"
EPS = 1e-5


def functions():
    mine = tl.load(str(HERE / "programs.tl"))
    return [
        ("qform", tl.load(str(EXAMPLES / "qform.tl")).qform, "x", "examples/qform.tl"),
        ("logistic", mine.logistic, "w", "programs.tl"),
        ("chain_energy", mine.chain_energy, "x", "programs.tl"),
        ("chain_energy_inline", mine.chain_energy_inline, "x", "programs.tl"),
        ("rayleigh", tl.load(str(EXAMPLES / "calls.tl")).rayleigh, "v", "examples/calls.tl"),
        ("digits_loss", tl.load(str(EXAMPLES / "digits_mlp.tl")).digits_loss, "W2",
         "examples/digits_mlp.tl"),
    ]


def rel(a, b) -> float:
    a, b = np.asarray(a, float), np.asarray(b, float)
    return float(np.max(np.abs(a - b)) / max(1.0, float(np.max(np.abs(b)))))


def checks(f, wrt, inputs, rng) -> dict:
    """hvp against central differences of the gradient, jvp(grad) against hvp, and the dense
    Hessian against finite differences; relative errors."""
    # values only: the reference interpreter, which needs no compilation
    g = tl.grad(f, wrt=wrt).compile(backend="numpy")
    hvp = tl.hvp(f, wrt=wrt).compile(backend="numpy")
    jg = tl.jvp(g, wrt=wrt).compile(backend="numpy")
    hess = tl.hessian(f, wrt=wrt).compile(backend="numpy")
    x = np.asarray(inputs[wrt], dtype=np.float64)
    v = rng.standard_normal(x.shape)

    def grad_at(point):
        return np.asarray(g(**{**inputs, wrt: point}))

    fd = (grad_at(x + EPS * v) - grad_at(x - EPS * v)) / (2 * EPS)
    hv = np.asarray(hvp(**inputs, **{f"d_{wrt}": v}))
    g0, tangent = jg(**inputs, **{f"d_{wrt}": v})
    H = np.asarray(hess(**inputs)).reshape(x.size, x.size)
    H_fd = np.empty_like(H)
    for j in range(x.size):
        e = np.zeros(x.size)
        e[j] = EPS
        e = e.reshape(x.shape)
        H_fd[:, j] = ((grad_at(x + e) - grad_at(x - e)) / (2 * EPS)).ravel()
    return {
        "hvp_vs_fd": rel(hv, fd),
        "jvp_grad_vs_hvp": rel(tangent, hv),
        "jvp_grad_primal": rel(g0, grad_at(x)),
        "hessian_vs_fd": rel(H, H_fd),
        "hessian_times_v": rel(H @ v.ravel(), hv.ravel()),
        "asymmetry": rel(H, H.T),
        "scale": float(np.max(np.abs(fd))),
    }


def cost_row(name, f, wrt, at=100):
    sizes = {s: at for s in f.program.sizes()}
    c = {"f": tl.cost(f), "grad": tl.cost(tl.grad(f, wrt=wrt)),
         "hvp": tl.cost(tl.hvp(f, wrt=wrt)),
         "jvp(grad)": tl.cost(tl.jvp(tl.grad(f, wrt=wrt), wrt=wrt)),
         "hessian": tl.cost(tl.hessian(f, wrt=wrt))}
    base = c["f"].evaluate(**sizes)
    ratios = {k: c[k].evaluate(**sizes) / base for k in c}
    return c, ratios


# ---------------------------------------------------------------------------
# timings
# ---------------------------------------------------------------------------

def time_qform_hessian(ns, repeats, jax, torch):
    H = tl.hessian(tl.load(str(EXAMPLES / "qform.tl")).qform, wrt="x")
    rng = np.random.default_rng(1)
    out = {"tensorlang": [], "JAX": [], "PyTorch": []}
    jh = None
    if jax is not None:
        import jax.numpy as jnp
        jh = jax.jit(jax.hessian(lambda x, A: x @ (A @ x)))
    for n in ns:
        x, A = rng.standard_normal(n), rng.standard_normal((n, n))
        want = A + A.T
        assert np.allclose(H(x, A), want)
        out["tensorlang"].append(common.median_time(lambda: H(x, A), repeats))
        if jh is not None:
            xj, Aj = jnp.asarray(x), jnp.asarray(A)
            assert np.allclose(np.asarray(jh(xj, Aj)), want)
            out["JAX"].append(common.median_time(lambda: jh(xj, Aj).block_until_ready(),
                                                 repeats))
        if torch is not None and n <= 400:
            xt, At = torch.from_numpy(x), torch.from_numpy(A)
            th = torch.autograd.functional.hessian

            def run():
                return th(lambda z: z @ (At @ z), xt)
            assert np.allclose(run().numpy(), want)
            out["PyTorch"].append(common.median_time(run, repeats, budget=3.0))
    return {k: v for k, v in out.items() if v}


def time_logistic_hvp(b, d, repeats, jax, torch):
    f = tl.load(str(HERE / "programs.tl")).logistic
    hvp = tl.hvp(f, wrt="w")
    rng = np.random.default_rng(2)
    w, X = 0.1 * rng.standard_normal(d), rng.standard_normal((b, d))
    y = np.sign(rng.standard_normal(b))
    v = rng.standard_normal(d)
    want = np.asarray(hvp(w=w, X=X, y=y, d_w=v))
    grad = tl.grad(f, wrt="w")
    times = {"tensorlang f": common.median_time(lambda: f(w=w, X=X, y=y), repeats),
             "tensorlang tl.grad": common.median_time(lambda: grad(w=w, X=X, y=y), repeats),
             "tensorlang tl.hvp": common.median_time(lambda: hvp(w=w, X=X, y=y, d_w=v), repeats)}
    if jax is not None:
        import jax.numpy as jnp

        def loss(w_, X_, y_):
            return jnp.sum(jnp.log1p(jnp.exp(-y_ * (X_ @ w_)))) / X_.shape[0]
        jh = jax.jit(lambda w_, v_, X_, y_: jax.jvp(lambda u: jax.grad(loss)(u, X_, y_),
                                                     (w_,), (v_,))[1])
        args = [jnp.asarray(a) for a in (w, v, X, y)]
        assert np.allclose(np.asarray(jh(*args)), want)
        times["JAX jit(jvp(grad))"] = common.median_time(
            lambda: jh(*args).block_until_ready(), repeats)
    if torch is not None:
        Xt, yt, vt = (torch.from_numpy(a) for a in (X, y, v))

        def run():
            wt = torch.from_numpy(w).requires_grad_(True)
            loss = torch.log1p(torch.exp(-yt * (Xt @ wt))).sum() / b
            (g,) = torch.autograd.grad(loss, wt, create_graph=True)
            (hv,) = torch.autograd.grad(g @ vt, wt)
            return hv
        assert np.allclose(run().numpy(), want)
        times["PyTorch double backward"] = common.median_time(run, repeats)
    return times


def plot(path, ns, times):
    plt = common.load_pyplot()
    if plt is None:
        return False
    fig, ax = plt.subplots(figsize=(5.5, 4))
    for label, ys in times.items():
        ax.plot(ns[:len(ys)], [1e3 * y for y in ys], "o-", label=label)
    ax.set(xscale="log", yscale="log", xlabel="n", ylabel="ms per dense Hessian",
           title="Hessian of x^T A x")
    ax.legend(fontsize=8)
    common.save_figure(fig, path)
    return True


def main() -> int:
    args, threads = common.one_thread_arguments(__doc__, HERE)
    rng = np.random.default_rng(2018)
    small = {"n": 6, "b": 7, "d": 5, "p": 6, "h": 4, "k": 3}
    cost_rows, check_rows, worst = [], [], 0.0
    say("second derivatives: costs and checks")
    for name, f, wrt, origin in functions():
        c, r = cost_row(name, f, wrt)
        cost_rows.append([f"`{name}` ({origin})", wrt, f"`{c['f']}`", f"`{c['grad']}`",
                          f"`{c['hvp']}`", f"`{c['jvp(grad)']}`", f"`{c['hessian']}`",
                          f"{r['grad']:.2f}", f"{r['hvp']:.2f}", f"{r['jvp(grad)']:.2f}",
                          f"{r['hessian']:.3g}"])
        given = {"delta": 0.5, "lam": 0.01}
        inputs = random_inputs(f, {k: v for k, v in given.items()
                                   if k in [p.name for p in f.program.params]}, small, seed=3)
        if name == "logistic":
            inputs["y"] = np.sign(inputs["y"])
        res = checks(f, wrt, inputs, rng)
        errs = [v for k, v in res.items() if k != "scale"]
        worst = max(worst, *errs)
        check_rows.append([f"`{name}`", wrt, f"{res['scale']:.2g}", f"{res['hvp_vs_fd']:.1e}",
                           f"{res['jvp_grad_vs_hvp']:.1e}", f"{res['jvp_grad_primal']:.1e}",
                           f"{res['hessian_vs_fd']:.1e}", f"{res['hessian_times_v']:.1e}",
                           f"{res['asymmetry']:.1e}"])
        say(f"  {name:<20} hvp/f {r['hvp']:6.2f}  jvp(grad)/f {r['jvp(grad)']:6.2f}  "
            f"hvp vs FD {res['hvp_vs_fd']:.1e}  hessian vs FD {res['hessian_vs_fd']:.1e}")
    passed = worst < 1e-6
    say(f"largest relative error: {worst:.1e} ({'pass' if passed else 'FAIL'})")

    jax, torch = common.load_jax(), common.load_torch()
    if args.quick:
        ns, repeats, (b, d) = [50, 100], 3, (200, 20)
    else:
        ns, repeats, (b, d) = [100, 200, 400, 800], 15, (4000, 200)
    say("timing the Hessian of x^T A x")
    hess_times = time_qform_hessian(ns, repeats, jax, torch)
    for label, ys in hess_times.items():
        say(f"  {label:<12} " + ", ".join(f"n={n}: {common.ms(t)}" for n, t in zip(ns, ys)))
    say(f"timing the Hessian-vector product of the logistic loss, b = {b}, d = {d}")
    hvp_times = time_logistic_hvp(b, d, repeats, jax, torch)
    for label, t in hvp_times.items():
        say(f"  {label:<26} {common.ms(t)}")
    png = plot(args.out / "hessian.png", ns, hess_times)

    hess_table = [[label] + [common.ms(t) for t in ys] + ["-"] * (len(ns) - len(ys))
                  + [f"{common.loglog_slope(ns[:len(ys)], ys):.2f}" if len(ys) > 1 else "-"]
                  for label, ys in hess_times.items()]
    base = hvp_times["tensorlang f"]
    hvp_table = [[label, common.ms(t), f"{t / base:.2f}"] for label, t in hvp_times.items()]

    cmd = "python papers/vanmerrienboer2018/reproduce.py" + (" --quick" if args.quick else "")
    out = [
        "# van Merriënboer et al. 2018 (Myia): results of reproduce.py", "",
        common.provenance(cmd) + f" Timings: {threads}; tensorlang on its "
        f"{tl.api.default_backend()} backend.", "",
        "## 1. Costs of second derivatives (`tl.cost`)", "",
        "Ratios are to cost(f) with every size symbol at 100.", "",
        common.table(["function", "wrt", "f", "grad", "hvp", "jvp(grad)", "hessian",
                      "grad/f", "hvp/f", "jvp(grad)/f", "hessian/f"], cost_rows), "",
        "## 2. Checks at small sizes", "",
        f"Sizes {small}; relative errors against central differences of the gradient "
        f"(step {EPS:g}), on the reference interpreter; the largest FD entry shows the checks "
        "do not compare zeros.", "",
        common.table(["function", "wrt", "largest FD entry", "hvp vs FD", "jvp(grad) tangent vs hvp",
                      "jvp(grad) primal vs grad", "hessian vs FD", "H v vs hvp",
                      "asymmetry of H"], check_rows), "",
        f"Largest error: {worst:.1e}; all below 1e-6: {'yes' if passed else 'NO'}.", "",
        "## 3. Dense Hessian of x^T A x", "",
        common.table(["system"] + [f"n = {n}" for n in ns] + ["exponent of n"], hess_table), "",
        "(PyTorch's `autograd.functional.hessian` is run up to n = 400.)", "",
    ]
    if png:
        out += ["![Hessian time against n](hessian.png)", ""]
    out += [
        f"## 4. Hessian-vector product of the logistic loss (b = {b}, d = {d})", "",
        common.table(["computation", "time", "/ time of f"], hvp_table), "",
    ]
    (args.out / "results.md").write_text("\n".join(out))
    say(f"wrote {args.out / 'results.md'}")
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())

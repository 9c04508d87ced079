"""Innes (2018), "Don't Unroll Adjoint: Differentiating SSA-Form Programs": calls, value branches
and nested derivatives in tensorlang, each checked by finite differences and by the
dot-product identity.

    python papers/innes2018/reproduce.py [--quick] [--out DIR]

Writes results.md into this folder: one row per derivative with its errors and costs, the
Tensor SSA that `tensorlang explain` prints for a program with calls and for one with a
value branch, the derivative programs, and the gradient of a guarded log at exactly zero
beside jnp.where / torch.where (when installed).
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

# Only values are checked here, no times: run on the reference interpreter (the oracle the
# compiled backend is tested against) unless TENSORLANG_BACKEND says otherwise, which saves
# compiling some forty kernels.
os.environ.setdefault("TENSORLANG_BACKEND", "numpy")

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import common  # noqa: E402
from common import say  # noqa: E402

import numpy as np  # noqa: E402

import tensorlang as tl  # noqa: E402
from tensorlang.inputs import random_inputs  # noqa: E402

PROGRAMS = HERE / "programs.tl"
EPS = 1e-6


def flat(v) -> np.ndarray:
    if isinstance(v, (tuple, list)):
        return np.concatenate([flat(x) for x in v]) if v else np.zeros(0)
    return np.atleast_1d(np.asarray(v, dtype=np.float64)).ravel()


def shifted(inputs, directions, scale):
    out = dict(inputs)
    for name, d in directions.items():
        out[name] = np.asarray(inputs[name], dtype=np.float64) + scale * d
        if np.ndim(out[name]) == 0:
            out[name] = float(out[name])
    return out


def directions_for(inputs, wrt, rng):
    return {w: (float(rng.standard_normal()) if np.ndim(inputs[w]) == 0
                else rng.standard_normal(np.shape(inputs[w]))) for w in wrt}


def rel(a, b) -> float:
    a, b = flat(a), flat(b)
    return float(np.max(np.abs(a - b)) / max(1.0, float(np.max(np.abs(b)))))


def check_derivatives(fn, wrt, inputs, rng) -> dict:
    """For fn and the parameters wrt: the jvp tangent against central differences of fn, the
    gradient (scalar fn) along a random direction against the same, and the dot-product
    identity <vjp(ybar), dx> = <ybar, jvp(dx)>.  Returns relative errors."""
    dirs = directions_for(inputs, wrt, rng)
    fd = (flat(fn(**shifted(inputs, dirs, EPS))) - flat(fn(**shifted(inputs, dirs, -EPS)))) \
        / (2 * EPS)
    jvp = tl.jvp(fn, wrt=wrt)
    out, d_out = jvp(**inputs, **{f"d_{w}": d for w, d in dirs.items()})
    result = {"jvp_vs_fd": rel(d_out, fd), "scale": float(np.max(np.abs(fd)))}
    ybar = rng.standard_normal(np.shape(out))
    if np.ndim(out) == 0:
        ybar = float(ybar)
        g = tl.grad(fn, wrt=wrt)(**inputs)
        g = g if len(wrt) > 1 else (g,)
        predicted = sum(float(np.sum(np.asarray(gi) * np.asarray(dirs[w]))) for gi, w in zip(g, wrt))
        result["grad_vs_fd"] = rel(predicted, fd)
    bars = tl.vjp(fn, wrt=wrt)(**inputs, d_out=ybar)
    bars = bars if len(wrt) > 1 else (bars,)
    lhs = sum(float(np.sum(np.asarray(b) * np.asarray(dirs[w]))) for b, w in zip(bars, wrt))
    rhs = float(np.sum(np.asarray(ybar) * np.asarray(d_out)))
    result["dot_identity"] = abs(lhs - rhs) / max(1.0, abs(rhs))
    return result


def gradient_norm_function(mod):
    """||grad_x two_layers||^2 as a .tl function: the printed gradient program followed by a
    function that calls it (a derivative inside the code being differentiated)."""
    g = tl.grad(mod.two_layers, wrt="x")
    text = g.source + (
        "\n\ndef gradnorm(W1: f64[h, n], W2: f64[m, h], x: f64[n]) -> f64:\n"
        f"    gx = {g.name}(W1, W2, x)\n"
        "    return sum[j](gx[j] ** 2)\n")
    return tl.parse(text, filename="<gradnorm>")["gradnorm"], text


def explain_section(function: str, stage: str, wrt: str | None = None) -> str:
    """One stage of `python -m tensorlang explain programs.tl -f function`."""
    cmd = [sys.executable, "-m", "tensorlang", "explain", str(PROGRAMS), "-f", function]
    if wrt:
        cmd += ["--wrt", wrt]
    text = subprocess.run(cmd, cwd=common.ROOT, capture_output=True, text=True, check=True).stdout
    keep, lines = False, []
    for line in text.splitlines():
        if line.startswith("== "):
            keep = line.startswith(f"== {stage} ")
            continue
        if keep:
            lines.append(line)
    return "\n".join(lines).strip()


def where_at_zero(jax, torch):
    """d/dx of sum(where(x > 0, log(x), x)) at x = (0, 1, -1, 2) in tensorlang and the peers."""
    x = np.array([0.0, 1.0, -1.0, 2.0])
    mod = tl.load(str(PROGRAMS))
    rows = [["tensorlang `[x > 0] * log(x) + [x <= 0] * x`",
             np.array2string(np.asarray(tl.grad(mod.guarded_log, wrt="x")(x)))]]
    if jax is not None:
        import jax.numpy as jnp
        g = jax.grad(lambda v: jnp.sum(jnp.where(v > 0, jnp.log(v), v)))(jnp.asarray(x))
        rows.append(["JAX `jnp.where(x > 0, jnp.log(x), x)`", np.array2string(np.asarray(g))])
    if torch is not None:
        xt = torch.tensor(x, requires_grad=True)
        (g,) = torch.autograd.grad(torch.where(xt > 0, torch.log(xt), xt).sum(), xt)
        rows.append(["PyTorch `torch.where(x > 0, torch.log(x), x)`", np.array2string(g.numpy())])
    return rows


def main() -> int:
    args = common.arguments(__doc__.split("\n\n")[0], HERE)
    size = 4 if args.quick else 7
    rng = np.random.default_rng(2018)
    mod = tl.load(str(PROGRAMS))
    gradnorm, gradnorm_text = gradient_norm_function(mod)
    d_line = tl.grad(mod.along_line, wrt="t")

    sizes = {"n": size, "h": size + 1, "m": size + 2}

    def inputs(fn, **given):
        return random_inputs(fn, given, sizes, seed=int(rng.integers(1 << 30)))

    x_mixed = rng.standard_normal(3 * size)
    x_mixed[::3] = np.abs(x_mixed[::3]) + 0.1           # both arms of every branch are taken
    x_mixed[1::3] = -np.abs(x_mixed[1::3]) - 0.1
    cases = [
        ("`layer`: max(W x, 0)", "max (a value branch)", mod.layer, ("W", "x"), inputs(mod.layer)),
        ("`two_layers`", "a function called twice", mod.two_layers, ("W1", "W2", "x"),
         inputs(mod.two_layers)),
        ("`piecewise`", "value bracket with two arms (a phi)", mod.piecewise, ("x",),
         {"x": x_mixed}),
        ("`guarded_log`", "bracket guarding log", mod.guarded_log, ("x",),
         {"x": x_mixed}),
        ("`robust_fit`", "call of a Huber loss, branch on abs(r) <= delta", mod.robust_fit,
         ("A", "x"), inputs(mod.robust_fit, delta=0.7)),
        ("`along_line`", "call with a computed argument, scalar t", mod.along_line,
         ("t", "x"), inputs(mod.along_line, t=0.3)),
        ("d/dt `along_line`", "nested: the derivative, differentiated again (d²/dt²)", d_line,
         ("t",), inputs(d_line, t=0.3)),
        ("d/dt `along_line`", "nested: mixed second derivative d²/dt dW1", d_line,
         ("W1",), inputs(d_line, t=0.3)),
        ("`gradnorm` = ‖∇ₓ two_layers‖²", "nested: a gradient program called, then "
         "differentiated", gradnorm, ("W1", "x"), inputs(gradnorm)),
    ]

    rows, worst = [], 0.0
    for label, what, fn, wrt, inp in cases:
        res = check_derivatives(fn, wrt, inp, rng)
        errors = [v for k, v in res.items() if k != "scale"]
        if res["scale"] < 1e-6:
            say(f"  {label}: the directional derivative is zero; the check says nothing")
            worst = max(worst, 1.0)
        worst = max(worst, *errors)
        at = {s: 100 for s in fn.program.sizes()}
        c_f = tl.cost(fn)
        c_g = tl.cost(tl.grad(fn, wrt=wrt)) if np.ndim(fn(**inp)) == 0 else None
        ratio = f"{c_g.evaluate(**at) / c_f.evaluate(**at):.2f}" if c_g is not None else "-"
        rows.append([label, what, ", ".join(wrt), f"{res['scale']:.2g}",
                     f"{res.get('grad_vs_fd', float('nan')):.1e}"
                     if "grad_vs_fd" in res else "-", f"{res['jvp_vs_fd']:.1e}",
                     f"{res['dot_identity']:.1e}", f"`{c_f}`",
                     f"`{c_g}`" if c_g is not None else "(vector output)", ratio])
        say(f"  {label:<34} wrt {', '.join(wrt):<10} " + "  ".join(
            f"{k} {v:.1e}" for k, v in res.items() if k != "scale"))
    passed = worst < 1e-5
    say(f"largest relative error: {worst:.1e} ({'pass' if passed else 'FAIL'})")

    zero_rows = where_at_zero(common.load_jax(), common.load_torch())
    for label, value in zero_rows:
        say(f"  gradient at x = (0, 1, -1, 2): {label}: {value}")

    d2 = tl.grad(d_line, wrt="t")
    cmd = "python papers/innes2018/reproduce.py" + (" --quick" if args.quick else "")
    out = [
        "# Innes 2018: results of reproduce.py", "",
        common.provenance(cmd), "",
        f"## 1. Derivatives checked (sizes n = {sizes['n']}, h = {sizes['h']}, m = {sizes['m']})",
        "",
        "Relative errors: the gradient along a random direction and the jvp tangent against "
        "central differences (step 1e-6), and the dot-product identity "
        "`<vjp(ȳ), dx> = <ȳ, jvp(dx)>`. Costs are `tl.cost` polynomials; the ratio is "
        "cost(grad) / cost(f) with every size at 100; the largest FD entry shows the size of the "
        "finite difference, to show the check is not comparing zeros. Backend: "
        f"{tl.api.default_backend()}.", "",
        common.table(["function", "what it exercises", "wrt", "largest FD entry", "grad vs FD",
                      "jvp vs FD",
                      "dot-product identity", "cost(f)", "cost(grad)", "ratio @100"], rows), "",
        f"Largest error: {worst:.1e}; all below 1e-5: {'yes' if passed else 'NO'}.", "",
        "## 2. Calls become statements (`tensorlang explain programs.tl -f along_line`, "
        "stage *Tensor SSA*)", "",
        "```", explain_section("along_line", "Tensor SSA"), "```", "",
        "Its gradient with respect to t (`tl.grad(along_line, wrt=\"t\").source`):", "",
        "```", d_line.source.strip(), "```", "",
        "and the second derivative (`tl.grad(tl.grad(along_line, wrt=\"t\"), wrt=\"t\")`):", "",
        "```", d2.source.strip(), "```", "",
        "## 3. A branch on a value (`piecewise`)", "",
        "Tensor SSA, as `tensorlang explain` prints it:", "",
        "```", explain_section("piecewise", "Tensor SSA"), "```", "",
        "Gradient (`tl.grad(piecewise, wrt=\"x\").source`):", "",
        "```", tl.grad(mod.piecewise, wrt="x").source.strip(), "```", "",
        "## 4. The gradient program called from another function (`gradnorm`)", "",
        "```", gradnorm_text.strip(), "```", "",
        "## 5. A guarded log at exactly zero", "",
        "Gradient of sum(x > 0 ? log(x) : x) at x = (0, 1, -1, 2); the exact answer is "
        "(1, 1, 1, 0.5) with the convention that the branch x <= 0 holds at 0.", "",
        common.table(["system", "gradient"], zero_rows), "",
    ]
    (args.out / "results.md").write_text("\n".join(out))
    say(f"wrote {args.out / 'results.md'}")
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())

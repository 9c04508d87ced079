"""Bernstein et al. (2020), "Differentiating a Tensor Language": the trace-sum case and the
cheap-gradient certificate of the regression suite.

    python papers/bernstein2020/reproduce.py [--quick] [--out DIR]

Writes results.md (and trace_sum.png when matplotlib is installed) into this folder.

1. f_k(A) = sum of k separately written copies of trace(A).  Its gradient, k times the
   identity, is differentiated by tensorlang with and without the sparsity-aware rewrites
   (tl.grad(f) and tl.grad(f, optimize=False)), costed with tl.cost and timed on the compiled
   backend; jax.grad under jax.jit and PyTorch autograd compute the same gradient beside it.
2. The regression suite (tests/suite_programs.py): the table of benchmarks/cost_table.py,
   then the certificate cost(grad) <= 4 (cost(f) + elements differentiated) checked per case.
"""
from __future__ import annotations

import contextlib
import io
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import common  # noqa: E402
from common import say  # noqa: E402

import numpy as np  # noqa: E402

import tensorlang as tl  # noqa: E402

COPY_INDEX_NAMES = "ijpqrstuvwabcdefgh"


def trace_copies_source(k: int) -> str:
    """k copies of the trace, each with its own summation index, as one .tl function."""
    terms = " + ".join(f"sum[{c}](A[{c}, {c}])" for c in COPY_INDEX_NAMES[:k])
    return f"def trace_copies(A: f64[n, n]) -> f64:\n    return {terms}\n"


def trace_copies(k: int):
    return tl.parse(trace_copies_source(k), filename=f"trace_copies_{k}.tl")["trace_copies"]


def jax_trace_grad(jax, k: int):
    import jax.numpy as jnp

    def f(A):
        total = 0.0
        for _ in range(k):                  # k separate traces, as in the .tl program
            total = total + jnp.trace(A)
        return total

    g = jax.jit(jax.grad(f))
    return lambda A: g(A).block_until_ready()


def torch_trace_grad(torch, k: int):
    def run(A):
        At = torch.from_numpy(A).requires_grad_(True)
        total = torch.trace(At)
        for _ in range(k - 1):
            total = total + torch.trace(At)
        (g,) = torch.autograd.grad(total, At)
        return g
    return run


def trace_sum_study(ks, n, sweep_ns, naive_ns, sweep_k, repeats, jax, torch):
    """Rows of costs and times for each k at size n, and sweeps over n at sweep_k (the naive
    derivative over the smaller sizes naive_ns, since it grows as n^3)."""
    rng = np.random.default_rng(0)
    rows, record = [], {}
    A = rng.standard_normal((n, n))
    for k in ks:
        f = trace_copies(k)
        opt = tl.grad(f, wrt="A")
        naive = tl.grad(f, wrt="A", optimize=False)
        c_f, c_opt, c_naive = tl.cost(f), tl.cost(opt), tl.cost(naive, optimize=False)
        want = k * np.eye(n)
        assert np.array_equal(opt(A), want) and np.array_equal(naive(A), want)
        t = {"tl": common.median_time(lambda: opt(A), repeats),
             "naive": common.median_time(lambda: naive(A), repeats, budget=3.0)}
        if jax is not None:
            g = jax_trace_grad(jax, k)
            assert np.array_equal(np.asarray(g(A)), want)
            t["jax"] = common.median_time(lambda: g(A), repeats)
        if torch is not None:
            g = torch_trace_grad(torch, k)
            assert np.array_equal(g(A).numpy(), want)
            t["torch"] = common.median_time(lambda: g(A), repeats)
        record[k] = t
        rows.append([k, f"`{c_f}`", f"`{c_opt}`", f"`{c_naive}`",
                     f"{c_naive.evaluate(n=n) / c_opt.evaluate(n=n):.3g}",
                     common.ms(t["tl"]), common.ms(t["naive"]),
                     common.ms(t.get("jax")), common.ms(t.get("torch"))])
        say(f"  k = {k:>2}: optimized {common.ms(t['tl'])}, naive {common.ms(t['naive'])}, "
            f"JAX {common.ms(t.get('jax'))}, PyTorch {common.ms(t.get('torch'))}")

    # growth in n at fixed k: measured exponents
    f = trace_copies(sweep_k)
    opt, naive = tl.grad(f, wrt="A"), tl.grad(f, wrt="A", optimize=False)
    sweep = {"tl": [], "naive": [], "jax": [], "torch": []}
    jg = jax_trace_grad(jax, sweep_k) if jax is not None else None
    tg = torch_trace_grad(torch, sweep_k) if torch is not None else None
    for m in naive_ns:
        B = rng.standard_normal((m, m))
        sweep["naive"].append(common.median_time(lambda: naive(B), repeats, budget=3.0))
    for m in sweep_ns:
        B = rng.standard_normal((m, m))
        sweep["tl"].append(common.median_time(lambda: opt(B), repeats))
        if jg is not None:
            sweep["jax"].append(common.median_time(lambda: jg(B), repeats))
        if tg is not None:
            sweep["torch"].append(common.median_time(lambda: tg(B), repeats))
    return rows, record, sweep


def certificate_rows(sample_sizes=(5, 20, 100, 1000)):
    """For each suite case: cost(grad), the bound 4 (cost(f) + elements of wrt), the largest
    ratio of the two over the sample sizes, and whether any size symbol's degree grows."""
    from suite_programs import CASES

    rows, all_hold = [], True
    for name, case in CASES.items():
        f = tl.parse(case["src"], filename=f"{name}.tl")["f"]
        wrt = case["wrt"]
        params = {p.name: p for p in f.program.params}
        elements = tl.Cost()
        for w in wrt:
            size = tl.Cost.const(1)
            for d in params[w].dims:
                size = size * (tl.Cost.const(d) if isinstance(d, int) else tl.Cost.symbol(d))
            elements = elements + size
        c_f = tl.cost(f)
        c_g = tl.cost(tl.grad(f, wrt=wrt[0] if len(wrt) == 1 else wrt))
        bound = (c_f + elements) * 4
        sizes = f.program.sizes()
        degrees_ok = all(c_g.degree(s) <= max(c_f.degree(s), elements.degree(s)) for s in sizes)
        worst = max(c_g.evaluate(**{s: m for s in sizes}) / bound.evaluate(**{s: m for s in sizes})
                    for m in sample_sizes)
        holds = degrees_ok and worst <= 1.0
        all_hold &= holds
        rows.append([name, ", ".join(wrt), f"`{c_f}`", f"`{c_g}`", f"`{elements}`",
                     f"{4 * worst:.2f}", "yes" if degrees_ok else "**no**",
                     "yes" if holds else "**no**"])
    return rows, all_hold


def cost_table_markdown(at: int) -> str:
    """The table of benchmarks/cost_table.py, captured from its own main()."""
    from benchmarks import cost_table

    saved, buffer = sys.argv, io.StringIO()
    sys.argv = ["cost_table.py", "--at", str(at)]
    try:
        with contextlib.redirect_stdout(buffer):
            cost_table.main()
    finally:
        sys.argv = saved
    return buffer.getvalue().strip()


def plot(path, ks, record, n, sweep_ns, naive_ns, sweep, sweep_k):
    plt = common.load_pyplot()
    if plt is None:
        return False
    labels = {"tl": "tensorlang tl.grad", "naive": "tensorlang optimize=False",
              "jax": "JAX jit(grad)", "torch": "PyTorch autograd"}
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    for key, label in labels.items():
        ys = [record[k].get(key) for k in ks]
        if all(y is not None for y in ys):
            left.plot(ks, [1e3 * y for y in ys], "o-", label=label)
        if sweep[key]:
            xs = naive_ns if key == "naive" else sweep_ns
            right.plot(xs, [1e3 * y for y in sweep[key]], "o-", label=label)
    left.set(xscale="log", yscale="log", xlabel="copies k of trace(A)", ylabel="ms per gradient",
             title=f"gradient of k traces, n = {n}")
    right.set(xscale="log", yscale="log", xlabel="n", ylabel="ms per gradient",
              title=f"gradient of {sweep_k} traces against n")
    left.legend(fontsize=8)
    common.save_figure(fig, path)
    return True


def main() -> int:
    args, threads = common.one_thread_arguments(__doc__, HERE)
    if args.quick:
        ks, n, sweep_ns, naive_ns, sweep_k, repeats = [1, 4], 60, [100, 200], [30, 60], 4, 3
    else:
        ks, n, sweep_k, repeats = [1, 2, 4, 8, 16], 200, 8, 25
        sweep_ns, naive_ns = [250, 500, 1000, 2000], [50, 100, 200, 300]
    jax, torch = common.load_jax(), common.load_torch()

    say(f"trace sum: k copies of trace(A), n = {n}")
    rows, record, sweep = trace_sum_study(ks, n, sweep_ns, naive_ns, sweep_k, repeats, jax,
                                         torch)
    slopes = {key: common.loglog_slope(naive_ns if key == "naive" else sweep_ns, ys)
              for key, ys in sweep.items() if ys}
    say("  exponents in n at k = %d: %s" % (sweep_k, ", ".join(
        f"{key} {s:.2f}" for key, s in slopes.items())))
    kmax = ks[-1]
    growth = {key: record[kmax][key] / record[ks[0]][key] for key in record[kmax]}

    say("regression suite: cheap-gradient certificate")
    cert, all_hold = certificate_rows()
    cost_md = cost_table_markdown(100)
    png = plot(args.out / "trace_sum.png", ks, record, n, sweep_ns, naive_ns, sweep, sweep_k)

    cmd = "python papers/bernstein2020/reproduce.py" + (" --quick" if args.quick else "")
    out = [
        "# Bernstein et al. 2020: results of reproduce.py", "",
        common.provenance(cmd) + f" Timings: {threads}.", "",
        f"## 1. Gradient of k copies of trace(A), n = {n}", "",
        "Costs are exact operation counts from `tl.cost`; times are medians of warm calls "
        f"(tensorlang on its {tl.api.default_backend()} backend).", "",
        common.table(["k", "forward cost", "tl.grad cost", "optimize=False cost",
                      f"naive/optimized ops @n={n}", "tl.grad", "optimize=False",
                      "JAX jit(grad)", "PyTorch"], rows), "",
        f"Time at k = {kmax} divided by time at k = {ks[0]}: " + ", ".join(
            f"{key} {g:.2f}x" for key, g in growth.items()) + ".", "",
        f"Measured exponent of n at k = {sweep_k} (log-log slope of time against n; n = "
        f"{naive_ns} for optimize=False, n = {sweep_ns} for the others): "
        + ", ".join(f"{key} {s:.2f}" for key, s in slopes.items()) + ".", "",
        "Times of the n sweep (ms): " + "; ".join(
            f"{key}: " + ", ".join(f"{1e3 * t:.3g}" for t in ys)
            for key, ys in sweep.items() if ys) + ".", "",
    ]
    if png:
        out += ["![gradient time against k and n](trace_sum.png)", ""]
    out += [
        "## 2. The regression suite (`benchmarks/cost_table.py --at 100`)", "", cost_md, "",
        "## 3. Cheap-gradient certificate", "",
        "Bound: cost(grad) <= 4 (cost(f) + number of elements differentiated), checked at "
        "every size symbol = 5, 20, 100, 1000, and no size symbol's degree above its degree in "
        "cost(f) or in the inputs.", "",
        common.table(["case", "wrt", "cost(f)", "cost(grad)", "elements", "max of cost(grad) / "
                      "(cost(f) + elements), must be <= 4", "degrees kept", "certificate"], cert), "",
        f"All {len(cert)} cases hold: {'yes' if all_hold else 'NO'}.", "",
    ]
    (args.out / "results.md").write_text("\n".join(out))
    say(f"certificate holds for all {len(cert)} cases: {all_hold}")
    say(f"wrote {args.out / 'results.md'}" + (f" and {args.out / 'trace_sum.png'}" if png else ""))
    return 0 if all_hold else 1


if __name__ == "__main__":
    sys.exit(main())

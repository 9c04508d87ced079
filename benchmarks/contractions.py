"""Chains of products and a Tucker reconstruction: tensorlang against JAX, forward and gradient.

    python -m benchmarks.contractions            # full run (~10 min), writes results/contractions.md
    python -m benchmarks.contractions --quick    # one size per workload, one round, temp file

Run with an interpreter that has tensorlang and JAX, e.g. the one made by
`python3 -m venv .venv-bench && .venv-bench/bin/pip install -e '.[test]' 'jax[cpu]'`.

Three scalar losses, each written the same way on both sides (the same pairwise products in
the same order, which is the order tensorlang's contraction ordering picks):

* chain_vector  sum[i, j, l, p](A[i, j] * B[j, l] * C[l, p] * v[p]): the column sums of A,
  then three vector-matrix products, O(n^2); JAX: `((jnp.sum(A, axis=0) @ B) @ C) @ v`;
* chain_loss    X = A B C D (three matrix products), loss sum((X - Y)^2); JAX:
  `jnp.sum((A @ ((B @ C) @ D) - Y) ** 2)`;
* tucker        X[i, j, k] = sum[a, b, c](G[a, b, c] U[i, a] V[j, b] W[k, c]), loss
  sum((X - T)^2), as three mode products (W, then U, then V); JAX: the same three
  `jnp.einsum` calls.

Method (DESIGN.md section 8): float64 on both sides; JAX under `jax.jit`, the gradient
`jax.jit(jax.grad(f, argnums=all))`, results synchronised with `block_until_ready`; tensorlang
`f.compile("numba")` and `tl.grad(f, wrt=all).compile("numba")`. Each (system, workload,
size, thread count) runs in a fresh process with empty caches: the first call is reported as
cold (tensorlang: derivation, code generation, Numba compilation; JAX: tracing and XLA
compilation), then warm times are medians of repeated calls. The processes of the two systems
alternate (tensorlang, JAX, tensorlang, JAX, ...) and their samples are pooled, so a noisy
moment hits both. Every result is checked against NumPy (hand-derived gradients) before
anything is timed. Target: tensorlang's warm time within 2x of JAX's, forward and gradient.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks.peers.driver import BLAS_CORE, worker_blas_core

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
TARGET = 2.0

TL_SOURCE = """
def chain_vector(A: f64[n, n], B: f64[n, n], C: f64[n, n], v: f64[n]) -> f64:
    return sum[i, j, l, p](A[i, j] * B[j, l] * C[l, p] * v[p])

def chain_loss(A: f64[n, n], B: f64[n, n], C: f64[n, n], D: f64[n, n], Y: f64[n, n]) -> f64:
    X[i, q] = sum[j, l, p](A[i, j] * B[j, l] * C[l, p] * D[p, q])
    return sum[i, q]((X[i, q] - Y[i, q]) ** 2)

def tucker(G: f64[r, r, r], U: f64[n, r], V: f64[n, r], W: f64[n, r], T: f64[n, n, n]) -> f64:
    X[i, j, k] = sum[a, b, c](G[a, b, c] * U[i, a] * V[j, b] * W[k, c])
    return sum[i, j, k]((X[i, j, k] - T[i, j, k]) ** 2)
"""

# workload -> the sizes swept ({symbol: value}); the first is the quick run's
SIZES = {
    "chain_vector": [{"n": 2048}, {"n": 512}],
    "chain_loss": [{"n": 512}, {"n": 128}, {"n": 1024}],
    "tucker": [{"n": 128, "r": 16}, {"n": 64, "r": 8}, {"n": 192, "r": 24}],
}
PARAMS = {"chain_vector": ("A", "B", "C", "v"), "chain_loss": ("A", "B", "C", "D", "Y"),
          "tucker": ("G", "U", "V", "W", "T")}
WRT = {"chain_vector": ("A", "B", "C", "v"), "chain_loss": ("A", "B", "C", "D"),
       "tucker": ("G", "U", "V", "W")}


# ====================================================================== inputs and references
def inputs(workload: str, sizes: dict) -> dict:
    rng = np.random.default_rng(7)
    g = rng.standard_normal
    n = sizes["n"]
    if workload == "chain_vector":
        return {k: g((n, n)) / np.sqrt(n) for k in "ABC"} | {"v": g(n)}
    if workload == "chain_loss":
        return {k: g((n, n)) / np.sqrt(n) for k in "ABCD"} | {"Y": g((n, n))}
    r = sizes["r"]
    return {"G": g((r, r, r)), "U": g((n, r)), "V": g((n, r)), "W": g((n, r)),
            "T": g((n, n, n))}


def reference(workload: str, x: dict) -> tuple[float, list]:
    """(loss, gradient parts in WRT order), in NumPy with hand-derived adjoints."""
    if workload == "chain_vector":
        A, B, C, v = x["A"], x["B"], x["C"], x["v"]
        cv = C @ v
        bcv = B @ cv
        one = np.ones(A.shape[0])
        a1 = one @ A                  # row vector 1^T A
        a1b = a1 @ B
        return float(one @ (A @ bcv)), [np.outer(one, bcv), np.outer(a1, cv),
                                        np.outer(a1b, v), a1b @ C]
    if workload == "chain_loss":
        A, B, C, D, Y = x["A"], x["B"], x["C"], x["D"], x["Y"]
        X = A @ B @ C @ D
        R = 2.0 * (X - Y)
        return float(np.sum((X - Y) ** 2)), [R @ (B @ C @ D).T, A.T @ R @ (C @ D).T,
                                             (A @ B).T @ R @ D.T, (A @ B @ C).T @ R]
    G, U, V, W, T = x["G"], x["U"], x["V"], x["W"], x["T"]
    X = np.einsum("abc,ia,jb,kc->ijk", G, U, V, W, optimize=True)
    R = 2.0 * (X - T)
    return float(np.sum((X - T) ** 2)), [
        np.einsum("ijk,ia,jb,kc->abc", R, U, V, W, optimize=True),
        np.einsum("ijk,abc,jb,kc->ia", R, G, V, W, optimize=True),
        np.einsum("ijk,abc,ia,kc->jb", R, G, U, W, optimize=True),
        np.einsum("ijk,abc,ia,jb->kc", R, G, U, V, optimize=True)]


def close(got, want) -> bool:
    got, want = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
    scale = float(np.max(np.abs(want))) or 1.0
    return got.shape == want.shape and bool(np.allclose(got, want, rtol=1e-8,
                                                        atol=1e-10 * scale))


# ====================================================================== the two systems
def tensorlang_functions(workload: str):
    import tensorlang as tl
    f = tl.parse(TL_SOURCE, "contractions.tl")[workload]
    g = tl.grad(f, wrt=WRT[workload])
    fc, gc = f.compile("numba"), g.compile("numba")

    def fwd(x):
        return fc(**{k: x[k] for k in PARAMS[workload]})

    def grad(x):
        return list(gc(**{k: x[k] for k in PARAMS[workload]}))
    return fwd, grad


def jax_functions(workload: str):
    import jax
    import jax.numpy as jnp
    if workload == "chain_vector":
        def f(A, B, C, v):
            return ((jnp.sum(A, axis=0) @ B) @ C) @ v     # tensorlang's order
    elif workload == "chain_loss":
        def f(A, B, C, D, Y):
            return jnp.sum((A @ ((B @ C) @ D) - Y) ** 2)
    else:
        def f(G, U, V, W, T):
            t1 = jnp.einsum("abc,kc->kab", G, W)        # the order tensorlang's driver runs
            t2 = jnp.einsum("ia,kab->ikb", U, t1)
            X = jnp.einsum("jb,ikb->ijk", V, t2)
            return jnp.sum((X - T) ** 2)
    names = PARAMS[workload]
    argnums = tuple(names.index(w) for w in WRT[workload])
    jf, jg = jax.jit(f), jax.jit(jax.grad(f, argnums=argnums))
    cache = {}

    def device(x):
        key = id(x)
        if key not in cache:                 # inputs moved to the device once, outside timing
            cache.clear()
            cache[key] = [jnp.asarray(x[k]) for k in names]
        return cache[key]

    def fwd(x):
        return float(jf(*device(x)).block_until_ready())

    def grad(x):
        out = jg(*device(x))
        jax.block_until_ready(out)
        return [np.asarray(o) for o in out]
    return fwd, grad


# ====================================================================== one process
def worker(spec: dict) -> dict:
    # The thread count is also enforced by CPU affinity: XLA's CPU runtime does not follow
    # its thread flags (with them set to one thread, a jitted gradient still ran on two
    # cores here).
    if hasattr(os, "sched_setaffinity"):
        cpus = sorted(os.sched_getaffinity(0))
        os.sched_setaffinity(0, cpus[:spec["threads"]])
    x = inputs(spec["workload"], spec["sizes"])
    want_f, want_g = reference(spec["workload"], x)
    t0 = time.perf_counter()
    fwd, grad = (tensorlang_functions if spec["system"] == "tensorlang" else
                 jax_functions)(spec["workload"])
    setup = time.perf_counter() - t0
    t0 = time.perf_counter()
    got_f = fwd(x)
    cold_f = time.perf_counter() - t0
    t0 = time.perf_counter()
    got_g = grad(x)
    cold_g = time.perf_counter() - t0
    out = {"setup": setup, "cold_f": cold_f, "cold_g": cold_g}
    if not (close(got_f, want_f) and all(close(a, b) for a, b in zip(got_g, want_g))):
        out["wrong"] = True
        return out
    # a few calls before timing: tensorlang compiles parallel forms in the background once a
    # serial call has been timed (tensorlang/backend/threads.py); wait for them
    for _ in range(3):
        fwd(x)
        grad(x)
    if spec["system"] == "tensorlang":
        from tensorlang.backend.background import wait_for_background
        wait_for_background()
    for name, fn in (("f", lambda: fwd(x)), ("g", lambda: grad(x))):
        fn()
        t = time.perf_counter()
        fn()
        single = time.perf_counter() - t
        k = max(1, int(spec["min_sample"] / max(single, 1e-7)))
        samples = []
        for _ in range(spec["repeats"]):
            t = time.perf_counter()
            for _ in range(k):
                fn()
            samples.append((time.perf_counter() - t) / k)
        out[name] = samples
    return out


def child_env(threads: int, cache: str) -> dict:
    env = dict(os.environ)
    for var in ("NUMBA_NUM_THREADS", "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS",
                "MKL_NUM_THREADS"):
        env[var] = str(threads)
    if BLAS_CORE["mode"] == "detect":
        # the peers' policy: OpenBLAS picks the kernels for this CPU, whatever the
        # environment forced on this process (see docs/api.md, Performance settings)
        env.pop("OPENBLAS_CORETYPE", None)
    env["JAX_ENABLE_X64"] = "1"
    env["JAX_PLATFORMS"] = "cpu"
    multi = "true" if threads > 1 else "false"
    env["XLA_FLAGS"] = (f"--xla_cpu_multi_thread_eigen={multi} "
                        f"intra_op_parallelism_threads={threads}")
    env["TENSORLANG_CACHE_DIR"] = os.path.join(cache, "tl")
    env["NUMBA_CACHE_DIR"] = os.path.join(cache, "numba")
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + env["PYTHONPATH"]
                                     if env.get("PYTHONPATH") else "")
    return env


def run_one(python: str, spec: dict, threads: int) -> dict:
    with tempfile.TemporaryDirectory(prefix="tl-contractions-") as cache:
        proc = subprocess.run([python, "-m", "benchmarks.contractions", "--worker",
                               json.dumps(spec)], env=child_env(threads, cache), cwd=ROOT,
                              capture_output=True, text=True, timeout=1800)
    line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT:")), None)
    if proc.returncode != 0 or line is None:
        raise RuntimeError(f"{spec['system']} {spec['workload']} failed:\n{proc.stderr[-3000:]}")
    return json.loads(line[len("RESULT:"):])


# ====================================================================== report
def ms(s: float) -> str:
    v = s * 1e3
    return f"{v:.3g}" if v < 100 else f"{v:.0f}"


def versions(python: str) -> str:
    code = ("import numpy, numba, jax, jaxlib, platform; print(platform.python_version(), "
            "numpy.__version__, numba.__version__, jax.__version__, jaxlib.__version__)")
    out = subprocess.run([python, "-c", code], capture_output=True, text=True).stdout.split()
    if len(out) != 5:
        return "?"
    return (f"Python {out[0]}, NumPy {out[1]}, Numba {out[2]}, JAX {out[3]} "
            f"(jaxlib {out[4]})")


def git_commit() -> str:
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                                capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "tensorlang"], cwd=ROOT,
                               capture_output=True, text=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "?"
    return commit + (" (tensorlang/ has uncommitted changes)" if dirty else "")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="first size only, one round")
    ap.add_argument("--threads", default="1,2", help="thread counts to run (default 1,2)")
    ap.add_argument("--rounds", type=int, default=None,
                    help="processes per system and configuration (default 2, quick 1)")
    ap.add_argument("--only", nargs="*", help="workloads (chain_vector chain_loss tucker)")
    ap.add_argument("--out", help="markdown output (default results/contractions.md)")
    ap.add_argument("--blas-core", choices=("detect", "inherit"), default="detect",
                    help="detect (default): the workers do not inherit OPENBLAS_CORETYPE; "
                         "inherit: they do")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    BLAS_CORE["mode"] = args.blas_core
    if args.worker:
        print("RESULT:" + json.dumps(worker(json.loads(args.worker))), flush=True)
        return 0
    python = sys.executable
    rounds = args.rounds or (1 if args.quick else 2)
    threads = [int(t) for t in args.threads.split(",")]
    work = args.only or list(SIZES)
    command = " ".join(["python -m benchmarks.contractions"] + (sys.argv[1:] if argv is None
                                                               else argv))
    started = datetime.datetime.now().astimezone()
    load0 = os.getloadavg()
    t_start = time.perf_counter()
    rows, failures = [], []
    for workload in work:
        for sizes in SIZES[workload][:1] if args.quick else SIZES[workload]:
            for th in threads:
                spec = {"workload": workload, "sizes": sizes, "repeats": 7 if args.quick else 11,
                        "min_sample": 0.05, "threads": th}
                pooled = {"tensorlang": [], "jax": []}
                load_before = os.getloadavg()[0]
                try:
                    for _ in range(rounds):
                        for system in ("tensorlang", "jax"):
                            print(f"{workload} {sizes} threads={th} {system}", file=sys.stderr,
                                  flush=True)
                            pooled[system].append(run_one(python, {**spec, "system": system},
                                                          th))
                except (RuntimeError, subprocess.TimeoutExpired) as exc:
                    failures.append(str(exc))
                    continue
                if any(r.get("wrong") for rs in pooled.values() for r in rs):
                    failures.append(f"{workload} {sizes}: a result differs from NumPy")
                    continue
                med = {s: {k: statistics.median(v for r in rs for v in r[k]) for k in "fg"}
                       for s, rs in pooled.items()}
                cold = {s: {k: statistics.median(r[f"cold_{k}"] + (r["setup"] if k == "f" else 0)
                                                 for r in rs) for k in "fg"}
                        for s, rs in pooled.items()}
                rows.append(dict(workload=workload, sizes=sizes, threads=th, med=med, cold=cold,
                                 load=f"{load_before:.2f} -> {os.getloadavg()[0]:.2f}"))
    text = render(rows, failures, command, started, time.perf_counter() - t_start, load0,
                  python, rounds)
    print(text)
    out = Path(args.out) if args.out else (RESULTS / "contractions.md" if not args.quick else
                                           Path(tempfile.gettempdir()) / "contractions-quick.md")
    out.write_text(text)
    print(f"written {out}", file=sys.stderr)
    return 1 if failures else 0


METHOD = (
    "Three scalar losses, written the same way on both sides (the same pairwise products in "
    "the same order, the one tensorlang's contraction ordering picks): `chain_vector` = "
    "sum[i, j, l, p](A[i, j] B[j, l] C[l, p] v[p]), the column sums of A then three "
    "vector-matrix products, JAX `((jnp.sum(A, axis=0) @ B) @ C) @ v`; `chain_loss` = "
    "sum((A B C D - Y)^2), JAX `jnp.sum((A @ ((B @ C) @ D) - Y) ** 2)`; `tucker` = "
    "sum((X - T)^2) with X[i, j, k] = sum[a, b, c](G[a, b, c] U[i, a] V[j, b] W[k, c]) as "
    "three mode products (W, then U, then V), JAX the same three `jnp.einsum` calls. "
    "Gradients with respect to all matrices (and v, G). float64 on both sides; JAX under "
    "`jax.jit`, the gradient `jax.jit(jax.grad(f, argnums=...))`, results synchronised with "
    "`block_until_ready`, inputs placed on the device once outside the timing; tensorlang "
    "`f.compile(\"numba\")` and `tl.grad(f, wrt=...).compile(\"numba\")`. Every (system, "
    "workload, size, thread count) runs in a fresh process with empty caches; the two "
    "systems' processes alternate and their samples are pooled. Thread count: each process "
    "is confined to that many CPUs (sched_setaffinity; XLA's CPU runtime ignores its thread "
    "flags, and a 'one-thread' JAX gradient ran on both cores without it), and "
    "NUMBA_NUM_THREADS, OPENBLAS_NUM_THREADS, OMP_NUM_THREADS and XLA's intra-op threads "
    "are set to it. Results are checked against NumPy (hand-derived gradients, rtol 1e-8) "
    "before anything is timed. Warm = median of repeated calls after the first few (and "
    "after tensorlang's background compilations of parallel forms). Target: tensorlang's "
    "warm time within 2x of JAX's, forward and gradient.")


HISTORY = (
    "Before this benchmark's backend changes (commit f5edf09, one thread, n = 2048 / 512 / "
    "128 as in the first rows), tensorlang's chain_vector forward took 13x JAX's time: the "
    "first step, the column sums of A, ran as a loop nest reading A down its columns (104 ms "
    "against 8 ms); it is now one `np.sum(A, axis=0)`. Tucker's mode products went through "
    "`np.einsum(..., optimize=True)`, which searches a contraction path on every call and "
    "returned X with strides (n^2, 1, n), so the loss kernel then walked it across cache "
    "lines; they are now one `np.matmul` each on operands reshaped into matrices, batched "
    "over a leading output index where that spares copying the n^3 tensor, with C-contiguous "
    "results (forward 28 ms before, 3 ms after, at n = 128, r = 16 on one thread). With two "
    "threads, small products took milliseconds each (chain_loss n = 128: 24 ms against 0.25 "
    "ms on one thread) because OpenBLAS split every product across both threads; tensorlang "
    "now gives OpenBLAS one thread unless the product's measured single-thread time is 2 ms "
    "or more (tensorlang/backend/threads.py).")


def _why(r: dict, rows: list) -> str:
    """For a row that misses the target with threads: the same call on one thread."""
    if r["threads"] == 1:
        return ""
    one = next((q for q in rows if q["workload"] == r["workload"] and q["sizes"] == r["sizes"]
                and q["threads"] == 1), None)
    if one is None:
        return ""
    parts = []
    for k, what in (("f", "forward"), ("g", "gradient")):
        mine, single = r["med"]["tensorlang"][k], one["med"]["tensorlang"][k]
        jax_many, jax_one = r["med"]["jax"][k], one["med"]["jax"][k]
        if mine / jax_many > TARGET:
            parts.append(f"tensorlang's {what} takes {ms(mine)} ms on {r['threads']} threads and "
                         f"{ms(single)} ms on one (JAX: {ms(jax_many)} and {ms(jax_one)} ms)")
    return ("; ".join(parts) + ": its products run on OpenBLAS's threads, which split each "
            "product evenly, so with the machine's other load (see the load column) every "
            "product waits for the slower thread; JAX's time barely depends on the thread count "
            "here") if parts else ""


def render(rows, failures, command, started, elapsed, load0, python, rounds) -> str:
    cpu = "?"
    try:
        with open("/proc/cpuinfo") as fh:
            cpu = next(ln.split(":", 1)[1].strip() for ln in fh if ln.startswith("model name"))
    except (OSError, StopIteration):
        pass
    out = ["# Chains of products and Tucker reconstruction: tensorlang against JAX", "",
           f"Run on {started.strftime('%Y-%m-%d %H:%M %Z').strip()} with `{command}` from the "
           f"repository root ({elapsed / 60:.1f} min); tensorlang commit {git_commit()}; "
           f"{versions(python)}; {cpu}, {os.cpu_count()} logical CPUs, Linux "
           f"{platform.release()}. 1-minute load average {load0[0]:.2f} at the start, "
           f"{os.getloadavg()[0]:.2f} at the end (other users' work: the machine is shared). "
           f"OpenBLAS kernels in the workers: {worker_blas_core()}.", "",
           METHOD, "",
           f"Each row pools {rounds} process(es) per system. Times in ms. `ratio` is tensorlang "
           "/ JAX (below 1: tensorlang faster). Cold = the first call in a fresh process (the "
           "forward's includes loading the program and, for tensorlang, parsing it).", "",
           "| workload | sizes | threads | fwd tensorlang | fwd JAX | fwd ratio | grad tensorlang "
           "| grad JAX | grad ratio | cold fwd tl / JAX | cold grad tl / JAX | target | result "
           "| why (when not met) | load |",
           "|" + "---|" * 15]
    for r in rows:
        m, c = r["med"], r["cold"]
        rf = m["tensorlang"]["f"] / m["jax"]["f"]
        rg = m["tensorlang"]["g"] / m["jax"]["g"]
        ok = rf <= TARGET and rg <= TARGET
        sizes = ", ".join(f"{k}={v}" for k, v in r["sizes"].items())
        why = "" if ok else _why(r, rows)
        out.append(f"| {r['workload']} | {sizes} | {r['threads']} | {ms(m['tensorlang']['f'])} | "
                   f"{ms(m['jax']['f'])} | {rf:.2f} | {ms(m['tensorlang']['g'])} | "
                   f"{ms(m['jax']['g'])} | {rg:.2f} | {c['tensorlang']['f']:.2f} s / "
                   f"{c['jax']['f']:.2f} s | {c['tensorlang']['g']:.2f} s / {c['jax']['g']:.2f} s "
                   f"| <= {TARGET:g} | {'met' if ok else '**NOT met**'} | {why} | {r['load']} |")
    out += ["", HISTORY]
    if failures:
        out += ["", "Failures:", ""] + [f"- {f}" for f in failures]
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    sys.exit(main())

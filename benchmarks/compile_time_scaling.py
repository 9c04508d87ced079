"""How compile time grows with the size of a program: three families of generated programs.

    python -m benchmarks.compile_time_scaling                    # this checkout, every size
    python -m benchmarks.compile_time_scaling --baseline 2fe9fa9 # and a commit, side by side
    python -m benchmarks.compile_time_scaling --quick            # the smaller sizes only
    python -m benchmarks.compile_time_scaling --out PATH         # also write the tables (markdown)
    python -m benchmarks.compile_time_scaling --repeat 3         # each side's fastest of 3 runs

The families (`chain`, `nest`, `rk4` below):

- chain n: one function of n statements, each reading the one before: `sin(...) * 1.01`,
  `y * y + x` and a scaled copy `y * 1.01` in turn, then a sum (n = 100, 300, 1000, 3000);
- nest d: f_0 one statement, f_k calling f_(k-1) twice with the same argument, `top` summing
  f_d (d = 6, 10, 14): inlined as written, 2^d copies of f_0;
- rk4: the Runge-Kutta integrator of tests/newuser2_programs.py, its jvp with respect to all
  five parameters, its gradient with respect to the four scalars and its Hessian with respect
  to r.

Each (side, family, size) runs in a fresh process with the on-disk program cache off and an
empty kernel cache, with the NumPy backend.  Columns: parse (tl.parse: parse, lower, check),
primal first call (parse excluded: simplification and the call), derivative build (tl.grad /
tl.jvp / tl.hessian to the simplified program), the CPU time of that build (the process's
own, which other work on a shared machine inflates less than the wall time) and derivative
first call (its build excluded).  The growth exponent between two sizes is log(t2 / t1) / log(n2 / n1) of the
total (for nest, per level, where the size of the program as written doubles).  A case that
takes longer than --timeout seconds is reported as such.  The machine may be shared: the
load average is printed with every table; compare sides measured in one run.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

SIZES = {"chain": [100, 300, 1000, 3000], "nest": [6, 10, 14], "rk4": ["jvp", "grad", "hessian"]}
QUICK = {"chain": [100, 300, 1000], "nest": [6, 10], "rk4": ["jvp"]}


def chain_source(n: int) -> str:
    lines = ["def f(x: f64[n]) -> f64:", "    y1[i] = sin(x[i]) * 1.01"]
    steps = ["    y{k}[i] = sin(y{p}[i]) * 1.01", "    y{k}[i] = y{p}[i] * y{p}[i] + x[i]",
             "    y{k}[i] = y{p}[i] * 1.01"]
    for k in range(2, n + 1):
        lines.append(steps[k % 3].format(k=k, p=k - 1))
    lines.append(f"    return sum[i](y{n}[i])")
    return "\n".join(lines) + "\n"


def nest_source(depth: int) -> str:
    lines = ["def f0(x: f64[n]) -> f64[n]:", "    y[i] = sin(x[i]) * 1.01", "    return y", ""]
    for k in range(1, depth + 1):
        lines += [f"def f{k}(x: f64[n]) -> f64[n]:", f"    a = f{k - 1}(x)", f"    b = f{k - 1}(x)",
                  "    y[i] = a[i] * 0.5 + b[i]", "    return y", ""]
    lines += ["def top(x: f64[n]) -> f64:", f"    z = f{depth}(x)", "    return sum[i](z[i])", ""]
    return "\n".join(lines)


def rk4_source() -> str:
    sys.path.insert(0, str(ROOT / "tests"))
    from newuser2_programs import PROGRAMS
    return PROGRAMS["rk4"]["src"]


def worker(family: str, size: str) -> dict:
    """Timings of one case in this process (the caller made it fresh)."""
    import warnings
    import numpy as np
    import tensorlang as tl
    out: dict = {}
    caught = []
    warnings.showwarning = lambda message, category, *a, **k: caught.append(
        f"{category.__name__}: {message}")
    t0 = time.perf_counter()
    if family == "rk4":
        fn = tl.parse(rk4_source()).rk4
        rng = np.random.default_rng(0)
        args = dict(y0=0.2, r=1.3, K=2.0, h=0.3, obs=1.0 + 0.3 * rng.standard_normal(7))
    else:
        src = chain_source(int(size)) if family == "chain" else nest_source(int(size))
        mod = tl.parse(src)
        fn = mod.f if family == "chain" else mod.top
        args = dict(x=np.linspace(0.0, 1.0, 8))
    t1 = time.perf_counter()
    out["parse"] = t1 - t0
    if family != "rk4":
        fn.compile(backend="numpy")(**args)
        t2 = time.perf_counter()
        out["primal"] = t2 - t1
        t1 = t2
    c1 = time.process_time()
    if family != "rk4":
        d = tl.grad(fn, wrt="x")
    elif size == "jvp":
        d = tl.jvp(fn, wrt=("y0", "r", "K", "h", "obs"))
        args.update(d_y0=1.0, d_r=0.5, d_K=0.1, d_h=0.2, d_obs=np.ones(7))
    elif size == "grad":
        d = tl.grad(fn, wrt=("y0", "r", "K", "h"))
    else:
        d = tl.hessian(fn, wrt="r")
    d.optimized_program()
    t2 = time.perf_counter()
    out["build"] = t2 - t1
    out["build_cpu"] = time.process_time() - c1
    d.compile(backend="numpy")(**args)
    out["call"] = time.perf_counter() - t2
    out["total"] = time.perf_counter() - t0
    out["warnings"] = sorted(set(w.splitlines()[0] for w in caught))
    out["tensorlang"] = tl.__file__
    return out


def baseline_tree(commit: str) -> str:
    """A temporary directory holding the tensorlang package of `commit` (git archive)."""
    tmp = tempfile.mkdtemp(prefix="tl-baseline-")
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", commit, "tensorlang"],
                             capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", tmp], input=archive, check=True)
    return tmp


def run_case(pythonpath: str, family: str, size, timeout: float) -> dict:
    return run_worker(__file__, (family, str(size)), pythonpath, timeout)


def run_worker(path: str, args: tuple, pythonpath: str, timeout: float) -> dict:
    """`worker(*args)` of the script at `path`, in a fresh process with the tensorlang of
    `pythonpath`, the on-disk program cache off, an empty kernel cache and the NumPy
    backend: its result (a dict), or {"timeout": ...} or {"error": ...}."""
    cache = tempfile.mkdtemp(prefix="tl-scaling-")
    env = dict(os.environ, PYTHONPATH=pythonpath, TENSORLANG_PROGRAM_CACHE="0",
               TENSORLANG_CACHE_DIR=cache, TENSORLANG_BACKEND="numpy")
    # The script is loaded by its path: the side's tensorlang comes from PYTHONPATH alone.
    code = ("import importlib.util, json; spec = importlib.util.spec_from_file_location("
            "'worker', %r); m = importlib.util.module_from_spec(spec); "
            "spec.loader.exec_module(m); print('RESULT', json.dumps(m.worker(*%r)))"
            % (path, tuple(args)))
    try:
        p = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                           text=True, timeout=timeout, cwd=tempfile.gettempdir())
    except subprocess.TimeoutExpired:
        return {"timeout": timeout}
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    for line in p.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT "):])
    return {"error": (p.stderr.strip().splitlines() or ["?"])[-1]}


def fmt(r: dict, key: str) -> str:
    if "timeout" in r:
        return f"> {r['timeout']:.0f}" if key == "total" else ""
    if "error" in r:
        return "error" if key == "total" else ""
    return f"{r[key]:.2f}" if key in r else ""


def exponent(family: str, a, b, ra: dict, rb: dict) -> str:
    if "total" not in ra or "total" not in rb:
        return ""
    ratio = rb["total"] / ra["total"]
    if family == "chain":
        return f"{math.log(ratio) / math.log(int(b) / int(a)):.2f}"
    if family == "nest":
        return f"x{ratio ** (1 / (int(b) - int(a))):.2f} per level"
    return ""


def table(sides: list[tuple[str, str]], results: dict) -> str:
    lines = [f"Load average at the end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}", "",
             "| family | size | side | parse (s) | primal first call (s) | derivative build (s) "
             "| derivative build, CPU (s) "
             "| derivative first call (s) | total (s) | growth | warnings |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for family, sizes in results["sizes"].items():
        for label, _ in sides:
            prev = None
            for size in sizes:
                r = results[label, family, str(size)]
                grow = exponent(family, prev[0], size, prev[1], r) if prev else ""
                warn = "; ".join(w.split(" without")[0] for w in r.get("warnings", [])) \
                    or r.get("error", "")
                lines.append(f"| {family} | {size} | {label} | {fmt(r, 'parse')} | "
                             f"{fmt(r, 'primal')} | {fmt(r, 'build')} | {fmt(r, 'build_cpu')} | {fmt(r, 'call')} | "
                             f"{fmt(r, 'total')} | {grow} | {warn[:200]} |")
                prev = (size, r)
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline", help="a commit measured beside this checkout")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--timeout", type=float, default=150.0)
    ap.add_argument("--only", help="families, comma-separated (chain,nest,rk4)")
    ap.add_argument("--out")
    ap.add_argument("--repeat", type=int, default=1,
                    help="run each case this many times (the sides alternating every time) and "
                         "keep each side's fastest run: less noise on a shared machine")
    args = ap.parse_args()
    sizes = QUICK if args.quick else SIZES
    if args.only:
        sizes = {k: v for k, v in sizes.items() if k in args.only.split(",")}
    sides = [("current", str(ROOT))]
    tmp = None
    if args.baseline:
        tmp = baseline_tree(args.baseline)
        sides.insert(0, (f"baseline {args.baseline}", tmp))
    results: dict = {"sizes": sizes}
    print(f"load average at the start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}",
          file=sys.stderr)
    try:
        for family, family_sizes in sizes.items():
            for size in family_sizes:
                for _ in range(args.repeat):
                    for label, path in sides:        # the sides alternate, case by case
                        r = run_case(path, family, size, args.timeout)
                        best = results.get((label, family, str(size)))
                        if best is None or r.get("total", math.inf) < best.get("total", math.inf):
                            results[label, family, str(size)] = r
                    print(f"{family} {size} {label}: {fmt(r, 'total')} s", file=sys.stderr,
                          flush=True)
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)
    text = table(sides, results)
    print(text)
    if args.out:
        Path(args.out).write_text(text)


if __name__ == "__main__":
    main()

"""How long does a user wait for the compiler?  The targets of issue 9, measured in one run.

    python -m benchmarks.compile_time                      # full run, writes benchmarks/results/compile_time.md
    python -m benchmarks.compile_time --quick              # fewer repeats and cases, writes to a temporary directory
    python -m benchmarks.compile_time --baseline 5acad41   # the commit the derivation times are compared with
    python -m benchmarks.compile_time --out PATH           # write the table somewhere else
    python -m benchmarks.compile_time --jax-python PATH    # the interpreter that has JAX
    python -m benchmarks.compile_time --only 1,4           # some sections (2 runs 2 and 3)

Four sections, each in fresh subprocesses:

1. derivation time (parse to simplified derivative program, no kernel compile) of the
   gradient, Hessian and jvp of every function of examples/*.tl and benchmarks/workloads/*.tl,
   with respect to its first f64 parameter (gradient and Hessian only for scalar-valued
   functions), for this checkout and for a baseline commit extracted with `git archive` into a
   temporary directory.  Both sides run the same measuring code (public API only) in
   alternating fresh processes (old, new, old, new, ...); each derivation keeps its best time;
2. a cold first gradient of examples/blur.tl `blur_energy` on a 256 x 256 image in a fresh
   process with empty kernel caches, beside JAX (`jax.jit(jax.grad(f))` of the same energy in
   jax.numpy, import and first call included), and the same with the warm cache the cold run left;
3. the cold first gradient of benchmarks/workloads/w11_arap.tl at 256 x 256;
4. growing sizes: each example and workload gradient is called at size 8, then for the first
   time at a larger size (the largest of a ladder whose `tl.cost` stays under a budget), then a
   second time at that size: the first call at the larger size must not compile for long.

The machine is shared: every fresh-process time is the best of several runs, contenders
alternate, and the load average is recorded.  JAX comes from a separate virtualenv
(`--jax-python`, default .venv-bench/bin/python in the repository); without it the JAX
column says so.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
DEFAULT_BASELINE = "5acad41"

TARGET_SPEEDUP = 5.0        # derivation total, baseline / current
TARGET_GRAD = 0.15          # seconds, any single gradient derivation
TARGET_WARM = 0.7           # seconds, warm-cache blur gradient in a fresh process (net)
TARGET_W11 = 5.0            # seconds, cold W11 gradient in a fresh process (net)
TARGET_GROW = 5.0           # seconds, first minus second call at a larger size
NOTICE_GROW = 1.0           # seconds of the same difference worth counting in the notes

SMALL = 8                   # every size symbol at the warm-up call of section 4
COST_BUDGET = 5e7           # operations (tl.cost) allowed at the larger size of section 4
INPUT_BUDGET = 1e7          # input elements allowed at the larger size of section 4
LADDER = [1_000_000, 200_000, 50_000, 10_000, 4096, 2048, 1024, 512, 256, 128, 64, 32, 16]

CONFIG = {
    "full": dict(derive_reps=7, blur_reps=3, w11_reps=2, startup_reps=5, grow="all"),
    "quick": dict(derive_reps=2, blur_reps=2, w11_reps=1, startup_reps=3,
                  grow=["examples/blur.tl", "examples/fd_energy.tl",
                        "benchmarks/workloads/w11_arap.tl"]),
}


def log(msg: str) -> None:
    print(f"[compile_time {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def loadavg() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


# ====================================================================== workers
# Each worker is a self-contained script run with `python -c`, so that the same text runs
# against this checkout and against the baseline tree (PYTHONPATH decides which).  It prints
# one line `RESULT:<json>`.

# Section 1: derive every listed derivative once, in order, after a warm-up that imports the
# compiler's modules and builds the grammar.  Public API only.
DERIVE_WORKER = r'''
import gc, json, sys, time
spec = json.loads(open(sys.argv[1]).read())
import tensorlang as tl
warm = tl.parse("def warm(x: f64[n]) -> f64:\n    return sum[i](exp(x[i]) * x[i])\n", "<warm-up>")
tl.grad(warm["warm"], wrt="x").optimized_program()
tl.jvp(warm["warm"], wrt="x").optimized_program()
make = {"grad": tl.grad, "hessian": tl.hessian, "jvp": tl.jvp}
out = []
import os
parse_each = os.environ.get("TL_BENCH_PARSE_EACH") == "1"
if parse_each:
    import tensorlang.driver as _driver
for path, name, wrt, kind in spec["cases"]:
    if parse_each and hasattr(_driver, "_FRONT_ENDS"):
        _driver._FRONT_ENDS.clear()      # this derivation parses its file again
    gc.collect()
    t0 = time.perf_counter()
    try:
        fn = tl.load(path)[name]
        make[kind](fn, wrt=wrt).optimized_program()
        status = "ok"
    except tl.TLError as exc:
        status = "TLError: " + str(exc).strip().splitlines()[0][:120]
    except Exception as exc:  # a crash of one derivation must not lose the others
        status = f"{type(exc).__name__}: " + str(exc).strip().split(chr(10))[0][:120]
    out.append([time.perf_counter() - t0, status])
print("RESULT:" + json.dumps({"module": tl.__file__, "times": out}))
'''

# Sections 2-4, tensorlang side: import, load, grad, calls at given sizes.  `time.time()` at
# the end of the first call is compared with the parent's clock before the process started.
FIRST_CALL_WORKER = r'''
import time
start = time.time()
import json, sys
spec = json.loads(sys.argv[1])
t0 = time.perf_counter()
import tensorlang as tl
t1 = time.perf_counter()
f = tl.load(spec["path"])[spec["name"]]
t2 = time.perf_counter()
g = tl.grad(f, wrt=spec["wrt"])
t3 = time.perf_counter()
import numpy as np

def make_inputs(sizes, seed):
    if spec["inputs"] == "blur":
        n = sizes["h"]
        return {"img": np.random.default_rng(seed).standard_normal((n, n))}
    if spec["inputs"] == "arap":
        # pixels displaced a little from a regular grid, small rotations, a disc-shaped mask
        n = sizes["h"]
        rng = np.random.default_rng(seed)
        rows, cols = np.mgrid[0:n, 0:n]
        inside = (rows - n / 2) ** 2 + (cols - n / 2) ** 2 < (0.45 * n) ** 2
        return {"ux": cols + 0.3 * rng.standard_normal((n, n)),
                "uy": rows + 0.3 * rng.standard_normal((n, n)),
                "theta": 0.2 * rng.standard_normal((n, n)), "M": inside}
    from tensorlang.inputs import random_inputs
    return random_inputs(g, {}, sizes, seed=seed)

excluded = 0.0
calls = []
end_first = None
for k, sizes in enumerate(spec["calls"]):
    a = time.perf_counter()
    args = make_inputs(sizes, k)
    b = time.perf_counter()
    excluded += b - a if end_first is None else 0.0
    out = g(**args)
    c = time.perf_counter()
    calls.append(c - b)
    if end_first is None:
        end_first = time.time()
        # which tier answered (backend/tiers.py): no kernels yet means the interpreter
        tier = "interpreter" if getattr(g, "_kernels", None) is None else "kernels"
    if spec.get("save") and k == 0:
        np.save(spec["save"], np.asarray(out))
from tensorlang.backend.tiers import wait_for_builds
wait_for_builds()
ready = time.time() - excluded
print("RESULT:" + json.dumps({"start": start, "end": end_first - excluded, "import": t1 - t0,
                              "load": t2 - t1, "grad": t3 - t2, "calls": calls,
                              "tier": tier, "ready": ready, "module": tl.__file__}))
'''

# Section 2, JAX side: the blur energy of examples/blur.tl in jax.numpy.
JAX_WORKER = r'''
import time
start = time.time()
import json, sys
spec = json.loads(sys.argv[1])
t0 = time.perf_counter()
import jax
jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp
t1 = time.perf_counter()

def blur(img):
    # 3-tap [1, 2, 1] / 4 along rows, then along columns, zero outside the image
    row = jnp.pad(img, ((0, 0), (1, 1)))
    bx = 0.25 * (row[:, :-2] + 2.0 * img + row[:, 2:])
    col = jnp.pad(bx, ((1, 1), (0, 0)))
    return 0.25 * (col[:-2, :] + 2.0 * bx + col[2:, :])

def blur_energy(img):
    return jnp.sum(blur(img) ** 2)

dfdx = jax.jit(jax.grad(blur_energy))
t2 = time.perf_counter()
import numpy as np
a = time.perf_counter()
img = np.random.default_rng(0).standard_normal((spec["n"], spec["n"]))
b = time.perf_counter()
out = dfdx(img).block_until_ready()
c = time.perf_counter()
end = time.time() - (b - a)
np.save(spec["save"], np.asarray(out))
print("RESULT:" + json.dumps({"start": start, "end": end, "import": t1 - t0,
                              "load": 0.0, "grad": t2 - t1, "calls": [c - b],
                              "module": jax.__version__}))
'''

def run_worker(python: str, code: str, args: list[str], env: dict, cwd, timeout: float):
    """(result dict, wall seconds, parent's time.time() at the start)."""
    stamp = time.time()
    t = time.perf_counter()
    proc = subprocess.run([python, "-c", code, *args], env=env, cwd=str(cwd),
                          capture_output=True, text=True, timeout=timeout)
    wall = time.perf_counter() - t
    line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT:")), None)
    if proc.returncode != 0 or line is None:
        tail = (proc.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise RuntimeError(f"worker failed (exit {proc.returncode}): {tail[:300]}")
    return json.loads(line[len("RESULT:"):]), wall, stamp


def worker_env(tree: Path | None, **extra) -> dict:
    env = dict(os.environ)
    env.pop("TENSORLANG_BACKEND", None)     # the default backend, as a user gets it
    if tree is not None:
        env["PYTHONPATH"] = str(tree) + (os.pathsep + env["PYTHONPATH"]
                                         if env.get("PYTHONPATH") else "")
    env.update({k: str(v) for k, v in extra.items()})
    return env


def startup_time(python: str, reps: int) -> float:
    """Best wall time of `python -c pass` (start to exit), in the workers' environment."""
    best = float("inf")
    for _ in range(reps):
        t = time.perf_counter()
        subprocess.run([python, "-c", "pass"], env=worker_env(None), cwd=str(ROOT), check=True,
                       capture_output=True, timeout=60)
        best = min(best, time.perf_counter() - t)
    return best


# ====================================================================== what to derive
@dataclass
class Fn:
    path: str           # relative to the repository root
    name: str
    wrt: str | None     # the first f64 parameter
    scalar: bool        # returns one f64
    sizes: list[str]    # size symbols of the parameters


_DEF = re.compile(r"def\s+(\w+)\s*\((.*)\)\s*(?:->\s*(.*?))?\s*:\s*$")
_PARAM = re.compile(r"(\w+)\s*:\s*(f64|i64|bool)\s*(?:\[([^\]]*)\])?")


def functions() -> tuple[list[Fn], list[str]]:
    """Every function of examples/*.tl and benchmarks/workloads/*.tl, read from the `def`
    line of its `.source` (the documented round-trip text), and files that do not load."""
    import tensorlang as tl
    files = sorted((ROOT / "examples").glob("*.tl")) + \
        sorted((ROOT / "benchmarks" / "workloads").glob("*.tl"))
    out, broken = [], []
    for path in files:
        rel = str(path.relative_to(ROOT))
        try:
            mod = tl.load(str(path))
        except tl.TLError as exc:
            broken.append(f"{rel}: {str(exc).splitlines()[0]}")
            continue
        for name in mod.names:
            head = next(ln for ln in mod[name].source.splitlines() if ln.startswith("def "))
            m = _DEF.match(head)
            params = _PARAM.findall(m.group(2))
            wrt = next((p for p, elem, _ in params if elem == "f64"), None)
            sizes = []
            for _, _, dims in params:
                for d in (x.strip() for x in dims.split(",") if x.strip()):
                    if not d.isdigit() and d not in sizes:
                        sizes.append(d)
            out.append(Fn(rel, name, wrt, (m.group(3) or "").strip() == "f64", sizes))
    return out, broken


def derivations(fns: list[Fn]) -> list[tuple[str, str, str, str]]:
    cases = []
    for f in fns:
        if f.wrt is None:
            continue
        for kind in (("grad", "hessian") if f.scalar else ()) + ("jvp",):
            cases.append((f.path, f.name, f.wrt, kind))
    return cases


# ====================================================================== section 1
@dataclass
class Section:
    title: str
    lines: list[str] = field(default_factory=list)
    load: str = ""


def extract_baseline(commit: str, into: Path) -> str:
    full = subprocess.run(["git", "rev-parse", "--verify", commit + "^{commit}"], cwd=ROOT,
                          capture_output=True, text=True, check=True).stdout.strip()
    archive = subprocess.run(["git", "archive", "--format=tar", full], cwd=ROOT,
                             capture_output=True, check=True).stdout
    into.mkdir(parents=True)
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return full


def head_commit() -> str:
    rev = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], cwd=ROOT,
                         capture_output=True, text=True).stdout.strip() or "unknown"
    dirty = subprocess.run(["git", "status", "--porcelain", "--", "tensorlang"], cwd=ROOT,
                           capture_output=True, text=True).stdout.strip()
    return rev + (" (tensorlang/ has uncommitted changes)" if dirty else "")


def section_derive(cfg, baseline: str, fns, tmp: Path, results: dict) -> Section:
    sec = Section("1. Derivation time")
    cases = [(str(ROOT / p), n, w, k) for p, n, w, k in derivations(fns)]
    labels = [f"{k} {p}:{n} wrt {w}" for p, n, w, k in derivations(fns)]
    spec_file = tmp / "derive.json"
    spec_file.write_text(json.dumps({"cases": cases}))
    old_tree = tmp / "baseline"
    full = extract_baseline(baseline, old_tree)
    sides = {"baseline": old_tree, "current": ROOT, "current, parsing each time": ROOT}
    # The on-disk program cache is off on that side too: otherwise a file's checked
    # module comes back from its pickle after the first derivation instead of being parsed.
    side_env = {"current, parsing each time": {"TL_BENCH_PARSE_EACH": "1",
                                               "TENSORLANG_PROGRAM_CACHE": "0"}}
    best = {s: [float("inf")] * len(cases) for s in sides}
    status = {s: ["not run"] * len(cases) for s in sides}
    modules = {}
    for r in range(cfg["derive_reps"]):
        for side, tree in sides.items():
            log(f"[1] derivations, {side}, repeat {r + 1}/{cfg['derive_reps']} (load {loadavg()})")
            cache = tempfile.mkdtemp(prefix="tl-derive-cache-", dir=tmp)
            res, wall, _ = run_worker(sys.executable, DERIVE_WORKER, [str(spec_file)],
                                      worker_env(tree, TENSORLANG_CACHE_DIR=cache,
                                                 **side_env.get(side, {})), tree, 3600)
            shutil.rmtree(cache, ignore_errors=True)
            modules[side] = res["module"]
            for i, (t, st) in enumerate(res["times"]):
                best[side][i] = min(best[side][i], t)
                status[side][i] = st
    for side, tree in sides.items():
        if not Path(modules[side]).resolve().is_relative_to(Path(tree).resolve()):
            raise RuntimeError(f"the {side} worker imported {modules[side]}, not the {side} tree")

    both = [i for i in range(len(cases)) if status["baseline"][i] == "ok" == status["current"][i]]
    tot_old = sum(best["baseline"][i] for i in both)
    tot_new = sum(best["current"][i] for i in both)
    ratio = tot_old / tot_new if tot_new else float("nan")
    each = "current, parsing each time"
    both_each = [i for i in both if status[each][i] == "ok"]
    tot_each = sum(best[each][i] for i in both_each)
    ratio_each = (sum(best["baseline"][i] for i in both_each) / tot_each
                  if tot_each else float("nan"))
    grads = [i for i in range(len(cases)) if cases[i][3] == "grad" and status["current"][i] == "ok"]
    slow_grads = [i for i in grads if best["current"][i] > TARGET_GRAD]
    ok_new = [i for i in range(len(cases)) if status["current"][i] == "ok"]
    slow_all = [i for i in ok_new if best["current"][i] > TARGET_GRAD]
    errors = {s: [i for i in range(len(cases)) if status[s][i] != "ok"] for s in sides}
    kinds = {k: sum(1 for c in cases if c[3] == k) for k in ("grad", "hessian", "jvp")}
    results.update(derive_ratio=ratio, derive_ratio_parse_each=ratio_each, slow_grads=len(slow_grads), n_grads=len(grads),
                   max_grad=max((best["current"][i] for i in grads), default=0.0))

    sec.lines += [
        f"{len(cases)} derivations ({kinds['grad']} gradients, {kinds['hessian']} Hessians, "
        f"{kinds['jvp']} jvps) of the functions of examples/*.tl and benchmarks/workloads/*.tl, "
        "each with respect to the function's first f64 parameter. A derivation is "
        "`tl.load(path)[name]`, then `tl.grad` / `tl.hessian` / `tl.jvp`, then "
        "`.optimized_program()` (no kernel is generated or compiled). Each side runs all of them "
        "in one fresh process (after a warm-up derivation of an unrelated function, with a fresh "
        f"empty TENSORLANG_CACHE_DIR); the sides alternate for {cfg['derive_reps']} rounds "
        "(baseline, current, baseline, current, ...) and every derivation keeps its best time. "
        "The empty cache directory means no derivation is read from disk (the current side "
        "writes the programs it derives there, as a user's process does); within the process "
        "the current side remembers a file's checked module by its text, so only the first "
        "derivation of each file parses it.",
        "",
        f"- baseline: `{baseline}` = {full[:12]}, extracted with `git archive` into a temporary "
        "directory and imported through PYTHONPATH",
        f"- current: {head_commit()}",
        "",
        "| side | derivations measured | total (s) | gradients (s) | Hessians (s) | jvps (s) | "
        "derivations that raised |",
        "|---|---|---|---|---|---|---|",
        *[f"| {side} | {len(both)} | {sum(best[side][i] for i in both):.2f} | "
          + " | ".join(f"{sum(best[side][i] for i in both if cases[i][3] == k):.2f}"
                       for k in ("grad", "hessian", "jvp"))
          + f" | {len(errors[side])} |" for side in sides],
        "",
        f"**Ratio baseline / current: {ratio:.2f}x** (over the {len(both)} derivations that "
        "succeed on both sides).",
        "",
        f"**With every derivation parsing its file again** (the current side's in-process "
        f"front-end memo cleared before each and the on-disk program cache off, so each time "
        f"includes parse, checks and bounds "
        f"as the target defines derivation time): **{ratio_each:.2f}x**.",
        "",
        f"Current side: {len(slow_grads)} of {len(grads)} gradients take more than "
        f"{TARGET_GRAD} s (slowest {results['max_grad']:.3f} s); {len(slow_all)} of "
        f"{len(ok_new)} derivations of all kinds do.",
        "",
        "The 10 slowest derivations of the current side:",
        "",
        "| derivation | current (s) | baseline (s) | ratio |",
        "|---|---|---|---|",
    ]
    for i in sorted(ok_new, key=lambda i: -best["current"][i])[:10]:
        old = best["baseline"][i] if status["baseline"][i] == "ok" else None
        new = best["current"][i]
        olds = "" if old is None else f"{old:.3f}"
        ratio_s = "" if old is None else f"{old / new:.2f}"
        sec.lines.append(f"| {labels[i]} | {new:.3f} | {olds} | {ratio_s} |")
    for side in sides:
        for i in errors[side]:
            sec.lines.append(f"\n{side} raised on {labels[i]}: {status[side][i]}")
    appendix = ["| derivation | baseline (s) | current (s) | ratio | current status |",
                "|---|---|---|---|---|"]
    for i, lab in enumerate(labels):
        o = f"{best['baseline'][i]:.3f}" if status["baseline"][i] == "ok" else status["baseline"][i]
        n = f"{best['current'][i]:.3f}" if status["current"][i] == "ok" else ""
        rt = (f"{best['baseline'][i] / best['current'][i]:.2f}" if i in both else "")
        appendix.append(f"| {lab} | {o} | {n} | {rt} | {status['current'][i]} |")
    results["appendix"] = appendix
    return sec


# ====================================================================== sections 2 and 3
def jax_python(explicit: str | None) -> tuple[str | None, str]:
    candidates = [explicit] if explicit else [str(ROOT / ".venv-bench" / "bin" / "python"),
                                              sys.executable]
    for py in candidates:
        if py and Path(py).exists():
            probe = subprocess.run([py, "-c", "import jax; print(jax.__version__)"],
                                   capture_output=True, text=True)
            if probe.returncode == 0:
                return py, probe.stdout.strip()
    return None, "JAX is not installed in " + " or ".join(c for c in candidates if c)


def fresh_process(python, code, spec, env, cwd, timeout=900):
    res, wall, stamp = run_worker(python, code, [json.dumps(spec)], env, cwd, timeout)
    res["raw"] = res["end"] - stamp
    if "ready" in res:
        res["ready_raw"] = res["ready"] - stamp
    res["wall"] = wall
    return res


def fmt_run(label, runs, bare, n):
    """A table row: best raw and net time, with the in-process parts of the best run."""
    best = min(runs, key=lambda r: r["raw"])
    net = best["raw"] - bare
    each = ", ".join(f"{r['raw']:.2f}" for r in runs)
    tier = best.get("tier", "XLA")
    ready = f"{best['ready_raw'] - bare:.2f}" if "ready_raw" in best else "-"
    return (f"| {label} | {best['raw']:.2f} | {net:.2f} | {best['import']:.2f} | "
            f"{best['load'] + best['grad']:.2f} | {best['calls'][0]:.2f} | {tier} | {ready} | "
            f"{each} | {n} |"), net


def section_cold(cfg, tmp: Path, jax_py, jax_note, results: dict) -> Section:
    sec = Section("2. Cold and warm first gradient of blur_energy; 3. cold W11 gradient")
    reps = cfg["blur_reps"]
    log(f"[2] interpreter start-up (load {loadavg()})")
    bare_tl = startup_time(sys.executable, cfg["startup_reps"])
    bare_jax = startup_time(jax_py, cfg["startup_reps"]) if jax_py else None
    blur = {"path": str(ROOT / "examples" / "blur.tl"), "name": "blur_energy", "wrt": "img",
            "inputs": "blur", "calls": [{"h": 256, "w": 256}]}
    runs = {"cold": [], "warm": [], "kernels": [], "jax": []}
    for r in range(reps):
        log(f"[2] blur round {r + 1}/{reps} (load {loadavg()})")
        cache = Path(tempfile.mkdtemp(prefix="tl-cold-", dir=tmp))
        env = worker_env(ROOT, TENSORLANG_CACHE_DIR=cache / "tl", NUMBA_CACHE_DIR=cache / "numba")
        for which in ("cold", "warm"):
            spec = dict(blur, save=str(tmp / f"blur_{which}_{r}.npy"))
            runs[which].append(fresh_process(sys.executable, FIRST_CALL_WORKER, spec, env, ROOT))
        shutil.rmtree(cache, ignore_errors=True)
        # the first call compiled before it runs (one tier), as before the two tiers existed
        cache = Path(tempfile.mkdtemp(prefix="tl-cold-", dir=tmp))
        env = worker_env(ROOT, TENSORLANG_CACHE_DIR=cache / "tl", NUMBA_CACHE_DIR=cache / "numba",
                         TENSORLANG_TIERS=0)
        spec = dict(blur, save=str(tmp / f"blur_kernels_{r}.npy"))
        runs["kernels"].append(fresh_process(sys.executable, FIRST_CALL_WORKER, spec, env, ROOT))
        shutil.rmtree(cache, ignore_errors=True)
        if jax_py:
            env = worker_env(None, JAX_PLATFORMS="cpu")
            spec = {"n": 256, "save": str(tmp / f"blur_jax_{r}.npy")}
            runs["jax"].append(fresh_process(jax_py, JAX_WORKER, spec, env, tmp))
    ref = np.load(tmp / "blur_cold_0.npy")
    agree = []
    for which in ("warm", "kernels", "jax"):
        if runs[which]:
            other = np.load(tmp / f"blur_{which}_0.npy")
            agree.append(f"{which}: max |difference| / max |gradient| = "
                         f"{np.max(np.abs(other - ref)) / np.max(np.abs(ref)):.1e}")

    log(f"[3] W11 cold (load {loadavg()})")
    w11 = {"path": str(ROOT / "benchmarks" / "workloads" / "w11_arap.tl"), "name": "arap",
           "wrt": "ux", "inputs": "arap", "calls": [{"h": 256, "w": 256}]}
    w11_runs = []
    for r in range(cfg["w11_reps"]):
        cache = Path(tempfile.mkdtemp(prefix="tl-w11-", dir=tmp))
        env = worker_env(ROOT, TENSORLANG_CACHE_DIR=cache / "tl", NUMBA_CACHE_DIR=cache / "numba")
        w11_runs.append(fresh_process(sys.executable, FIRST_CALL_WORKER, w11, env, ROOT))
        shutil.rmtree(cache, ignore_errors=True)

    head = ["| run | raw (s) | net (s) | import (s) | load + grad (s) | first call (s) | "
            "first call ran on | kernels ready, net (s) | raw of each run (s) | runs |",
            "|---|---|---|---|---|---|---|---|---|---|"]
    row_cold, net_cold = fmt_run("tensorlang, cold cache", runs["cold"], bare_tl, reps)
    row_warm, net_warm = fmt_run("tensorlang, warm cache", runs["warm"], bare_tl, reps)
    row_kern, _ = fmt_run("tensorlang, cold cache, `TENSORLANG_TIERS=0`", runs["kernels"],
                          bare_tl, reps)
    rows = [row_cold, row_warm, row_kern]
    net_jax = None
    if runs["jax"]:
        row_jax, net_jax = fmt_run("JAX (`jax.jit(jax.grad(f))`)", runs["jax"], bare_jax, reps)
        rows.append(row_jax)
    row_w11, net_w11 = fmt_run("tensorlang W11 `arap` grad wrt ux, cold", w11_runs, bare_tl,
                               cfg["w11_reps"])
    results.update(blur_cold=net_cold, blur_warm=net_warm, blur_jax=net_jax, w11=net_w11)
    sec.lines += [
        "Each run is a fresh process. **raw** is the time from just before the process starts to "
        "the end of the first call (the gradient returned; `block_until_ready` for JAX), input "
        "generation excluded; **net** is raw minus a bare interpreter's start-up and exit "
        "(`python -c pass`), measured with the same interpreter: "
        f"{bare_tl:.3f} s for tensorlang's" + (f", {bare_jax:.3f} s for JAX's" if jax_py else "")
        + f" (best of {cfg['startup_reps']}). The table gives the best of the runs and the "
        "in-process parts of that run: `import` (tensorlang or jax + jax.numpy), `load + grad` "
        "(`tl.load` + `tl.grad`; `jax.jit(jax.grad(f))` for JAX), `first call` (generation, "
        "Numba compilation or cache load, and the run; tracing, XLA compilation and the run). "
        "On the default backend a first call runs on the interpreter while the kernels compile "
        "in a background thread (docs/api.md, *First calls*); `first call ran on` says which "
        "tier answered, and `kernels ready` is when the compiled kernels were ready for the "
        "next call (net, from the process start; the process waits for them before it exits). "
        "`TENSORLANG_TIERS=0` compiles before the first call runs, as every call did before "
        "the two tiers.",
        "",
        "- blur_energy of examples/blur.tl, gradient wrt `img`, on a 256 x 256 image. Cold: fresh "
        "empty TENSORLANG_CACHE_DIR and NUMBA_CACHE_DIR; warm: a second process with the "
        "directories the cold one filled (kernels, and the checked module and gradient program "
        "the cold run stored). Cold, warm and JAX runs alternate.",
        "- JAX: " + (f"{jax_note} from `{jax_py}`, `jax_enable_x64`, JAX_PLATFORMS=cpu, the same "
                     "separable [1, 2, 1] / 4 blur with zero padding (jnp.pad and slices), "
                     "sum of squares." if jax_py else jax_note),
        "- Gradients agree with the cold tensorlang one (" + "; ".join(agree) + ").",
        "- W11: benchmarks/workloads/w11_arap.tl `arap`, gradient wrt `ux` at h = w = 256 "
        "(the smallest size of the peers benchmark), a disc-shaped mask, fresh empty caches.",
        "",
        *head, *rows, row_w11,
    ]
    return sec


# ====================================================================== section 4
def pick_size(fn: Fn) -> tuple[int, float | None]:
    """The largest ladder size (for every size symbol) whose derivative cost and input size
    stay under the budgets, with the estimated operation count."""
    import tensorlang as tl
    try:
        g = tl.grad(tl.load(str(ROOT / fn.path))[fn.name], wrt=fn.wrt)
        cost = tl.cost(g)
    except Exception:
        return 200, None
    src = g.source.splitlines()
    head = _DEF.match(next(ln for ln in src if ln.startswith("def ")))
    params = _PARAM.findall(head.group(2))
    for n in LADDER:
        sizes = {s: n for s in fn.sizes}
        try:
            ops = float(cost.evaluate(**sizes))
        except Exception:
            return 200, None
        elems = 0
        for _, _, dims in params:
            k = 1
            for d in (x.strip() for x in dims.split(",") if x.strip()):
                k *= int(d) if d.isdigit() else n
            elems += k
        if ops <= COST_BUDGET and elems <= INPUT_BUDGET:
            return n, ops
    return LADDER[-1], None


def section_grow(cfg, fns, tmp: Path, results: dict) -> Section:
    sec = Section("4. Growing sizes")
    chosen = [f for f in fns if f.scalar and f.wrt is not None
              and (cfg["grow"] == "all" or f.path in cfg["grow"])]
    rows, flagged, worst, recompiles = [], 0, 0.0, 0
    for k, fn in enumerate(chosen):
        n, ops = pick_size(fn)
        log(f"[4] {k + 1}/{len(chosen)} {fn.path}:{fn.name} at {n} (load {loadavg()})")
        small = {s: SMALL for s in fn.sizes}
        big = {s: n for s in fn.sizes}
        spec = {"path": str(ROOT / fn.path), "name": fn.name, "wrt": fn.wrt, "inputs": "random",
                "calls": [small, big, big]}
        cache = Path(tempfile.mkdtemp(prefix="tl-grow-", dir=tmp))
        # kernels from the first call, so that the call at N shows any recompilation
        env = worker_env(ROOT, TENSORLANG_CACHE_DIR=cache / "tl", NUMBA_CACHE_DIR=cache / "numba",
                         TENSORLANG_TIERS=0)
        label = f"{fn.path}:{fn.name} wrt {fn.wrt}"
        try:
            res = fresh_process(sys.executable, FIRST_CALL_WORKER, spec, env, ROOT, timeout=600)
        except (RuntimeError, subprocess.TimeoutExpired) as exc:
            rows.append(f"| {label} | {n} | | | | | failed: {str(exc)[:150]} |")
            flagged += 1
            continue
        finally:
            shutil.rmtree(cache, ignore_errors=True)
        first_small, first_big, second_big = res["calls"]
        extra = first_big - second_big
        worst = max(worst, extra)
        recompiles += extra > NOTICE_GROW
        flag = extra > TARGET_GROW or first_big > TARGET_GROW
        flagged += flag
        rows.append(f"| {label} | {n} | {'' if ops is None else f'{ops:.1e}'} | "
                    f"{first_small:.2f} | {first_big:.3f} | {second_big:.3f} | "
                    f"{'**FLAG**' if flag else ''} |")
    results.update(grow_flagged=flagged, grow_cases=len(chosen), grow_worst=worst)
    sec.lines += [
        "Every scalar-valued function of examples/*.tl and benchmarks/workloads/*.tl"
        + ("" if cfg["grow"] == "all" else f" in {', '.join(cfg['grow'])} (--quick)")
        + ", gradient wrt its first f64 parameter, in a fresh process with empty caches and "
        "`TENSORLANG_TIERS=0` (every call runs the compiled kernels): a first "
        f"call with every size symbol {SMALL}, then a first call at a larger size N (every size "
        "symbol N: the largest of "
        f"{', '.join(str(x) for x in LADDER)} for which `tl.cost` of the gradient is at most "
        f"{COST_BUDGET:.0e} operations and the inputs at most {INPUT_BUDGET:.0e} elements; "
        "200 where the cost cannot be evaluated), then a second call at N. Inputs come from "
        "`tensorlang.inputs.random_inputs` (the CLI's seeded filler). A row is flagged when the "
        f"first call at N takes more than {TARGET_GROW:g} s longer than the second, or more than "
        f"{TARGET_GROW:g} s.",
        "",
        "| gradient | N | tl.cost at N | first call at 8 (s) | first call at N (s) | "
        "second call at N (s) | flag |",
        "|---|---|---|---|---|---|---|",
        *rows,
        "",
        f"{recompiles} of {len(chosen)} rows take more than {NOTICE_GROW:g} s longer at the first "
        f"call at N than at the second (a second compile, flagged or not); the largest "
        f"difference is {worst:.2f} s.",
    ]
    return sec


# ====================================================================== report
def verdict(ok: bool | None) -> str:
    return "not measured" if ok is None else ("met" if ok else "**not met**")


def render(sections, results, cfg, mode, command, started, elapsed, load0, jax_note) -> str:
    r = results
    targets = []
    if "derive_ratio" in r:
        each = r["derive_ratio_parse_each"]
        targets.append(("derivation total at least 5x faster than the baseline, every "
                        "derivation parsing its file",
                        f"{each:.2f}x ({r['derive_ratio']:.2f}x when a file's module is "
                        "remembered within the process)", verdict(each >= TARGET_SPEEDUP)))
        targets.append((f"no single gradient derivation over {TARGET_GRAD} s",
                        f"{r['slow_grads']} of {r['n_grads']} over (slowest {r['max_grad']:.3f} s)",
                        verdict(r["slow_grads"] == 0)))
    if "blur_cold" in r:
        jax = r["blur_jax"]
        targets.append(("cold blur_energy gradient (fresh process, net) at most JAX's",
                        f"{r['blur_cold']:.2f} s vs JAX " +
                        (f"{jax:.2f} s" if jax is not None else "(not installed)"),
                        verdict(None if jax is None else r["blur_cold"] <= jax)))
        targets.append((f"warm-cache blur_energy gradient (fresh process, net) at most "
                        f"{TARGET_WARM} s", f"{r['blur_warm']:.2f} s",
                        verdict(r["blur_warm"] <= TARGET_WARM)))
        targets.append((f"W11 gradient cold (fresh process, net) at most {TARGET_W11:g} s",
                        f"{r['w11']:.2f} s", verdict(r["w11"] <= TARGET_W11)))
    if "grow_cases" in r:
        targets.append((f"no first call at a larger size over {TARGET_GROW:g} s (after a call "
                        "at size 8)", f"{r['grow_flagged']} of {r['grow_cases']} flagged "
                        f"(largest first - second: {r['grow_worst']:.2f} s)",
                        verdict(r["grow_flagged"] == 0)))
    out = [
        "# Compile time: the targets of issue 9",
        "",
        f"Command: `{command}` ({mode} run), started {started:%Y-%m-%d %H:%M %Z}, took "
        f"{elapsed / 60:.1f} min. Machine: {platform.processor() or platform.machine()}, "
        f"{os.cpu_count()} logical CPUs, Python {platform.python_version()}, NumPy "
        f"{np.__version__}. Load average (1, 5, 15 min) at the start {load0}, at the end "
        f"{loadavg()}; per section below. The machine is shared with other work: compare the "
        "ratios measured side by side in this run rather than absolute times.",
        "",
        "## Targets",
        "",
        "| target | measured | result |",
        "|---|---|---|",
        *[f"| {a} | {b} | {c} |" for a, b, c in targets],
        "",
    ]
    for sec in sections:
        out += [f"## {sec.title}", "", f"Load average at the start and end of this section: "
                f"{sec.load}.", "", *sec.lines, ""]
    if "appendix" in r:
        out += ["## Appendix: every derivation", "", "Best time of each derivation on each "
                "side; a side that raised shows its error instead.", "", *r["appendix"], ""]
    return "\n".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true",
                    help="fewer repeats; growing sizes only for blur, fd_energy and W11")
    ap.add_argument("--baseline", default=DEFAULT_BASELINE,
                    help=f"commit to compare derivation times with (default {DEFAULT_BASELINE})")
    ap.add_argument("--out", help="where to write the table (default "
                                  "benchmarks/results/compile_time.md; a temporary directory "
                                  "with --quick)")
    ap.add_argument("--jax-python", help="a Python with jax installed (default "
                                         ".venv-bench/bin/python, then this interpreter)")
    ap.add_argument("--only", help="comma-separated sections to run (1, 2 for 2 and 3, 4)")
    args = ap.parse_args(argv)
    mode = "quick" if args.quick else "full"
    cfg = CONFIG[mode]
    only = {int(x) for x in args.only.split(",")} if args.only else {1, 2, 4}
    command = " ".join(["python -m benchmarks.compile_time", *(sys.argv[1:] if argv is None
                                                               else argv)])
    started = datetime.datetime.now().astimezone()
    load0 = loadavg()
    t0 = time.perf_counter()
    fns, broken = functions()
    for b in broken:
        log(f"does not load: {b}")
    jax_py, jax_note = jax_python(args.jax_python)
    results: dict = {}
    sections = []
    with tempfile.TemporaryDirectory(prefix="tl-compile-bench-") as tmpdir:
        tmp = Path(tmpdir)

        def run(make, *a):
            before = loadavg()
            sec = make(*a)
            sec.load = f"{before} -> {loadavg()}"
            sections.append(sec)

        if 1 in only:
            run(section_derive, cfg, args.baseline, fns, tmp, results)
        if 2 in only:
            run(section_cold, cfg, tmp, jax_py, jax_note, results)
        if 4 in only:
            run(section_grow, cfg, fns, tmp, results)
    text = render(sections, results, cfg, mode, command, started, time.perf_counter() - t0,
                  load0, jax_note)
    if broken:
        text += "\nFiles that do not load (left out): " + "; ".join(broken) + "\n"
    print(text)
    if args.out:
        out = Path(args.out)
    elif mode == "full":
        out = RESULTS / "compile_time.md"
    else:
        out = Path(tempfile.mkdtemp(prefix="tl-compile-time-")) / "compile_time-quick.md"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    log(f"written {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""ADBench's GMM, bundle adjustment and LSTM in tensorlang against JAX and PyTorch.

    python -m benchmarks.adbench                 # full run: results/adbench.md, adbench_*.png
    python -m benchmarks.adbench --quick         # the smallest instances, to a temporary directory
    python -m benchmarks.adbench --data DIR      # the ADBench inputs (default ../shared/adbench)
    python -m benchmarks.adbench --peer-python PATH   # the interpreter that has JAX and PyTorch
    python -m benchmarks.adbench --only gmm ba   # some problems

Protocol (that of benchmarks/peers, whose helpers this reuses).  float64 everywhere; one thread
for every tool by default (--threads; thread variables set and the process confined to that many
CPUs, since XLA's CPU runtime ignores its thread flags); every configuration (instance, tool, variant) runs in a fresh subprocess with
empty kernel caches.  Tensorlang runs under this interpreter; JAX and PyTorch under the one that
has them (this one when it does, else --peer-python or $ADBENCH_PEER_PYTHON).  **cold** is the
first call (building, derivation and compilation included); the objective is called first, so the
derivative's cold time is its own first call after that.  **warm** is the median of 5 samples (--repeats)
of back-to-back calls.  Values are compared with the NumPy reference (ref_numpy.py) and
derivatives with a reference derivative: NumPy's complex step where it is affordable, else for GMM a NumPy gradient derived by hand (ref_numpy.gmm_gradient_by_hand, itself checked against the complex step in the tests), else JAX's;
tensorlang's derivative is also compared with every peer's.  The error is max |a - b| / max |b|
per array (worst part); above 1e-9 the row says WRONG.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from benchmarks.peers.driver import child_env, cpu_busy_seconds, fmt_time, run_worker, wait_quiet

from . import data, ref_numpy

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "benchmarks" / "results"
TOLERANCE = 1e-9
MEMORY_LIMIT_MB = 16 * 1024

TOOLS = [("tensorlang", "main", "tensorlang"), ("tensorlang", "jvp15", "tensorlang (15 jvps)"),
         ("jax", "jit", "JAX jit"), ("torch", "eager", "PyTorch eager"),
         ("torch", "func", "torch.func")]
ONLY_FOR = {("tensorlang", "jvp15"): ("ba",)}   # rows that exist for some problems only
LABEL = {(t, v): lab for t, v, lab in TOOLS}
DERIVATIVE = {"gmm": "gradient in (alphas, means, icf)", "ba": "sparse Jacobian (CSR)",
              "lstm": "gradient in (main, extra)"}

CONFIG = {
    "full": dict(repeats=5, min_sample=0.05, timeout=300.0, quiet_wait=2.0),
    "quick": dict(repeats=5, min_sample=0.02, timeout=180.0, quiet_wait=0.0),
}


def log(msg: str):
    print(msg, file=sys.stderr, flush=True)


# ====================================================================== instances
@dataclass
class Instance:
    problem: str
    path: str
    name: str           # as in the tables
    size: float         # the x axis of the plots (GMM d K n, BA p, LSTM l c)
    load: dict


def instances(data_dir: Path, problem: str, mode: str, limits: dict) -> list[Instance]:
    out = []
    if problem == "gmm":
        for which in limits.get("gmm_sets") or ("1k", "2.5M"):
            for f in data.gmm_files(data_dir, which):
                d, k = (int(s[1:]) for s in f.stem.split("_")[1:3])
                n = 1000 if which == "1k" else 2_500_000
                if mode == "quick" and not (which == "1k" and (d, k) in ((2, 5), (10, 25))):
                    continue
                if limits.get("gmm_only") and f"d{d}K{k}" not in limits["gmm_only"]:
                    continue
                if which == "2.5M" and (d > limits["gmm_big_d"] or k > limits["gmm_big_k"]):
                    continue
                out.append(Instance("gmm", str(f), f"{which} d{d} K{k}", d * k * n, {}))
    elif problem == "ba":
        for f in data.ba_files(data_dir):
            num = int(f.stem.split("_")[0][2:])
            if num > (2 if mode == "quick" else limits["ba_max"]) or num < limits.get("ba_min", 1):
                continue
            p = int(f.stem.split("_p")[1])
            out.append(Instance("ba", str(f), f"ba{num} (p = {p})", p, {}))
    elif problem == "lstm":
        for f in data.lstm_files(data_dir):
            l, c = (int(s[1:]) for s in f.stem.split("_")[1:3])
            if mode == "quick" and (l, c) != (2, 1024):
                continue
            out.append(Instance("lstm", str(f), f"l{l} c{c}", l * c, {}))
    return out


# ====================================================================== interpreters
def can_import(python: str, module: str) -> bool:
    try:
        return subprocess.run([python, "-c", f"import {module}"], capture_output=True,
                              timeout=120).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


def interpreters(peer_python: str | None) -> dict[str, tuple[str | None, str]]:
    """tool -> (interpreter, "") or (None, why it is skipped)."""
    out = {}
    out["tensorlang"] = ((sys.executable, "") if can_import(sys.executable, "tensorlang")
                         else (None, "tensorlang is not importable by this interpreter"))
    candidates = [p for p in (peer_python, os.environ.get("ADBENCH_PEER_PYTHON"), sys.executable,
                              str(ROOT / ".venv-bench" / "bin" / "python")) if p]
    for tool in ("jax", "torch"):
        found = next((p for p in candidates if Path(p).exists() and can_import(p, tool)), None)
        out[tool] = (found, "") if found else (
            None, f"`{tool}` not importable by {', '.join(candidates)} (pip install -e '.[bench]' "
                  "or give --peer-python)")
    return out


def revision() -> str:
    """The commit measured: $ADBENCH_COMMIT (a run from an exported copy), else git's HEAD."""
    if os.environ.get("ADBENCH_COMMIT"):
        return os.environ["ADBENCH_COMMIT"]
    got = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                         text=True)
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT,
                           capture_output=True, text=True).stdout.strip()
    return (got.stdout.strip() + (" + uncommitted changes" if dirty else "")) or "?"


def tool_versions(pythons: dict, threads: int) -> dict:
    code = ("import importlib.metadata as m, sys\n"
            "for p in sys.argv[1:]:\n"
            "    try: print(p, m.version(p))\n"
            "    except m.PackageNotFoundError: pass\n")
    out = {"threads per tool": str(threads)}
    for tool, pkgs in (("tensorlang", ("numba",)), ("jax", ("jax", "jaxlib")), ("torch", ("torch",))):
        python = pythons[tool][0]
        if python is None:
            continue
        got = subprocess.run([python, "-c", code, *pkgs], capture_output=True, text=True).stdout
        out[tool if tool != "tensorlang" else "Numba"] = (
            ", ".join(" ".join(ln.split()) for ln in got.splitlines()) + f" ({python})")
    return out


def tl_missing(problem: str) -> str:
    from .tl_impl import missing
    return missing(problem)


# ====================================================================== one configuration
@dataclass
class Row:
    instance: str
    problem: str
    size: float
    tool: str
    variant: str
    status: str = "ok"            # ok | wrong | timeout | memory | error | skipped
    detail: str = ""
    cold_obj: float | None = None
    cold_der: float | None = None
    warm_obj: float | None = None
    warm_der: float | None = None
    peak_mb: float | None = None
    base_mb: float | None = None
    err_value: float | None = None
    err_deriv: float | None = None
    err_peers: float | None = None
    bg: float | None = None
    out: str = ""

    @property
    def label(self) -> str:
        return LABEL[(self.tool, self.variant)]


def tool_env(cache_root: Path, threads: int) -> dict:
    """peers' child environment (float64, empty caches, PYTHONPATH) with `threads` threads."""
    env = child_env(cache_root)
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
        env[var] = str(threads)
    env["XLA_FLAGS"] = (f"--xla_cpu_multi_thread_eigen={'true' if threads > 1 else 'false'} "
                        f"intra_op_parallelism_threads={threads}")
    return env


def run_config(row: Row, inst: Instance, python: str, cfg: dict, workdir: Path) -> Row:
    if cfg["quiet_wait"] > 0:
        wait_quiet(cfg["quiet_wait"])
    cache_root = Path(tempfile.mkdtemp(prefix="cache-", dir=workdir))
    row.out = str(workdir / f"{inst.problem}-{Path(inst.path).stem}-{row.tool}-{row.variant}.npz")
    job = dict(problem=inst.problem, file=inst.path, load=inst.load, tool=row.tool,
               variant=row.variant, repeats=cfg["repeats"], min_sample=cfg["min_sample"],
               threads=cfg["threads"], first_cpu=cfg.get("first_cpu", 0), out=row.out)
    errfile = open(cache_root / "stderr.txt", "w+")
    busy0, t_start = cpu_busy_seconds(), time.perf_counter()
    ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    def should_stop(now, rss, messages):
        if rss > MEMORY_LIMIT_MB:
            return "memory"
        if now - t_start > cfg["timeout"]:
            return "timeout"
        return None

    proc, messages, stopped, max_rss = run_worker(
        [python, "-m", "benchmarks.adbench", "--worker", json.dumps(job)],
        tool_env(cache_root, cfg["threads"]), errfile, should_stop)
    wall = time.perf_counter() - t_start
    row.bg = None
    by_stage = {m["stage"]: m for m in messages}
    if "cold" in by_stage:
        row.cold_obj, row.cold_der = by_stage["cold"]["cold_obj"], by_stage["cold"]["cold_der"]
    if "ready" in by_stage:
        row.base_mb = by_stage["ready"]["base_mb"]
    if "warm" in by_stage:
        row.warm_der = by_stage["warm"]["warm_der"]
    if "done" in by_stage:
        m = by_stage["done"]
        row.warm_obj, row.warm_der, row.peak_mb = m["warm_obj"], m["warm_der"], m["peak_mb"]
    elif stopped == "memory":
        row.status, row.detail, row.peak_mb = "memory", f"stopped at {max_rss / 1024:.1f} GB", max_rss
    elif stopped == "timeout":
        row.status = "timeout"
        row.detail = f"stopped after {cfg['timeout']:.0f} s" + (
            " (the warm repeats of the objective)" if row.warm_der else
            " (warm repeats)" if row.cold_der else " (before the first derivative returned)")
    else:
        errfile.seek(0)
        tail = [ln.strip() for ln in errfile.read().splitlines() if ln.strip()]
        row.status = "error"
        row.detail = "failed: " + (tail[-1][:300] if tail else f"exit status {proc.returncode}")
    errfile.close()
    shutil.rmtree(cache_root, ignore_errors=True)
    ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    own = (ru1.ru_utime - ru0.ru_utime) + (ru1.ru_stime - ru0.ru_stime)
    row.bg = max(0.0, (cpu_busy_seconds() - busy0 - own) / wall) if wall > 0 else None
    return row


# ====================================================================== correctness
def rel_err(a: np.ndarray, b: np.ndarray) -> float:
    if a.shape != b.shape:
        return float("inf")
    scale = float(np.max(np.abs(b))) if b.size else 0.0
    return float(np.max(np.abs(a - b))) / (scale or 1.0) if a.size else 0.0


def parts(npz, prefix: str) -> dict:
    return {k[len(prefix):]: npz[k] for k in npz.files if k.startswith(prefix)}


def compare(got: dict, ref: dict) -> float:
    """Worst relative error over the parts; a CSR matrix must have the same pattern."""
    if set(got) != set(ref):
        return float("inf")
    if "indptr" in ref:
        for k in ("indices", "indptr", "shape"):
            if not np.array_equal(got[k], ref[k]):
                return float("inf")
        return rel_err(got["data"], ref["data"])
    return max((rel_err(np.asarray(got[k], float), np.asarray(ref[k], float)) for k in ref),
               default=0.0)


def numpy_reference(inst: Instance, with_derivative: bool):
    """(value parts, derivative parts or None, how the derivative was computed)."""
    obj = data.load(inst.problem, inst.path, **inst.load)
    if inst.problem == "gmm":
        args = (obj.alphas, obj.means, obj.icf, obj.x, obj.gamma, obj.m)
        value = {"p0": np.array(ref_numpy.gmm_objective(*args))}
        # the complex step costs one objective per parameter
        nparam = obj.icf.size + obj.means.size + obj.alphas.size
        if with_derivative and nparam * obj.n * obj.k * obj.d ** 2 < 2e8:
            g = ref_numpy.gmm_gradient(*args)
            return value, {f"p{i}": a for i, a in enumerate(g)}, "NumPy complex step"
        if with_derivative:
            g = ref_numpy.gmm_gradient_by_hand(*args)
            return value, {f"p{i}": a for i, a in enumerate(g)}, "NumPy, derived by hand"
    elif inst.problem == "ba":
        r, w = ref_numpy.ba_residuals(obj.cams, obj.X, obj.w, obj.feats, obj.obs)
        value = {"p0": r, "p1": w}
        if with_derivative:
            J, dw = ref_numpy.ba_jacobian_blocks(obj.cams, obj.X, obj.w, obj.feats, obj.obs)
            A = ref_numpy.ba_csr(J, dw, obj.obs, obj.n, obj.m)
            return value, dict(data=A.data, indices=A.indices, indptr=A.indptr,
                               shape=np.array(A.shape)), "NumPy complex step"
    else:
        args = (obj.main_params, obj.extra_params, obj.state, obj.sequence)
        value = {"p0": np.array(ref_numpy.lstm_objective(*args))}
        if with_derivative and obj.main_params.size * obj.c * obj.layers < 3e5:
            g = ref_numpy.lstm_gradient(*args)
            return value, {f"p{i}": a for i, a in enumerate(g)}, "NumPy complex step"
    return value, None, ""


def check_instance(inst: Instance, rows: list[Row], cheap_ref: bool) -> str:
    """Fill err_value / err_deriv / err_peers; returns how the derivative reference was made."""
    value, dref, how = numpy_reference(inst, cheap_ref)
    loaded = {}
    for r in rows:
        if r.status == "ok" and Path(r.out).exists():
            with np.load(r.out) as z:
                loaded[(r.tool, r.variant)] = (parts(z, "value_"), parts(z, "deriv_"))
    ref_key = None
    if dref is None:
        for key in (("jax", "jit"), ("torch", "eager"), ("torch", "func")):
            if key in loaded:
                dref, how, ref_key = loaded[key][1], LABEL[key], key
                break
    for r in rows:
        key = (r.tool, r.variant)
        if key not in loaded:
            continue
        v, d = loaded[key]
        r.err_value = compare(v, value)
        if dref is not None and key != ref_key:
            r.err_deriv = compare(d, dref)
        if r.tool == "tensorlang":
            others = [compare(d, loaded[k][1]) for k in loaded if k[0] != "tensorlang"]
            r.err_peers = max(others) if others else None
        worst = max((e for e in (r.err_value, r.err_deriv, r.err_peers) if e is not None), default=0.0)
        if not worst <= TOLERANCE:
            r.status, r.detail = "wrong", f"WRONG: relative error {worst:.2e}"
    for r in rows:
        if r.out and Path(r.out).exists():
            os.unlink(r.out)
    return how or "none"


# ====================================================================== report
def fmt_err(e) -> str:
    return "" if e is None else f"{e:.1e}"


def fmt_mb(r: Row) -> str:
    if r.peak_mb is None:
        return ""
    delta = f" (Δ {r.peak_mb - r.base_mb:,.0f})" if r.base_mb is not None else ""
    return f"{r.peak_mb:,.0f}{delta}".replace(",", " ")


def summary(rows: list[Row]) -> list[str]:
    """The issue's targets, judged at the largest instance where tensorlang and the peer ran."""
    out = ["| problem | target | measured | met |", "|---|---|---|---|"]
    for problem in ("gmm", "lstm", "ba"):
        tl_rows = [r for r in rows if r.problem == problem and r.tool == "tensorlang"
                   and r.variant == "main" and r.status == "ok"]
        if not tl_rows:
            ran = any(r.problem == problem for r in rows)
            why = ("tensorlang did not run (" + (next(
                (r.detail for r in rows if r.problem == problem and r.tool == "tensorlang"),
                "no instance")) + ")") if ran else "not run"
            out.append(f"| {problem.upper()} | (as below, when it runs) | {why} | no |")
            continue
        big = max(tl_rows, key=lambda r: r.size)
        peers = [r for r in rows if r.instance == big.instance and r.tool != "tensorlang"
                 and r.status == "ok"]
        if problem in ("gmm", "lstm"):
            # at the largest instance JAX ran too (it may stop at its memory limit earlier)
            jax_ok = {r.instance: r for r in rows if r.problem == problem and r.tool == "jax"
                      and r.status == "ok"}
            both = [r for r in tl_rows if r.instance in jax_ok]
            if both:
                at = max(both, key=lambda r: r.size)
                ratio = at.warm_der / jax_ok[at.instance].warm_der
                beyond = ("" if at is big else f" (the largest instance JAX ran; it did not "
                          f"finish {big.instance})")
                out.append(f"| {problem.upper()} | gradient <= 1.0x JAX jit (warm) | "
                           f"{ratio:.2f}x at {at.instance}{beyond} | "
                           f"{'yes' if ratio <= 1.0 else '**no**'} |")
            dr = big.warm_der / big.warm_obj
            out.append(f"| {problem.upper()} | gradient/objective <= 4 | {dr:.2f} at {big.instance} "
                       f"| {'yes' if dr <= 4 else '**no**'} |")
        else:
            if peers:
                best = min(peers, key=lambda r: r.warm_der)
                ratio = big.warm_der / best.warm_der
                out.append(f"| BA | Jacobian <= 1.0x the best peer (warm) | {ratio:.2f}x "
                           f"{best.label} at {big.instance} | {'yes' if ratio <= 1.0 else '**no**'} |")
            fits, linear = [], None
            for key in [("tensorlang", "main")] + [(t, v) for t, v, _ in TOOLS if t != "tensorlang"]:
                pts = [(r.size, r.peak_mb - r.base_mb) for r in rows if r.problem == "ba"
                       and (r.tool, r.variant) == key and r.status == "ok"
                       and r.peak_mb is not None and r.base_mb is not None]
                if len(pts) >= 3:
                    p_, mb = np.array(pts).T
                    slope, icpt = np.polyfit(p_, mb, 1)
                    resid = float(np.max(np.abs(mb - (slope * p_ + icpt))))
                    if key[0] == "tensorlang":
                        linear = resid <= 0.1 * float(np.max(mb))
                    fits.append(f"{LABEL[key]} {slope * 2 ** 20 / 1e3:.1f} kB per observation + "
                                f"{icpt:.0f} MB (worst residual {resid:.0f} MB)")
            if fits:
                out.append("| BA | memory linear in p (least-squares fit Δ = a p + b of the peak "
                           "RSS above the loaded instance, all instances run) | " + "; ".join(fits)
                           + f" | {'' if linear is None else 'yes' if linear else '**no**'} |")
    return out


NOTES = """Notes on the targets.

- **Machine load.** The runs of 2026-12-01 shared the 2 cores with five other sessions' builds,
  tests and benchmarks: `uptime` load averages were 7 to 11 throughout, and the **load** column
  (other processes' CPU use while the row ran) is mostly 1.5 to 2 of 2 cores. Millisecond times
  (GMM 1k) moved by 2x between neighbouring runs; compare the rows of one instance, which ran
  one after the other.
- **GMM objective.** gmm.tl computes E of the README with both logsumexps in the stable form
  (`logsumexp[k]`), the packed factor read through an i64 table. The one term it does not
  compute is the Wishart prior's constant `multigammaln(n'/2, D)`, the multivariate log-gamma
  (the language has no log-gamma builtin): the harness computes it in Python (`math.lgamma`,
  `ref_numpy.multigammaln`) and passes it as the argument `mgl`; it does not depend on the
  parameters, so the gradient is unaffected.
- **GMM at 2.5M points: row groups.** Every n x K x D intermediate of the objective and the
  gradient (x - mu, z, its adjoint, the means' adjoint) used to be materialised: 1 GB each at
  d10 K5, faulted in fresh on every call (the gradient's system time was 1.44 s of 3.85 s CPU),
  and at K D of about 200 tensorlang exceeded the 16 GB limit. The Numba backend now runs
  consecutive statements over the points as one loop over the points (`tensorlang/backend/rows.py`,
  docs/architecture.md "Row groups"): an intermediate that only that loop reads is a buffer of
  one point (K x D values) per thread, and the sums over the points (the gradients in alphas,
  means and L) are added into per-thread partial sums in place. It is chosen per call when the
  contracted intermediates would take 32 MB or more (the 1k rows are unchanged). Measured
  at n = 250 000 (the 2.5M files' first 250 000 points, one thread, the least CPU time of four
  calls, `rows.MIN_BYTES` set below and above the intermediates' size): d10 K5 objective
  47 ms (89 ms statement by statement), gradient 123 ms (254 ms); d2 K25 objective 60 ms
  (148 ms), gradient 166 ms (392 ms). `python -m benchmarks.adbench.profile gmm
  .../2.5M/gmm_d10_K5.txt --n 250000`: gradient 125 ms CPU, 99% of it the row group's loop. In the
  table tensorlang's gradient peaks at 249 MB at d2 K25, 401 MB at d10 K5 and 592 MB at d20 K10
  (JAX's at 8.0 and 7.5 GB, and over the 16 GB limit at d20 K10). What is left of the ratio is the
  operation count: `6*D^2*K*n + 20*D*K*n` against the objective's `2*D^2*K*n + 10*D*K*n`
  (reverse mode of `z = Q_k (x_i - mu_k)` recomputes that product and forms `Q_k^T z_bar` and
  `z_bar (x_i - mu_k)^T` per point).
- **GMM gradient/objective** (target 4): met at every 2.5M instance run, 1.99 (d32 K10) to
  3.13 (d2 K5); 2.39 at d32 K50, the largest; it was 5.18 at d10 K5 before the row groups.
  Each ratio is of two rows of one tensorlang process, objective then gradient.
- **GMM gradient against JAX at 2.5M**: the summary's comparison is at d2 K25 (0.31x JAX, was
  1.17x); at d10 K5 0.17x (JAX's process peaked at 7.5 GB; the run of 2026-12-01 02:05 had it
  killed for lack of memory, and the low-load run of 2026-11-30 measured tensorlang's gradient
  then at 0.91x JAX's). At d2 K5 and d2 K10, where tensorlang took 1.40x and 1.26x JAX's time
  before (n x K x 2 kernels with inner loops of two elements, where XLA fuses the whole
  computation), it took 0.45x and 0.43x. JAX's times in these loaded runs were up to 3.4x
  those of the earlier ones (d10 K5: 16.4 s against 4.75 s); each ratio compares two rows of
  one run, the tools one after the other on the same CPU. With the intermediates kept to one
  point, tensorlang's gradient reads x once and writes nothing of size n, where XLA's compiled
  gradient still writes and reads n x K x D arrays.
- **GMM at 1000 points**: tensorlang's gradient took 0.38x to 1.21x JAX's time on the d20, d32
  and d64 files (measured with temporaries reused from the heap; 0.38x to 0.86x on all but d32
  K5) and 0.38x to 3.2x on the d2 and d10 files (measured before that change, commit 84c5a1b;
  millisecond rows under load 10-11 are noisy: compare the rows of one instance). A call runs about twenty kernels and four NumPy products with the
  intermediates in memory, where XLA compiles the whole gradient into one fused computation; at
  d2 K5 (0.25 ms CPU per gradient) the driver's own Python and allocation take 10%, the stable
  logsumexp's branchy loop (one exp per entry) 13%; at d2 K200 the n x K x 2 kernels run inner
  loops of two elements.
- **GMM at 2.5M points, the instances run**: the replicate-mode file's point is repeated n times
  and every tool computes n points. The runs of 2026-12-01 05:36-06:16 UTC (load 1-3) added
  d2 K50, d10 K10, d20 K5 and d32 K5: tensorlang's gradient took 0.20x to 0.33x JAX jit's time
  where JAX ran (d2 K50, d10 K10, d20 K5), with peaks of 0.24-0.8 GB against JAX's 14-16 GB.
  From d10 K25 (and at d32 K5) JAX runs out of memory and PyTorch stops at 16 GB or asks for
  more than the machine has, so tensorlang's gradient has no peer to compare with there; those
  eight instances (d10 K25, d10 K50, d20 K10, d20 K25, d20 K50, d32 K10, d32 K25, d32 K50)
  were run again on 2026-12-01 07:08-08:40 UTC (load 3-7, two warm samples, one at d32 K50)
  with a NumPy gradient derived by hand as the reference (ref_numpy.gmm_gradient_by_hand,
  chunked batched products; the tests check it against the complex step): tensorlang's
  gradients agree with it to 4.0e-11 to 5.8e-11 and its values with NumPy's to 7e-12 to
  4.7e-11. Every 2.5M instance with d <= 32, K <= 50 is in the table; at d32 K50 tensorlang's
  gradient took 82 s with a peak of 0.8 GB, where JAX asked for 96 GB and PyTorch for 32 GB.
- **LSTM gradient/objective** (2.72 at l4 c4096, was 4.38; the gradient 0.47x JAX's): the reverse step used to recompute every gate's
  sigmoid and tanh(s) in the derivative factors and in each adjoint they multiply; the
  simplifier now stores a builtin of one tensor that several statements evaluate
  (`store_repeated_calls`), so each gate is evaluated once, in the forward step, and read by
  the reverse step. `tl.cost` of the gradient went from `142*L*(T - 1)*b` to `126*L*(T - 1)*b`
  (against the objective's `33*L*(T - 1)*b`, now inside the certificate's 4x, no TLCostWarning;
  the LSTM rows were measured at commit 16befb5, whose gradient counted `124*L*(T - 1)*b`: the
  rule has since been made to run after factoring, which the LSTM did not need).
  Profile (`python -m benchmarks.adbench.profile lstm .../lstm_l4_c4096.txt`, CPU): objective 15
  ms (the forward steps 91%), gradient 25 ms (forward steps, which also store the gates, 59%;
  reverse steps 33%; the parameter sums 5%).
- **BA**: the Jacobian is judged at the largest instance run (ba14); at ba11 tensorlang's
  Jacobian took 2.1x JAX's time and at ba6 and ba7 1.5-1.6x PyTorch eager's, at the others it
  was the fastest or within a few percent. Single measurements of the two vjps varied up to 3x
  between runs on the loaded machine, so the rows of one instance are the comparison to read.
  torch.func's Jacobian timed out (300 s) at ba14. Instances ba15-ba20 (3 to 9 million
  observations) were not run for lack of time. The BA rows were measured before row groups
  (see the GMM notes), which also take BA's per-observation residuals and the vjp of `project`
  (every intermediate is a few values per observation): at ba10, one thread, the least CPU
  time of three calls, the residuals took 17 ms against 64 ms statement by statement and the
  Jacobian 227 ms against 473 ms (residuals the same bit for bit, Jacobians within 5e-17
  relative); the table has not been re-measured."""


def render(rows: list[Row], runs: dict, refs: dict, skipped: dict) -> str:
    from benchmarks.peers.driver import machine_header
    out = ["# ADBench: GMM, bundle adjustment and LSTM against JAX and PyTorch", "",
           "Inputs: ADBench's own files, read where they are. Runs, from the repository root:", ""]
    by_problem = {p: run_list(m, p, [asdict(r) for r in rows])
                  for p, m in runs.items() if not p.startswith("_")}
    for problem, metas in by_problem.items():
        for meta in metas:
            which = meta.get("instances") or []
            out.append(f"- {problem.upper()} ({', '.join(which) if which else 'no instance'}): "
                       f"{meta['started']}, commit {meta.get('commit', '?')}, {meta['mode']} mode, "
                       f"`{meta['command']}`, {meta['minutes']:.1f} min (data `{meta['data']}`)")
    mode = next((m[0]["mode"] for m in by_problem.values() if m), "full")
    out += ["", "| machine | |", "|---|---|"]
    out += [f"| {k} | {v} |" for k, v in machine_header()
            if k not in ("peers", "Numba", "tensorlang")]
    out += [f"| {k} | {v} |" for k, v in runs.get("_versions", {}).items()]
    out += ["", "Protocol " + " ".join(__doc__.split("Protocol ", 1)[1].split("\n\n")[0].split()),
            "**load** is the mean number of CPU cores busy with other processes while the row ran.", ""]
    if skipped:
        out += ["Not run: " + "; ".join(f"{t}: {why}" for t, why in skipped.items()), ""]
    out += ["## Targets", ""] + summary(rows) + [""] + [NOTES, ""]
    for problem, title in (("gmm", "GMM"), ("ba", "Bundle adjustment"), ("lstm", "LSTM")):
        prow = [r for r in rows if r.problem == problem]
        if not prow:
            continue
        out += [f"## {title}: objective and {DERIVATIVE[problem]}", "",
                "Times in ms. **ratio** is derivative/objective (warm, same tool); "
                "**err** the relative error of the value (vs NumPy) and of the derivative (vs the "
                "reference named under the table; for tensorlang also the worst against the peers).", "",
                "| instance | tool | objective warm | derivative warm | ratio | objective cold | "
                "derivative cold | peak RSS MB (Δ) | err value | err deriv | load | status |",
                "|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for r in prow:
            ratio = (f"{r.warm_der / r.warm_obj:.2f}" if r.warm_der and r.warm_obj else "")
            errd = ("(reference)" if r.err_deriv is None and r.status == "ok" and
                    refs.get(f"{problem}:{r.instance}") == r.label else fmt_err(r.err_deriv)) + (f" / {fmt_err(r.err_peers)}" if r.err_peers is not None
                                           else "")
            out.append(f"| {r.instance} | {r.label} | {fmt_time(r.warm_obj)} | {fmt_time(r.warm_der)} "
                       f"| {ratio} | {fmt_time(r.cold_obj)} | {fmt_time(r.cold_der)} | {fmt_mb(r)} "
                       f"| {fmt_err(r.err_value)} | {errd} | {'' if r.bg is None else f'{r.bg:.1f}'} | {r.status if r.status != 'ok' else ''}"
                       f"{(' ' + r.detail) if r.detail else ''} |")
        cost = runs.get("_costs", {}).get(problem)
        if cost:
            out += ["", "Operation counts of tensorlang's programs (`tl.cost`, symbolic in the sizes):", ""]
            out += [f"- {what}: `{poly}`" for what, poly in cost]
        out += ["", "Derivative references: " + "; ".join(
            f"{k}: {v}" for k, v in refs.items() if k.startswith(problem + ":")), ""]
        if (RESULTS / f"adbench_{problem}.png").exists() or mode == "full":
            out += [f"![{title}](adbench_{problem}.png)", ""]
    return "\n".join(out) + "\n"


def plot(rows: list[Row], outdir: Path) -> list[str]:
    """Per problem: warm objective, warm derivative and their ratio against the size (log-log),
    one line per tool.  Returns the files written."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    xlabel = {"gmm": "d x K x n", "ba": "p (observations)", "lstm": "l x c"}
    written = []
    for problem in ("gmm", "ba", "lstm"):
        prow = [r for r in rows if r.problem == problem and r.status == "ok"]
        if not prow:
            continue
        fig, axes = plt.subplots(1, 3, figsize=(17, 4.8))
        for i, (tool, variant, lab) in enumerate(TOOLS):
            if tool == "tensorlang" and variant != "main":
                continue
            for ax, get in zip(axes, (lambda r: r.warm_obj, lambda r: r.warm_der,
                                      lambda r: r.warm_der / r.warm_obj)):
                pts = sorted((r.size, get(r)) for r in prow if (r.tool, r.variant) == (tool, variant))
                if pts:
                    xs, ys = zip(*pts)
                    ax.loglog(xs, ys, marker="os^vD"[i], linestyle="", color=f"C{i}", label=lab,
                              markersize=6 if tool == "tensorlang" else 4)
        for ax, title in zip(axes, ("objective, warm (s)", f"{DERIVATIVE[problem]}, warm (s)",
                                    "derivative / objective")):
            ax.set_xlabel(xlabel[problem])
            ax.set_title(title, fontsize=10)
            ax.grid(True, which="both", alpha=0.3)
            ax.legend(fontsize=8)
        fig.suptitle(f"ADBench {problem.upper()}: time against problem size (log-log)", fontsize=11)
        fig.tight_layout()
        path = outdir / f"adbench_{problem}.png"
        fig.savefig(path, dpi=100)
        plt.close(fig)
        written.append(str(path))
    return written


# ====================================================================== main
def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.adbench")
    ap.add_argument("--quick", action="store_true", help="the smallest instances, temp directory")
    ap.add_argument("--data", help="the ADBench data directory (default ../shared/adbench)")
    ap.add_argument("--peer-python", help="interpreter with JAX and PyTorch")
    ap.add_argument("--only", nargs="+", choices=("gmm", "ba", "lstm"))
    ap.add_argument("--out", help="directory for adbench.md and the plots")
    ap.add_argument("--merge", action="store_true",
                    help="keep the rows of the problems not run from the existing adbench.json")
    ap.add_argument("--render", action="store_true",
                    help="only rewrite adbench.md and the plots from the recorded adbench.json")
    ap.add_argument("--first-cpu", type=int, default=0,
                    help="confine the tools to CPUs first-cpu .. first-cpu + threads - 1")
    ap.add_argument("--repeats", type=int, help="warm samples per configuration (default 5)")
    ap.add_argument("--threads", type=int, default=1,
                    help="threads per tool (default 1: the machine is shared)")
    ap.add_argument("--ba-max", type=int, default=10, help="largest BA instance number (full)")
    ap.add_argument("--ba-min", type=int, default=1, help="smallest BA instance number")
    ap.add_argument("--timeout", type=float,
                    help="seconds one configuration may take (default 300 full, 180 quick)")
    ap.add_argument("--gmm-big-d", type=int, default=10, help="largest d of the 2.5M GMM files")
    ap.add_argument("--gmm-big-k", type=int, default=25, help="largest K of the 2.5M GMM files")
    ap.add_argument("--gmm-only", help="GMM shapes to run, e.g. d2K5,d10K25 (default: all)")
    ap.add_argument("--gmm-sets", default="1k,2.5M", help="GMM file sets to run (default 1k,2.5M)")
    args = ap.parse_args(argv)
    mode = "quick" if args.quick else "full"
    if args.render:
        outdir = Path(args.out) if args.out else RESULTS
        rec = json.loads((outdir / "adbench.json").read_text())
        rows = [Row(**d) for d in rec["rows"]]
        make_plots(rows, outdir, [p for p in (args.peer_python, os.environ.get("ADBENCH_PEER_PYTHON"))
                                  if p])
        (outdir / "adbench.md").write_text(render(rows, rec["runs"], rec["refs"], {}))
        return 0
    cfg = dict(CONFIG[mode], threads=args.threads, first_cpu=args.first_cpu)
    if args.repeats:
        cfg["repeats"] = args.repeats
    if args.timeout:
        cfg["timeout"] = args.timeout
    try:
        data_dir = data.find_data_dir(args.data)
    except data.DataError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    pythons = interpreters(args.peer_python)
    skipped = {t: why for t, (p, why) in pythons.items() if p is None}
    for t, why in skipped.items():
        log(f"skipping {t}: {why}")
    limits = dict(ba_max=args.ba_max, ba_min=args.ba_min, gmm_big_d=args.gmm_big_d, gmm_big_k=args.gmm_big_k,
                  gmm_only=set(args.gmm_only.split(",")) if args.gmm_only else None,
                  gmm_sets=tuple(args.gmm_sets.split(",")))
    problems = args.only or ["gmm", "ba", "lstm"]
    workdir = Path(tempfile.mkdtemp(prefix="adbench-"))
    outdir = Path(args.out) if args.out else (workdir if args.quick else RESULTS)
    outdir.mkdir(parents=True, exist_ok=True)
    started = datetime.datetime.now(datetime.timezone.utc)
    t_start = time.perf_counter()
    rows: list[Row] = []
    refs: dict[str, str] = {}
    def save(rows: list[Row], refs: dict) -> list[Row]:
        """The record (adbench.json and adbench.md) with the rows measured so far: written
        after every instance, so a run stopped early keeps what it measured."""
        meta = dict(started=started.strftime("%Y-%m-%d %H:%M UTC"), mode=mode,
                    command="python -m benchmarks.adbench" + (
                        " " + " ".join(argv or sys.argv[1:]) if (argv or sys.argv[1:]) else ""),
                    minutes=(time.perf_counter() - t_start) / 60, commit=revision())
        runs = {p: [dict(meta, data=str(data_dir),
                         instances=list(dict.fromkeys(r.instance for r in rows if r.problem == p)))]
                for p in problems}
        runs["_versions"] = versions
        runs["_costs"] = cost_polys
        old_json = outdir / "adbench.json"
        if (args.merge or saved) and old_json.exists():
            rows, refs, runs = merge(json.loads(old_json.read_text()), rows, refs, runs)
        order = {name: i for i, name in enumerate(n for p in ("gmm", "ba", "lstm")
                                                  for n in instance_order(data_dir, p))}
        rows = sorted(rows, key=lambda r: (["gmm", "ba", "lstm"].index(r.problem),
                                           order.get(r.instance, len(order)), r.size))
        old_json.write_text(json.dumps(dict(rows=[asdict(r) for r in rows], refs=refs, runs=runs),
                                       indent=1))
        (outdir / "adbench.md").write_text(render(rows, runs, refs, skipped))
        saved.append(True)
        return rows, runs, refs

    versions = tool_versions(pythons, cfg["threads"])
    cost_polys = {}
    if pythons["tensorlang"][0]:
        from .tl_impl import costs
        cost_polys = {p: costs(p) for p in problems}
    saved: list = []
    for problem in problems:
        stopped: dict[tuple, tuple[float, str]] = {}   # row -> (size it was stopped at, why)
        for inst in instances(data_dir, problem, mode, limits):
            irows = []
            for tool, variant, _ in TOOLS:
                if problem not in ONLY_FOR.get((tool, variant), (problem,)):
                    continue
                row = Row(inst.name, problem, inst.size, tool, variant)
                python = pythons[tool][0]
                if python is None:
                    continue
                if tool == "tensorlang" and tl_missing(problem):
                    row.status, row.detail = "skipped", tl_missing(problem)
                elif (tool, variant) in stopped and inst.size >= stopped[(tool, variant)][0]:
                    row.status, row.detail = "skipped", stopped[(tool, variant)][1]
                else:
                    run_config(row, inst, python, cfg, workdir)
                    if row.status in ("timeout", "memory"):
                        stopped[(tool, variant)] = (inst.size, f"not run: stopped at {inst.name}")
                irows.append(row)
            refs[f"{problem}:{inst.name}"] = check_instance(inst, irows, cheap_ref=True)
            for r in irows:
                log(f"  {problem} {inst.name:<22} {r.label:<14} "
                    + (f"obj {fmt_time(r.warm_obj):>9} ms  der {fmt_time(r.warm_der):>9} ms  "
                       f"cold {r.cold_obj or 0:6.2f}+{r.cold_der or 0:6.2f} s  "
                       f"peak {r.peak_mb or 0:7.0f} MB  err {fmt_err(r.err_value)}/"
                       f"{fmt_err(r.err_deriv)}/{fmt_err(r.err_peers)}"
                       if r.status == "ok" else f"{r.status}: {r.detail}"))
            rows += irows
            save(rows, refs)
    rows, runs, refs = save(rows, refs)
    make_plots(rows, outdir, [pythons["jax"][0], pythons["torch"][0]])
    (outdir / "adbench.md").write_text(render(rows, runs, refs, skipped))
    log(f"wrote {outdir / 'adbench.md'}")
    if outdir.resolve() != workdir.resolve():
        shutil.rmtree(workdir, ignore_errors=True)
    return 0 if all(r.status != "wrong" for r in rows) else 1


def instance_order(data_dir: Path, problem: str) -> list[str]:
    """The instance names of `problem` in the tables' order (that of a full run)."""
    limits = dict(ba_max=10 ** 6, gmm_big_d=10 ** 6, gmm_big_k=10 ** 6, gmm_only=None)
    return [i.name for i in instances(data_dir, problem, "full", limits)]


def run_list(meta, problem: str, rows: list[dict]) -> list[dict]:
    """A problem's runs as a list of metas, each naming the instances it measured (a record
    written before runs were merged by instance holds one meta for all of the problem's rows)."""
    if isinstance(meta, list):
        return meta
    return [dict(meta, instances=list(dict.fromkeys(r["instance"] for r in rows
                                                    if r["problem"] == problem)))]


def merge(old: dict, rows: list[Row], refs: dict, runs: dict):
    """This run's rows, references and run records over the recorded ones, by instance: an
    instance measured now replaces its recorded rows; every other recorded row is kept with the
    record of the run that measured it."""
    now = {(r.problem, r.instance) for r in rows}
    kept = [d for d in old["rows"] if (d["problem"], d["instance"]) not in now]
    refs = {k: v for k, v in old["refs"].items() if tuple(k.split(":", 1)) not in now} | refs
    merged = {"_versions": runs["_versions"],
              "_costs": old["runs"].get("_costs", {}) | runs.get("_costs", {})}
    for problem in ("gmm", "ba", "lstm"):
        metas = []
        if problem in old["runs"]:
            for m in run_list(old["runs"][problem], problem, old["rows"]):
                left = [i for i in m["instances"] if (problem, i) not in now]
                if left:
                    metas.append(dict(m, instances=left))
        metas += runs.get(problem, [])
        if metas:
            merged[problem] = metas
    return [Row(**d) for d in kept] + rows, refs, merged


def make_plots(rows: list[Row], outdir: Path, others: list):
    """Plots with this interpreter's matplotlib, else with another interpreter's."""
    try:
        plot(rows, outdir)
        return
    except ImportError:
        pass
    for python in others:
        if python and can_import(python, "matplotlib"):
            subprocess.run([python, "-m", "benchmarks.adbench", "--plot",
                            str(outdir / "adbench.json"), str(outdir)], cwd=ROOT,
                           env=dict(os.environ, PYTHONPATH=str(ROOT)))
            return
    log("matplotlib is not installed: no plots")


def plot_main(json_path: str, outdir: str) -> int:
    rows = [Row(**d) for d in json.loads(Path(json_path).read_text())["rows"]]
    plot(rows, Path(outdir))
    return 0

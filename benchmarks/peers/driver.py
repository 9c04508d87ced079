"""tensorlang against JAX, PyTorch, NumPy and Numba: fifteen workloads, each a sweep of sizes.

    python -m benchmarks.peers                   # full run: benchmarks/results/peers.md, W*.png
    python -m benchmarks.peers --quick           # fewer, smaller sizes (< 10 min), to a temp dir
    python -m benchmarks.peers --only W3 W7      # some workloads (W5 or W5a both work)

Protocol.  float64 everywhere (JAX_ENABLE_X64=1).  Two threads for every system
(NUMBA_NUM_THREADS, OMP_NUM_THREADS, OPENBLAS_NUM_THREADS, MKL_NUM_THREADS = 2,
torch.set_num_threads(2), XLA_FLAGS for two intra-op threads).  Every configuration (case,
size, system) runs in a fresh subprocess with fresh, empty kernel caches (tensorlang, Numba,
Inductor), so its cold time is the first call including compilation; the warm time is the median
of >= 5 samples.  Each derivative is checked against a NumPy reference (hand-derived) to 1e-8
relative (max |error| / max |reference|) before any time is kept.  A configuration that runs
past 60 s (after its imports) or past 16 GB of resident memory is stopped, and the system is
not run at the larger sizes of that case.
"""
from __future__ import annotations

import argparse
import datetime
import importlib.metadata
import importlib.util
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from . import spec
from .spec import CASES

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "benchmarks" / "results"
TIMEOUT = 60.0
IMPORT_GRACE = 90.0          # imports and input building, before the 60 s clock starts
MEMORY_LIMIT_MB = 16 * 1024
THREADS = 2
TARGET_ORDER = 10.0
TARGET_CONSTANT = 1.25
# with --tensorlang-commit, tensorlang is imported from a copy of that commit (so edits made to
# the working tree while the benchmark runs do not reach its subprocesses)
SNAPSHOT = {"dir": "", "rev": ""}
# OpenBLAS's kernels in the workers: "detect" removes an inherited OPENBLAS_CORETYPE, so that
# OpenBLAS picks its kernels for this CPU as it does by default (a machine that sets the
# variable for every process may hold NumPy's and tensorlang's products to older kernels than
# the CPU has; JAX and PyTorch bring their own); "inherit" keeps the environment as it is
BLAS_CORE = {"mode": "detect", "inherited": os.environ.get("OPENBLAS_CORETYPE", "")}

CONFIG = {
    # quick: one size per case, no slow extra tensorlang rows (optimize=False), no waiting for a
    # quiet machine, and one Inductor cache shared by the run's torch.compile rows
    "full": dict(repeats=7, min_sample=0.05, compile_sizes=None, quiet_wait=3.0,
                 extra_tl_rows=True, shared_inductor=False),
    "quick": dict(repeats=5, min_sample=0.01, compile_sizes=1, quiet_wait=0.0,
                  extra_tl_rows=False, shared_inductor=True, compile_forward=False),
}

# (system, variant) -> the label in tables and legends; the order is the order of rows
LABELS = {
    ("tensorlang", "main"): "tensorlang",
    ("tensorlang", "hessian"): "tensorlang (tl.hessian)",
    ("tensorlang", "natural"): "tensorlang (as written)",
    ("tensorlang", "naive"): "tensorlang (optimize=False)",
    ("tljax", "main"): "tensorlang via JAX",
    ("jax", "jit"): "JAX jit",
    ("jax", "conv"): "JAX jit (lax.conv)",
    ("torch", "eager"): "PyTorch eager",
    ("torch", "func"): "torch.func",
    ("torch", "compile"): "torch.compile",
    ("torch", "nn"): "PyTorch nn.RNN",
    ("numpy", "hand"): "NumPy (hand-derived)",
    ("numpy", "scaled"): "NumPy (hand-derived, scaled)",
    ("numba", "hand"): "Numba (hand-written)",
}
AD_PEERS = {("jax", "jit"), ("jax", "conv"), ("torch", "eager"), ("torch", "func"), ("torch", "compile"),
            ("torch", "nn")}
PACKAGES = {"tensorlang": "numba", "tljax": "jax", "jax": "jax", "torch": "torch",
            "numpy": "numpy", "numba": "numba"}


def log(msg: str):
    print(msg, file=sys.stderr, flush=True)


# ====================================================================== one configuration
@dataclass
class Result:
    key: str
    size: object
    system: str
    variant: str
    formulation: str
    status: str = "ok"            # ok | timeout | memory | wrong | error | skipped | n/a
    detail: str = ""
    cold: float | None = None
    warm: float | None = None
    forward: float | None = None
    peak_mb: float | None = None
    base_mb: float | None = None
    err: float | None = None
    wall: float = 0.0
    bg: float | None = None       # CPU cores busy with other processes during the run (mean)

    @property
    def label(self) -> str:
        return LABELS[(self.system, self.variant)]


def child_env(cache_root: Path, inductor_dir: Path | None = None) -> dict:
    env = dict(os.environ)
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                "NUMBA_NUM_THREADS"):
        env[var] = str(THREADS)
    if BLAS_CORE["mode"] == "detect":
        env.pop("OPENBLAS_CORETYPE", None)
    env["JAX_ENABLE_X64"] = "1"
    env["JAX_PLATFORMS"] = "cpu"
    env["XLA_FLAGS"] = (env.get("XLA_FLAGS", "") + " --xla_cpu_multi_thread_eigen=true "
                        f"intra_op_parallelism_threads={THREADS}").strip()
    for var, sub in (("TENSORLANG_CACHE_DIR", "tl"), ("NUMBA_CACHE_DIR", "numba"),
                     ("TORCHINDUCTOR_CACHE_DIR", "inductor"), ("TRITON_CACHE_DIR", "triton")):
        env[var] = str(cache_root / sub)
    if inductor_dir is not None:
        env["TORCHINDUCTOR_CACHE_DIR"] = str(inductor_dir)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (SNAPSHOT["dir"], str(ROOT),
                                                    env.get("PYTHONPATH", "")) if p)
    env["PYTHONWARNINGS"] = "ignore"
    return env


def vm_rss_mb(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def cpu_busy_seconds() -> float:
    """CPU seconds spent busy (all cores, all processes) since boot, from /proc/stat."""
    with open("/proc/stat") as fh:
        vals = [int(v) for v in fh.readline().split()[1:]]
    idle = vals[3] + (vals[4] if len(vals) > 4 else 0)
    return (sum(vals[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def wait_quiet(max_wait: float, threshold: float = 0.5):
    """Wait (up to max_wait s) until other processes use less than `threshold` cores over a
    half-second window; returns their last measured use."""
    t_end = time.perf_counter() + max_wait
    while True:
        b0, t0 = cpu_busy_seconds(), time.perf_counter()
        time.sleep(0.5)
        used = (cpu_busy_seconds() - b0) / (time.perf_counter() - t0)
        if used < threshold or time.perf_counter() > t_end:
            return used


def run_worker(cmd: list, env: dict, errfile, should_stop):
    """Run a benchmark worker in its own session (stderr to errfile) and collect the
    JSON messages it prints on lines starting with "@@ ".  Every 50 ms
    `should_stop(now, rss_mb, messages)` may name a reason to stop it (its whole
    session is killed).  Returns (the process, the messages, the reason or None, the
    largest resident memory seen, MB)."""
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=errfile,
                            text=True, start_new_session=True)
    messages: list[dict] = []

    def reader():
        for line in proc.stdout:
            if line.startswith("@@ "):
                try:
                    messages.append(json.loads(line[3:]))
                except json.JSONDecodeError:
                    pass

    th = threading.Thread(target=reader, daemon=True)
    th.start()
    stopped, max_rss = None, 0.0
    while proc.poll() is None:
        time.sleep(0.05)
        rss = vm_rss_mb(proc.pid)
        max_rss = max(max_rss, rss)
        stopped = should_stop(time.perf_counter(), rss, messages)
        if stopped:
            try:
                os.killpg(proc.pid, 9)   # the worker's own session: it and its helpers
            except ProcessLookupError:
                pass
            proc.wait()
            break
    th.join(timeout=5)
    return proc, messages, stopped, max_rss


def run_config(res: Result, cfg: dict, ref_paths: list, fwd_ref, workdir: Path) -> Result:
    if cfg["quiet_wait"] > 0:
        wait_quiet(cfg["quiet_wait"])
    busy0, ru0 = cpu_busy_seconds(), resource.getrusage(resource.RUSAGE_CHILDREN)
    cache_root = Path(tempfile.mkdtemp(prefix="cache-", dir=workdir))
    job = dict(key=res.key, size=res.size, system=res.system, variant=res.variant,
               ref=ref_paths, fwd_ref=fwd_ref, repeats=cfg["repeats"],
               min_sample=cfg["min_sample"], threads=THREADS, snapshot=SNAPSHOT["dir"],
               skip_forward=(res.variant == "compile" and not cfg.get("compile_forward", True)))
    errfile = open(cache_root / "stderr.txt", "w+")
    t_start = time.perf_counter()
    ready_at = None
    forward_phase = False

    def should_stop(now, rss, messages):
        nonlocal ready_at, forward_phase
        if ready_at is None and any(m["stage"] == "ready" for m in messages):
            ready_at = now
        if not forward_phase and any(m["stage"] == "warm" for m in messages):
            # the derivative is measured; the forward call (timed for deriv/fwd, and compiled
            # first where the system compiles) gets a 60 s allowance of its own
            forward_phase, ready_at = True, now
        if rss > MEMORY_LIMIT_MB:
            return "memory"
        if ready_at is not None and now - ready_at > TIMEOUT:
            return "timeout"
        if ready_at is None and now - t_start > IMPORT_GRACE + TIMEOUT:
            return "timeout"
        return None

    proc, messages, stopped, max_rss = run_worker(
        [sys.executable, "-m", "benchmarks.peers", "--worker", json.dumps(job)],
        child_env(cache_root, cfg.get("inductor_dir")), errfile, should_stop)
    res.wall = time.perf_counter() - t_start
    ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    child_cpu = (ru1.ru_utime - ru0.ru_utime) + (ru1.ru_stime - ru0.ru_stime)
    res.bg = max(0.0, (cpu_busy_seconds() - busy0 - child_cpu) / res.wall)
    by_stage = {m["stage"]: m for m in messages}
    if "cold" in by_stage:
        res.cold = by_stage["cold"]["cold"]
    if "ready" in by_stage:
        res.base_mb = by_stage["ready"]["base_mb"]
    if "warm" in by_stage:
        res.warm = by_stage["warm"]["warm"]
    if stopped == "memory":
        res.status, res.detail = "memory", f"stopped at {max_rss / 1024:.1f} GB > 16 GB"
        res.peak_mb = max_rss
    elif stopped == "timeout" and forward_phase:
        res.detail = "forward not timed: it passed 60 s (its compilation included)"
        res.peak_mb = max_rss
    elif stopped == "timeout":
        res.status = "timeout"
        res.detail = ("timeout > 60 s" + (" in the forward calls (deriv/fwd not measured)"
                                          if forward_phase else
                                          " during the warm repeats" if res.cold else
                                          " before the first call returned"))
        res.peak_mb = max_rss
    elif "wrong" in by_stage:
        m = by_stage["wrong"]
        res.status, res.err = "wrong", m["err"]
        res.detail = f"WRONG VALUE: relative error {m['err']:.2e}" + (
            f", forward {m['fwd_err']:.2e}" if m.get("fwd_err") is not None else "")
        res.cold = res.warm = None
    elif "done" in by_stage:
        m = by_stage["done"]
        res.warm, res.forward, res.peak_mb, res.err = m["warm"], m["forward"], m["peak_mb"], m["err"]
    else:
        errfile.seek(0)
        tail = [ln.strip() for ln in errfile.read().splitlines() if ln.strip()]
        res.status = "error"
        if proc.returncode is not None and proc.returncode < 0:
            import signal
            sig = signal.Signals(-proc.returncode).name
            res.detail = f"failed: the process died with {sig}" + (
                " after the first derivative call returned" if res.cold else "")
        else:
            res.detail = "failed: " + (tail[-1][:300] if tail else
                                       f"exit status {proc.returncode}")
        res.cold = None
    errfile.close()
    shutil.rmtree(cache_root, ignore_errors=True)
    return res


# ====================================================================== the sweep
def available_systems() -> dict[str, str]:
    """system -> "" when importable, else the reason it is skipped."""
    out = {}
    for system, pkg in PACKAGES.items():
        if importlib.util.find_spec(pkg) is None:
            out[system] = f"`{pkg}` is not installed (pip install -e '.[bench]')"
        else:
            out[system] = ""
    return out


def rows_of(key: str, avail: dict) -> list[tuple[str, str, str]]:
    """(system, variant, formulation) of every row of a case, for the installed systems."""
    out = []
    for system, modname in (("tensorlang", "sys_tl"), ("tljax", "sys_tljax"), ("jax", "sys_jax"),
                            ("torch", "sys_torch"), ("numpy", "sys_numpy"),
                            ("numba", "sys_numba")):
        if avail[system]:
            continue
        mod = __import__(f"benchmarks.peers.{modname}", fromlist=["rows"])
        for variant, form in mod.rows(key):
            out.append((system, variant, form))
    return out


def save_reference(key: str, size, workdir: Path):
    inp = spec.inputs(key, size)
    ref = spec.reference(key, size, inp)
    paths = []
    for i, part in enumerate(ref):
        p = workdir / f"ref-{key}-{size}-{i}.npy"
        # (np.ascontiguousarray makes a scalar part, such as a value, 1-d)
        np.save(p, np.ascontiguousarray(part) if np.ndim(part) else np.asarray(part))
        paths.append(str(p))
    fwd = spec.forward_reference(key, size, inp)
    fwd_ref = float(fwd) if np.ndim(fwd) == 0 else None
    return paths, fwd_ref


def run_case(key: str, mode: str, avail: dict, workdir: Path) -> list[Result]:
    case = CASES[key]
    cfg = dict(CONFIG[mode])
    if cfg["shared_inductor"]:
        cfg["inductor_dir"] = workdir / "inductor-shared"
    sizes = case.sizes(mode == "quick")
    rows = rows_of(key, avail)
    results: list[Result] = []
    stopped: dict[tuple, str] = {}
    for si, size in enumerate(sizes):
        ref_paths, fwd_ref = save_reference(key, size, workdir)
        for system, variant, form in rows:
            res = Result(key, size, system, variant, form)
            if system == "tensorlang" and variant != "main" and not cfg["extra_tl_rows"]:
                continue
            if (system, variant) in stopped:
                res.status, res.detail = "skipped", f"not run: {stopped[(system, variant)]}"
                results.append(res)
                continue
            if (variant == "compile" and cfg["compile_sizes"] is not None
                    and si >= cfg["compile_sizes"]):
                res.status, res.detail = "n/a", "quick mode: torch.compile at the smallest size only"
                results.append(res)
                continue
            this_fwd = None if (key == "W6" and system == "tensorlang" and variant == "hessian") \
                else fwd_ref
            run_config(res, cfg, ref_paths, this_fwd, workdir)
            if res.status in ("timeout", "memory"):
                stopped[(system, variant)] = f"stopped at {case.size_name} = " \
                                             f"{spec.size_label(case, size)} ({res.detail})"
            log(f"  {key} {spec.size_label(case, size):>8} {res.label:<28} "
                + (f"cold {res.cold:7.2f} s  warm {res.warm * 1e3:9.3f} ms  "
                   + (f"fwd {res.forward * 1e3:9.3f} ms  " if res.forward else "fwd -  ")
                   + f"peak {res.peak_mb:7.0f} MB"
                   if res.status == "ok" else f"{res.status}: {res.detail}")
                + f"  [{res.wall:.0f} s, other load {res.bg:.2f}]")
            results.append(res)
        for p in ref_paths:
            os.unlink(p)
    return results


# ====================================================================== verdicts
def fmt_time(s: float | None) -> str:
    if s is None:
        return ""
    ms = s * 1e3
    if ms < 1:
        return f"{ms:.3f}"
    return f"{ms:.3g}" if ms < 100 else f"{ms:,.0f}".replace(",", " ")


def verdict(key: str, results: list[Result]) -> dict:
    """The target of a case judged at the largest size where tensorlang's main row ran."""
    case = CASES[key]
    tl_rows = {r.size: r for r in results if r.system == "tensorlang" and r.variant == "main"}
    ok_sizes = [s for s, r in tl_rows.items() if r.status == "ok"]
    out = dict(target="", met=None, text="", size=None)
    if case.target == "order":
        out["target"] = f"tensorlang >= {TARGET_ORDER:g}x faster than the best AD peer"
    elif case.target == "constant":
        out["target"] = f"tensorlang within {TARGET_CONSTANT}x of the best peer"
    elif case.target == "bounds":
        out["target"] = "; ".join(_bound_text(b) for b in case.extra["bounds"])
    else:
        out["target"] = "none (reported for reference)"
        return out
    if not ok_sizes:
        out["met"], out["text"] = False, "tensorlang did not run"
        return out
    size = max(ok_sizes)
    out["size"] = size
    t_tl = tl_rows[size].warm
    peers = [r for r in results if r.size == size and (r.system, r.variant) != ("tensorlang", "main")
             and r.system not in ("tensorlang", "tljax")]
    if case.target == "bounds":
        return _bounds_verdict(case, size, t_tl, peers, out)
    if case.target == "order":
        peers = [r for r in peers if (r.system, r.variant) in AD_PEERS]
    timed = [r for r in peers if r.status == "ok"]
    stopped = [r for r in peers if r.status in ("timeout", "memory", "skipped")]
    label = spec.size_label(case, size)
    if not timed:
        out["met"] = bool(stopped)
        out["text"] = (f"at {case.size_name} = {label} every peer was stopped (> 60 s or > 16 GB)"
                       if stopped else "no peer ran")
        return out
    best = min(timed, key=lambda r: r.warm)
    ratio = best.warm / t_tl
    if case.target == "order":
        out["met"] = ratio >= TARGET_ORDER
        rel = (f"{ratio:.3g}x faster than" if ratio >= 1 else f"{1 / ratio:.3g}x slower than")
        out["text"] = (f"tensorlang {rel} {best.label} at {case.size_name} = {label}"
                       + (f" ({len(stopped)} peer(s) stopped)" if stopped else ""))
    else:
        out["met"] = t_tl <= TARGET_CONSTANT * best.warm
        out["text"] = (f"tensorlang takes {t_tl / best.warm:.2f}x the time of {best.label} at "
                       f"{case.size_name} = {label}")
    out["best"] = best.label
    return out


SYSTEM_NAMES = {"numba": "hand-written Numba", "jax": "JAX", "torch": "PyTorch",
                "numpy": "hand-written NumPy"}


def _bound_text(bound) -> str:
    systems, factor, sense = bound
    who = "the best peer" if systems is None else \
        "the best " + " / ".join(SYSTEM_NAMES[sy] for sy in systems) + " row"
    if sense == "within":
        return f"tensorlang within {factor:g}x of {who}"
    return f"tensorlang >= {factor:g}x faster than {who}"


def _bounds_verdict(case, size, t_tl, peers, out) -> dict:
    """Every bound of a "bounds" case, judged against the best timed row of its peers."""
    label = spec.size_label(case, size)
    texts, met = [], True
    for systems, factor, sense in case.extra["bounds"]:
        mine = [r for r in peers if systems is None or r.system in systems]
        timed = [r for r in mine if r.status == "ok"]
        if not timed:
            stopped = any(r.status in ("timeout", "memory", "skipped") for r in mine)
            texts.append("every such peer was stopped" if stopped else "no such peer ran")
            met = met and stopped and sense == "faster"
            continue
        best = min(timed, key=lambda r: r.warm)
        ratio = t_tl / best.warm
        if sense == "within":
            met = met and ratio <= factor
            texts.append(f"tensorlang takes {ratio:.2f}x the time of {best.label}")
        else:
            met = met and 1 / ratio >= factor
            texts.append(f"tensorlang {1 / ratio:.3g}x faster than {best.label}" if ratio <= 1
                         else f"tensorlang {ratio:.3g}x slower than {best.label}")
        out.setdefault("best", best.label)
    out["met"] = met
    out["text"] = "; ".join(texts) + f" at {case.size_name} = {label}"
    return out


# ====================================================================== report
def versions() -> list[tuple[str, str]]:
    out = []
    for pkg in ("jax", "jaxlib", "torch", "numpy", "numba", "matplotlib"):
        try:
            out.append((pkg, importlib.metadata.version(pkg)))
        except importlib.metadata.PackageNotFoundError:
            out.append((pkg, "not installed"))
    return out


def cost_notes(all_results: dict, meta: dict) -> dict:
    """Each workload's tensorlang cost polynomials (full mode only)."""
    from .explain import auto_notes
    return {k: auto_notes(k, v) for k, v in all_results.items()} if meta["mode"] == "full" else {}


def make_snapshot(rev: str, workdir: Path):
    full = subprocess.run(["git", "rev-parse", "--short", rev], cwd=ROOT, capture_output=True,
                          text=True, check=True).stdout.strip()
    dest = workdir / "tensorlang-src"
    dest.mkdir()
    archive = subprocess.run(["git", "archive", full, "tensorlang", "grammar"], cwd=ROOT,
                             capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
    SNAPSHOT.update(dir=str(dest), rev=full)
    sys.path.insert(0, str(dest))


def machine_header() -> list[tuple[str, str]]:
    try:
        from benchmarks.backend import machine_facts
        facts = [(k, v) for k, v in machine_facts()
                 if k not in ("kernel cache", "OpenBLAS kernels")]
        if SNAPSHOT["rev"]:
            facts = [(k, v if k != "tensorlang" else
                      f"commit {SNAPSHOT['rev']}, imported from a clean copy of that commit "
                      "(--tensorlang-commit)") for k, v in facts]
    except Exception as exc:  # noqa: BLE001 - the header is best effort
        facts = [("machine", f"? ({exc})")]
    facts.append(("OpenBLAS kernels in the workers", worker_blas_core()))
    facts.append(("peers", ", ".join(f"{p} {v}" for p, v in versions() if p in
                                      ("jax", "jaxlib", "torch", "matplotlib"))))
    return facts


def worker_blas_core() -> str:
    """Which kernels NumPy's OpenBLAS runs in a worker, and why (the environment or its
    own choice); asked of a subprocess with the workers' environment."""
    # loaded from the working tree by path: a --tensorlang-commit snapshot may predate it
    path = str(ROOT / "tensorlang" / "backend" / "blasinfo.py")
    probe = ("import importlib.util\n"
             f"spec = importlib.util.spec_from_file_location('blasinfo', {path!r})\n"
             "mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)\n"
             "print(mod.openblas_core())\n")
    env = child_env(Path(tempfile.gettempdir()) / "tl-peers-probe")
    try:
        core = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True,
                              text=True, timeout=60).stdout.strip() or "?"
    except (OSError, subprocess.SubprocessError):
        core = "?"
    if env.get("OPENBLAS_CORETYPE"):
        return f"{core} (OPENBLAS_CORETYPE={env['OPENBLAS_CORETYPE']}, kept: --blas-core inherit)"
    if BLAS_CORE["inherited"]:
        return (f"{core}, OpenBLAS's own choice for this CPU: this machine's environment sets "
                f"OPENBLAS_CORETYPE={BLAS_CORE['inherited']}, which the workers do not inherit "
                "(--blas-core detect; see docs/api.md, Performance settings)")
    return f"{core}, OpenBLAS's own choice for this CPU"


def render(all_results: dict, verdicts: dict, notes: dict, meta: dict) -> str:
    from .explain import WHY, ROW_NOTES
    out = ["# tensorlang against JAX, PyTorch and NumPy", "",
           f"Run on {meta['started']} in {meta['mode']} mode with `{meta['command']}` from the "
           f"repository root; the run took {meta['elapsed'] / 60:.1f} min. 1-minute load average "
           f"(2 CPUs, shared machine): {meta['load_start']:.2f} at the start, "
           f"{meta['load_end']:.2f} at the end.", "",
           "| machine | |", "|---|---|"]
    out += [f"| {k} | {v} |" for k, v in meta["facts"]]
    if meta.get("reruns"):
        out += ["", "Re-runs merged into this report (their tables replace the first run's): "
                + "; ".join(meta["reruns"]) + "."]
    out += ["", "Protocol: float64 everywhere (`JAX_ENABLE_X64=1`); 2 threads for every system "
            "(`NUMBA_NUM_THREADS`, `OMP_NUM_THREADS`, `OPENBLAS_NUM_THREADS`, `MKL_NUM_THREADS` = 2, "
            "`torch.set_num_threads(2)`, `XLA_FLAGS=--xla_cpu_multi_thread_eigen=true "
            "intra_op_parallelism_threads=2`). Each row of each table is one fresh subprocess "
            "with empty kernel caches (tensorlang, Numba, Inductor). **cold** is the first call "
            "of the derivative, building and compiling included (`jax.jit` + first call, "
            "`torch.compile` + first call, `tl.load` + `tl.grad`/`tl.hessian` + Numba "
            "compilation + first call); imports are not included. **warm** is the median of "
            f"{meta['repeats']} samples of back-to-back calls (JAX results synchronised with "
            "`block_until_ready`; tensorlang's taken once the parallel forms of its kernels, "
            "which compile in a background thread while the first calls run the serial forms, "
            "are ready). Before anything is timed the derivative is compared with a "
            "hand-derived NumPy reference (and scalar forward values with the NumPy forward): "
            "max |error| / max |reference| <= 1e-8, else the row says WRONG VALUE. "
            "**ratio to tl** is the row's warm time over tensorlang's (above 1: slower than "
            "tensorlang). **deriv/fwd** is the warm derivative time over the warm forward time "
            "of the same system. **peak RSS** is the process's peak resident memory during the "
            "derivative and forward calls (VmHWM, reset after the correctness check), "
            "**Δ** the part above the resident memory after imports and inputs. A configuration "
            "past 60 s (after its imports) or 16 GB is stopped and its larger sizes are not "
            "run. **other load** is the mean number of CPU cores (of 2) busy with other processes "
            "while the row ran (from /proc/stat minus the subprocess's own CPU time); before "
            "each row the driver waits (up to "
            f"{meta.get('quiet_wait', 30):g} s) for other processes to use less than half a core. "
            "Two-thread BLAS and OpenMP slow down sharply when another process holds a core, "
            "so rows with other load near 1 are pessimistic. The machine is shared: compare "
            "ratios within one table.", ""]
    if meta["mode"] == "quick":
        out += ["Quick mode: one size per case, 5 repeats, no waiting for a quiet machine, "
                "tensorlang's extra rows (optimize=False, other formulations) left out, the torch.compile rows do not compile and "
                "time the forward function (no deriv/fwd), and they share one "
                "Inductor cache through the run (so their cold times, after the first, are lower "
                "than with an empty cache). Slopes need the full run.", ""]
    if meta.get("skipped_systems"):
        out += ["Systems not installed, so skipped: "
                + "; ".join(f"{s}: {why}" for s, why in meta["skipped_systems"].items()), ""]
    out += ["## Summary", "",
            "Targets: on W3-W9 tensorlang's time grows with the forward program's order while an "
            "automatic-differentiation peer's (JAX, PyTorch eager, torch.func, torch.compile) "
            f"grows an order faster, so tensorlang is >= {TARGET_ORDER:g}x faster than the best "
            "of them at the largest size; on W1, W2, W10-W12 it is within "
            f"{TARGET_CONSTANT}x of the best peer (NumPy's hand-derived code included); the "
            "recurrences W13-W15 have their own targets (the target column). Judged "
            "at the largest size where tensorlang ran.", "",
            "| workload | case | target | measured | met | why not (when not met) |",
            "|---|---|---|---|---|---|"]
    for key, v in verdicts.items():
        met = {True: "yes", False: "**no**", None: "-"}[v["met"]]
        why = WHY.get(key, "") if v["met"] is False else ""
        out.append(f"| {CASES[key].wid} | {key}: {CASES[key].title} | {v['target']} | "
                   f"{v['text']} | {met} | {why} |")
    for key, results in all_results.items():
        case = CASES[key]
        out += ["", f"## {key}: {case.title}", "",
                f"Derivative timed: {case.derivative}. Swept: {case.size_name}"
                + (f"; fixed: {case.fixed}" if case.fixed else "") + "."
                + (f" {case.note}." if case.note else ""), ""]
        forms = {}
        for r in results:
            forms.setdefault(r.label, r.formulation)
        out += ["| system | formulation |", "|---|---|"]
        out += [f"| {lab} | {form} |" for lab, form in forms.items()]
        out += ["", f"| system | {case.size_name} | cold (s) | warm (ms) | ratio to tl | "
                "deriv/fwd | peak RSS (MB) | Δ (MB) | other load | note |",
                "|---|---|---|---|---|---|---|---|---|---|"]
        tl_warm = {r.size: r.warm for r in results
                   if r.system == "tensorlang" and r.variant == "main" and r.status == "ok"}
        order = {lab: i for i, lab in enumerate(LABELS.values())}
        for r in sorted(results, key=lambda r: (order[r.label], r.size)):
            lab = spec.size_label(case, r.size)
            bg = f"{r.bg:.2f}" if r.bg is not None else ""
            if r.status != "ok":
                cold = f"{r.cold:.2f}" if r.cold else ""
                warm = fmt_time(r.warm) + " (incomplete)" if r.warm else ""
                peak = f"> {MEMORY_LIMIT_MB}" if r.status == "memory" else ""
                out.append(f"| {r.label} | {lab} | {cold} | {warm} |  |  | {peak} |  | "
                           f"{bg} | {r.detail} |")
                continue
            ratio = (f"{r.warm / tl_warm[r.size]:.3g}" if r.size in tl_warm else "")
            dfr = f"{r.warm / r.forward:.3g}" if r.forward else ""
            delta = f"{r.peak_mb - r.base_mb:.0f}" if r.base_mb is not None else ""
            peak = f"{r.peak_mb:.0f}" if r.peak_mb is not None else ""
            note = "; ".join(x for x in (r.detail, ROW_NOTES.get((key, r.system, r.variant), ""))
                             if x)
            out.append(f"| {r.label} | {lab} | {r.cold:.2f} | {fmt_time(r.warm)} | {ratio} | "
                       f"{dfr} | {peak} | {delta} | {bg} | {note} |")
        v = verdicts[key]
        if v["met"] is not None:
            out += ["", f"Target ({v['target']}): {v['text']} -> "
                    + ("met." if v["met"] else "**not met**. " + WHY.get(key, ""))]
        if notes.get(key):
            out += [""] + notes[key]
        wid = case.wid
        out += ["", f"Plot: [{wid}.png]({wid}.png)"]
    return "\n".join(out) + "\n"


XLABELS = {
    "W1": "n (matrix side)", "W2": "b (batch rows)", "W3": "v (vocabulary size: rows of E)",
    "W4": "v (vocabulary size: rows of E)", "W5a": "k (copies of the trace)",
    "W5b": "n (matrix side)", "W6": "n (vector length)", "W7a": "n (vector length)",
    "W7b": "n (vector length)", "W8": "m = n (rows of U and of V)", "W9": "N (points)",
    "W10a": "n (signal length, samples)", "W10b": "h = w (image side, pixels)",
    "W11": "h = w (image side, pixels)", "W12": "n (features)",
    "W13": "d (state size; T = 1000 steps)", "W14": "n = m (sequence lengths; d = 8)",
    "W15": "T (steps; K = 64 states)",
}


def plot(all_results: dict, outdir: Path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    by_wid: dict[str, list[str]] = {}
    for key in all_results:
        by_wid.setdefault(CASES[key].wid, []).append(key)
    markers = "os^vDP*Xh<>"
    colors = {lab: f"C{i}" for i, lab in enumerate(LABELS.values())}
    for wid, keys in by_wid.items():
        fig, axes = plt.subplots(1, len(keys), figsize=(6.4 * len(keys), 4.8), squeeze=False)
        for ax, key in zip(axes[0], keys):
            case = CASES[key]
            results = all_results[key]
            labels = []
            for r in results:
                if r.label not in labels:
                    labels.append(r.label)
            for i, lab in enumerate(labels):
                pts = sorted((r.size, r.warm) for r in results
                             if r.label == lab and r.status == "ok")
                if not pts:
                    continue
                xs, ys = zip(*pts)
                ax.loglog(xs, ys, marker=markers[i % len(markers)], color=colors[lab], label=lab,
                          linewidth=2.2 if lab == "tensorlang" else 1.3)
            ax.set_xlabel(XLABELS.get(key, case.size_name))
            ax.set_ylabel("warm time per call (s)")
            ax.set_title(f"{key}: {case.derivative}", fontsize=10)
            ax.grid(True, which="both", alpha=0.3)
            ax.legend(fontsize=8)
        fig.suptitle(f"{wid}: warm time against size (log-log; missing points were stopped "
                     "or not run, see peers.md)", fontsize=10)
        fig.tight_layout()
        fig.savefig(outdir / f"{wid}.png", dpi=110)
        plt.close(fig)


def select(only: list[str] | None) -> list[str]:
    if not only:
        return list(CASES)
    keys = []
    for name in only:
        for part in name.split(","):
            part = part.strip().upper().replace("W0", "W")
            matched = [k for k in CASES if k.upper() == part or CASES[k].wid.upper() == part]
            if not matched:
                raise SystemExit(f"unknown workload {part!r}; known: {', '.join(CASES)}")
            keys += [k for k in matched if k not in keys]
    return keys


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n\n", 2)[2])
    ap.add_argument("--quick", action="store_true",
                    help="fewer and smaller sizes, fewer repeats (every workload, every peer)")
    ap.add_argument("--only", nargs="+", metavar="NAME", help="workloads to run: W1 ... W12, "
                    "or cases such as W5b")
    ap.add_argument("--out", help="directory for peers.md and the plots (default: "
                    "benchmarks/results for a full run, a temporary directory with --quick)")
    ap.add_argument("--tensorlang-commit", metavar="REV",
                    help="time tensorlang as of this git commit (a clean copy of tensorlang/ "
                         "and grammar/), not the working tree")
    ap.add_argument("--blas-core", choices=("detect", "inherit"), default="detect",
                    help="detect (default): the workers do not inherit OPENBLAS_CORETYPE, so "
                         "OpenBLAS picks its kernels for this CPU; inherit: keep it")
    ap.add_argument("--render", metavar="JSON", nargs="+", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    BLAS_CORE["mode"] = args.blas_core
    mode = "quick" if args.quick else "full"
    keys = select(args.only)
    command = " ".join(["python -m benchmarks.peers"] + (sys.argv[1:] if argv is None else argv))
    if args.out:
        outdir = Path(args.out)
    elif mode == "full" and not args.only:
        outdir = RESULTS
    else:
        outdir = Path(tempfile.gettempdir()) / f"tensorlang-peers-{mode}"
    outdir.mkdir(parents=True, exist_ok=True)
    raw = outdir / "peers-raw.json" if outdir.resolve() != RESULTS.resolve() else \
        Path(tempfile.gettempdir()) / "tensorlang-peers-full-raw.json"

    if args.render:
        # re-render saved raw results; with several files, a later file's cases replace the
        # earlier ones (a re-run of some workloads), and the header lists every run.  With
        # --tensorlang-commit the cost notes are computed at that commit.
        if args.tensorlang_commit:
            make_snapshot(args.tensorlang_commit, Path(tempfile.mkdtemp(prefix="tl-peers-")))
        all_results, meta = {}, None
        for path in args.render:
            data = json.loads(Path(path).read_text())
            for k, v in data["results"].items():
                all_results[k] = [Result(**r) for r in v]
            if meta is None:
                meta = data["meta"]
            else:
                m = data["meta"]
                meta.setdefault("reruns", []).append(
                    f"{', '.join(data['results'])} re-run on {m['started']} with "
                    f"`{m['command']}` ({m['elapsed'] / 60:.1f} min, load average "
                    f"{m['load_start']:.2f} -> {m['load_end']:.2f})")
        order = list(CASES)
        all_results = {k: all_results[k] for k in sorted(all_results, key=order.index)}
    else:
        started = datetime.datetime.now().astimezone()
        workdir = Path(tempfile.mkdtemp(prefix="tl-peers-"))
        if args.tensorlang_commit:
            make_snapshot(args.tensorlang_commit, workdir)
        avail = available_systems()
        for s, why in avail.items():
            if why:
                log(f"skipping {s}: {why}")
        meta = dict(started=started.strftime("%Y-%m-%d %H:%M %Z").strip(), mode=mode,
                    command=command, load_start=os.getloadavg()[0], facts=machine_header(),
                    repeats=CONFIG[mode]["repeats"], quiet_wait=CONFIG[mode]["quiet_wait"],
                    skipped_systems={s: w for s, w in avail.items() if w})
        t0 = time.perf_counter()
        all_results = {}
        try:
            for key in keys:
                log(f"[{key}] {CASES[key].title}")
                all_results[key] = run_case(key, mode, avail, workdir)
                meta.update(elapsed=time.perf_counter() - t0, load_end=os.getloadavg()[0])
                raw.write_text(json.dumps(dict(meta=meta, results={
                    k: [r.__dict__ for r in v] for k, v in all_results.items()})))
            # before the snapshot goes: tensorlang imports some of its modules lazily, and
            # with --tensorlang-commit they are read from the snapshot
            notes = cost_notes(all_results, meta)
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
    if args.render:
        notes = cost_notes(all_results, meta)
    verdicts = {k: verdict(k, v) for k, v in all_results.items()}
    text = render(all_results, verdicts, notes, meta)
    (outdir / "peers.md").write_text(text)
    # the results the report was rendered from, kept beside it (a run's own raw file may be
    # temporary): a later re-run of some workloads merges into them with --render
    (outdir / "peers-raw.json").write_text(json.dumps(dict(meta=meta, results={
        k: [r.__dict__ for r in v] for k, v in all_results.items()}), indent=0))
    plot(all_results, outdir)
    log(f"written {outdir / 'peers.md'} and {len({CASES[k].wid for k in all_results})} plots "
        f"in {outdir}; raw results in {raw}")
    log(f"total {meta['elapsed'] / 60:.1f} min")
    return 1 if any(r.status == "wrong" for v in all_results.values() for r in v) else 0

"""One configuration (case, size, system, variant) in a fresh process.

The driver sets the thread and cache environment variables before this process starts; here
only the timed system is imported.  Progress goes to stdout as lines starting with "@@ "
followed by JSON, so the driver keeps what was measured even when it has to stop the process:

    ready   imports done, inputs built (the driver's 60 s clock starts here)
    cold    the first derivative call returned (build + compile + run, in seconds)
    wrong   the result differs from the reference (nothing is timed)
    done    warm times, the forward time and peak memory
"""
from __future__ import annotations

import gc
import importlib
import json
import statistics
import sys
import time

import numpy as np

MODULES = {"tensorlang": "sys_tl", "tljax": "sys_tljax", "jax": "sys_jax", "torch": "sys_torch", "numpy": "sys_numpy",
           "numba": "sys_numba"}
TOLERANCE = 1e-8


def emit(**msg):
    sys.stdout.write("@@ " + json.dumps(msg) + "\n")
    sys.stdout.flush()


def status_kb(field: str) -> int:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def reset_peak() -> bool:
    """Reset VmHWM to the current RSS (Linux >= 4.0); False where that is not allowed."""
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
        return True
    except OSError:
        return False


def median_time(fn, repeats: int, min_sample: float) -> tuple[float, int]:
    """Median seconds per call over `repeats` samples; a sample is k back-to-back calls, k
    chosen so it lasts at least `min_sample` seconds.  The caller has made one call already."""
    t = time.perf_counter()
    fn()
    single = time.perf_counter() - t
    k = max(1, int(min_sample / max(single, 1e-7)))
    samples = []
    for _ in range(repeats):
        gc.collect()
        t = time.perf_counter()
        for _ in range(k):
            fn()
        samples.append((time.perf_counter() - t) / k)
    return statistics.median(samples), k


def relative_error(got: tuple, ref_paths: list, ref_kind: str) -> float:
    """max |got - ref| / max |ref| over all parts (inf on a shape mismatch)."""
    if len(got) != len(ref_paths):
        return float("inf")
    worst = 0.0
    for g, path in zip(got, ref_paths):
        r = np.load(path, mmap_mode="r")
        g = np.asarray(g)
        if ref_kind == "diag":
            n = r.shape[0]
            if g.shape != (n, n):
                return float("inf")
            scale = float(np.max(np.abs(r))) or 1.0
            err = 0.0
            step = max(1, 2_000_000 // n)
            for i0 in range(0, n, step):
                block = np.array(g[i0:i0 + step], dtype=np.float64)
                rows = np.arange(block.shape[0])
                block[rows, i0 + rows] -= r[i0:i0 + step]
                err = max(err, float(np.max(np.abs(block))))
            worst = max(worst, err / scale)
            continue
        if g.shape != r.shape:
            return float("inf")
        scale = float(np.max(np.abs(r))) if r.size else 0.0
        scale = scale or 1.0
        err = float(np.max(np.abs(g.astype(np.float64) - r))) if r.size else 0.0
        worst = max(worst, err / scale)
    return worst


def main(cfg: dict) -> int:
    key, size, system, variant = cfg["key"], cfg["size"], cfg["system"], cfg["variant"]
    # the timed system first (its import is not part of any time), then the inputs
    if system == "torch":
        import torch
        torch.set_num_threads(cfg["threads"])
    elif system == "jax":
        import jax
        jax.config.update("jax_enable_x64", True)
    elif system == "tensorlang":
        importlib.import_module("tensorlang")
    from . import spec
    mod = importlib.import_module(f"benchmarks.peers.{MODULES[system]}")
    inp = spec.inputs(key, size)
    base_kb = status_kb("VmRSS")
    emit(stage="ready", base_mb=base_kb / 1024)

    t0 = time.perf_counter()
    fwd, deriv = mod.build(key, variant, size, inp)
    out = deriv()
    cold = time.perf_counter() - t0
    peak_kb = status_kb("VmHWM")
    emit(stage="cold", cold=cold)

    got = mod.to_numpy(out)
    del out
    err = relative_error(got, cfg["ref"], spec.CASES[key].ref_kind)
    del got
    if not err <= TOLERANCE:
        emit(stage="wrong", err=err)
        return 0
    fwd_err = None
    if cfg.get("fwd_ref") is not None:
        fv = mod.to_numpy(fwd())[0]
        want = float(cfg["fwd_ref"])
        fwd_err = abs(float(fv) - want) / max(abs(want), 1e-300)
        if not fwd_err <= TOLERANCE:
            emit(stage="wrong", err=err, fwd_err=fwd_err)
            return 0
    gc.collect()
    can_reset = reset_peak()
    if not can_reset:
        peak_kb = 0  # then VmHWM below covers the whole process, the check included

    settle = getattr(mod, "settle", None)
    if settle is not None:
        settle(deriv, fwd)
    warm, k = median_time(deriv, cfg["repeats"], cfg["min_sample"])
    emit(stage="warm", warm=warm)
    fwarm = None
    if not cfg.get("skip_forward"):
        fwd()
        fwarm, _ = median_time(fwd, cfg["repeats"], cfg["min_sample"])
    peak_kb = max(peak_kb, status_kb("VmHWM"))
    emit(stage="done", cold=cold, warm=warm, calls_per_sample=k, forward=fwarm,
         err=err, fwd_err=fwd_err, peak_mb=peak_kb / 1024, base_mb=base_kb / 1024)
    return 0


if __name__ == "__main__":
    sys.exit(main(json.loads(sys.argv[1])))

"""One configuration (problem, input file, tool, variant) in a fresh process.

Imports only the timed tool and NumPy (this runs under tensorlang's interpreter or under the one
that has JAX and PyTorch).  Progress goes to stdout as "@@ {json}" lines (the protocol and helpers
of benchmarks/peers/worker.py):

    ready   imports done, instance loaded
    cold    first objective call (building included) and first derivative call, in seconds
    done    warm times of both, peak memory

The objective's and the derivative's results are saved to `out` (.npz) for the driver to
compare across tools.
"""
from __future__ import annotations

import gc
import importlib
import os
import time

import numpy as np

from benchmarks.peers.worker import emit, median_time, reset_peak, status_kb

from . import data

MODULES = {"tensorlang": "tl_impl", "jax": "ref_jax", "torch": "ref_torch"}


def to_arrays(out) -> dict:
    """The parts of a tool's result as NumPy arrays, keyed in a fixed order; a CSR matrix
    becomes its three arrays and its shape."""
    import scipy.sparse
    if scipy.sparse.issparse(out):
        return dict(data=out.data, indices=out.indices, indptr=out.indptr,
                    shape=np.array(out.shape))
    parts = out if isinstance(out, (tuple, list)) else (out,)
    res = {}
    for i, p in enumerate(parts):
        if hasattr(p, "detach"):
            p = p.detach().numpy()
        res[f"p{i}"] = np.array(np.asarray(p), dtype=np.float64)
    return res


def build(tool: str, variant: str, problem: str, inst):
    mod = importlib.import_module(f"benchmarks.adbench.{MODULES[tool]}")
    if tool == "jax":
        return mod.BUILD[problem](inst)
    return mod.BUILD[problem](variant, inst)


def main(cfg: dict) -> int:
    tool, variant, problem = cfg["tool"], cfg["variant"], cfg["problem"]
    if hasattr(os, "sched_setaffinity"):
        cpus = sorted(os.sched_getaffinity(0))
        first = min(cfg.get("first_cpu", 0), max(0, len(cpus) - cfg["threads"]))
        os.sched_setaffinity(0, cpus[first:first + cfg["threads"]])
    if tool == "torch":
        import torch
        torch.set_num_threads(cfg["threads"])
    elif tool == "jax":
        import jax
        jax.config.update("jax_enable_x64", True)
    elif tool == "tensorlang":
        importlib.import_module("tensorlang")
    inst = data.load(problem, cfg["file"], **cfg.get("load", {}))
    base_kb = status_kb("VmRSS")
    emit(stage="ready", base_mb=base_kb / 1024)

    t0 = time.perf_counter()
    objective, derivative = build(tool, variant, problem, inst)
    val = objective()
    cold_obj = time.perf_counter() - t0
    t0 = time.perf_counter()
    der = derivative()
    cold_der = time.perf_counter() - t0
    emit(stage="cold", cold_obj=cold_obj, cold_der=cold_der)
    arrays = {"value_" + k: v for k, v in to_arrays(val).items()}
    arrays.update({"deriv_" + k: v for k, v in to_arrays(der).items()})
    np.savez(cfg["out"], **arrays)
    del val, der, arrays
    gc.collect()
    can_reset = reset_peak()
    warm_der, k_der = median_time(derivative, cfg["repeats"], cfg["min_sample"])
    emit(stage="warm", warm_der=warm_der)
    warm_obj, k_obj = median_time(objective, cfg["repeats"], cfg["min_sample"])
    peak_kb = status_kb("VmHWM")
    emit(stage="done", cold_obj=cold_obj, cold_der=cold_der, warm_obj=warm_obj,
         warm_der=warm_der, calls=[k_obj, k_der], peak_mb=peak_kb / 1024,
         base_mb=base_kb / 1024, peak_reset=can_reset)
    return 0

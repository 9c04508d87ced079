"""Helpers shared by the reproduce.py scripts under papers/.

Each script adds this folder to sys.path and imports what it needs from here: the repository
paths, the optional peers (JAX, PyTorch) with a message when one is missing, a timer, a
description of the machine, and the command-line options every script takes.
"""
from __future__ import annotations

import argparse
import datetime
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
for extra in (ROOT, ROOT / "tests", ROOT / "examples"):
    if str(extra) not in sys.path:
        sys.path.insert(0, str(extra))


def arguments(description: str, folder: Path) -> argparse.Namespace:
    """--quick (small sizes, few repeats) and --out (where the results go; default: the
    paper's own folder)."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--quick", action="store_true", help="small sizes and few repeats")
    ap.add_argument("--out", type=Path, default=folder, help="directory for the results")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    return args


def say(*parts) -> None:
    print(*parts, flush=True)


# ---------------------------------------------------------------------------
# optional peers
# ---------------------------------------------------------------------------

def load_jax():
    """JAX with float64 enabled, or None (and a message) when it is not installed."""
    try:
        import jax
    except ImportError:
        say("JAX is not installed: skipping the JAX measurements")
        return None
    jax.config.update("jax_enable_x64", True)
    return jax


def load_torch():
    """PyTorch, or None (and a message) when it is not installed."""
    try:
        import torch
    except ImportError:
        say("PyTorch is not installed: skipping the PyTorch measurements")
        return None
    return torch


def load_pyplot():
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        say("matplotlib is not installed: no plot")
        return None
    return plt


def save_figure(fig, path) -> None:
    """Lay out, write at the resolution every script uses, and free the figure."""
    import matplotlib.pyplot as plt
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def one_thread_arguments(doc: str, folder: Path):
    """The script's arguments, after pinning every library to one thread (the
    scripts time small problems; see examples/digits_mlp.py).  Returns (args, threads)."""
    args = arguments(doc.split("\n\n")[0], folder)
    from digits_mlp import limit_threads
    return args, limit_threads(1)


# ---------------------------------------------------------------------------
# timing
# ---------------------------------------------------------------------------

def median_time(fn, repeats: int = 20, warmup: int = 2, budget: float = 2.0) -> float:
    """Median wall time of one warm call, in seconds.  The warm-up calls (compilation, caches)
    are not counted; fewer repeats are run when one call is slow, so no measurement takes
    much longer than `budget` seconds."""
    for _ in range(warmup):
        fn()
    t0 = time.perf_counter()
    fn()
    first = time.perf_counter() - t0
    times = [first]
    for _ in range(max(0, min(repeats, int(budget / max(first, 1e-9))) - 1)):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def ms(seconds) -> str:
    if seconds is None:
        return "-"
    if seconds >= 1.0:
        return f"{seconds:.3g} s"
    return f"{1e3 * seconds:.3g} ms" if seconds >= 1e-3 else f"{1e6 * seconds:.3g} µs"


def loglog_slope(xs, ys) -> float:
    """Least-squares slope of log y against log x: the measured exponent."""
    import numpy as np
    return float(np.polyfit(np.log(np.asarray(xs, float)), np.log(np.asarray(ys, float)), 1)[0])


# ---------------------------------------------------------------------------
# provenance
# ---------------------------------------------------------------------------

def commit() -> str:
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                             capture_output=True, text=True, check=True)
        return out.stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def versions() -> str:
    names = ["numpy", "numba", "scipy", "jax", "torch"]
    found = []
    for name in names:
        module = sys.modules.get(name)
        if module is not None:
            found.append(f"{name} {getattr(module, '__version__', '?')}")
    return ", ".join(found)


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return (f"{cpu}, {os.cpu_count()} cores, {platform.system()}, "
            f"Python {platform.python_version()}")


def provenance(command: str) -> str:
    """One paragraph: when, where and how the results were produced."""
    today = datetime.date.today().isoformat()
    return (f"Produced by `{command}` on {today} (commit {commit()}); machine: {machine()}; "
            f"{versions()}.  The machine is shared: compare ratios within one run, "
            f"not absolute times across runs.")


def table(header, rows) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)

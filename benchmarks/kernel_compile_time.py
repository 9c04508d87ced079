"""Numba compile time of a program's kernels: the first call of a function and of its
gradient, and the seconds each kernel took to compile, in a fresh process with empty
kernel caches.

    python benchmarks/kernel_compile_time.py newuser7:profile_hmm examples/soft_dtw.tl:soft_dtw

A program is `<corpus>:<name>` (tests/<corpus>_programs.py, its test sizes scaled by
--scale) or `<file.tl>:<function>` (sizes from --sizes, 30 for each size symbol by
default).  Each label runs in a child process with TENSORLANG_CACHE_DIR and
NUMBA_CACHE_DIR set to new empty directories, so nothing compiled before is reused;
two checkouts are compared by running this script with PYTHONPATH set to each, one
after the other (the machine is shared: compare within a run).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent


def child(label: str, scale: float, size: int) -> dict:
    import warnings

    import numpy as np

    import numba.core.dispatcher as dispatcher
    import tensorlang as tl
    warnings.simplefilter("ignore")
    where, name = label.rsplit(":", 1)
    rng = np.random.default_rng(0)
    if where.endswith(".tl"):
        fn = tl.load(str(HERE / where))[name]
        sizes = {z: size for z in fn.program.sizes()}
        args = {p.name: (rng.standard_normal([sizes[d] if isinstance(d, str) else d
                                               for d in p.dims]) if p.elem == "f64" else None)
                for p in fn.program.params}
        for p in fn.program.params:
            if p.elem == "f64" and not p.dims:
                args[p.name] = 0.5
    else:
        sys.path.insert(0, str(HERE / "tests"))
        case = __import__(f"{where}_programs").PROGRAMS[name]
        fn = tl.parse(case["src"], filename=f"{name}.tl")[name]
        sizes = {k: max(1, round(v * scale)) for k, v in case["sizes"].items()}
        args = case["make"](rng, **sizes)
    seconds: dict[str, float] = {}
    original = dispatcher.Dispatcher._compile_for_args

    def timed(self, *a, **k):
        t0 = time.perf_counter()
        try:
            return original(self, *a, **k)
        finally:
            key = self.py_func.__name__
            seconds[key] = seconds.get(key, 0.0) + time.perf_counter() - t0
    dispatcher.Dispatcher._compile_for_args = timed
    wrt = tuple(p.name for p in fn.program.params if p.elem == "f64")
    out = {"label": label}
    for kind, f in (("function", fn), ("gradient", tl.grad(fn, wrt=wrt))):
        seconds.clear()
        compiled = f.compile("numba")
        t0 = time.perf_counter()
        compiled(**args)
        out[kind] = {"first_call_s": time.perf_counter() - t0,
                     "kernels_s": dict(sorted(seconds.items(), key=lambda kv: -kv[1])[:3])}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("labels", nargs="+")
    ap.add_argument("--scale", type=float, default=8.0, help="corpus sizes times this")
    ap.add_argument("--sizes", type=int, default=30, help="each size of a .tl function")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        print(json.dumps(child(a.labels[0], a.scale, a.sizes)))
        return
    for label in a.labels:
        with tempfile.TemporaryDirectory() as tlc, tempfile.TemporaryDirectory() as nbc:
            env = dict(os.environ, TENSORLANG_CACHE_DIR=tlc, NUMBA_CACHE_DIR=nbc)
            run = subprocess.run([sys.executable, __file__, "--child", label, "--scale",
                                  str(a.scale), "--sizes", str(a.sizes)],
                                 env=env, capture_output=True, text=True)
        if run.returncode:
            print(json.dumps({"label": label, "error": run.stderr.strip()[-300:]}))
            continue
        print(run.stdout.strip(), flush=True)


if __name__ == "__main__":
    main()

"""How long the derivatives of the user programs take to build, to find and compare slow ones.

    python -m benchmarks.derivative_build_times                      # every program, this checkout
    python -m benchmarks.derivative_build_times --only ssim,stn      # programs by name
    python -m benchmarks.derivative_build_times --baseline 8dc8a9a --only ssim --repeat 3
    python -m benchmarks.derivative_build_times --baseline /work/main --requests derived --only icp

The programs are those of tests/newuser_programs.py to newuser16.  For each, in a fresh process with the on-disk program cache off and the NumPy backend: the
primal's simplification (`optimized_program`, untimed in the derivatives' columns, since a
derivative starts from it), then the gradient (a scalar function) or vjp with respect to every
f64 parameter, the jvp with respect to all of them and the hvp with respect to the first (a
scalar function) - or with `--requests derived`, those benchmarks/derived_programs.py
prints (the Hessian among them, see its `requests`) - each from `tl.<kind>` to its
simplified program, as wall time
(`time.perf_counter`) and the process's CPU time (`time.process_time`, which other work on a
shared machine inflates less).  Each derivative is built in the process after the ones before
it, as the test modules build them.  With --baseline (a commit of this repository, extracted
with `git archive`, or a directory holding a tensorlang package) the two sides alternate
program by program, each --repeat times, and each side keeps its fastest CPU time per
derivative.  The slowest builds (by CPU time of this checkout) are listed first.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MODULES = ("newuser_programs",) + tuple(f"newuser{k}_programs" for k in range(2, 17))
# Keys of a worker's result that are not derivatives.
NOT_DERIVATIVES = ("primal", "tensorlang", "error", "timeout")


def programs() -> dict:
    """{"module:name": source} of every user program."""
    sys.path.insert(0, str(ROOT / "tests"))
    out = {}
    for module in MODULES:
        for name, case in __import__(module).PROGRAMS.items():
            out[f"{module}:{name}"] = case["src"]
    return out


def worker(label: str, requested: str = "tests") -> dict:
    """Build times of one program's derivatives in this process (the caller made it fresh):
    those the test modules build, or (`requested` "derived") derived_programs.py's."""
    import warnings
    import tensorlang as tl
    warnings.simplefilter("ignore")
    name = label.split(":")[1]
    fn = tl.parse(programs()[label], filename=f"{name}.tl")[name]
    t0 = time.perf_counter()
    fn.optimized_program()
    out = {"primal": [time.perf_counter() - t0, None], "tensorlang": tl.__file__}
    prog = fn.program
    f64 = tuple(p.name for p in prog.params if p.elem == "f64")
    if not f64:
        return out
    scalar = len(prog.outputs) == 1 and not prog.shapes()[prog.outputs[0]][1]
    kinds = [("grad" if scalar else "vjp", f64), ("jvp", f64)]
    if scalar:
        kinds.append(("hvp", f64[0]))
    if requested == "derived":
        kinds = derived_requests(fn)
    for kind, wrt in kinds:
        key = kind if requested != "derived" else f"{kind} wrt {wrt}"
        w0, c0 = time.perf_counter(), time.process_time()
        try:
            getattr(tl, kind)(fn, wrt=wrt).optimized_program()
        except Exception as e:       # a derivative that fails is reported, not timed
            out[key] = f"raised {type(e).__name__}"
            continue
        out[key] = [time.perf_counter() - w0, time.process_time() - c0]
    return out


def derived_requests(fn) -> list:
    """derived_programs.requests(fn), from the script beside this one."""
    import importlib.util
    spec = importlib.util.spec_from_file_location(
        "derived_programs", Path(__file__).resolve().parent / "derived_programs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.requests(fn)


def run_case(pythonpath: str, label: str, timeout: float, requested: str = "tests") -> dict:
    from benchmarks.compile_time_scaling import run_worker
    return run_worker(__file__, (label, requested), pythonpath, timeout)


def keep_fastest(best: dict | None, new: dict) -> dict:
    """Per derivative, the run with the lower CPU time (wall for the primal)."""
    if best is None or "timeout" in best or "error" in best:
        return new
    out = dict(best)
    for kind, t in new.items():
        if isinstance(t, list) and isinstance(best.get(kind), list):
            i = 0 if kind == "primal" else 1
            if t[i] < best[kind][i]:
                out[kind] = t
    return out


def rows(results: dict, sides: list[str]) -> list[tuple]:
    """(label, kind, {side: [wall, cpu] or text}) of every derivative, slowest first."""
    out = []
    for label in sorted({k[1] for k in results}):
        per = {s: results.get((s, label), {}) for s in sides}
        kinds = list(dict.fromkeys(k for r in per.values() for k in r
                                   if k not in NOT_DERIVATIVES))
        for kind in kinds:
            out.append((label, kind, {s: r.get(kind, r.get("error", r.get("timeout")))
                                      for s, r in per.items()}))

    def cpu(row):
        t = row[2][sides[-1]]
        return t[1] if isinstance(t, list) else float("inf")
    return sorted(out, key=cpu, reverse=True)


def table(results: dict, sides: list[str], top: int | None) -> str:
    head = "| program | derivative | " + " | ".join(
        f"{s} wall (s) | {s} CPU (s)" for s in sides)
    if len(sides) == 2:
        head += " | CPU ratio"
    lines = [f"Load average at the end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}", "",
             head + " |", "|---|---|" + "---|---|" * len(sides) + ("---|" if len(sides) == 2 else "")]
    for label, kind, per in rows(results, sides)[:top]:
        cells = []
        for s in sides:
            t = per[s]
            cells += [f"{t[0]:.2f}", f"{t[1]:.2f}"] if isinstance(t, list) else [str(t), ""]
        if len(sides) == 2:
            a, b = per[sides[0]], per[sides[1]]
            ok = isinstance(a, list) and isinstance(b, list) and b[1] > 0
            cells.append(f"{a[1] / b[1]:.1f}x" if ok else "")
        lines.append(f"| {label} | {kind} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline", help="a commit (or a directory with a tensorlang package) "
                                       "measured beside this checkout")
    ap.add_argument("--only", help="program names (or module:name), comma-separated")
    ap.add_argument("--top", type=int, help="list only the slowest this many derivatives")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=300.0)
    ap.add_argument("--out", help="also write the table here")
    ap.add_argument("--requests", choices=("tests", "derived"), default="tests",
                    help="the derivatives the test modules build (default) or those "
                         "benchmarks/derived_programs.py prints")
    args = ap.parse_args()
    labels = sorted(programs())
    if args.only:
        wanted = args.only.split(",")
        labels = [x for x in labels if x in wanted or x.split(":")[1] in wanted]
    sides = [("current", str(ROOT))]
    tmp = None
    if args.baseline and os.path.isdir(args.baseline):
        sides.insert(0, (f"baseline {args.baseline}", args.baseline))
    elif args.baseline:
        from benchmarks.compile_time_scaling import baseline_tree
        tmp = baseline_tree(args.baseline)
        sides.insert(0, (f"baseline {args.baseline}", tmp))
    print(f"load average at the start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}",
          file=sys.stderr)
    results: dict = {}
    try:
        for label in labels:
            for _ in range(args.repeat):
                for side, path in sides:        # the sides alternate, program by program
                    r = run_case(path, label, args.timeout, args.requests)
                    results[side, label] = keep_fastest(results.get((side, label)), r)
                    print(f"{label} {side}: {json.dumps(r)}", file=sys.stderr, flush=True)
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)
    text = table(results, [s for s, _ in sides], args.top)
    print(text)
    if args.out:
        Path(args.out).write_text(text)


if __name__ == "__main__":
    main()

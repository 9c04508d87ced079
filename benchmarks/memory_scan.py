"""What gradients hold against what their functions hold: a scan of the user programs.

    PYTHONPATH=<checkout> python benchmarks/memory_scan.py                 # every corpus
    PYTHONPATH=<checkout> python benchmarks/memory_scan.py newuser6_programs --all

For each scalar function of the corpora (tests/<module>.py, PROGRAMS[name]["src"]) the
gradient with respect to every f64 parameter is built and both optimised programs are
measured by `tl.memory` (the elements of the parameters and of every statement, each stored
whole) at two size assignments: every plain size symbol near 20, then near 200 (symbol k of
the sorted list gets n + 3 k, derived sizes follow).  A row is printed where the gradient
holds more than three times what its function does at the larger sizes, or where that ratio
grows by half from the smaller sizes to the larger (a tensor a size larger than anything the
function keeps); `--all` prints every row.  The on-disk program cache is off.
"""
from __future__ import annotations

import argparse
import importlib
import os
import sys
import warnings
from pathlib import Path

os.environ["TENSORLANG_PROGRAM_CACHE"] = "0"
HERE = Path(__file__).resolve().parent.parent
MODULES = ("newuser_programs", "newuser2_programs", "newuser3_programs", "newuser4_programs",
           "newuser5_programs", "newuser6_programs", "newuser7_programs", "realistic_programs")
SMALL, LARGE = 20, 200


def memory(fn):
    """tl.memory(fn), counted here for a checkout that predates it (a baseline)."""
    import tensorlang as tl
    if hasattr(tl, "memory"):
        return tl.memory(fn)
    total = tl.Cost()
    prog = fn.optimized_program()
    for dims in [p.dims for p in prog.params] + [s.dims for s in prog.stmts]:
        count = tl.Cost.const(1)
        for d in dims:
            count = count * (tl.Cost.const(d) if isinstance(d, int) else tl.Cost.symbol(d))
        total = total + count
    return total


def ratios(src: str, name: str):
    """(ratio at SMALL, ratio at LARGE) of the gradient's stored elements to the function's,
    or None for a function with several outputs."""
    import tensorlang as tl
    from tensorlang import sizexpr
    fn = tl.parse(src, filename=name + ".tl")[name]
    if len(fn.program.outputs) != 1:
        return None
    wrt = tuple(p.name for p in fn.program.params if p.elem == "f64")
    f_mem, g_mem = memory(fn), memory(tl.grad(fn, wrt=wrt))
    plain, derived = sizexpr.split(set(f_mem.symbols()) | set(g_mem.symbols()))
    out = []
    for n in (SMALL, LARGE):
        sizes = sizexpr.complete({s: n + 3 * k for k, s in enumerate(plain)}, derived)
        out.append(float(g_mem.evaluate(**sizes)) / float(f_mem.evaluate(**sizes)))
    return tuple(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("modules", nargs="*", default=MODULES)
    ap.add_argument("--all", action="store_true", help="print every program's row")
    args = ap.parse_args(argv)
    sys.path.insert(0, str(HERE / "tests"))
    warnings.simplefilter("ignore")
    print(f"| program | grad/f stored @{SMALL} | @{LARGE} |")
    print("|---|---|---|")
    for module in args.modules:
        for name, case in importlib.import_module(module).PROGRAMS.items():
            try:
                r = ratios(case["src"], name)
            except Exception as ex:    # a program the scan cannot build is reported, not fatal
                print(f"| {module}:{name} | error: {type(ex).__name__} | |", flush=True)
                continue
            if r is None:
                continue
            grows = r[1] > 1.5 * r[0] and r[1] > 3
            if args.all or grows or r[1] > 3:
                print(f"| {module}:{name} | {r[0]:.1f} | {r[1]:.1f}{' (grows)' if grows else ''} |",
                      flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

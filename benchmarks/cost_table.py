"""Print the cost table of the regression suite: forward, naive and optimized derivatives.

    python benchmarks/cost_table.py > benchmarks/cost_table.md

Costs are the exact operation-count polynomials of tl.cost (machine-independent), and the
ratios are evaluated with every size symbol set to --at (default 100).  The rows of the
realistic programs (tests/realistic_programs.py) differentiate every f64 parameter.
"""
from __future__ import annotations

import argparse
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

import tensorlang as tl  # noqa: E402
from realistic_programs import PROGRAMS  # noqa: E402
from suite_programs import CASES  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--at", type=int, default=100)
    args = ap.parse_args()
    print(f"| case | what | forward | optimized gradient | naive gradient | opt/fwd @{args.at} "
          f"| naive/fwd @{args.at} |")
    print("|---|---|---|---|---|---|---|")
    for name, case in CASES.items():
        f = tl.parse(case["src"], filename=f"{name}.tl")["f"]
        wrt = case["wrt"][0] if len(case["wrt"]) == 1 else case["wrt"]
        print(row(name, case["note"], f, wrt, args.at))
    f = tl.parse(CASES["T15"]["src"])["f"]
    h, hn = tl.hessian(f, wrt="x"), tl.hessian(f, wrt="x", optimize=False)
    print(f"| T15 Hessian | dense Hessian of x^T A x | `{tl.cost(f)}` | `{tl.cost(h)}` | "
          f"`{tl.cost(hn, optimize=False)}` | "
          f"{tl.cost(h).evaluate(n=args.at) / tl.cost(f).evaluate(n=args.at):.3g} | "
          f"{tl.cost(hn, optimize=False).evaluate(n=args.at) / tl.cost(f).evaluate(n=args.at):.3g} |")
    for name, prog in PROGRAMS.items():
        f = tl.parse(prog["src"], filename=f"{name}.tl")[name]
        params = tuple(p.name for p in f.program.params if p.elem == "f64")
        wrt = params[0] if len(params) == 1 else params
        print(row(name, f"{prog['note']} (wrt {', '.join(params)})", f, wrt, args.at))


def row(name: str, note: str, f, wrt, at_size: int) -> str:
    fwd = tl.cost(f)
    opt = tl.cost(tl.grad(f, wrt=wrt))
    naive = tl.cost(tl.grad(f, wrt=wrt, optimize=False), optimize=False)
    at = {s: at_size for s in f.program.sizes()}
    base = fwd.evaluate(**at)
    return (f"| {name} | {note} | `{fwd}` | `{opt}` | `{naive}` | "
            f"{opt.evaluate(**at) / base:.3g} | {naive.evaluate(**at) / base:.3g} |")


if __name__ == "__main__":
    main()

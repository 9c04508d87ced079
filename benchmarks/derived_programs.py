"""Print the derivative programs of every program in the corpora, to compare two checkouts.

    PYTHONPATH=<checkout> python benchmarks/derived_programs.py > derived.txt
    PYTHONPATH=<checkout> python benchmarks/derived_programs.py --only newuser2
    PYTHONPATH=<checkout> python benchmarks/derived_programs.py --more --only newuser4
    python benchmarks/derived_programs.py --compare before.txt after.txt

A change that is meant to make deriving faster, not different, must leave this output as it
was: run it at both commits (the script reads the corpora of the checkout it sits in, so run
one copy of it against both), then compare the files (`--compare`: which derivatives are
printed alike, which differ with the same cost polynomial and warnings, which differ in cost).  Each derivative is printed with its
cost polynomial (tl.cost), so where two programs differ only in the fresh names a rewrite
made up, the costs still show whether anything changed.  The on-disk program cache is off:
every derivative is derived here.

The corpora: examples/*.tl and benchmarks/workloads/*.tl (every function), and the programs
of tests/newuser_programs.py, tests/newuser2_programs.py, tests/realistic_programs.py and
tests/suite_programs.py (with --more, also tests/newuser3_programs.py to
tests/newuser13_programs.py, but for the few of the later ones whose derivatives take seconds to
build: SLOW_TO_BUILD).  Per function: the gradient and Hessian with respect to the first f64
parameter and the gradient with respect to all of them (a scalar function), a vjp
(otherwise), and the jvp with respect to all f64 parameters; a suite case with its own `wrt`
gets grad and jvp with respect to those.
"""
from __future__ import annotations

import argparse
import os
import re
import sys
import warnings
from pathlib import Path

os.environ["TENSORLANG_PROGRAM_CACHE"] = "0"
HERE = Path(__file__).resolve().parent.parent


def corpora(more: bool = False) -> list[tuple[str, str]]:
    """(label, source text) of every program (`more`: and of the later user programs)."""
    out = []
    for pattern in ("examples/*.tl", "benchmarks/workloads/*.tl"):
        for path in sorted(HERE.glob(pattern)):
            out.append((str(path.relative_to(HERE)), path.read_text()))
    sys.path.insert(0, str(HERE / "tests"))
    modules = ("newuser_programs", "newuser2_programs", "realistic_programs")
    if more:
        modules += ("newuser3_programs", "newuser4_programs", "newuser5_programs",
                    "newuser6_programs", "newuser7_programs", "newuser8_programs",
                    "newuser9_programs", "newuser10_programs", "newuser11_programs",
                    "newuser12_programs", "newuser13_programs")
    for module in modules:
        programs = __import__(module).PROGRAMS
        for name, case in programs.items():
            if f"{module}:{name}" not in SLOW_TO_BUILD:
                out.append((f"{module}:{name}", case["src"]))
    return out


# Programs of the later corpora left out because one of their derivatives takes over 3 s
# of CPU to build (the seconds measured, for the derivative named; posegraph, twotower,
# truss and glu, once listed here, build every derivative in 2.5 s or less, see
# benchmarks/results/compile_time_scaling.md).
SLOW_TO_BUILD = {
    # CPU seconds at load 9-10 (results/compile_time_scaling.md, last section)
    "newuser5_programs:icp": "Hessian wrt src, 9 s (factor_common_products: 521 stored "
                             "statements costed whole; 54 s two sessions ago)",
    "newuser7_programs:softras": "Hessian wrt V, 12 s (factoring hits the 60-round limit)",
    "newuser7_programs:angle_ff": "Hessian wrt P, 8-9 s (inline_sparse_statements trials)",
    "newuser7_programs:emstep": "Hessian wrt x, 3.5-4 s",
    # (tests/test_newuser10_programs.py and test_newuser11_programs.py, SLOW_HESSIANS)
    "newuser10_programs:lj_cluster": "Hessian wrt X, 15 s",
    "newuser10_programs:newton_logreg": "Hessian wrt w, 9 s",
    "newuser11_programs:dihedral_ff": "Hessian wrt X, 40-70 s",
    "newuser12_programs:sabr": "Hessian wrt Ks, 10 s",
    # (tests/test_newuser13_programs.py, SLOW_TO_BUILD and SLOW_HESSIANS)
    "newuser13_programs:idm": "gradients 4 s each, Hessian wrt Th 26 s",
    "newuser13_programs:snell": "Hessian wrt nl, 17 s",
    "newuser13_programs:neo_hookean": "Hessian wrt x, 12 s",
    "newuser13_programs:wright_fisher": "hvp wrt s, 11 s",
}


def suite_cases() -> list[tuple[str, str, tuple]]:
    sys.path.insert(0, str(HERE / "tests"))
    from suite_programs import CASES
    return [(f"suite_programs:{k}", c["src"], tuple(c["wrt"])) for k, c in CASES.items()
            if "wrt" in c]


def requests(fn) -> list[tuple[str, object]]:
    prog = fn.program
    f64 = tuple(p.name for p in prog.params if p.elem == "f64")
    if not f64:
        return []
    scalar = len(prog.outputs) == 1 and not prog.shapes()[prog.outputs[0]][1]
    out = [("jvp", f64)]
    if scalar:
        out += [("grad", f64[0]), ("hessian", f64[0])]
        if len(f64) > 1:
            out.append(("grad", f64))
    elif len(prog.outputs) == 1:
        out.append(("vjp", f64[0]))
    return out


def show(label: str, fn, kind: str, wrt) -> str:
    import tensorlang as tl
    from tensorlang.ssa.printer import print_program
    head = f"=== {label} {fn.name} {kind} wrt {wrt}"
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            d = getattr(tl, kind)(fn, wrt=wrt)
            prog = d.optimized_program()
            text = print_program(prog)
            cost = tl.cost(d)
        notes = "".join(f"warning: {w.category.__name__}: {w.message}\n" for w in caught)
        return f"{head}\n{text}cost: {cost}\n{notes}"
    except Exception as e:          # a derivative that fails must fail the same way
        return f"{head}\nraised {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}\n"


def _entries(path: str) -> dict:
    """{header: lines} of a file this script printed; a RoundLimit warning without the
    rules it names (how the warning is worded is not what is compared)."""
    out: dict = {}
    head = None
    for line in open(path):
        if line.startswith("=== "):
            head = line.strip()
            out[head] = []
        elif head is not None:
            out[head].append(re.sub(r" \(the last round still changed: .*\)$", "", line.rstrip()))
    return out


def compare(before: str, after: str) -> None:
    a, b = _entries(before), _entries(after)
    kinds: dict = {"printed alike": [], "same cost and warnings": [], "cost or warnings differ": []}
    for head, lines in b.items():
        if head not in a:
            continue
        if lines == a[head]:
            kinds["printed alike"].append(head)
            continue
        tail = [x for x in lines if x.startswith(("cost:", "warning:", "raised"))]
        same = tail == [x for x in a[head] if x.startswith(("cost:", "warning:", "raised"))]
        kinds["same cost and warnings" if same else "cost or warnings differ"].append(head)
    print(", ".join(f"{k}: {len(v)}" for k, v in kinds.items()))
    for k in ("same cost and warnings", "cost or warnings differ"):
        for head in kinds[k]:
            costs = [x for x in a[head] + b[head] if x.startswith("cost:")]
            print(f"{k}: {head[4:]}  ({' -> '.join(costs)})")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default="", help="labels containing this text")
    ap.add_argument("--compare", nargs=2, metavar=("BEFORE", "AFTER"),
                    help="compare two files this script printed")
    ap.add_argument("--more", action="store_true",
                    help="also the programs of tests/newuser3_programs.py to "
                         "tests/newuser12_programs.py (after the others)")
    args = ap.parse_args()
    if args.compare:
        compare(*args.compare)
        return
    import tensorlang as tl
    for label, src in corpora(args.more):
        if args.only not in label:
            continue
        try:
            mod = tl.parse(src, filename=label)
        except Exception as e:
            print(f"=== {label}\nparse raised {type(e).__name__}\n", flush=True)
            continue
        for name in mod.names:
            fn = mod[name]
            for kind, wrt in requests(fn):
                print(show(label, fn, kind, wrt), flush=True)
    for label, src, wrt in suite_cases():
        if args.only not in label:
            continue
        fn = tl.parse(src, filename=label)["f"]
        for kind in ("grad", "jvp"):
            print(show(label, fn, kind, wrt), flush=True)


if __name__ == "__main__":
    main()

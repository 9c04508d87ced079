"""Which derivatives miss the certificate?  Every recipe over every known program.

    python -m benchmarks.cost_warnings                 # everything, one line per warning
    python -m benchmarks.cost_warnings --only w11,max  # programs whose label contains a word
    python -m benchmarks.cost_warnings --kinds grad,jvp
    python -m benchmarks.cost_warnings --time          # also the derivation time per program
    python -m benchmarks.cost_warnings --sources cost_sources.jsonl   # and the tests' programs

Programs: every function of examples/*.tl and benchmarks/workloads/*.tl, the cases of
tests/suite_programs.py and the programs of tests/realistic_programs.py; with --sources,
also every source in a file that benchmarks/record_sources.py wrote while the tests ran
(the programs written inline in tests and those the random generators made).  Recipes: grad
(scalar outputs), jvp, vjp, hvp and hessian (scalar outputs), each with respect to every f64
parameter alone and to all of them together (hvp and hessian take one parameter).  Each
TLCostWarning is printed with the derivative, the statement and the term the certificate
names.  The exit status is 1 when there is a warning.
"""
from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

import tensorlang as tl  # noqa: E402


def programs(sources=None):
    """(label, Function) for every known program (and those recorded in `sources`)."""
    for folder in ("examples", "benchmarks/workloads"):
        for path in sorted((ROOT / folder).glob("*.tl")):
            for fn in tl.load(path):
                yield f"{folder}/{path.name}:{fn.program.name}", fn
    from suite_programs import CASES
    for case, spec in CASES.items():
        for fn in tl.parse(spec["src"], filename=f"{case}.tl"):
            yield f"suite:{case}:{fn.program.name}", fn
    from realistic_programs import PROGRAMS
    for name, spec in sorted(PROGRAMS.items()):
        yield f"realistic:{name}", tl.parse(spec["src"], filename=f"{name}.tl")[name]
    if sources:
        import json
        with open(sources, encoding="utf-8") as fh:
            for k, line in enumerate(fh):
                entry = json.loads(line)
                try:
                    module = tl.parse(entry["src"], entry["file"])
                except tl.TLError:
                    continue
                for fn in module:
                    yield f"recorded #{k} {entry['file']}:{fn.program.name}", fn


def recipes(fn, kinds):
    """(kind, wrt) pairs for fn."""
    params = [p.name for p in fn.program.params if p.elem == "f64"]
    if not params:
        return
    shapes = fn.program.shapes()
    scalar = len(fn.program.outputs) == 1 and not shapes[fn.program.outputs[0]][1]
    choices = [p for p in params] + ([tuple(params)] if len(params) > 1 else [])
    for kind in kinds:
        if kind in ("grad", "hvp", "hessian") and not scalar:
            continue
        if kind == "vjp" and len(fn.program.outputs) != 1:
            continue                    # a vjp differentiates a function of one output
        for wrt in choices:
            if kind in ("hvp", "hessian") and not isinstance(wrt, str):
                continue
            yield kind, wrt


def scan(kinds, only=None, show_time=False, out=sys.stdout, sources=None):
    found = 0
    total = 0.0
    for label, fn in programs(sources):
        if only and not any(w in label for w in only):
            continue
        t0 = time.perf_counter()
        for kind, wrt in recipes(fn, kinds):
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always", tl.TLCostWarning)
                try:
                    getattr(tl, kind)(fn, wrt=wrt)
                except tl.TLError as exc:
                    print(f"{label} {kind} wrt={wrt}: error: {exc}", file=out)
                    continue
            for w in caught:
                if issubclass(w.category, tl.TLCostWarning):
                    found += 1
                    print(f"{label} {kind} wrt={wrt}:\n    {w.message}", file=out)
        dt = time.perf_counter() - t0
        total += dt
        if show_time:
            print(f"{label}: {dt:.2f} s", file=out)
    print(f"{found} warning(s); derivation {total:.1f} s", file=out)
    return found


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kinds", default="grad,jvp,vjp,hvp,hessian")
    ap.add_argument("--sources", help="a file benchmarks/record_sources.py wrote")
    ap.add_argument("--only", default="")
    ap.add_argument("--time", action="store_true")
    args = ap.parse_args(argv)
    only = [w for w in args.only.split(",") if w]
    return 1 if scan(args.kinds.split(","), only, args.time, sources=args.sources) else 0


if __name__ == "__main__":
    sys.exit(main())

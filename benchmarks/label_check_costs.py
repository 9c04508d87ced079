"""Cost of every derivative kind of every suite / realistic / new-user (all three sets) program that reads
through labels (an i64 parameter), one line each, for a before/after diff
(benchmarks/results/label_checks.md).  Run from the repository root."""
import sys
import warnings

sys.path.insert(0, "tests")
import tensorlang as tl  # noqa: E402
from newuser_programs import PROGRAMS as NEWUSER  # noqa: E402
from newuser2_programs import PROGRAMS as NEWUSER2  # noqa: E402
from newuser3_programs import PROGRAMS as NEWUSER3  # noqa: E402
from realistic_programs import PROGRAMS as REALISTIC  # noqa: E402
from suite_programs import CASES  # noqa: E402

SCALAR_KINDS = ("grad", "value_and_grad", "vjp", "jvp", "hvp", "hessian")


def programs():
    for name, c in CASES.items():
        yield name, c["src"], "f"
    for name, c in REALISTIC.items():
        yield name, c["src"], name
    for name, c in NEWUSER.items():
        yield name, c["src"], None
    for name, c in NEWUSER2.items():
        yield name, c["src"], name
    for name, c in NEWUSER3.items():
        yield name, c["src"], name


def main():
    warnings.simplefilter("ignore")
    for name, src, fname in programs():
        try:
            mod = tl.parse(src)
        except tl.TLError:
            continue
        f = mod[fname] if fname else mod[mod.names[-1]]
        prog = f.program
        if not any(p.elem == "i64" for p in prog.params):
            continue
        scalar = len(prog.outputs) == 1 and not prog.shapes()[prog.outputs[0]][1]
        for w in [p.name for p in prog.params if p.elem == "f64" and p.dims][:2]:
            for kind in SCALAR_KINDS if scalar else ("vjp", "jvp"):
                try:
                    c = tl.cost(getattr(tl, kind)(f, wrt=w))
                except tl.TLError as e:
                    c = "ERR " + str(e).splitlines()[0][:60]
                print(f"{name} {kind} {w}: {c}")


if __name__ == "__main__":
    main()

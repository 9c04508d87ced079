"""Kernels of the statements nothing reads: a derivative's label checks.

A derivative keeps the label checks of its function as statements that nothing
reads (tensorlang/domain.py, ssa.traverse.check_statements): they run for the labels
they range-check, not for their values.  (A copy of the function's statement whose
values a check compares is read by the check, and is computed as written.)  Their
kernels check every label exactly as any kernel does (the same code, in the same
order, under the same brackets) but take no value through it: a check is a pass
over the labels, not a random read of the gathered tensor per label, which would
cost a derivative of a large gather a third of its time.  The interpreter and the
JAX emission read the values (they are vectorised gathers there), and the cost
model and the op counter count what these kernels do (costs.as_label_check).
"""
from __future__ import annotations

from ..ssa.ir import Access, Program, ValCmp
from ..ssa.traverse import live_statements
from .kernels import KernelWriter, has_gather


class LabelCheckWriter(KernelWriter):
    """A KernelWriter whose reads through labels are checked and not taken, but in a
    value comparison (`[x[z[j]] > 0.0]`), whose outcome decides which labels the
    check meets: there they are read as in the function."""

    comparing = 0

    def atom(self, a, em, depth: int) -> str:
        if a.__class__ is not ValCmp:
            return super().atom(a, em, depth)
        self.comparing += 1
        try:
            return super().atom(a, em, depth)
        finally:
            self.comparing -= 1

    def factor(self, f, em, depth: int) -> str:
        if not self.comparing and f.__class__ is Access and any(has_gather(a) for a in f.idx):
            self.read(f.name, f.idx, em, depth)     # emits the range checks
            return "1.0"
        return super().factor(f, em, depth)


def unread_statements(prog: Program) -> set[str]:
    """The statements no output reads, directly or through others."""
    return {s.name for s in prog.stmts} - live_statements(prog)

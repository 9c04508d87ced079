"""How LLVM compiles the kernels: no vector gathers or scatters.

LLVM vectorises a loop that reads or writes at a stride (`x[2 * i]`, the
adjoint's `x_bar[2 * l] += ...`, a gather's `E[y[s], c]`) with vector gather
and scatter instructions where its cost tables rate them cheap.  On the
benchmark machine (an AMD EPYC, LLVM's `znver5`) they are not: a stride-2 copy
took 3.3 ms with gathers against 1.0 ms with plain loads, and a stride-2
scatter 5.3 ms against 1.2 ms (benchmarks/results/backend.md, section 8), while
loops without strided accesses compile as before.  So the kernels are compiled
for the host CPU with LLVM's `prefer-no-gather` and `prefer-no-scatter` tuning
(LLVM 17 and later): strided and gathered accesses become plain loads and stores,
and the contiguous ones stay vector.

This is Numba's process-wide code generation setting, so it must be made before
Numba compiles anything in the process; `configure` is called before tensorlang
first loads a kernel module or starts Numba's threads.  It changes nothing when
the user chose the CPU features (`NUMBA_CPU_FEATURES`, or `numba.config.CPU_FEATURES`)
or set ``TENSORLANG_VECTOR_GATHERS=1``.  Numba's on-disk cache is keyed by the
features, so kernels compiled one way are never loaded the other.
"""
from __future__ import annotations

import os

TUNING = ("+prefer-no-gather", "+prefer-no-scatter")

_DONE = False


def configure() -> None:
    """Set Numba's CPU features to the host's plus `TUNING`, once per process."""
    global _DONE
    if _DONE:
        return
    _DONE = True
    if os.environ.get("NUMBA_CPU_FEATURES") or os.environ.get("TENSORLANG_VECTOR_GATHERS") == "1":
        return
    try:
        import llvmlite.binding as ll
        from numba.core import config
        if config.CPU_FEATURES is not None or ll.llvm_version_info < (17,):
            return
        host = ll.get_host_cpu_features().flatten()
    except Exception:                     # no host feature detection: Numba's defaults
        return
    if host:
        config.CPU_FEATURES = host + "," + ",".join(TUNING)

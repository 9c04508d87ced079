"""Which kernels NumPy's OpenBLAS runs on this CPU, and whether a faster set is there.

Dense contractions go to NumPy's BLAS (backend/blas.py).  OpenBLAS picks its kernels
once, when it loads: from OPENBLAS_CORETYPE when the environment sets it, else from the
CPU's identity (a CPU newer than the library can get the kernels of an older core).
Either way a CPU with AVX-512 may run the AVX2 kernels.  Measured on a machine whose
environment sets OPENBLAS_CORETYPE=Haswell (OpenBLAS 0.3.31, a CPU with AVX-512, where
OpenBLAS left to itself picks SkylakeX): a 1024 x 1024 float64 product on one thread took
33 ms with the Haswell kernels and 20 ms with the SkylakeX ones.

The choice cannot be changed once the library is loaded (NumPy loads it on import), and
overriding the user's setting or the library's detection behind the user's back would
surprise; so tensorlang only reports it: ``tensorlang explain`` adds a note under a
kernel that calls BLAS, and docs/api.md (Performance settings) says what to set.  Linux
only: elsewhere nothing is reported.
"""
from __future__ import annotations

import ctypes
import functools
import importlib
import os
import re

# the instruction sets OpenBLAS's AVX-512 kernels (SkylakeX and later) rely on
AVX512_FLAGS = frozenset({"avx512f", "avx512cd", "avx512bw", "avx512dq", "avx512vl"})
# cores whose OpenBLAS kernels already use AVX-512
AVX512_CORES = frozenset({"skylakex", "cooperlake", "sapphirerapids"})
SUGGESTED_CORE = "SkylakeX"

# a generated driver calls BLAS through these names (backend/numba_module.py)
_BLAS_CALL = re.compile(r"\btl_(?:matmul|contract|outer)\(")


def loaded_openblas_paths() -> list[str]:
    """Paths of the OpenBLAS libraries mapped into this process, in the order they were
    mapped (NumPy's first once NumPy is imported); empty where /proc is not there."""
    paths: list[str] = []
    try:
        with open("/proc/self/maps") as fh:
            for line in fh:
                parts = line.split()
                if len(parts) >= 6 and "openblas" in parts[-1].lower() \
                        and parts[-1] not in paths:
                    paths.append(parts[-1])
    except OSError:
        pass
    return paths


@functools.lru_cache(maxsize=1)
def openblas_core() -> str | None:
    """The name of the kernel set the loaded OpenBLAS chose ("Haswell", "SkylakeX", ...),
    or None when no OpenBLAS is loaded or it does not say."""
    importlib.import_module("numpy")       # NumPy loads its OpenBLAS on import
    for path in loaded_openblas_paths():
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        # plain builds export openblas_get_corename; SciPy's wheels add a prefix and,
        # for 64-bit integers, a suffix
        for prefix in ("", "scipy_"):
            for suffix in ("", "64_"):
                fn = getattr(lib, f"{prefix}openblas_get_corename{suffix}", None)
                if fn is None:
                    continue
                fn.restype = ctypes.c_char_p
                name = fn()
                if name:
                    return name.decode(errors="replace").strip()
    return None


@functools.lru_cache(maxsize=1)
def cpu_flags() -> frozenset[str]:
    """The CPU's feature flags as Linux lists them (empty elsewhere)."""
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("flags"):
                    return frozenset(line.split(":", 1)[1].split())
    except OSError:
        pass
    return frozenset()


def advice_for(core: str | None, flags: frozenset[str], env: dict) -> str | None:
    """What to tell a user whose OpenBLAS runs older kernels than the CPU has, or None.

    Pure, so that it can be tested on any machine: `core` is what OpenBLAS reports,
    `flags` the CPU's, `env` the environment (OPENBLAS_CORETYPE there is the reason when
    it names the core in use)."""
    if core is None or not AVX512_FLAGS <= flags or core.lower() in AVX512_CORES:
        return None
    gain = ("dense products (matrix products, contractions) may take about 0.6x the time "
            "with its AVX-512 kernels")
    chosen = env.get("OPENBLAS_CORETYPE", "")
    if chosen:
        return (f"OpenBLAS runs its {core} kernels because OPENBLAS_CORETYPE={chosen} is set; "
                f"this CPU has AVX-512, and {gain}: unset the variable (OpenBLAS then picks "
                f"for this CPU) or set it to {SUGGESTED_CORE} before Python starts "
                "(docs/api.md, Performance settings)")
    return (f"OpenBLAS chose its {core} kernels for this CPU, which has AVX-512; {gain}: "
            f"set OPENBLAS_CORETYPE={SUGGESTED_CORE} before Python starts "
            "(docs/api.md, Performance settings)")


def blas_advice() -> str | None:
    """advice_for this machine and process."""
    return advice_for(openblas_core(), cpu_flags(), os.environ)


def uses_blas(module_source: str) -> bool:
    """Does a generated driver call BLAS?"""
    return bool(_BLAS_CALL.search(module_source))


def explain_note(module_source: str) -> str | None:
    """The line `tensorlang explain` prints under a generated kernel: which BLAS kernels
    its products run on, with the advice when there is a faster set."""
    if not uses_blas(module_source):
        return None
    core = openblas_core()
    if core is None:
        return None
    advice = blas_advice()
    return f"# BLAS: OpenBLAS, {core} kernels" + (f". {advice}" if advice else "")

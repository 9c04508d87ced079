"""Compiling programs with Numba: generated modules cached on disk, imported, run.

A program's module is written to ``TENSORLANG_CACHE_DIR`` (default: the user's
cache directory, ``$XDG_CACHE_HOME/tensorlang`` or ``~/.cache/tensorlang``)
under a hash of its text and the compiler version.  Writes are atomic (a
temporary file renamed into place), so concurrent processes never import half a
file; the kernels use ``njit(cache=True)``, so a second process reuses the
machine code Numba stored beside the module.  A module that fails to import is
rewritten once before the error is reported; Numba files that cannot be read
back (damaged, truncated, empty) are deleted and the kernels compiled again, with
one warning.  A cache directory that cannot be written (or is not tensorlang's)
makes kernels build in a private temporary directory, also with one warning.
The cache is pruned to its size bound (see ``diskcache``) when a module is
written.  Numba is imported only here, so parsing and checking never pay for it.
"""
from __future__ import annotations

import hashlib
import importlib.util
import os
import sys

from .. import diskcache
from ..diskcache import write_atomically
from ..errors import TLBoundsError, TLInternalError
from ..ssa.ir import Program
from ..ssa.printer import print_program
from .pool import trim
from .threads import restore_blas

_LOADED: dict[str, object] = {}


def module_source(prog: Program) -> str:
    from ..version import __version__
    from .numba_module import generate
    return generate(prog, __version__, print_program(prog))


def _key(source: str) -> str:
    return hashlib.sha256(source.encode()).hexdigest()[:20]


def _import(path: str, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def load_module(prog: Program):
    """The compiled module of a program (generated, cached and imported once)."""
    source = module_source(prog)
    if "from numba import" in source:
        from .codegen import configure
        configure()            # before Numba compiles anything (see codegen.py)
    from . import heap
    heap.configure()           # before the first call allocates its temporaries (see heap.py)
    key = _key(source)
    if key in _LOADED:
        return _LOADED[key]
    name = f"tensorlang_kernels_{key}"
    wrote = False
    for attempt in range(3):
        root = diskcache.kernel_dir()
        path = os.path.join(root, f"tl_{key}.py")
        try:
            current = None
            if os.path.exists(path):
                with open(path) as fh:
                    current = fh.read()
            if current != source:
                try:
                    write_atomically(path, source)
                    wrote = True
                except OSError as exc:       # read-only, full, vanished: build privately
                    if root == diskcache.fall_back(f"{root} cannot be written: "
                                                   f"{exc.strerror or exc}"):
                        raise
                    continue
            else:
                diskcache.mark_used(path)
            module = _import(path, name)
            break
        except (SyntaxError, ImportError, OSError) as exc:
            sys.modules.pop(name, None)
            if attempt == 2:
                raise TLInternalError(f"stage 'compile': cannot load the generated module "
                                      f"{path}: {exc}") from exc
            try:
                os.unlink(path)
            except OSError:
                pass
    _LOADED[key] = module
    if wrote:
        diskcache.prune(root, keep={key})      # loaded modules run on from memory
    return module


def _from_numba_cache(exc: BaseException) -> bool:
    """Did the exception come from Numba reading its on-disk cache?"""
    tb = exc.__traceback__
    while tb is not None:
        f = tb.tb_frame.f_code.co_filename.replace(os.sep, "/")
        if f.endswith("numba/core/caching.py"):
            return True
        tb = tb.tb_next
    return False


_REPAIRED: list[str] = []


def _repair(module, exc: BaseException) -> None:
    """Delete the Numba cache files of a module whose cache could not be read."""
    path = module.__file__
    key = os.path.basename(path)[3:-3]
    n = diskcache.remove_entry(os.path.dirname(path), key)
    if not _REPAIRED:
        diskcache.warn_user(f"tensorlang: the compiled-kernel cache of {path} could not be "
                            f"read ({type(exc).__name__}: {exc}); deleted {n} damaged file"
                            f"{'s' if n != 1 else ''} and compiled the kernels again")
    _REPAIRED.append(path)


def run(module, prog: Program, arrays: dict, sizes: dict, fallback):
    """Run a loaded module; `fallback()` re-runs on the interpreter for diagnostics.
    OpenBLAS's thread count, which the driver sets per product, is restored after,
    and the array pool's bounds on idle memory are enforced (pool.py)."""
    try:
        return _run(module, prog, arrays, sizes, fallback)
    finally:
        restore_blas()
        trim()


def _run(module, prog: Program, arrays: dict, sizes: dict, fallback):
    env = {}
    for p in prog.params:
        v = arrays[p.name]
        env[p.name] = float(v) if (p.elem == "f64" and not p.dims) else v
    # (the module's dict: a failed attribute lookup on a module costs a microsecond per call)
    if module.__dict__.get("_tl_interpreted", False):
        return fallback()
    for attempt in range(2):
        try:
            return module.run(dict(env), dict(sizes))
        except module.GatherOutOfRange:
            fallback()          # the interpreter names the access and the bad label
            raise TLBoundsError("a gathered index is out of range") from None
        except RecursionError:
            # Numba compiles a kernel at its first call and recurses over its control
            # flow; a predicate with thousands of alternatives exhausts the stack.
            diskcache.warn_user(f"tensorlang: Numba ran out of stack compiling {prog.name} (an "
                                f"expression with very many parts); running it on the NumPy "
                                f"interpreter")
            module._tl_interpreted = True
            return fallback()
        except Exception as exc:  # noqa: BLE001 -- only a damaged cache is handled here
            if attempt == 1 or not _from_numba_cache(exc):
                raise
            _repair(module, exc)


def clear_cache() -> int:
    """Remove the files tensorlang wrote in its cache directory; returns how many went.

    Modules already imported by this process stay usable."""
    _LOADED.clear()
    return diskcache.clear()


def cache_info() -> dict:
    """The cache directory, its kernel modules, their files and bytes, and the bound."""
    return diskcache.info()

"""Compiling programs with Numba: generated modules cached on disk, imported, run.

A program's module is written to ``TENSORLANG_CACHE_DIR`` (default: the user's
cache directory, ``$XDG_CACHE_HOME/tensorlang`` or ``~/.cache/tensorlang``)
under a hash of its text and the compiler version.  Writes are atomic (a
temporary file renamed into place), so concurrent processes never import half a
file; the kernels use ``njit(cache=True)``, so a second process reuses the
machine code Numba stored beside the module.  A module that fails to import is
rewritten once before the error is reported.  Numba is imported only here, so
parsing and checking never pay for it.
"""
from __future__ import annotations

import hashlib
import importlib.util
import os
import sys

from ..diskcache import cache_dir, write_atomically
from ..errors import TLBoundsError, TLInternalError
from ..ssa.ir import Program
from ..ssa.printer import print_program

_LOADED: dict[str, object] = {}


def module_source(prog: Program) -> str:
    from .. import __version__
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
    key = _key(source)
    if key in _LOADED:
        return _LOADED[key]
    path = os.path.join(cache_dir(), f"tl_{key}.py")
    name = f"tensorlang_kernels_{key}"
    for attempt in range(2):
        try:
            current = None
            if os.path.exists(path):
                with open(path) as fh:
                    current = fh.read()
            if current != source:
                write_atomically(path, source)
            module = _import(path, name)
            break
        except (SyntaxError, ImportError, OSError) as exc:
            sys.modules.pop(name, None)
            if attempt == 1:
                raise TLInternalError(f"stage 'compile': cannot load the generated module "
                                      f"{path}: {exc}") from exc
            try:
                os.unlink(path)
            except OSError:
                pass
    _LOADED[key] = module
    return module


def run(module, prog: Program, arrays: dict, sizes: dict, fallback):
    """Run a loaded module; `fallback()` re-runs on the interpreter for diagnostics."""
    env = {}
    for p in prog.params:
        v = arrays[p.name]
        env[p.name] = float(v) if (p.elem == "f64" and not p.dims) else v
    try:
        return module.run(env, dict(sizes))
    except module.GatherOutOfRange:
        fallback()          # the interpreter names the access and the bad label
        raise TLBoundsError("a gathered index is out of range") from None


def clear_cache() -> int:
    """Remove cached modules and Numba's files for them; returns how many files went."""
    removed = 0
    root = cache_dir()
    if not os.path.isdir(root):
        return 0
    for dirpath, _, files in os.walk(root, topdown=False):
        for f in files:
            if f.startswith("tl_") or f.endswith((".nbi", ".nbc", ".pyc")) or f.startswith(".tmp-"):
                os.unlink(os.path.join(dirpath, f))
                removed += 1
        if dirpath != root and not os.listdir(dirpath):
            os.rmdir(dirpath)
    return removed


def cache_info() -> dict:
    root = cache_dir()
    modules = size = 0
    if os.path.isdir(root):
        for dirpath, _, files in os.walk(root):
            for f in files:
                size += os.path.getsize(os.path.join(dirpath, f))
                if f.startswith("tl_") and f.endswith(".py"):
                    modules += 1
    return {"directory": root, "modules": modules, "bytes": size}

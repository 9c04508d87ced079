"""Where tensorlang keeps files between processes, and how it writes them.

Everything lives in ``TENSORLANG_CACHE_DIR`` (default ``$XDG_CACHE_HOME/tensorlang``
or ``~/.cache/tensorlang``): the parser tables of the grammar, the generated
kernel modules, with the files Python and Numba store beside them in
``__pycache__``, and loaded modules and derived programs (progcache.py).  Files are written under a temporary name and renamed into
place, so a concurrent process sees either no file or a whole one.

Ownership: tensorlang writes only into a directory it owns, one that carries the
marker file ``.tensorlang-cache``.  It marks a directory when it creates it, or
finds it empty or holding nothing but tensorlang's own files; a directory with
anything else in it is left alone (kernels are then built in a private temporary
directory, with one warning), and ``clear`` refuses it.  ``clear`` and the
pruning below delete only files whose names tensorlang itself gives, so a
user's file that happens to sit in the directory is never touched.

Size: the kernel modules (and cached programs) are pruned, least recently used first, whenever a new
one is written and the directory holds more than ``TENSORLANG_CACHE_LIMIT_MB``
megabytes (default 200).
"""
from __future__ import annotations

import atexit
import os
import re
import shutil
import sys
import tempfile
import time
import warnings

from .errors import TLError

MARKER = ".tensorlang-cache"
DEFAULT_LIMIT_MB = 200.0
LIMIT_VARIABLE = "TENSORLANG_CACHE_LIMIT_MB"

# The names tensorlang gives (or lets Python and Numba give) to files, and nothing else.
_MODULE = re.compile(r"tl_([0-9a-f]{20})\.py$")
_PROGRAM = re.compile(r"tl_prog_([0-9a-f]{20})\.pickle$")
_TOP_LEVEL = re.compile(r"(tl_[0-9a-f]{20}\.py"                              # kernel module
                        r"|tl_grammar_[0-9a-f]{16}\.lark(\.[0-9]+-[0-9a-f]{8}\.tmp)?"  # parser
                        r"|tl_prog_[0-9a-f]{20}\.pickle"                   # program (progcache)
                        r"|\.tmp-[a-z0-9_]{8}\.(py|lark|pickle))$")         # being written
PROGRAM_KEY = "prog:"                   # entries of derived programs, beside the kernels
_PYCACHE = re.compile(r"tl_([0-9a-f]{20})\.[\w.-]+\.(nbi|nbc|pyc)(\.tmp\.[0-9a-f]+|\.[0-9]+)?$")
PYCACHE = "__pycache__"


class CacheError(TLError):
    """The cache directory cannot be used as asked (not tensorlang's, unreadable)."""


def cache_dir() -> str:
    explicit = os.environ.get("TENSORLANG_CACHE_DIR")
    if explicit:
        return explicit
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "tensorlang")


def limit_bytes() -> int:
    """The size bound of the kernel cache, from TENSORLANG_CACHE_LIMIT_MB."""
    text = os.environ.get(LIMIT_VARIABLE, "").strip()
    try:
        mb = float(text) if text else DEFAULT_LIMIT_MB
    except ValueError:
        mb = DEFAULT_LIMIT_MB
    if not mb >= 0 or mb == float("inf"):
        mb = DEFAULT_LIMIT_MB
    return int(mb * 1e6)


def temporary_path(directory: str, suffix: str) -> str:
    """A fresh file name in `directory` (created), for writing before a rename."""
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=suffix, dir=directory)
    os.close(fd)
    return tmp


def write_atomically(path: str, content: str | bytes) -> None:
    tmp = temporary_path(os.path.dirname(path), os.path.splitext(path)[1])
    try:
        with open(tmp, "wb" if isinstance(content, bytes) else "w") as fh:
            fh.write(content)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


# ------------------------------------------------------------ ownership
def is_own_file(name: str, in_pycache: bool = False) -> bool:
    return bool((_PYCACHE if in_pycache else _TOP_LEVEL).match(name))


def _only_own_files(root: str) -> bool:
    for entry in os.scandir(root):
        if entry.name == PYCACHE and entry.is_dir(follow_symlinks=False):
            if not all(is_own_file(e.name, True) and e.is_file(follow_symlinks=False)
                       for e in os.scandir(entry.path)):
                return False
        elif not (is_own_file(entry.name) and entry.is_file(follow_symlinks=False)):
            return False
    return True


def owns(root: str) -> bool:
    return os.path.isfile(os.path.join(root, MARKER))


def claim(root: str) -> str | None:
    """Make `root` a tensorlang cache directory if it may be one; None says why not.

    Returns None when the directory is (now) tensorlang's, else the reason it is not.
    """
    try:
        if owns(root):
            return None
        if os.path.exists(root) and not os.path.isdir(root):
            return f"{root} is not a directory"
        if os.path.isdir(root) and not _only_own_files(root):
            return f"{root} holds files tensorlang did not write (it has no {MARKER} marker)"
        os.makedirs(root, exist_ok=True)
        write_atomically(os.path.join(root, MARKER),
                         "This directory is tensorlang's cache; `tensorlang cache clear` "
                         "empties it.\n")
        return None
    except OSError as exc:
        return f"{root} cannot be written: {exc.strerror or exc}"


# ------------------------------------------------------------ the kernel directory
_private: dict[str, str] = {}          # "dir" -> this process's fallback directory
_warned: list[str] = []


def warn_user(message: str) -> None:
    """A RuntimeWarning attributed to the first caller outside tensorlang."""
    package = os.path.dirname(os.path.abspath(__file__))
    level, frame = 2, sys._getframe(1)
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(package):
        level, frame = level + 1, frame.f_back
    warnings.warn(message, RuntimeWarning, stacklevel=level)


def _private_dir() -> str:
    if "dir" not in _private:
        path = tempfile.mkdtemp(prefix="tensorlang-kernels-")
        _private["dir"] = path
        atexit.register(shutil.rmtree, path, True)
    return _private["dir"]


def fall_back(reason: str) -> str:
    """Build kernels in a private temporary directory from now on; warn once."""
    if not _warned:
        _warned.append(reason)
        warn_user(f"tensorlang: not caching compiled kernels ({reason}); building them in "
                  f"a temporary directory for this process instead. Set "
                  f"TENSORLANG_CACHE_DIR to a writable directory to keep them.")
    _private.setdefault("reason", reason)
    return _private_dir()


def kernel_dir() -> str:
    """Where kernel modules go: the cache directory if tensorlang may write there,
    else (once that failed) this process's private temporary directory."""
    if "reason" in _private:
        return _private_dir()
    root = cache_dir()
    reason = claim(root)
    return root if reason is None else fall_back(reason)


# ------------------------------------------------------------ entries, size, pruning
def _entries(root: str) -> tuple[dict[str, dict], int]:
    """Kernel entries by key ({"files": [...], "bytes": n, "used": mtime}), the cached
    programs' among them (keys starting with PROGRAM_KEY), and the bytes of
    tensorlang's other files (parser tables, files being written)."""
    entries: dict[str, dict] = {}
    other = 0

    def add(key, path, st, module):
        e = entries.setdefault(key, {"files": [], "bytes": 0, "used": 0.0})
        e["files"].append(path)
        e["bytes"] += st.st_size
        # a module's last use is its access time (mark_used sets it); an orphan
        # Numba file counts from when it was written
        e["used"] = max(e["used"], st.st_atime if module else st.st_mtime)

    if not os.path.isdir(root):
        return entries, 0
    for entry in os.scandir(root):
        try:
            if entry.name == PYCACHE and entry.is_dir(follow_symlinks=False):
                for sub in os.scandir(entry.path):
                    m = _PYCACHE.match(sub.name)
                    if m and sub.is_file(follow_symlinks=False):
                        add(m.group(1), sub.path, sub.stat(), False)
                continue
            if not entry.is_file(follow_symlinks=False):
                continue
            m = _MODULE.match(entry.name)
            if m:
                add(m.group(1), entry.path, entry.stat(), True)
            elif _PROGRAM.match(entry.name):
                add(PROGRAM_KEY + _PROGRAM.match(entry.name).group(1), entry.path, entry.stat(),
                    True)
            elif is_own_file(entry.name):
                other += entry.stat().st_size
        except OSError:            # removed meanwhile by another process
            continue
    return entries, other


def _remove(paths) -> int:
    removed = 0
    for p in paths:
        try:
            os.unlink(p)
            removed += 1
        except FileNotFoundError:
            pass
    return removed


def prune(root: str, keep=(), limit: int | None = None) -> int:
    """Delete least recently used kernel entries until the cache fits its bound.

    `keep`: keys not to delete (the modules this process uses).  Returns how many
    entries went."""
    limit = limit_bytes() if limit is None else limit
    if not owns(root):
        return 0
    entries, other = _entries(root)
    total = other + sum(e["bytes"] for e in entries.values())
    gone = 0
    for key, e in sorted(entries.items(), key=lambda kv: kv[1]["used"]):
        if total <= limit:
            break
        if key in keep:
            continue
        try:
            _remove(e["files"])
        except OSError:
            continue
        total -= e["bytes"]
        gone += 1
    return gone


def mark_used(path: str) -> None:
    """Record a use of a kernel module in its access time, which orders the pruning.

    The modification time stays: Python and Numba check their cached code against it."""
    try:
        st = os.stat(path)
        os.utime(path, ns=(time.time_ns(), st.st_mtime_ns))
    except OSError:
        pass


def remove_entry(root: str, key: str, suffixes=(".nbi", ".nbc")) -> int:
    """Delete the files Numba stored for one kernel module (a damaged cache)."""
    pyc = os.path.join(root, PYCACHE)
    if not os.path.isdir(pyc):
        return 0
    return _remove(os.path.join(pyc, f) for f in os.listdir(pyc)
                   if f.startswith(f"tl_{key}.") and f.endswith(suffixes)
                   and _PYCACHE.match(f))


def clear(root: str | None = None) -> int:
    """Delete every file tensorlang wrote in its cache directory; returns how many.

    Refuses (CacheError) a directory without the marker: tensorlang did not create
    it, so it may hold anything."""
    root = cache_dir() if root is None else root
    if not os.path.exists(root):
        return 0
    if not owns(root) and claim(root) is not None:     # adopts one holding only our files
        raise CacheError(f"{root} is not a tensorlang cache directory (it has no {MARKER} "
                         f"marker), so nothing was deleted",
                         hint="tensorlang only clears directories it created; remove the "
                              "files yourself or set TENSORLANG_CACHE_DIR to another directory")
    removed = 0
    pyc = os.path.join(root, PYCACHE)
    if os.path.isdir(pyc):
        removed += _remove(os.path.join(pyc, f) for f in os.listdir(pyc) if is_own_file(f, True))
        try:
            os.rmdir(pyc)               # only if nothing else is left in it
        except OSError:
            pass
    removed += _remove(os.path.join(root, f) for f in os.listdir(root)
                       if is_own_file(f) and os.path.isfile(os.path.join(root, f)))
    return removed


def info(root: str | None = None) -> dict:
    root = cache_dir() if root is None else root
    exists = os.path.isdir(root)
    # a directory holding only tensorlang's files is adopted at its next use
    owned = owns(root) or (exists and _only_own_files(root))
    entries, other = _entries(root) if owned else ({}, 0)
    return {"directory": root, "owned": owned, "exists": exists,
            "modules": sum(1 for k in entries if not k.startswith(PROGRAM_KEY)),
            "programs": sum(1 for k in entries if k.startswith(PROGRAM_KEY)),
            "files": sum(len(e["files"]) for k, e in entries.items()
                         if not k.startswith(PROGRAM_KEY)),
            "bytes": other + sum(e["bytes"] for e in entries.values()),
            "limit": limit_bytes()}

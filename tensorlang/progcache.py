"""Front-end results and derived programs kept on disk between processes.

A fresh process that loads a file it has loaded before, and asks for a
derivative it has built before, finds both in the cache directory
(``diskcache.cache_dir``) instead of parsing, checking, differentiating and
simplifying again: with the kernels cached too, its first gradient call does
no compiler work at all.

An entry is one pickle, ``tl_prog_<key>.pickle``, whose key hashes what it was
computed from (the source text and file name, the derivative's kind and
parameters) together with a fingerprint of the compiler itself (the size and
modification time of each of its files, the Python and NumPy versions), so an
edited or upgraded compiler never reads an older entry.  Entries are written
under a temporary name and renamed into place, pruned with the kernels (least
recently used first), and deleted by ``tensorlang cache clear``.  A damaged
entry is a miss, never an error.  Nothing is cached where the directory is not
tensorlang's (``diskcache.claim``).  Entries are written by a background thread
(``flush`` waits for it; so does the process at exit).

Off while ``TENSORLANG_VERIFY`` is set (the test suite: every stage then runs and
is verified); ``TENSORLANG_PROGRAM_CACHE=0`` or ``1`` turns it off or on in any case.
"""
from __future__ import annotations

import atexit
import hashlib
import os
import pickle
import sys
import threading

from . import diskcache

VARIABLE = "TENSORLANG_PROGRAM_CACHE"
PREFIX = "tl_prog_"
SUFFIX = ".pickle"

_state: dict = {}


def enabled() -> bool:
    choice = os.environ.get(VARIABLE, "").strip()
    if choice:
        return choice != "0"
    return os.environ.get("TENSORLANG_VERIFY", "") in ("", "0")


def fingerprint() -> str:
    """What identifies this compiler: its files' sizes and modification times."""
    if "fingerprint" not in _state:
        import numpy
        package = os.path.dirname(os.path.abspath(__file__))
        h = hashlib.sha256(f"{sys.version}|{numpy.__version__}".encode())
        for root, dirs, files in os.walk(package):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            for name in sorted(files):
                if name.endswith((".py", ".lark")):
                    st = os.stat(os.path.join(root, name))
                    rel = os.path.relpath(os.path.join(root, name), package)
                    h.update(f"|{rel}:{st.st_size}:{st.st_mtime_ns}".encode())
        _state["fingerprint"] = h.hexdigest()
    return _state["fingerprint"]


def _directory() -> str | None:
    """The cache directory when tensorlang may write there (no warning otherwise:
    the kernels' own fallback reports it)."""
    root = diskcache.cache_dir()
    if root not in _state:
        _state[root] = diskcache.claim(root) is None
    return root if _state[root] else None


def key_of(parts: tuple) -> str:
    h = hashlib.sha256(fingerprint().encode())
    for p in parts:
        h.update(b"\x00" + repr(p).encode())
    return h.hexdigest()[:20]


def path_of(root: str, key: str) -> str:
    return os.path.join(root, f"{PREFIX}{key}{SUFFIX}")


def remembered(parts: tuple, compute):
    """compute(), or the value an earlier process stored for the same `parts`
    (a tuple of strings, numbers and tuples, hashed by their repr)."""
    root = _directory() if enabled() else None
    if root is None:
        return compute()
    path = path_of(root, key_of(parts))
    try:
        with open(path, "rb") as fh:
            return pickle.load(fh)
    except FileNotFoundError:
        pass
    except Exception:  # noqa: BLE001 -- a damaged or foreign entry is a miss
        pass
    value = compute()
    try:
        data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception:  # noqa: BLE001 -- not caching is never an error
        return value
    _write_later(path, data)
    return value


# Entries are written by one background thread, off the caller's path (creating a
# file costs more than pickling the program); the process waits for it at exit.
# The thread is started once and then waits for work: starting a thread for every
# burst of entries cost the caller more than the writes did.
_queue: list = []
_lock = threading.Lock()
_work = threading.Condition(_lock)
_pending = [0]          # entries queued or being written


def _write_later(path: str, data: bytes) -> None:
    with _work:
        _queue.append((path, data))
        _pending[0] += 1
        writer = _state.get("writer")
        if writer is None or not writer.is_alive():
            _state["writer"] = threading.Thread(target=_write_queued, daemon=True,
                                                name="tensorlang-program-cache")
            _state["writer"].start()
        _work.notify_all()


def _write_queued() -> None:
    while True:
        with _work:
            while not _queue:
                _work.wait()
            path, data = _queue.pop(0)
        try:
            _write(path, data)
        finally:
            with _work:
                _pending[0] -= 1
                _work.notify_all()


def _write(path: str, data: bytes) -> None:
    try:
        diskcache.write_atomically(path, data)
    except Exception:  # noqa: BLE001 -- not caching is never an error
        pass


def flush() -> None:
    """Wait until every entry asked for so far is written."""
    with _work:
        while _pending[0]:
            writer = _state.get("writer")
            if writer is threading.current_thread():
                return
            if writer is None or not writer.is_alive():
                if not _queue:
                    return
                _state["writer"] = threading.Thread(target=_write_queued, daemon=True,
                                                    name="tensorlang-program-cache")
                _state["writer"].start()
            _work.wait(0.5)


atexit.register(flush)

"""Large arrays recycled between compiled calls.

heap.py keeps glibc's heap reusing blocks of up to 32 MB; a larger block is mapped afresh on
every allocation and unmapped when freed (unless free memory at the top of the heap happens to
hold it), so a compiled call that makes a 32 MB output or temporary pays, every time, the page
faults and the kernel zeroing the pages (for ten 32 MB outputs some 20 ms, as long as a pass
over all of them).  A loop that calls a gradient
again and again (a training loop) drops each result before the next call makes the same
arrays, so the generated modules take arrays of at least `MIN_BYTES` from here (`empty`,
`zeros`) and the pool hands out again, for a request of the same byte count, memory that is
already mapped.

Safety rests on reference counts.  The pool keeps every buffer it made (a 1-D array that owns
its memory) and hands out a view of it.  Every NumPy array sharing the memory refers to the
buffer (a view's `base` chain ends there), and so does everything that keeps such an array
alive (a memoryview, `torch.from_numpy`, a container, a frame): a buffer is idle, free to hand
out again, only when the pool's own reference is the only one.  So a result the user keeps,
a view of it, or an array passed back in as an input is never written by a later call.  (Only
a bare address taken from an array, `arr.ctypes.data`, escapes this; it dangles as soon as a
plain NumPy array is freed too.)  One lock guards the bookkeeping, so two threads never get
the same buffer.  A reused buffer is zeroed with a write when `zeros` is asked for (a fresh
one comes from `np.zeros`).  Zeroing 32 MB by hand took less time than the fresh pages'
faults and the kernel's zeroing, even for a gradient that writes only a diagonal of it (T1:
1.5 ms against 2.8 ms, the pages of large NumPy arrays being huge pages, zeroed whole).

Idle buffers are memory the process holds without using it, so they are bounded: at most
`cap` bytes stay idle (by default 256 MB plus 1/32 of the physical memory: room for the large
arrays of one call of a typical gradient, ten 32 MB outputs in the largest program of the
cost-regression suite, while a machine with little memory keeps little), the longest unused
go first, and a buffer idle for `IDLE_SECONDS` (since it was last handed out or seen in
use) is freed.  The bounds are enforced when a request is served and after every compiled
call (`trim`); `release()` frees every idle buffer at once, and a failed allocation frees
them before it is tried again.  ``TENSORLANG_POOL=0`` turns the pool off (every array comes from NumPy, as
before); ``TENSORLANG_POOL=<MB>`` (a number above 1) sets the cap.
"""
from __future__ import annotations

import os
import sys
import threading
import time

import numpy as np

from . import heap

# Requests glibc maps afresh: a block of MMAP_THRESHOLD bytes or more, its chunk header
# included (a smaller request is served from the heap, see heap.py).
MIN_BYTES = heap.MMAP_THRESHOLD - 16
IDLE_SECONDS = 10.0
BASE_CAP = 256 * 2 ** 20
CAP_FRACTION = 32                     # of the physical memory, on top of BASE_CAP


class _Buffer:
    __slots__ = ("owner", "nbytes", "used")

    def __init__(self, owner, used: float):
        self.owner = owner
        self.nbytes = owner.nbytes
        self.used = used


def _refs(buf: _Buffer) -> int:
    return sys.getrefcount(buf.owner)


# The count `_refs` sees when the pool's reference is the only one (the interpreter's own
# temporary references included, whatever this Python version makes them).
_ALONE = _refs(_Buffer(np.empty(1), 0.0))

_clock = time.monotonic
_LOCK = threading.Lock()
_BUFFERS: list[_Buffer] = []
_SETTINGS: dict = {}


def _default_cap() -> int:
    try:
        physical = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        physical = 0
    return BASE_CAP + max(physical, 0) // CAP_FRACTION


def _settings() -> dict:
    if not _SETTINGS:
        value = os.environ.get("TENSORLANG_POOL", "").strip()
        cap = _default_cap()
        enabled = value != "0"
        if value not in ("", "0", "1"):
            try:
                cap = int(float(value) * 2 ** 20)
            except ValueError:
                cap = _default_cap()
            enabled = cap > 0
        _SETTINGS.update(enabled=enabled, cap=cap, min_bytes=MIN_BYTES,
                         idle_seconds=IDLE_SECONDS)
    return _SETTINGS


def configure(*, enabled: bool | None = None, cap: int | None = None,
              min_bytes: int | None = None, idle_seconds: float | None = None) -> dict:
    """Change the pool's settings (for tests and benchmarks); returns the previous ones.
    Turning the pool off frees its idle buffers."""
    s = _settings()
    old = dict(s)
    for key, value in (("enabled", enabled), ("cap", cap), ("min_bytes", min_bytes),
                       ("idle_seconds", idle_seconds)):
        if value is not None:
            s[key] = value
    if not s["enabled"]:
        release()
    else:
        trim()
    return old


class bypass:
    """A context in which requests are served by NumPy as with the pool off, while what the
    pool holds stays (for measurements of the same calls with and without it)."""

    def __enter__(self):
        self.was = _settings()["enabled"]
        _SETTINGS["enabled"] = False

    def __exit__(self, *exc):
        _SETTINGS["enabled"] = self.was


def _take(nbytes: int):
    """An idle buffer of exactly `nbytes` bytes, marked used, or None (under the lock)."""
    for buf in reversed(_BUFFERS):          # the most recently used first: warmest in cache
        if buf.nbytes == nbytes and _refs(buf) <= _ALONE:
            buf.used = _clock()
            return buf.owner
    return None


def _request(shape, zero: bool):
    if isinstance(shape, int):
        shape = (shape,)
    count = 1
    for d in shape:
        count *= d
    nbytes = 8 * count
    s = _SETTINGS or _settings()
    if not s["enabled"] or nbytes < s["min_bytes"]:
        return np.zeros(shape) if zero else np.empty(shape)
    with _LOCK:
        owner = _take(nbytes)
        if owner is not None:
            out = owner.reshape(shape)      # a view: holding it holds the buffer
            reused = True
        else:
            _trim(s, _clock())
            try:
                owner = np.zeros(count) if zero else np.empty(count)
            except MemoryError:           # the idle buffers of other sizes go first
                _BUFFERS[:] = [b for b in _BUFFERS if _refs(b) > _ALONE]
                owner = np.zeros(count) if zero else np.empty(count)
            _BUFFERS.append(_Buffer(owner, _clock()))
            out = owner.reshape(shape)
            reused = False
        del owner
    if zero and reused:
        out.fill(0.0)
    return out


def empty(shape):
    """np.empty(shape) (float64), from the pool when large."""
    return _request(shape, False)


def zeros(shape):
    """np.zeros(shape) (float64), from the pool when large."""
    return _request(shape, True)


def matmul(a, b):
    """a @ b for vectors and matrices (float64), the result from the pool when large."""
    shape = a.shape[:-1] + b.shape[1:] if b.ndim == 2 else a.shape[:-1]
    if not shape or len(shape) > 2 or a.dtype != np.float64 or b.dtype != np.float64:
        return a @ b
    out = empty(shape)
    np.matmul(a, b, out=out)
    return out


def outer(a, b):
    """np.outer(a, b) of two vectors (float64), the result from the pool when large."""
    if a.dtype != np.float64 or b.dtype != np.float64:
        return np.outer(a, b)
    out = empty((a.size, b.size))
    np.outer(a, b, out=out)
    return out


def _trim(s: dict, now: float) -> None:
    """Free idle buffers unused for idle_seconds, then the longest unused ones until at
    most `cap` bytes are idle (under the lock).  A buffer seen busy counts as used now."""
    if not _BUFFERS:
        return
    idle = []
    for b in _BUFFERS:
        if _refs(b) <= _ALONE:
            idle.append(b)
        else:
            b.used = now
    if not idle:
        return
    idle.sort(key=lambda b: b.used)
    total = sum(b.nbytes for b in idle)
    drop = set()
    for b in idle:
        if now - b.used > s["idle_seconds"] or total > s["cap"]:
            drop.add(id(b))
            total -= b.nbytes
    if drop:
        _BUFFERS[:] = [b for b in _BUFFERS if id(b) not in drop]


def trim() -> None:
    """Enforce the bounds on idle memory (called after every compiled call)."""
    if not _BUFFERS:
        return
    s = _settings()
    with _LOCK:
        _trim(s, _clock())


def release() -> int:
    """Free every idle buffer now; returns the bytes freed."""
    with _LOCK:
        keep = [b for b in _BUFFERS if _refs(b) > _ALONE]
        freed = sum(b.nbytes for b in _BUFFERS) - sum(b.nbytes for b in keep)
        _BUFFERS[:] = keep
    return freed


def stats() -> dict:
    """The pool's buffers: how many, and bytes held in all and idle."""
    with _LOCK:
        idle = [b for b in _BUFFERS if _refs(b) <= _ALONE]
        return {"buffers": len(_BUFFERS), "held": sum(b.nbytes for b in _BUFFERS),
                "idle": sum(b.nbytes for b in idle), "idle_buffers": len(idle),
                "enabled": _settings()["enabled"], "cap": _settings()["cap"]}


def _after_fork() -> None:
    global _LOCK
    _LOCK = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)

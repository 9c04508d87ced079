"""Compiling the parallel form of a kernel in the background.

A kernel's ``prange`` form is only worth compiling when a call is large enough
to use it, and compiling it can take seconds.  The generated driver therefore
never waits for one: the first time a call would choose a parallel form that is
not compiled yet, it runs the serial form (already compiled, for the same
argument types) and ``warm`` starts compiling the parallel form in a daemon
thread from the serial form's signature.  Later calls use it once it is ready.
Kernels are ``nogil``, so the serial form runs while the compiler works.
"""
from __future__ import annotations

import threading

_STARTED: dict = {}          # parallel dispatcher -> the thread compiling it
_LOCK = threading.Lock()


def warm(parallel, serial) -> None:
    """Start compiling `parallel` for the signature `serial` was compiled for (once)."""
    if parallel.signatures or not serial.signatures:
        return
    with _LOCK:
        if parallel in _STARTED:
            return
        thread = threading.Thread(target=_compile, args=(parallel, serial.signatures[0]),
                                  daemon=True, name="tensorlang-compile")
        _STARTED[parallel] = thread
    thread.start()


def _compile(kernel, signature) -> None:
    try:
        kernel.compile(signature)
    except Exception:  # noqa: BLE001 -- the serial form keeps running; nothing is lost
        pass


def compiling() -> bool:
    """Whether a background compilation is under way (it keeps a core busy).  Asked of
    the threads themselves, not kept as a count: a thread that failed to start, or a
    process forked while one ran (whose copy of the thread never runs), must not leave
    it true for good."""
    return any(thread.is_alive() for thread in list(_STARTED.values()))


def started(kernel) -> bool:
    return kernel in _STARTED


def wait_for_background() -> None:
    """Block until every background compilation started so far has finished."""
    for thread in list(_STARTED.values()):
        thread.join()

"""Answering first calls on the interpreter while the kernels compile.

Numba needs about a third of a second to import and as much again per kernel,
so a program's first compiled call can take over a second, while the NumPy
interpreter answers a small call in milliseconds.  A function whose backend was
not chosen explicitly therefore runs in two tiers: its first call asks for a
``KernelBuild`` (run by one background thread, builds in turn: it generates,
imports and compiles the kernels by running them once on a private copy of the
inputs) and, when the call is cheap
enough for the interpreter, answers it there at once (before the build's thread
starts: importing Numba would otherwise share the interpreter with the call).  Later calls use the
interpreter until the build is ready and the compiled module from then on.  A
call too expensive for the interpreter waits for the build instead.

Both tiers compute the same values (the interpreter is the oracle the kernels
are tested against); they may differ by rounding, as any two summation orders
do.  Builds still running when the process exits are waited for, so the kernel
cache is complete for the next process and no compiler thread is cut off
mid-write.
"""
from __future__ import annotations

import atexit
import os
import threading
from collections import deque

# Calls whose cost polynomial, at their sizes, is below this many operations run
# on the interpreter while the kernels compile.  The interpreter does one of
# them in about 5-20 ns on the programs of examples/ and benchmarks/ (NumPy
# vectorised), so this bound keeps an interpreted call near 0.1-0.2 s: less than
# compiling even one kernel.
INTERPRETER_LIMIT = 10_000_000


def enabled() -> bool:
    """Two tiers unless TENSORLANG_TIERS=0 (the kernels then compile at the first call)."""
    return os.environ.get("TENSORLANG_TIERS", "1") != "0"


# The interpreter runs a recurrence one step at a time, each member of a step a
# NumPy evaluation of its own after its step indices are substituted: about a
# millisecond of Python however little the step computes, the time of this many
# vectorised operations.  (A biquad of 2000 steps costs 60000 operations, and took
# 20 s on the interpreter against a second to compile.)
STEP_OPS = 100_000


def cheap_enough(prog, sizes: dict) -> bool:
    """Is the interpreter quick for a call of `prog` at `sizes` (by its cost polynomial,
    and the steps of its recurrences)?"""
    from ..costs import program_cost
    try:
        ops = program_cost(prog).evaluate(**sizes) + STEP_OPS * interpreted_steps(prog, sizes)
    except Exception:  # noqa: BLE001 -- an unknown cost is not a cheap one
        return False
    return ops <= INTERPRETER_LIMIT


def interpreted_steps(prog, sizes: dict) -> int:
    """How many member evaluations the interpreter makes for the recurrences of `prog`:
    per group, its members times its steps (the product of its leading ranges)."""
    import math

    from .. import sizexpr
    from ..ssa.recur import recurrences

    def extent(d) -> int:
        if isinstance(d, int):
            return d
        return sizes[d] if d in sizes else sizexpr.value(d, sizes)
    total = 0
    for g in recurrences(prog):
        first = prog.stmt(g.members[0])
        total += len(g.members) * math.prod(extent(d) for _, d, _ in g.step_order(first))
    return total


_BUILDS: list["KernelBuild"] = []
_BUILDS_LOCK = threading.Lock()
# Builds not started yet, in the order they were asked for, and the one thread that
# runs them: a process that derives many functions (a sweep of hvps, a test run)
# would otherwise start a thread per function, all waiting on Numba's compiler lock,
# and a call that must wait for its own kernels would wait behind every one of them.
_QUEUED: "deque[KernelBuild]" = deque()
_WORKER: list = []          # the worker thread while it runs (a list: set under the lock)


class KernelBuild:
    """Compiles a program's kernels in the background.

    Builds run one at a time, in the order they were asked for, on one worker thread.
    ``result()`` waits and gives the loaded module, the generator's ``Unsupported``
    reason, or None when the build failed for any other reason (the caller then
    compiles in the foreground, where errors are reported as usual); a build that has
    not started yet when its result is asked for is taken off the queue and run by
    the caller, which then waits for no other program's kernels."""

    def __init__(self, prog, arrays: dict, sizes: dict):
        self._prog = prog
        # A private copy: the caller may change its arrays once its call returns.
        self._arrays = {k: (v.copy() if hasattr(v, "copy") else v) for k, v in arrays.items()}
        self._sizes = dict(sizes)
        self._result = None
        self._done = threading.Event()
        with _BUILDS_LOCK:
            _BUILDS.append(self)
            _QUEUED.append(self)
            if not _WORKER:
                worker = threading.Thread(target=_work, daemon=True, name="tensorlang-build")
                _WORKER.append(worker)
                worker.start()

    def _build(self) -> None:
        try:
            from ..driver import compile_kernels
            from . import numba_backend
            from .kernels import Unsupported
            loaded = compile_kernels(self._prog)
            if not isinstance(loaded, Unsupported):
                def refuse():
                    raise RuntimeError("the warm-up run needs the interpreter")
                # Running compiles every kernel for these argument types.
                numba_backend.run(loaded, self._prog, self._arrays, self._sizes, refuse)
            self._result = loaded
        except BaseException:  # noqa: BLE001 -- the foreground build reports it
            self._result = None
        finally:
            self._arrays = None
            self._done.set()

    def ready(self) -> bool:
        return self._done.is_set()

    def result(self):
        with _BUILDS_LOCK:
            mine = self in _QUEUED
            if mine:
                _QUEUED.remove(self)
        if mine:
            self._build()
        self._done.wait()
        return self._result


def _work() -> None:
    """The worker: the queued builds one after another, until none is left."""
    while True:
        with _BUILDS_LOCK:
            if not _QUEUED:
                _WORKER.clear()
                return
            build = _QUEUED.popleft()
        build._build()


def wait_for_builds() -> None:
    """Block until every build started so far has finished."""
    with _BUILDS_LOCK:
        builds = list(_BUILDS)
    for b in builds:
        b._done.wait()


atexit.register(wait_for_builds)

"""When a statement's kernel runs on several threads.

Every statement with generators (and every scalar reduction) has a serial kernel
and a ``prange`` twin.  Threads pay when the serial kernel would run long
enough that starting them and joining them is a small part of the time, and
when the loop they split has enough iterations for each thread.  The policy:

* one thread (``NUMBA_NUM_THREADS=1``, or ``numba.set_num_threads(1)``): serial,
  and the parallel twin is never compiled;
* a call whose work (the statement's cost polynomial at the call's sizes, the
  operations ``tl.cost`` counts) is below ``MIN_WORK``: serial, without more
  questions.  Such a call takes a fraction of a millisecond;
* fewer than ``MIN_ITERATIONS_PER_THREAD`` iterations of the split loop per
  thread (an output of a handful of rows, each summed over a long axis): serial.
  With ``t`` iterations on ``T`` threads the slowest thread does ``ceil(t / T)``
  of them, and from four per thread on that is at most 1.25 times its share;
* otherwise parallel when the serial kernel's time, estimated as the work times
  the fastest time per operation this kernel has shown on a serial call of at
  least ``MIN_WORK`` operations in this process, reaches ``MIN_SECONDS``, or
  ``MIN_SECONDS_REDUCTION`` when the split loop sums into a scalar.  Until
  ``MIN_SAMPLES`` such calls have been timed, it runs serially (and those calls
  are timed): one call alone can be many times slower than the kernel is.

Why the measured time per operation: an operation of the cost model takes from
a few hundredths of a nanosecond (a stencil whose guards became loop bounds
still counts their tests) to several nanoseconds (an ``exp``), so a threshold on
operations alone would start threads for sub-millisecond stencils or refuse
them to long maps.  The fastest serial call seen is the estimate: noise only
ever slows a call, so the minimum is the least noisy number, and it errs
towards serial.  It is a fact of this process and this kernel, not a cached
calibration, so a change of machine or load between runs cannot make it stale.

Why the thresholds: starting and joining a parallel region costs tens of
microseconds when the other cores are idle, but when other processes hold them
a helper thread waits for a scheduler time slice, a millisecond or more.  From
``MIN_SECONDS`` of serial work on, halving it pays for that wait.  A reduction
into a scalar streams its input through memory with little arithmetic per
element, so a second thread speeds it up less than it does a map (the threads
share the memory bandwidth), and it needs twice the time to pay.

Waiting threads.  Numba's OpenMP threading layer (the usual one on Linux) lets
threads that wait for work spin for milliseconds before they sleep.  On a
machine whose other cores are busy, those spinning threads compete with the
processes that hold the cores, and a parallel region can wait several
scheduler time slices for its helpers: on the two-core machine of
benchmarks/results, a 0.5 ms reduction took 8 ms with two threads.  Unless the
user chose a policy (``OMP_WAIT_POLICY`` in the environment), the first time a
kernel would run in parallel, Numba's thread pool is started with
``OMP_WAIT_POLICY=PASSIVE``: waiting threads sleep at once, so a busy machine
costs a parallel kernel about what it costs the serial one.  The variable is
set only while the pool starts (OpenMP reads it then) and removed again, so
subprocesses and other OpenMP libraries do not inherit it.  It has no effect
when Numba's threads were already started (by other code of the process), or
under the ``tbb`` and ``workqueue`` threading layers.
"""
from __future__ import annotations

import os
import threading
import time

from . import background

# Below this many operations a statement runs serially, untimed.
MIN_WORK = 1_000_000
# Estimated serial seconds from which the parallel form runs.
MIN_SECONDS = 2e-3
MIN_SECONDS_REDUCTION = 4e-3
# Iterations of the split loop needed per thread.
MIN_ITERATIONS_PER_THREAD = 4
# Calls a statement whose threads did not pay runs serially before it tries them again
# (doubled after every try that still does not pay; see KernelTimes).
RETRY_AFTER = 32
# Timed serial calls a statement makes before its record may send it to threads (the
# fastest of them is the estimate; see KernelTimes).
MIN_SAMPLES = 2

_STARTED = False
_LOCK = threading.Lock()


def decide(serial_seconds: float, trip: float, reduction: bool, threads: int) -> bool:
    """Does a statement whose serial kernel takes `serial_seconds`, and whose split loop
    runs `trip` iterations, pay for `threads` threads?  (`reduction`: that loop sums into
    a scalar.)"""
    if threads <= 1:
        return False
    if trip < MIN_ITERATIONS_PER_THREAD * threads:
        return False
    return serial_seconds >= (MIN_SECONDS_REDUCTION if reduction else MIN_SECONDS)


def thread_count() -> int:
    """Numba's thread count for the calling thread, starting its pool on first use."""
    from .codegen import configure
    configure()
    import numba
    global _STARTED
    if numba.config.NUMBA_NUM_THREADS <= 1:
        return 1
    if not _STARTED:
        with _LOCK:
            if not _STARTED:
                _start_pool()
                _STARTED = True
    return numba.get_num_threads()


def _start_pool() -> None:
    """Start Numba's threads, with OpenMP's waiting threads sleeping unless the user
    chose otherwise (see the module docstring)."""
    import numba
    if os.environ.get("OMP_WAIT_POLICY") is not None:
        numba.get_num_threads()
        return
    os.environ["OMP_WAIT_POLICY"] = "PASSIVE"
    try:
        numba.get_num_threads()        # launches the pool; OpenMP reads its environment now
    finally:
        os.environ.pop("OMP_WAIT_POLICY", None)


class KernelTimes:
    """The generated driver's record, per statement, of the fastest serial time per
    operation seen, and its question whether the parallel form pays.

    The driver only asks for calls of at least MIN_WORK operations (the test is in
    its text).  `pays` answers from the record; a statement with no record runs
    serially, timed, and `observe` records that time and answers the same question
    for the next call (the driver then starts compiling the parallel form, which
    serial calls stand in for until it is ready)."""

    __slots__ = ("seconds_per_op", "samples", "parallel_seconds_per_op", "declined")

    def __init__(self):
        self.seconds_per_op: dict[int, float] = {}
        # per statement, how many serial calls were timed: the estimate decides only from
        # MIN_SAMPLES on.  One call can take many times its usual time (the first call of
        # a product in a process, a garbage collection after the kernels compiled, another
        # process's time slice), and a statement sent to threads by such a call never
        # runs serially again to correct it: W2's 0.5 ms logit-adjoint product was timed
        # at 80-130 ms on the gradient's first call and then ran on two threads for good,
        # 17-37 ms a call while another process held a core
        self.samples: dict[int, int] = {}
        # the fastest parallel call per operation seen: when even that is no faster than
        # the fastest serial one, threads do not pay for this statement now (on a busy
        # machine a two-thread product can wait fifty times its own time for a helper
        # thread), and it runs serially
        self.parallel_seconds_per_op: dict[int, float] = {}
        # per statement whose threads did not pay: [calls declined since, calls to decline
        # before trying threads again].  Load comes and goes, so the verdict is not
        # final: the statement tries its parallel form again after RETRY_AFTER declined
        # calls, then after twice as many each time it still does not pay, so a
        # machine that stays busy pays one slow call in ever more
        self.declined: dict[int, list] = {}

    def pays(self, k: int, work: float, trip: float, reduction: bool,
             count=None) -> bool:
        """`count`: the function giving the thread count (Numba's by default)."""
        rate = self.seconds_per_op.get(k)
        if rate is None or self.samples.get(k, 0) < MIN_SAMPLES:
            return False
        if self.parallel_seconds_per_op.get(k, 0.0) >= rate:
            record = self.declined.setdefault(k, [0, RETRY_AFTER])
            record[0] += 1
            if record[0] < record[1]:
                return False
            record[0], record[1] = 0, 2 * record[1]
            del self.parallel_seconds_per_op[k]     # measure the parallel form afresh
        return _pays(work * rate, trip, reduction, count or thread_count)

    def observe_parallel(self, k: int, work: float, started: float) -> None:
        """Record a parallel call that began at `started` and has just returned.

        Not while a parallel form compiles in the background: the compiler holds a
        core, so a two-thread call then waits for it, and one such call would
        otherwise keep the statement serial (an image gradient ran at its serial
        2 x time because its first parallel call met the next kernel's compilation)."""
        if work <= 0 or background.compiling():
            return
        rate = (time.perf_counter() - started) / work
        if rate < self.parallel_seconds_per_op.get(k, float("inf")):
            self.parallel_seconds_per_op[k] = rate

    def observe(self, k: int, work: float, started: float | None, trip: float,
                reduction: bool, count=None) -> bool:
        """Record a serial call that began at `started` (perf_counter; None: the call
        compiled the kernel and is not timed) and has just returned."""
        if started is None or work <= 0:
            return False
        rate = (time.perf_counter() - started) / work
        old = self.seconds_per_op.get(k)
        if old is None or rate < old:
            self.seconds_per_op[k] = old = rate
        self.samples[k] = self.samples.get(k, 0) + 1
        if self.samples[k] < MIN_SAMPLES:
            return False
        return _pays(work * old, trip, reduction, count or thread_count)

    # A BLAS call: OpenBLAS splits the work itself, so the trip count does not apply.
    def pays_blas(self, k: int, work: float) -> bool:
        return self.pays(k, work, 1 << 62, False, blas_thread_count)

    def observe_blas(self, k: int, work: float, started: float) -> bool:
        return self.observe(k, work, started, 1 << 62, False, blas_thread_count)


def _pays(serial_seconds: float, trip: float, reduction: bool, count) -> bool:
    """`decide` with the thread count `count()`, looked up only when the time could pay
    (so a small kernel never starts the pool)."""
    if serial_seconds < MIN_SECONDS or trip < 2 * MIN_ITERATIONS_PER_THREAD:
        return False
    return decide(serial_seconds, trip, reduction, count())


# ---------------------------------------------------------------------- BLAS calls
# The statements that are NumPy calls (matrix products through OpenBLAS) follow the same
# policy: OpenBLAS splits any product above a small size across all its threads, and on a
# busy machine a 0.3 ms product of 128 x 128 matrices then waits milliseconds for its
# helper thread.  The driver sets OpenBLAS to one thread for a product whose estimated
# single-thread time is below MIN_SECONDS and to its own thread count (at most Numba's)
# above; the count the process had is restored when the call returns (`restore_blas`).
# Only OpenBLAS is driven; with another BLAS this does nothing.  Every OpenBLAS the
# process has loaded is driven: NumPy's, and SciPy's, through which Numba's kernels make
# their products (`W @ h` inside a recurrence's step loop); the latter is loaded after
# NumPy's, so the libraries are looked for again whenever modules were imported since.
_BLAS = {"lib": None, "set": None, "max": None, "current": None, "looked": False,
         "primary": None, "others": (), "paths": (), "modules": 0}
_BLAS_SYMBOLS = ("scipy_openblas_set_num_threads64_", "scipy_openblas_set_num_threads",
                 "openblas_set_num_threads64_", "openblas_set_num_threads")


def _thread_functions(lib):
    for name in _BLAS_SYMBOLS:
        setter = getattr(lib, name, None)
        getter = getattr(lib, name.replace("set_num", "get_num"), None)
        if setter is not None and getter is not None:
            return setter, getter
    return None


def _find_blas() -> None:
    """Find the loaded OpenBLAS libraries and their thread-count functions: NumPy's
    (loaded first, by NumPy) as `lib`, `set` and `max`, any other as (setter, its own
    count) in `others`, set along with it."""
    import sys
    _BLAS["looked"] = True
    _BLAS["modules"] = len(sys.modules)
    try:
        import ctypes
        from .blasinfo import loaded_openblas_paths
        paths = loaded_openblas_paths()
        if tuple(paths) == _BLAS["paths"]:
            return
        known = dict(_BLAS["others"])           # path -> (setter, its own thread count)
        for path in paths:
            if path == _BLAS["primary"] or path in known:
                continue
            found = _thread_functions(ctypes.CDLL(path))
            if found is None:
                continue
            setter, getter = found
            if _BLAS["set"] is None:
                _BLAS.update(lib=ctypes.CDLL(path), set=setter, max=int(getter()),
                             primary=path)
                _BLAS["current"] = _BLAS["max"]
            else:
                known[path] = (setter, int(getter()))
                if _BLAS["current"] != _BLAS["max"]:      # set as NumPy's is now
                    setter(min(_BLAS["current"], known[path][1]))
        _BLAS["others"] = tuple(known.items())
        _BLAS["paths"] = tuple(paths)
    except (OSError, ValueError, AttributeError):
        pass


def _set_threads(n: int) -> None:
    _BLAS["set"](n)
    for _, (setter, most) in _BLAS["others"]:
        setter(min(n, most) if n < _BLAS["max"] else most)
    _BLAS["current"] = n


def _look() -> None:
    import sys
    if not _BLAS["looked"] or len(sys.modules) != _BLAS["modules"]:
        _find_blas()


def blas_thread_count() -> int:
    """OpenBLAS's thread count, at most NUMBA_NUM_THREADS when that is set (read from the
    environment: a program of NumPy calls only never imports Numba)."""
    _look()
    if _BLAS["set"] is None:
        return 1
    cap = os.environ.get("NUMBA_NUM_THREADS", "").strip()
    return min(_BLAS["max"], int(cap)) if cap.isdigit() and int(cap) > 0 else _BLAS["max"]


def blas(parallel: bool) -> None:
    """Let the next BLAS call use one thread, or `blas_thread_count()`."""
    _look()
    if _BLAS["set"] is None:
        return
    want = blas_thread_count() if parallel else 1
    if want != _BLAS["current"]:
        _set_threads(want)


def restore_blas() -> None:
    """Give every OpenBLAS back the thread count the process had."""
    if _BLAS["set"] is not None and _BLAS["current"] != _BLAS["max"]:
        _set_threads(_BLAS["max"])


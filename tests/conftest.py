"""Shared pytest configuration: the --update-golden option, the collector's schedule."""
import gc
import os
import resource
import sys
import tempfile

import pytest

# Most tests check semantics, so they run on the reference interpreter; the
# compiled backend has its own equivalence tests (test_numba_backend.py), which
# keeps the number of JIT compilations, and so the suite's run time, small.
os.environ.setdefault("TENSORLANG_BACKEND", "numpy")
# Every program a compiler stage produces is checked by the strict verify.
os.environ.setdefault("TENSORLANG_VERIFY", "1")
# XLA compiles the JAX backend's programs with its optimisations off: the tests
# compare values within tolerances, speed is measured in benchmarks/, and compiling
# hundreds of small programs took a third of the JAX tests' time.  JAX reads the
# variable when it is imported.
os.environ.setdefault("JAX_DISABLE_MOST_OPTIMIZATIONS", "1")
# Generated kernels go to a fresh directory, not the user's cache.
os.environ.setdefault("TENSORLANG_CACHE_DIR", tempfile.mkdtemp(prefix="tensorlang-test-cache-"))

# Tests import the package from this checkout even when it is not installed.
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _pin_hypothesis_constants() -> None:
    """Hypothesis (6.131 and later) mixes into what it draws the constants it finds in
    every module imported from outside the tests (a memo's size, a benchmark's sizes),
    collected as modules are imported.  A derandomized test then drew other examples
    in another run: which test files were collected, and what earlier tests imported
    lazily, changed the pool (tests/test_numba_fuzz.py drew other programs beside
    tests/test_compile_scaling.py, whose import of benchmarks/compile_time_scaling.py
    added its sizes).  The pool is kept empty, so a derandomized test draws the same
    examples in every run.  A Hypothesis without the pool needs nothing."""
    try:
        from hypothesis.internal.conjecture import providers
    except ImportError:
        return
    if hasattr(providers, "_get_local_constants") and hasattr(providers, "Constants"):
        empty = providers.Constants()
        providers._get_local_constants = lambda: empty


_pin_hypothesis_constants()


# The session keeps millions of objects alive (compiled kernel modules, Numba's and
# JAX's own caches), and Python's full collections walk every one of them again and
# again while each test allocates: about a tenth of a Numba test's time, and a minute
# at exit.  So after each test its garbage is collected and what survives is frozen
# (gc.freeze: never walked again); automatic full collections then see only the
# current test's objects, and are made rare within a test (young collections still
# free a test's short-lived cycles).  Anything frozen that later becomes cyclic
# garbage would stay, so everything is thawed and collected whenever the process
# has grown by FULL_COLLECTION_GROWTH since the last full collection.  Then JAX's
# caches of compiled executables are emptied too (hundreds of jitted programs hold
# gigabytes a process does not need again; a function used again recompiles) and the
# freed memory is handed back to the system, so the two halves of tests/run_parallel.py
# do not each grow to several gigabytes.
# (2 GiB: a full collection walks the whole heap, about 6 s late in a run; a half
# of tests/run_parallel.py then peaks at about 3.6 GB.)
FULL_COLLECTION_GROWTH = 2 << 30          # bytes of resident size
gc.set_threshold(700, 10, 1000)
_last_full_collection = [0]


def _resident_bytes() -> int:
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):     # no /proc: the peak stands in
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _release_memory() -> None:
    if "jax" in sys.modules:
        sys.modules["jax"].clear_caches()
    gc.unfreeze()
    gc.collect()
    try:
        import ctypes
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):             # not glibc
        pass


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item, nextitem):
    if _resident_bytes() - _last_full_collection[0] >= FULL_COLLECTION_GROWTH:
        _release_memory()
        _last_full_collection[0] = _resident_bytes()
    gc.collect()
    gc.freeze()


def pytest_unconfigure(config):
    # Nothing is left to free: the interpreter's exit need not walk the heap again.
    gc.freeze()


def pytest_addoption(parser):
    parser.addoption("--update-golden", action="store_true", default=False,
                     help="rewrite tests/golden/*.txt from the current compiler output")


@pytest.fixture
def matches_golden(request):
    """matches_golden(path, text): with --update-golden, write text to path; in any
    case the file must exist and hold exactly text."""
    def check(path, text: str) -> None:
        if request.config.getoption("--update-golden"):
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        assert path.exists(), f"no golden file {path.name}; run pytest --update-golden"
        assert text == path.read_text()
    return check

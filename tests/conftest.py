"""Shared pytest configuration: the --update-golden option."""
import os
import sys
import tempfile

import pytest

# Most tests check semantics, so they run on the reference interpreter; the
# compiled backend has its own equivalence tests (test_numba_backend.py), which
# keeps the number of JIT compilations, and so the suite's run time, small.
os.environ.setdefault("TENSORLANG_BACKEND", "numpy")
# Every program a compiler stage produces is checked by the strict verify.
os.environ.setdefault("TENSORLANG_VERIFY", "1")
# Generated kernels go to a fresh directory, not the user's cache.
os.environ.setdefault("TENSORLANG_CACHE_DIR", tempfile.mkdtemp(prefix="tensorlang-test-cache-"))

# Tests import the package from this checkout even when it is not installed.
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


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

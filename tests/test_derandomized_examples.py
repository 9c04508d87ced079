"""A derandomized Hypothesis test draws the same examples whatever else the process
has imported (tests/conftest.py keeps Hypothesis's pool of constants from imported
modules empty): tests/test_numba_fuzz.py drew other programs, and warned about other
derivatives, when tests/test_compile_scaling.py was collected before it."""
import importlib
import sys

from hypothesis import given, settings
from hypothesis import strategies as st


def _draws() -> list:
    seen = []

    @settings(max_examples=60, derandomize=True, database=None)
    @given(st.integers(0, 2**32 - 1), st.integers(1, 5))
    def probe(seed, size):
        seen.append((seed, size))
    probe()
    return seen


def test_importing_a_module_changes_no_example(tmp_path, monkeypatch):
    before = _draws()
    # a module outside the tests, full of numbers the strategies above could draw
    (tmp_path / "tl_constants_probe.py").write_text(
        "SIZES = (" + ", ".join(str(v) for v in range(1000, 1400)) + ", 2, 3, 4)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        importlib.import_module("tl_constants_probe")
        assert _draws() == before
    finally:
        sys.modules.pop("tl_constants_probe", None)

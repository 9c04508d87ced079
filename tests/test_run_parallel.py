"""tests/run_parallel.py: the split of the test files between processes."""
from pathlib import Path

from run_parallel import DEFAULT_WEIGHT, WEIGHTS, split

TESTS = Path(__file__).resolve().parent


def weight(group):
    return sum(WEIGHTS.get(f.name, DEFAULT_WEIGHT) for f in group)


def test_every_file_runs_once_and_the_halves_balance():
    files = sorted(TESTS.glob("test_*.py"))
    groups = split(files, 2)
    assert sorted(f for g in groups for f in g) == files
    heavy, light = sorted((weight(g) for g in groups), reverse=True)
    # greedy onto the lighter half: the halves differ by at most the lightest file
    # placed last, far less than the heaviest file
    assert heavy - light <= max(WEIGHTS.values()) / 4
    # the two slowest files (JAX, Numba) do not share a process
    names = [{f.name for f in g} for g in groups]
    assert not any({"test_jax_backend.py", "test_numba_backend.py"} <= n for n in names)


def test_split_is_deterministic_and_keeps_small_inputs_whole():
    files = [TESTS / f"test_{c}.py" for c in "abc"]
    assert split(files, 2) == split(list(reversed(files)), 2)
    assert split(files[:1], 2) == [files[:1]]

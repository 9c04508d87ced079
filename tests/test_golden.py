"""Golden files: the printed Tensor SSA of every example, byte for byte.

Run ``pytest --update-golden`` after an intended change to the lowering or the
printer, then read the diff of tests/golden/ before committing it.
"""
import pathlib

import pytest

import tensorlang as tl
from tensorlang.ssa.verify import verify

ROOT = pathlib.Path(__file__).resolve().parent.parent
EXAMPLES = sorted((ROOT / "examples").glob("*.tl"))
GOLDEN = ROOT / "tests" / "golden"


def render(path: pathlib.Path) -> str:
    mod = tl.load(path)
    parts = [f"# Tensor SSA of examples/{path.name}\n"]
    for fn in mod:
        parts.append(fn.source)
    return "\n".join(parts)


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_printed_ssa_matches_golden(path, matches_golden):
    matches_golden(GOLDEN / (path.stem + ".txt"), render(path))


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_printed_ssa_parses_back_to_the_same_program(path):
    for fn in tl.load(path):
        verify(fn.program)
        again = tl.parse(fn.source, filename=f"<{fn.name}>")[fn.name]
        verify(again.program)
        assert again.program == fn.program
        assert again.source == fn.source


def test_printing_is_deterministic_across_loads():
    for path in EXAMPLES:
        assert render(path) == render(path)


def test_every_golden_file_has_an_example():
    stale = {g.stem for g in GOLDEN.glob("*.txt")} - {p.stem for p in EXAMPLES}
    assert not stale, f"golden files without an example: {sorted(stale)}"

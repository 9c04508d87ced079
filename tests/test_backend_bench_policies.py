"""The thread-policy stand-ins of benchmarks/backend.py (section 7) replace a generated
module's `tl_times`; every method a generated module calls on it must exist on them, or the
section stops with an AttributeError when the backend starts calling a new one."""
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def called_methods() -> set[str]:
    text = (ROOT / "tensorlang" / "backend" / "numba_module.py").read_text()
    return set(re.findall(r"tl_times\.([a-z_]+)\(", text))


def test_the_generated_code_calls_a_known_set_of_methods():
    from tensorlang.backend.threads import KernelTimes
    names = called_methods()
    assert {"pays", "observe"} <= names
    for name in names:
        assert callable(getattr(KernelTimes, name, None)), name


@pytest.mark.parametrize("stand_in", ["FixedChoice", "Recorder"])
def test_stand_ins_take_every_call(stand_in):
    import benchmarks.backend as bench
    cls = getattr(bench, stand_in)
    missing = sorted(n for n in called_methods() if not callable(getattr(cls, n, None)))
    assert not missing, f"{stand_in} lacks {missing}"

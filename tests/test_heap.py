"""backend/heap.py: glibc keeps freed temporaries of up to 32 MB, so a compiled call does not
fault its intermediates in afresh every time; the user's own allocator settings win."""
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

PROGRAM = r"""
import resource, sys
import numpy as np
from tensorlang.backend import heap
print(heap.configure())
faults = []
for _ in range(12):            # a call's temporaries: three 8 MB blocks alive at once, then freed
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    arrays = []
    for _ in range(3):
        a = np.empty(1 << 20)
        a[:] = 1.0
        arrays.append(a)
    del arrays, a
    faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
print(max(faults[2:]))
"""


def run(env_extra: dict) -> tuple[str, int]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "GLIBC_TUNABLES",
                        "TENSORLANG_HEAP")}
    env.update(env_extra, PYTHONPATH=ROOT)
    out = subprocess.run([sys.executable, "-c", PROGRAM], env=env, capture_output=True, text=True,
                         check=True).stdout.split()
    return out[0], int(out[1])


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's allocator")
def test_freed_temporaries_are_reused_without_page_faults():
    configured, faults = run({})
    if configured != "True":
        pytest.skip("not glibc")
    assert faults < 64                    # an 8 MB block is 2048 pages when faulted in afresh
    configured, faults = run({"TENSORLANG_HEAP": "0"})
    assert configured == "False"
    assert faults > 500                   # glibc's own thresholds give the blocks back (trim)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's allocator")
def test_the_users_allocator_settings_are_left_alone():
    assert run({"MALLOC_TRIM_THRESHOLD_": "131072"})[0] == "False"

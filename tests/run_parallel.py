"""Run the test suite as two pytest processes, one per core, over disjoint sets of files.

    python tests/run_parallel.py [--jobs N] [pytest options...]

`make test` calls this.  Almost all of the suite's time is spent on one core (Numba
and XLA compilation, derivations, the reference interpreter), so on a machine with
two cores two processes over halves of the files take about half the time of one.
The files are split before anything runs, by the seconds each took in a measured
run (WEIGHTS; a file not listed counts DEFAULT_WEIGHT), largest first onto the
lighter half, so the halves end at about the same time.  Each process is an
ordinary pytest run with its own tests/conftest.py session (its own kernel cache
directory, nothing shared but the checkout); options given here are passed to both.
Their reports are printed one after the other when both have finished, and the exit
status is the first non-zero one of theirs (0 when both passed).  With one core, or
with --jobs 1, it is a single pytest run over tests/.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent

# Seconds per file in `make test` (pytest --durations=0 summed per file, 2026-12-04,
# two processes on two cores, XLA unoptimised); only the balance of the halves
# depends on them.
WEIGHTS = {
    "test_numba_backend.py": 234, "test_jax_backend.py": 158, "test_fuzz_smoke.py": 54,
    "test_numba_steps.py": 51, "test_rename_invariance.py": 48, "test_gather_domain.py": 43,
    "test_papers.py": 40, "test_newuser12_programs.py": 39, "test_factor_trials.py": 39,
    "test_newuser13_programs.py": 34,
    "test_numba_rows.py": 37, "test_newuser6_programs.py": 34, "test_expproduct.py": 34,
    "test_newuser5_programs.py": 33, "test_newuser11_programs.py": 32,
    "test_numba_siblings.py": 30, "test_newuser9_programs.py": 29,
    "test_newuser_programs.py": 29, "test_newuser4_programs.py": 29,
    "test_newuser3_programs.py": 29, "test_diskcache.py": 29, "test_numba_fuzz.py": 27,
    "test_newuser2_programs.py": 25, "test_recurrences.py": 25, "test_wavefront.py": 25,
    "test_newuser7_programs.py": 23, "test_reductions.py": 22,
    "test_newuser10_programs.py": 22, "test_shared_passes.py": 21,
    "test_newuser8_programs.py": 19, "test_realistic_costs.py": 18, "test_name_hygiene.py": 16,
    "test_derivatives.py": 16, "test_compile_scaling.py": 16,
    "test_recurrence_examples.py": 15, "test_tiling.py": 13, "test_splice_cost.py": 13,
    "test_certificate_causes.py": 13, "test_certificate.py": 12,
    "test_cost_regressions.py": 12, "test_contraction_order.py": 11,
    "test_derivative_fuzz.py": 10, "test_roundtrip_fuzz.py": 8, "test_reduction_unroll.py": 8,
    "test_builtin_rules.py": 8, "test_derivative_memory.py": 7, "test_sum_order.py": 6,
    "test_tiers.py": 6, "test_remembered_parts.py": 5, "test_blas.py": 5,
    "test_gather_safety.py": 5, "test_strong_zero_adjoints.py": 4,
    "test_size_arithmetic.py": 4, "test_hard_inputs.py": 4, "test_process_history.py": 3
}
DEFAULT_WEIGHT = 2


def usable_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:              # not on Linux
        return os.cpu_count() or 1


def split(files: list[Path], jobs: int) -> list[list[Path]]:
    """`files` in `jobs` groups of about equal weight: the heaviest file first, each
    onto the group with the least weight so far (ties to the first group)."""
    groups: list[list[Path]] = [[] for _ in range(jobs)]
    load = [0.0] * jobs
    for f in sorted(files, key=lambda f: (-WEIGHTS.get(f.name, DEFAULT_WEIGHT), f.name)):
        k = min(range(jobs), key=lambda g: (load[g], g))
        groups[k].append(f)
        load[k] += WEIGHTS.get(f.name, DEFAULT_WEIGHT)
    return [sorted(g) for g in groups if g]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--jobs", type=int, default=min(2, usable_cores()),
                    help="pytest processes (default: 2, or 1 on a one-core machine)")
    args, pytest_args = ap.parse_known_args(argv)
    command = [sys.executable, "-m", "pytest"]
    if args.jobs <= 1:
        return subprocess.call(command + pytest_args + [str(TESTS)], cwd=ROOT)
    groups = split(sorted(TESTS.glob("test_*.py")), args.jobs)
    start = time.monotonic()
    runs = []
    with tempfile.TemporaryDirectory(prefix="tensorlang-test-logs-") as logs:
        try:
            for k, group in enumerate(groups):
                log = open(Path(logs) / f"part{k}.txt", "w+", encoding="utf-8")
                proc = subprocess.Popen(command + pytest_args + [str(f) for f in group],
                                        cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
                runs.append((proc, log, group))
            print(f"tests: {len(groups)} pytest processes over "
                  f"{sum(len(g) for g in groups)} files; reports follow when both end",
                  flush=True)
            codes = [proc.wait() for proc, _, _ in runs]
        except KeyboardInterrupt:
            for proc, _, _ in runs:
                proc.terminate()
            raise
        for k, ((proc, log, group), code) in enumerate(zip(runs, codes)):
            log.seek(0)
            print(f"\n===== part {k + 1} of {len(runs)}: {len(group)} files, exit status "
                  f"{code} =====", flush=True)
            sys.stdout.write(log.read())
            log.close()
    failed = [c for c in codes if c != 0]
    print(f"\ntests: {'all parts passed' if not failed else 'a part failed'} in "
          f"{time.monotonic() - start:.0f} s", flush=True)
    return failed[0] if failed else 0


if __name__ == "__main__":
    sys.exit(main())

"""Two tensorlang trees timed side by side on peer workloads (warm calls, ratios per round).

    python -m benchmarks.side_by_side /work/main . --only W2 W11 --rounds 3

Each round times every workload under each tree in a fresh subprocess (PYTHONPATH set to
that tree, so its tensorlang and its benchmarks.peers are used), the trees alternating,
so both see the same load; the derivative of the peer row ("main" variant) at the
workload's largest size (or --size), after `sys_tl.settle`.  Printed per workload: each
tree's median over rounds of its per-round median warm time, and the median of the
per-round ratios second / first.  The machine's load average is printed with each round.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

_CHILD = r"""
import json, sys, time
import numpy as np
from benchmarks.peers import spec, sys_tl
key, size, reps = sys.argv[1], sys.argv[2], int(sys.argv[3])
case = spec.CASES[key]
size = int(size) if size != "-" else case.full[-1]
inp = spec.inputs(key, size, 0)
fwd, deriv = sys_tl.build(key, "main", size, inp)
deriv()
sys_tl.settle(deriv, fwd)
ts = []
for _ in range(reps):
    tic = time.perf_counter()
    deriv()
    ts.append(time.perf_counter() - tic)
print(json.dumps({"median": float(np.median(ts)), "min": min(ts), "size": size}))
"""


def run_in_tree(tree: str, code: str, args: list, what: str, timeout: int = 1800,
                **env) -> dict:
    """Run `code` (a script printing one JSON line last) in a fresh Python process with
    `tree` as its working directory and on PYTHONPATH (so its tensorlang and its
    benchmarks are used), `args` as sys.argv[1:] and `env` added to the environment;
    its last line parsed.  `what` names the run in the error of a failed one."""
    env = dict(os.environ, PYTHONPATH=os.path.abspath(tree), **env)
    out = subprocess.run([sys.executable, "-c", code, *args], cwd=os.path.abspath(tree),
                         env=env, capture_output=True, text=True, timeout=timeout)
    if out.returncode:
        raise RuntimeError(f"{tree} {what}: {out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def time_tree(tree: str, key: str, size, reps: int) -> dict:
    return run_in_tree(tree, _CHILD, [key, str(size or "-"), str(reps)], key)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("first")
    ap.add_argument("second")
    ap.add_argument("--only", nargs="+", default=["W2", "W11"])
    ap.add_argument("--size", type=int)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--reps", type=int, default=20)
    a = ap.parse_args(argv)
    got = {k: ([], [], []) for k in a.only}
    for r in range(a.rounds):
        print(f"round {r + 1}: load average {os.getloadavg()[0]:.2f}", flush=True)
        for key in a.only:
            order = (0, 1) if r % 2 == 0 else (1, 0)
            t = [None, None]
            for which in order:
                t[which] = time_tree((a.first, a.second)[which], key, a.size, a.reps)
            got[key][0].append(t[0]["median"])
            got[key][1].append(t[1]["median"])
            got[key][2].append(t[1]["median"] / t[0]["median"])
            print(f"  {key} (size {t[0]['size']}): {t[0]['median'] * 1e3:8.2f} ms "
                  f"{t[1]['median'] * 1e3:8.2f} ms  ratio {got[key][2][-1]:.3f}", flush=True)
    print(f"load average at the end {os.getloadavg()[0]:.2f}")
    print(f"{'workload':<10}{'first ms':>10}{'second ms':>11}{'ratio':>8}")
    for key, (x, y, q) in got.items():
        print(f"{key:<10}{statistics.median(x) * 1e3:10.2f}{statistics.median(y) * 1e3:11.2f}"
              f"{statistics.median(q):8.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

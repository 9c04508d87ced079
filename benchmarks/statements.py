"""Time a compiled program statement by statement (the Numba backend).

    python -m benchmarks.statements W11                  # a peer workload, largest size
    python -m benchmarks.statements W2 --size 1024 --repeat 50
    python -m benchmarks.statements prog.tl -f loss --wrt x,w --sizes n=100000

The generated module's driver `run` calls one kernel, BLAS product or NumPy reduction per
statement (or one fused loop per row group).  A line tracer (`sys.settrace`, on `run`'s
frame only) charges the wall time from each line of `run` to the next to that line; lines
are then grouped by the statement they store (`env['x'] = ...`, or the kernel's
`# statement x` comment).  The tracer costs about a microsecond per line, noise next to
the kernels of the large sizes this is for.  Each statement's time is its median over the
traced calls (on a shared machine a call another process interrupted skews a mean), and
the medians' sum is printed beside the median time of whole calls with no tracer.

Beside each statement: its share, the bytes of the arrays it reads and writes at these
sizes (each array counted once, as a loop nest that streams them would), and the
bandwidth that implies: a statement far below the machine's memory bandwidth is compute
or latency bound, one near it can only get faster by touching fewer bytes.  Warm calls
only (after `sys_tl.settle`, the thread policy's steady state).
"""
from __future__ import annotations

import argparse
import os
import re
import sys
import time
from collections import defaultdict

import numpy as np

_STORE = re.compile(r"env\[['\"]([^'\"]+)['\"]\]\s*=")
_KERNEL = re.compile(r"\b(k\d+(?:_\w+)?)\(")


def _statement_of_lines(module) -> tuple[dict, dict]:
    """Line number of `run` -> (label, text); kernel name -> statement it computes."""
    import inspect
    src = inspect.getsource(module)
    kernel_stmt = {}
    current = None
    for line in src.splitlines():
        m = re.match(r"def (k\w+)\(", line)
        if m:
            current = m.group(1)
        m = re.match(r"\s+# statement (\S+)", line)
        if m and current:
            kernel_stmt[current] = m.group(1)
    code = module.run.__code__
    lines, first = inspect.getsourcelines(module.run)
    label = {}
    for k, text in enumerate(lines):
        lineno = first + k
        m = _STORE.search(text)
        if m:
            label[lineno] = m.group(1)
            continue
        m = _KERNEL.search(text)
        if m and m.group(1) in kernel_stmt:
            label[lineno] = kernel_stmt[m.group(1)]
        elif m and m.group(1).startswith("k"):
            label[lineno] = m.group(1)
        elif "tl_empty" in text or "tl_zeros" in text:
            label[lineno] = "(allocation)"
        else:
            label[lineno] = "(driver)"
    return label, code


def profile(fn, args: dict, repeat: int = 20):
    """{statement: seconds per call} for the compiled tensorlang function `fn` (its
    module is loaded at the first call), each the median over `repeat` traced calls
    (a statement's times on a shared machine are skewed by calls another process
    interrupted: the median is what a call usually spends there), and the median time of
    an untraced call."""
    fn(**args)
    module = fn._kernels
    label, code = _statement_of_lines(module)
    spent = defaultdict(float)
    last = [None, 0.0]

    def lines(frame, event, arg):
        now = time.perf_counter()
        if last[0] is not None:
            spent[last[0]] += now - last[1]
        last[0] = frame.f_lineno if event == "line" else None
        last[1] = time.perf_counter()
        return lines

    def calls(frame, event, arg):
        return lines if frame.f_code is code else None

    plain = []
    runs = defaultdict(list)
    for r in range(repeat):
        tic = time.perf_counter()
        fn(**args)
        plain.append(time.perf_counter() - tic)
        spent.clear()
        sys.settrace(calls)
        try:
            fn(**args)
        finally:
            sys.settrace(None)
        last[0] = None
        per = defaultdict(float)
        for lineno, t in spent.items():
            per[label.get(lineno, "(driver)")] += t
        for name in set(per) | set(runs):
            runs[name].append(per.get(name, 0.0))
    return ({name: float(np.median(ts)) for name, ts in runs.items()},
            float(np.median(plain)))


def statement_bytes(fn, args: dict) -> dict:
    """{statement: bytes of the distinct arrays it reads and writes} in the program the
    backend runs (after its preparation), at the sizes of `args`."""
    from tensorlang.backend.numba_module import prepare
    from tensorlang.ssa.ir import Access
    from tensorlang.ssa.traverse import iter_nodes
    prog = prepare(fn.optimized_program())
    _, sizes = fn.prepare((), args)
    shapes = prog.shapes()

    def nbytes(name):
        elem, dims = shapes[name]
        n = 1
        for d in dims:
            n *= d if isinstance(d, int) else sizes.get(d, 1)
        return n * (1 if elem == "bool" else 8)

    out = {}
    for st in prog.stmts:
        reads = {a.name for a in iter_nodes(st.body) if isinstance(a, Access)}
        out[st.name] = sum(nbytes(r) for r in reads) + nbytes(st.name)
    return out


def _peer(key: str, size, seed: int = 0):
    from benchmarks.peers import spec, sys_tl
    case = spec.CASES[key]
    size = size or case.full[-1]
    inp = spec.inputs(key, size, seed)
    _, d, transform, _ = sys_tl.programs(key, "main", size)
    d = d.compile("numba")
    return d, {p: inp[p] for p in d.params}, f"{key} ({case.size_name} = {size}, {transform})"


def _file(path: str, function, wrt, sizes: str, seed: int = 0):
    import tensorlang as tl
    from tensorlang.inputs import random_inputs
    mod = tl.load(path)
    f = mod[function or mod.names[0]]
    d = tl.grad(f, wrt=wrt.split(",")) if wrt else f
    given = dict(kv.split("=") for kv in sizes.split(",")) if sizes else {}
    args = random_inputs(f, {}, {k: int(v) for k, v in given.items()}, seed)
    d = d.compile("numba")
    return d, {p: args[p] for p in d.params}, f"{path} {f.name} {sizes}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("what", help="a peer workload key (W2, W11, ...) or a .tl file")
    ap.add_argument("--size", type=int, help="the workload's size (default: its largest)")
    ap.add_argument("-f", "--function")
    ap.add_argument("--wrt", help="differentiate (a .tl file): parameters, comma-separated")
    ap.add_argument("--sizes", help="a .tl file's sizes: n=1000,m=20")
    ap.add_argument("--repeat", type=int, default=20)
    a = ap.parse_args(argv)
    if a.what.endswith(".tl"):
        fn, args, title = _file(a.what, a.function, a.wrt, a.sizes)
    else:
        fn, args, title = _peer(a.what, a.size)
    from benchmarks.peers.sys_tl import settle
    settle(lambda: fn(**args), lambda: None)
    per, call = profile(fn, args, a.repeat)
    nb = statement_bytes(fn, args)
    total = sum(per.values())
    print(f"{title}: warm call {call * 1e3:.2f} ms (median), statements' medians add up to "
          f"{total * 1e3:.2f} ms; load average {os.getloadavg()[0]:.2f}")
    print(f"{'statement':<24}{'ms':>9}{'share':>8}{'MB':>9}{'GB/s':>8}")
    for name, t in sorted(per.items(), key=lambda kv: -kv[1]):
        mb = nb.get(name)
        bw = f"{mb / t / 1e9:8.1f}" if mb and t > 0 else " " * 8
        mbt = f"{mb / 1e6:9.1f}" if mb else " " * 9
        print(f"{name:<24}{t * 1e3:9.3f}{t / total:8.1%}{mbt}{bw}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

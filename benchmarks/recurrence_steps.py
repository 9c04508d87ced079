"""Recurrences on the Numba backend, one thread: each forward's CPU time against its
gradient's and against its arithmetic (the operations `tl.cost` counts), and the arm
program of tests/newuser5_programs.py against hand-written Numba loops.

    python benchmarks/recurrence_steps.py arm --side after > arm.jsonl
    python benchmarks/recurrence_steps.py survey --side after [LABEL ...] > survey.jsonl
    python benchmarks/recurrence_steps.py table arm.jsonl survey.jsonl   # markdown

The corpora are the ones beside this script (every program with a recurrence group in
tests/newuser*_programs.py and tests/realistic_programs.py, and the functions of the
recurrence examples); the tensorlang measured is the one imported, so two checkouts
are compared by running the script of one with PYTHONPATH set to each, under two
`--side` names, one after the other in the same shell run (the table pairs the
sides; the machine is shared: read the ratios).  Times are CPU times
(`time.process_time`, so other processes' load counts less), the best of repeated
warm calls, after any background compilation has finished.  Sizes: the program's own
test sizes scaled up together until the forward counts `--ops` operations.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time
import warnings
from pathlib import Path

os.environ.setdefault("NUMBA_NUM_THREADS", "1")
os.environ.setdefault("TENSORLANG_TIERS", "0")

import numpy as np  # noqa: E402

HERE = Path(__file__).resolve().parent.parent
CORPORA = ("newuser_programs", "newuser2_programs", "newuser3_programs", "newuser4_programs",
           "newuser5_programs", "newuser6_programs", "newuser7_programs", "newuser8_programs",
           "newuser9_programs", "realistic_programs")
EXAMPLES = ("rnn", "returns", "cumsum", "hmm", "soft_dtw", "lstm")
ARM_SHAPES = ((1_000_000, 1), (200_000, 4), (100_000, 16), (1000, 1000), (10, 100_000))


def cpu_time(fn, budget: float = 0.3) -> float:
    """The best CPU time of warm calls of fn: at least 5, more while within `budget`."""
    from tensorlang.backend.background import wait_for_background
    fn()
    fn()
    wait_for_background()       # a parallel twin compiling would be counted otherwise
    best, spent, n = float("inf"), 0.0, 0
    while n < 5 or (spent < budget and n < 25):
        t0 = time.process_time()
        fn()
        took = time.process_time() - t0
        best, spent, n = min(best, took), spent + took, n + 1
    return best


def corpus():
    """(label, source, function name, case) of every corpus program and example function."""
    import tensorlang as tl
    sys.path.insert(0, str(HERE / "tests"))
    out = []
    for module in CORPORA:
        for name, case in __import__(module).PROGRAMS.items():
            out.append((f"{module.replace('_programs', '')}:{name}", case["src"], name, case))
    for stem in EXAMPLES:
        path = HERE / "examples" / f"{stem}.tl"
        text = path.read_text()
        for fn in tl.parse(text, filename=str(path)):
            out.append((f"{stem}.tl:{fn.name}", text, fn.name, {}))
    return out


def scaled_sizes(fn, base: dict, ops: float) -> tuple[dict, float]:
    """The program's sizes (`base`, 4 where it gives none) scaled together by factors of
    1.5 until the forward counts `ops` operations, derived sizes following; and the
    factor."""
    import tensorlang as tl
    from tensorlang import sizexpr
    plain, derived = sizexpr.split(fn.program.sizes())
    cost = tl.cost(fn)
    scale, sizes = 1.0, None
    for _ in range(60):
        try:
            trial = sizexpr.bind(derived, {k: max(1, round(base.get(k, 4) * scale))
                                           for k in plain})
        except ValueError:
            scale *= 1.5
            continue
        sizes = trial
        if cost.evaluate(**sizes) >= ops:
            break
        scale *= 1.5
    return sizes, scale


def module_digest(fn) -> str:
    """A digest of the Numba module fn runs (without its header, which quotes the
    program): equal digests on two sides mean the same kernels."""
    from tensorlang.backend.numba_backend import module_source
    text = module_source(fn.optimized_program()).split("\nimport math", 1)[-1]
    return hashlib.sha1(text.encode()).hexdigest()[:8]


def survey(side: str, labels: list, ops: float) -> None:
    import tensorlang as tl
    from tensorlang import sizexpr
    from tensorlang.inputs import random_inputs
    from tensorlang.ssa.recur import recurrences
    for label, src, name, case in corpus():
        if labels and label not in labels:
            continue
        f = tl.parse(src)[name]
        if not recurrences(f.optimized_program()):
            continue
        row = dict(side=side, label=label)
        try:
            given = dict(case.get("sizes") or {})
            sizes, scale = scaled_sizes(f, given, ops)
            make = case.get("make")
            # `make` takes the case's sizes (some may be no size of the program: they
            # set one through its arrays), scaled alike
            args = (make(np.random.default_rng(0),
                         **{k: max(1, round(v * scale)) for k, v in given.items()})
                    if make else random_inputs(f, {}, sizes, seed=0))
            sizes = f.prepare((), args)[1]
            prog = f.program
            wrt = tuple(p.name for p in prog.params if p.elem == "f64")
            forward = f.compile("numba")
            if len(prog.outputs) == 1 and not prog.shapes()[prog.outputs[0]][1]:
                d, d_args = tl.grad(f, wrt=wrt).compile("numba"), args
            else:
                # a vjp: the forward's outputs' shapes give the cotangents
                d = tl.vjp(f, wrt=wrt).compile("numba")
                outs = forward(**args)
                outs = outs if isinstance(outs, tuple) else (outs,)
                extra = d.program.params[len(prog.params):]
                d_args = dict(args, **{p.name: np.ones(np.shape(v)) if np.ndim(v) else 1.0
                                       for p, v in zip(extra, outs)})
            row.update(sizes={k: v for k, v in sizes.items() if not sizexpr.is_derived(k)},
                       forward_kernels=module_digest(f), gradient_kernels=module_digest(d),
                       forward_ms=cpu_time(lambda: forward(**args)) * 1e3,
                       gradient_ms=cpu_time(lambda: d(**d_args)) * 1e3,
                       forward_ops=tl.cost(f).evaluate(**sizes),
                       gradient_ops=tl.cost(d).evaluate(**sizes))
        except Exception as exc:       # noqa: BLE001 -- recorded, the survey goes on
            row["error"] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:160]}"
        print(json.dumps(row), flush=True)


def arm_by_hand(cos, sin):
    """The arm program as a hand-written Numba loop over the links with the arms inside,
    taking cos and sin from `cos` and `sin`."""
    from numba import njit

    @njit(error_model="numpy")
    def arm_loop(th, L, tx, ty):
        K, B = th.shape
        phi, px, py = np.zeros(B), np.zeros(B), np.zeros(B)
        for k in range(K):
            for b in range(B):
                p = phi[b] + th[k, b]
                phi[b] = p
                px[b] += L[k] * cos(p)
                py[b] += L[k] * sin(p)
        return np.sum((px - tx) ** 2 + (py - ty) ** 2)

    return arm_loop


def arm(side: str) -> None:
    import tensorlang as tl
    sys.path.insert(0, str(HERE / "tests"))
    from newuser5_programs import PROGRAMS
    f = tl.parse(PROGRAMS["arm"]["src"])["arm"].compile("numba")
    grad_th = tl.grad(f, wrt="th").compile("numba")
    grad_all = tl.grad(f, wrt=("th", "L", "tx", "ty")).compile("numba")
    from tensorlang.backend.vmath import vcos, vsin
    # the C library's cos and sin (as one writes the loop), and vmath's (the arithmetic,
    # vectorised over the arms)
    libm, vector = arm_by_hand(np.cos, np.sin), arm_by_hand(vcos, vsin)
    for K, B in ARM_SHAPES:
        rng = np.random.default_rng(0)
        a = (rng.standard_normal((K, B)), rng.random(K) + 0.5, rng.standard_normal(B),
             rng.standard_normal(B))
        assert np.isclose(f(*a), libm(*a), rtol=1e-9) and np.isclose(f(*a), vector(*a), rtol=1e-9)
        row = dict(side=side, label="arm", sizes=dict(K=K, B=B))
        for what, fn in (("forward", f), ("grad_th", grad_th), ("grad_all", grad_all),
                         ("hand_libm", libm), ("hand_vmath", vector)):
            row[what + "_ms"] = cpu_time(lambda: fn(*a)) * 1e3
        print(json.dumps(row), flush=True)


def table(paths: list) -> None:
    """Markdown tables of the rows in `paths`, the sides side by side."""
    rows = [json.loads(line) for p in paths for line in Path(p).read_text().splitlines()
            if line.strip()]
    sides = list(dict.fromkeys(r["side"] for r in rows))
    by = {}
    for r in rows:
        # rows repeated (rounds of the same run): the best time of each
        key = (r["label"], json.dumps(r.get("sizes"), sort_keys=True))
        seen = by.setdefault(key, {}).setdefault(r["side"], r)
        for field, value in r.items():
            if field.endswith("_ms"):
                seen[field] = min(seen[field], value)
    first, last = sides[0], sides[-1]

    def sizes_text(r):
        return " ".join(f"{k}={v}" for k, v in (r.get("sizes") or {}).items())

    arm_rows = [(k, v) for k, v in by.items() if k[0] == "arm" and first in v and last in v]
    if arm_rows:
        print(f"| K, B | forward {first} | forward {last} | {first}/{last} "
              f"| gradient (all) {first} | gradient (all) {last} | gradient (th) {last} "
              f"| hand, libm | hand, vmath | fwd/grad {first} | fwd/grad {last} "
              f"| fwd/hand libm | fwd/hand vmath |")
        print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
        for _, v in arm_rows:
            b, n = v[first], v[last]
            print(f"| {sizes_text(n)} | {b['forward_ms']:.2f} | {n['forward_ms']:.2f} | "
                  f"{b['forward_ms'] / n['forward_ms']:.1f} | {b['grad_all_ms']:.2f} | "
                  f"{n['grad_all_ms']:.2f} | {n['grad_th_ms']:.2f} | {n['hand_libm_ms']:.2f} | "
                  f"{n['hand_vmath_ms']:.2f} | {b['forward_ms'] / b['grad_all_ms']:.2f} | "
                  f"{n['forward_ms'] / n['grad_all_ms']:.2f} | "
                  f"{n['forward_ms'] / n['hand_libm_ms']:.2f} | "
                  f"{n['forward_ms'] / n['hand_vmath_ms']:.2f} |")
        print()
    if not any(label != "arm" for label, _ in by):
        return
    print(f"| program | sizes | kernels | forward {first} ms | forward {last} ms "
          f"| gradient {first} ms | gradient {last} ms | grad/fwd {first} | grad/fwd {last} "
          f"| op ratio | fwd ns/op | grad ns/op |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for (label, _), v in by.items():
        if label == "arm" or first not in v or last not in v:
            continue
        b, n = v[first], v[last]
        if "error" in b or "error" in n:
            print(f"| {label} | | | {b.get('error', '')} | {n.get('error', '')} | | | | | | | |")
            continue
        same = kernels_changed(b, n)
        print(f"| {label} | {sizes_text(n)} | {same} | {b['forward_ms']:.3g} | {n['forward_ms']:.3g} | "
              f"{b['gradient_ms']:.3g} | {n['gradient_ms']:.3g} | "
              f"{b['gradient_ms'] / b['forward_ms']:.2f} | "
              f"{n['gradient_ms'] / n['forward_ms']:.2f} | "
              f"{n['gradient_ops'] / n['forward_ops']:.2f} | "
              f"{n['forward_ms'] * 1e6 / n['forward_ops']:.3f} | "
              f"{n['gradient_ms'] * 1e6 / n['gradient_ops']:.3f} |")


def kernels_changed(before: dict, after: dict) -> str:
    """Which of the two sides' Numba modules differ: "same", "forward", "gradient" or
    "both" (rows recorded with one digest of both modules say "changed")."""
    if "kernels" in before or "kernels" in after:
        return "same" if before.get("kernels") == after.get("kernels") else "changed"
    moved = [part for part in ("forward", "gradient")
             if before.get(f"{part}_kernels") != after.get(f"{part}_kernels")]
    return "both" if len(moved) == 2 else moved[0] if moved else "same"


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("what", choices=("arm", "survey", "table"))
    ap.add_argument("rest", nargs="*", help="survey: labels (default all); table: files")
    ap.add_argument("--side", default="this")
    ap.add_argument("--ops", type=float, default=1e7,
                    help="survey: the forward's operation count to scale sizes to")
    args = ap.parse_intermixed_args(argv)
    warnings.simplefilter("ignore")
    if args.what == "arm":
        arm(args.side)
    elif args.what == "survey":
        survey(args.side, args.rest, args.ops)
    else:
        table(args.rest)


if __name__ == "__main__":
    main()

"""Fuzzer 3: nested gathers and bad labels.

Programs over label tensors ``y: i64[n]`` (labels into k), ``z: i64[n]``
(labels into n) and ``w: i64[k]`` (labels into k) that gather through them at
any depth (``E[w[y[z[s]]], c]``), compare with them (``[c == y[z[s]]]``), use
them inside index arithmetic (``x[k - 1 - y[s]]``), as relation indices
(``[R[y[s], c]]``) and behind guards (``[y[s] >= 0] * E[y[s], c]``).  The
labels are in range or, in half of the cases, one entry is replaced by a bad
value (negative, just past the end, huge, the int64 extremes).

The evaluator follows the bracket rule: a false bracket is 0 and what it
multiplies is not evaluated, conjunctions are evaluated left to right.  When
an evaluated read is out of range, the call must raise a located
TLBoundsError; otherwise both backends must give the evaluator's values.
Forms the language does not promise (a gather inside index arithmetic) may be
refused with a located error.
"""
from __future__ import annotations

import random
import re

import numpy as np

from .common import BoundsExpected, Case

NAME = "gathers"

LABEL_BOUND = 2 ** 48        # tensorlang.bounds.MAX_SIZE: larger labels are call-time errors
BAD = [-1, -2, -3, "k", "k+1", "n+5", 100000, 5000000, 2 ** 31 - 1, 2 ** 31, 2 ** 40,
       2 ** 62, 2 ** 63 - 1, -(2 ** 63), -(2 ** 62), -(2 ** 31)]

F64 = ("E", "x", "v")
PARAMS = ("y: i64[n], z: i64[n], w: i64[k], E: f64[k, m], x: f64[k], v: f64[n], "
          "R: bool[k, m]")


class Node:
    """Source text and an evaluator ``ev(env, ix)``."""

    def __init__(self, text, ev, safe=True):
        self.text, self.ev, self.safe = text, ev, safe


def read(env, name, *idx):
    arr = env[name]
    for d, i in enumerate(idx):
        if not 0 <= i < arr.shape[d]:
            raise BoundsExpected(f"{name}{list(idx)}")
    return arr[tuple(idx)]


class Gen:
    def __init__(self, rng: random.Random, two_d: bool):
        self.rng = rng
        self.two_d = two_d
        self.arith = False          # did we write a gather inside index arithmetic?

    def coin(self, p=0.5):
        return self.rng.random() < p

    # ---- index expressions into a dimension of size n, and labels into k
    def into_n(self, depth):
        r = self.rng.random()
        if depth > 0 and r < 0.45:
            inner = self.into_n(depth - 1)
            return Node(f"z[{inner.text}]", lambda env, ix: int(read(env, "z", inner.ev(env, ix))))
        if r < 0.8:
            return Node("s", lambda env, ix: ix["s"])
        if r < 0.9:
            return Node("n - 1 - s", lambda env, ix: env["n"] - 1 - ix["s"])
        return Node("0", lambda env, ix: 0)

    def label(self, depth):
        """An expression whose value should lie in 0 .. k - 1."""
        if depth > 0 and self.coin(0.3):
            inner = self.label(depth - 1)
            return Node(f"w[{inner.text}]", lambda env, ix: int(read(env, "w", inner.ev(env, ix))))
        inner = self.into_n(depth)
        return Node(f"y[{inner.text}]", lambda env, ix: int(read(env, "y", inner.ev(env, ix))))

    # ---- terms
    def table(self, lab: Node) -> Node:
        if self.two_d:
            return Node(f"E[{lab.text}, c]", lambda env, ix: float(read(env, "E", lab.ev(env, ix),
                                                                        ix["c"])))
        return Node(f"x[{lab.text}]", lambda env, ix: float(read(env, "x", lab.ev(env, ix))))

    def guard(self, lab: Node):
        """A predicate that keeps `lab` in 0 .. k - 1 (text, ev)."""
        t = lab.text
        form = self.rng.choice(["lo", "hi", "both", "chain", "and"])
        if form == "lo":
            return f"{t} >= 0", lambda env, ix: lab.ev(env, ix) >= 0, False
        if form == "hi":
            return f"{t} < k", lambda env, ix: lab.ev(env, ix) < env["k"], False
        if form == "chain":
            return f"0 <= {t} < k", lambda env, ix: 0 <= lab.ev(env, ix) < env["k"], True
        if form == "and":
            return (f"{t} >= 0 and {t} <= k - 1",
                    lambda env, ix: lab.ev(env, ix) >= 0 and lab.ev(env, ix) <= env["k"] - 1, True)
        return (f"not ({t} < 0 or {t} >= k)",
                lambda env, ix: not (lab.ev(env, ix) < 0 or lab.ev(env, ix) >= env["k"]), True)

    def term(self) -> Node:
        kinds = ["gather", "gather", "masked", "masked", "compare", "relation", "gather_eq"]
        if self.coin(0.12):
            kinds = ["arith"]
        if not self.two_d:
            kinds.append("sum_compare")
        kinds.append("scatter")
        kind = self.rng.choice(kinds)
        depth = self.rng.choice([0, 1, 1, 2, 3])
        lab = self.label(depth)
        if kind == "gather":
            return self.table(lab)
        if kind == "masked":
            text, ev, full = self.guard(lab)
            body = self.table(lab)
            return Node(f"[{text}] * {body.text}",
                        lambda env, ix: body.ev(env, ix) if ev(env, ix) else 0.0)
        if kind == "compare":
            other = "c" if self.two_d else self.rng.choice(["0", "k - 1", "s"])
            op = self.rng.choice(["==", "!=", "<", ">="])
            oev = {"c": lambda env, ix: ix["c"], "0": lambda env, ix: 0,
                   "k - 1": lambda env, ix: env["k"] - 1, "s": lambda env, ix: ix["s"]}[other]
            cmp = {"==": lambda a, b: a == b, "!=": lambda a, b: a != b,
                   "<": lambda a, b: a < b, ">=": lambda a, b: a >= b}[op]
            lhs_first = self.coin()
            text = f"{other} {op} {lab.text}" if lhs_first else f"{lab.text} {op} {other}"
            if lhs_first:
                ev = lambda env, ix: 1.0 if cmp(oev(env, ix), lab.ev(env, ix)) else 0.0  # noqa: E731
            else:
                ev = lambda env, ix: 1.0 if cmp(lab.ev(env, ix), oev(env, ix)) else 0.0  # noqa: E731
            scale = self.table(self.label(0))
            return Node(f"[{text}] * {scale.text}", lambda env, ix: ev(env, ix) * scale.ev(env, ix)
                        if ev(env, ix) else 0.0)
        if kind == "gather_eq":
            lab2 = self.label(self.rng.choice([0, 1]))
            body = self.table(lab)
            return Node(f"[{lab.text} == {lab2.text}] * {body.text}",
                        lambda env, ix: body.ev(env, ix) if lab.ev(env, ix) == lab2.ev(env, ix)
                        else 0.0)
        if kind == "relation":
            col = "c" if self.two_d else "0"
            return Node(f"[R[{lab.text}, {col}]]",
                        lambda env, ix: 1.0 if read(env, "R", lab.ev(env, ix),
                                                    ix["c"] if self.two_d else 0) else 0.0)
        if kind == "scatter":
            # a scatter by a label comparison (`[s == z[e]]`: an edge list, a segment
            # sum): a label that matches no s reads nothing, so it is legal at any
            # value; the derivatives eliminate the comparison and keep its range check
            body = self.table(lab)
            text = re.sub(r"\bs\b", "e", body.text)

            def scattered(env, ix):
                total = 0.0
                for e in range(env["n"]):
                    if int(read(env, "z", e)) == ix["s"]:
                        total += body.ev(env, dict(ix, s=e))
                return total
            return Node(f"sum[e: n]([s == z[e]] * {text})", scattered)
        if kind == "sum_compare":
            # one-hot through a comparison: sum[c](E[.., c]) restricted to c == label
            return Node(f"sum[c: k]([c == {lab.text}] * x[c])",
                        lambda env, ix: sum(float(read(env, "x", c)) for c in range(env["k"])
                                            if c == lab.ev(env, ix)))
        # a gather inside index arithmetic (not promised by the language: may be refused)
        self.arith = True
        form = self.rng.choice(["rev", "plus", "minus", "plus0"])
        if form == "rev":
            idx = f"k - 1 - {lab.text}"
            iev = lambda env, ix: env["k"] - 1 - lab.ev(env, ix)  # noqa: E731
            guard, gev = None, None
        elif form == "plus":
            idx = f"{lab.text} + 1"
            iev = lambda env, ix: lab.ev(env, ix) + 1  # noqa: E731
            guard, gev = f"{lab.text} + 1 < k", lambda env, ix: lab.ev(env, ix) + 1 < env["k"]
        elif form == "minus":
            idx = f"{lab.text} - 1"
            iev = lambda env, ix: lab.ev(env, ix) - 1  # noqa: E731
            guard, gev = f"{lab.text} >= 1", lambda env, ix: lab.ev(env, ix) >= 1
        else:
            idx = f"{lab.text} + 0"
            iev = lambda env, ix: lab.ev(env, ix)  # noqa: E731
            guard, gev = None, None
        if self.two_d:
            body = Node(f"E[{idx}, c]", lambda env, ix: float(read(env, "E", iev(env, ix), ix["c"])))
        else:
            body = Node(f"x[{idx}]", lambda env, ix: float(read(env, "x", iev(env, ix))))
        if guard is None:
            return body
        return Node(f"[{guard}] * {body.text}",
                    lambda env, ix: body.ev(env, ix) if gev(env, ix) else 0.0)

    def expr(self):
        terms = [self.term() for _ in range(self.rng.choice([1, 1, 2, 3]))]
        text = " + ".join(t.text for t in terms)
        evs = [t.ev for t in terms]

        def ev(env, ix):
            total = 0.0
            for e in evs:
                total += e(env, ix)
            return total
        if self.coin(0.3):
            text = f"v[s] * ({text})"
            inner = ev
            ev = lambda env, ix: float(env["v"][ix["s"]]) * inner(env, ix)  # noqa: E731
        return Node(text, ev)


# The function's output: the tensor itself, or a scalar loss over the gathered
# values (the sum of its squares, its sum, the sum written around the body, or
# a second function that calls the first and sums the squares), with the share
# of cases of each.
OUTPUTS = {"tensor": 0.35, "squares": 0.25, "sum": 0.1, "inline": 0.15, "caller": 0.15}
UNREAD = 0.2            # share of cases differentiated wrt a parameter the body does not read
TOGETHER = 0.3          # share of cases differentiated wrt all f64 parameters at once too
SECOND_ORDER = 0.3      # share of scalar cases whose hvp and hessian are checked too
NUMBA_DERIVS = 0.08     # share of cases where one derivative (wrt the first wrt set) also
                        # runs on Numba (compiling it is what costs time)


def source_text(form: str, two_d: bool, body: str) -> tuple[str, str]:
    """(program text, the function to call) for the statement `o = body`."""
    if two_d:
        head, ret, ix, at = "o[s: n, c: m]", "f64[n, m]", "s: n, c: m", "o[s, c]"
    else:
        head, ret, ix, at = "o[s: n]", "f64[n]", "s: n", "o[s]"
    tensor = f"def gat({PARAMS}) -> {ret}:\n    {head} = {body}\n    return o\n"
    if form == "tensor":
        return tensor, "gat"
    if form == "caller":
        args = ", ".join(re.findall(r"(\w+):", PARAMS))
        return (f"{tensor}\ndef loss({PARAMS}) -> f64:\n    o = gat({args})\n"
                f"    return sum[{ix}]({at} * {at})\n"), "loss"
    if form == "inline":
        return f"def gat({PARAMS}) -> f64:\n    return sum[{ix}]({body})\n", "gat"
    total = f"{at} * {at}" if form == "squares" else at
    return (f"def gat({PARAMS}) -> f64:\n    {head} = {body}\n"
            f"    return sum[{ix}]({total})\n"), "gat"


def make(seed: int, output: str | None = None) -> Case:
    """Case `seed`; `output` forces the form of the output (one of OUTPUTS)."""
    rng = random.Random(seed)
    two_d = rng.random() < 0.6
    gen = Gen(rng, two_d)
    body = gen.expr()
    # the output and the derivatives are drawn apart, so a seed's statement and
    # inputs stay what they were before there were scalar outputs
    plan = random.Random(seed * 7919 + 17)
    form = output or plan.choices(list(OUTPUTS), weights=list(OUTPUTS.values()))[0]
    source, fname = source_text(form, two_d, body.text)
    n, m, k = rng.randint(1, 5), rng.randint(1, 4), rng.randint(1, 5)
    nrng = np.random.default_rng(seed)
    inputs = {
        "y": nrng.integers(0, k, n).astype(np.int64),
        "z": nrng.integers(0, n, n).astype(np.int64),
        "w": nrng.integers(0, k, k).astype(np.int64),
        "E": nrng.standard_normal((k, m)),
        "x": nrng.standard_normal(k),
        "v": nrng.standard_normal(n),
        "R": nrng.random((k, m)) < 0.5,
    }
    bad_note = "labels in range"
    if rng.random() < 0.55:
        name = rng.choice(["y", "z", "w", "y"])
        pos = rng.randrange(len(inputs[name]))
        bad = rng.choice(BAD)
        if isinstance(bad, str):
            bad = eval(bad, {}, {"k": k, "n": n})          # noqa: S307 -- our own constants
        inputs[name] = inputs[name].copy()
        inputs[name][pos] = bad
        bad_note = f"{name}[{pos}] = {bad}"
    sizes = {"n": n, "m": m, "k": k}

    def tensor():
        # A label beyond the size bound is refused at the call, masked or not
        # (docs/language.md, integer tensors).
        if any(np.any(np.abs(inputs[t].astype(float)) > LABEL_BOUND) for t in ("y", "z", "w")):
            raise BoundsExpected()
        env = dict(inputs)
        env.update(sizes)
        if two_d:
            out = np.zeros((n, m))
            for s in range(n):
                for c in range(m):
                    out[s, c] = body.ev(env, {"s": s, "c": c})
        else:
            out = np.zeros(n)
            for s in range(n):
                out[s] = body.ev(env, {"s": s})
        return out

    def expect():
        out = tensor()
        if form == "tensor":
            return [out]
        return [float(np.sum(out * out) if form in ("squares", "caller") else np.sum(out))]

    scalar = form != "tensor"
    second = scalar and plan.random() < SECOND_ORDER
    # jvp, and vjp or (for a scalar, either of them) grad: for a scalar output the
    # two are the same derivative called two ways, and each costs a derivation
    first = ("jvp", plan.choice(("grad", "vjp")) if scalar else "vjp")
    kinds = first + (("hvp", "hessian") if second else ())
    on_numba = (plan.choice(kinds),) if plan.random() < NUMBA_DERIVS else ()
    # wrt each f64 parameter the body reads alone, in a fifth of the cases one it
    # does not read too (its derivative is zero, but it must still refuse the
    # labels the function refuses), and in a share of the cases all at once first
    read = [w for w in F64 if re.search(rf"\b{w}\[", body.text)]
    unread = [w for w in F64 if w not in read]
    alone = read + ([plan.choice(unread)] if unread and plan.random() < UNREAD else [])
    together = (F64,) if plan.random() < TOGETHER or not alone else ()
    return Case(NAME, seed, source, fname, inputs, expect, may_reject=gen.arith,
                note=f"{bad_note}; output {form}", derivs=True,
                wrts=together + tuple((w,) for w in alone), first_order=first, fd=True,
                second_order=second, label_contract=True,
                out_shape=() if scalar else ((n, m) if two_d else (n,)), numba_kinds=on_numba,
                certify=True, certify_growth=True)

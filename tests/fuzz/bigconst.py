"""Fuzzer 4: big constants and deep expressions.

Each case is one of a few templates with a parameter drawn at random:

* index constants near and beyond 2^62 / 2^63 (and 400- to 5000-digit ones) as
  coefficients and offsets: ``[C * i < n] * x[C * i]``, ``x[i + C - C]``;
* float literals at the edge of float64: ``1e308``, ``1e999``, ``1e-400``, a
  400-digit integer in value position, ``** 1e999``;
* IEEE values: ``x[i] / x[i]``, ``x[i] - x[i]`` with x holding 0, inf, NaN;
* deep nesting: 100-600 parentheses, nested ``1.0 + (...)``, ``-(-(...))``,
  ``tanh(tanh(...))``;
* long flat sums (500-5000 terms), long index sums (``i + 1 - 1 + ...``) and
  ``**`` chains (10-300 long);
* many statements (50-600 scalar statements in a chain).

The outcome must be the value (computed here in plain Python / NumPy with
IEEE semantics) or a located TLError; never a crash, a traceback, an
unlocated error or a hang (the harness times each case out).
"""
from __future__ import annotations

import random

import numpy as np

from .common import Case, Skip

NAME = "bigconst"

BIG_INTS = [2 ** 62, 2 ** 62 + 1, 4611686018427387904, 4611687117939015680, 2 ** 63 - 1,
            2 ** 63, 2 ** 63 + 1, 2 ** 64, 10 ** 19, 10 ** 20, 10 ** 30, 3 * 2 ** 61]
FLOATS = ["1e308", "1.7976931348623157e308", "1e309", "1e999", "1e-320", "1e-400", "5e-324",
          "2.5e-308", "9" * 400, "1" + "0" * 400, "1" * 320, "0.1e310"]


class Lit(int):
    """An integer that prints as its decimal text even past Python's limit on
    int -> str conversion (4300 digits), without changing that limit (the
    compiler runs in the same process)."""

    def __str__(self):
        return self.text

    __repr__ = __str__

    def __neg__(self):
        out = Lit(-int(self))
        out.text = self.text[1:] if self.text.startswith("-") else "-" + self.text
        return out

    def __abs__(self):
        return -self if self < 0 else self


def _lit(digits: int) -> Lit:
    out = Lit(10 ** digits - 1)
    out.text = "9" * digits
    return out


def _huge_int(rng):
    return _lit(rng.choice([20, 40, 400, 2000, 5000]))


def _vector(rng, n, special=False):
    v = rng.standard_normal(n)
    if special:
        pool = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e308, -1e308, 5e-324]
        for k in range(n):
            if rng.random() < 0.5:
                v[k] = pool[int(rng.integers(len(pool)))]
    return v


def _np(op, *args):
    with np.errstate(all="ignore"):
        return op(*[np.float64(a) for a in args])


def make(seed: int) -> Case:
    rng = random.Random(seed)
    nrng = np.random.default_rng(seed)
    n = rng.randint(1, 5)
    x = _vector(nrng, n)
    kind = rng.choice(["index_const", "index_const", "float_lit", "float_lit", "ieee",
                       "nest_paren", "nest_add", "nest_neg", "nest_call", "flat_sum",
                       "index_sum", "pow_chain", "statements"])
    head = "def big(x: f64[n], s: f64) -> f64[n]:"
    s = float(nrng.standard_normal())
    note = kind

    def vec(f):
        return lambda: [np.array([f(i) for i in range(n)], dtype=float)]

    if kind == "index_const":
        c = rng.choice(BIG_INTS + [_huge_int(rng)])
        if rng.random() < 0.2:
            c = -c
        form = rng.choice(["mul_guard", "offset", "chain", "cmp_only", "neg_offset"])
        note = f"{kind}/{form} C={str(c)[:30]}"
        if form == "mul_guard":
            body = f"[{c} * i < n] * x[{c} * i]" if c >= 0 else \
                f"[0 <= {c} * i < n] * x[{c} * i]"
            want = vec(lambda i: x[c * i] if 0 <= c * i < n else 0.0)
        elif form == "offset":
            body = f"x[i + {c} - {c}]"
            want = vec(lambda i: x[i])
        elif form == "chain":
            body = f"[0 <= i + {c} < n] * x[i + {c}]"
            want = vec(lambda i: x[i + c] if 0 <= i + c < n else 0.0)
        elif form == "neg_offset":
            body = f"[i - {c} >= 0 and i - {c} < n] * x[i - {c}]"
            want = vec(lambda i: x[i - c] if 0 <= i - c < n else 0.0)
        else:
            body = f"[{c} * i >= {c}] * x[i]" if c >= 0 else f"[{-c} * i >= {-c}] * x[i]"
            cc = abs(c)
            want = vec(lambda i: x[i] if cc * i >= cc else 0.0)
        src = f"{head}\n    o[i: n] = {body}\n    return o\n"
        return Case(NAME, seed, src, "big", {"x": x, "s": s}, want, may_reject=True,
                    may_raise=True, note=note)

    if kind == "float_lit":
        lit = rng.choice(FLOATS)
        lv = float(lit)
        form = rng.choice(["mul", "add", "div", "sub_self", "pow", "powcall", "scalar"])
        xs = _vector(nrng, n, special=rng.random() < 0.3)
        x = xs
        # A literal whose float64 value is 0 (1e-400) is a zero coefficient, a strong
        # zero (docs/language.md, *Zeros*): its term is 0 even where x is inf or NaN.
        zero = lv == 0.0
        if form == "mul":
            body, f = f"{lit} * x[i]", lambda i: 0.0 if zero else _np(np.multiply, lv, x[i])
        elif form == "add":
            body, f = f"x[i] + {lit}", lambda i: _np(np.add, x[i], lv)
        elif form == "div":
            body, f = f"x[i] / {lit}", lambda i: _np(np.divide, x[i], lv)
        elif form == "sub_self":
            body, f = f"{lit} * x[i] - {lit}", lambda i: (
                0.0 if zero else _np(np.subtract, _np(np.multiply, lv, x[i]), lv))
        elif form == "pow":
            body, f = f"abs(x[i]) ** {lit}", lambda i: _np(np.power, abs(x[i]), lv)
        elif form == "powcall":
            body, f = f"pow(abs(x[i]) + 0.5, {lit})", lambda i: _np(np.power, abs(x[i]) + 0.5, lv)
        else:
            body, f = f"s * {lit} + x[i]", lambda i: (
                x[i] if zero else _np(np.add, _np(np.multiply, s, lv), x[i]))
        src = f"{head}\n    o[i: n] = {body}\n    return o\n"
        return Case(NAME, seed, src, "big", {"x": x, "s": s}, vec(f), may_reject=True,
                    may_raise=True, note=f"{kind}/{form} {lit[:20]}")

    if kind == "ieee":
        x = _vector(nrng, n, special=True)
        form = rng.choice(["div_self", "sub_self", "div_zero", "mul_inf", "sub_scalar"])
        if form == "div_self":
            body, f = "x[i] / x[i]", lambda i: _np(np.divide, x[i], x[i])
        # Like terms that cancel are a strong zero (docs/language.md): e - e is 0 even
        # where e is inf or NaN; every other operation follows IEEE.
        elif form == "sub_self":
            body, f = "x[i] - x[i]", lambda i: 0.0
        elif form == "div_zero":
            body, f = "x[i] / (x[i] - x[i])", lambda i: _np(np.divide, x[i], 0.0)
        elif form == "mul_inf":
            body, f = "x[i] * 1e308 * 10.0", lambda i: _np(np.multiply, _np(np.multiply, x[i], 1e308), 10.0)
        else:
            body, f = "(s + x[i]) - (s + x[i])", lambda i: 0.0
        src = f"{head}\n    o[i: n] = {body}\n    return o\n"
        return Case(NAME, seed, src, "big", {"x": x, "s": s}, vec(f), may_reject=True,
                    may_raise=True, note=f"{kind}/{form}")

    if kind.startswith("nest"):
        depth = rng.choice([50, 100, 200, 300, 400, 488, 500, 600])
        if kind == "nest_paren":
            body = "(" * depth + "x[i]" + ")" * depth
            f = lambda i: x[i]  # noqa: E731
        elif kind == "nest_add":
            body = "(0.5 + " * depth + "x[i]" + ")" * depth
            f = lambda i: x[i] + 0.5 * depth  # noqa: E731
        elif kind == "nest_neg":
            body = "-(" * depth + "x[i]" + ")" * depth
            f = lambda i: x[i] * (-1) ** depth  # noqa: E731
        else:
            depth = depth // 4
            body = "tanh(" * depth + "x[i]" + ")" * depth

            def f(i):
                v = x[i]
                for _ in range(depth):
                    v = np.tanh(v)
                return v
        src = f"{head}\n    o[i: n] = {body}\n    return o\n"
        return Case(NAME, seed, src, "big", {"x": x, "s": s}, vec(f), may_reject=True,
                    may_raise=True, scale=float(depth), note=f"{kind} depth {depth}")

    if kind == "flat_sum":
        terms = rng.choice([100, 490, 500, 1000, 2000, 5000])
        coefs = [rng.choice([0.5, 1.0, -1.0, 0.25, 2.0]) for _ in range(terms)]
        shifts = [rng.choice(["i", "n - 1 - i", "0"]) for _ in range(terms)]
        one_line = rng.random() < 0.7
        parts = [f"{c} * x[{sh}]" for c, sh in zip(coefs, shifts)]
        sep = " + " if one_line else " +\n        "
        body = sep.join(parts)
        if not one_line:
            body = f"({body})"

        def f(i):
            total = 0.0
            for c, sh in zip(coefs, shifts):
                j = {"i": i, "n - 1 - i": n - 1 - i, "0": 0}[sh]
                total += c * x[j]
            return total
        src = f"{head}\n    o[i: n] = {body}\n    return o\n"
        return Case(NAME, seed, src, "big", {"x": x, "s": s}, vec(f), may_reject=True,
                    may_raise=True, scale=float(terms) * 4.0, note=f"{kind} {terms} terms")

    if kind == "index_sum":
        terms = rng.choice([50, 200, 500, 1000, 3000])
        steps = [rng.choice([1, -1, 2, -2]) for _ in range(terms)]
        total = sum(steps)
        steps.append(-total)
        idx = "i" + "".join(f" + {st}" if st >= 0 else f" - {-st}" for st in steps)
        src = f"{head}\n    o[i: n] = x[{idx}]\n    return o\n"
        return Case(NAME, seed, src, "big", {"x": x, "s": s}, vec(lambda i: x[i]),
                    may_reject=True, may_raise=True, note=f"{kind} {terms} terms")

    if kind == "pow_chain":
        length = rng.choice([10, 50, 100, 200, 300])
        tail = " ** ".join(rng.choice(["1", "1.0", "2.0", "0.5", "3"]) for _ in range(length))
        body = f"abs(x[i]) ** 1.0 ** {tail}"
        src = f"{head}\n    o[i: n] = {body}\n    return o\n"
        return Case(NAME, seed, src, "big", {"x": x, "s": s}, vec(lambda i: abs(x[i])),
                    may_reject=True, may_raise=True, note=f"{kind} {length}")

    # many scalar statements in a chain
    count = rng.choice([50, 100, 200, 400, 600])
    lines = ["    a0 = s"]
    value = s
    for k in range(1, count + 1):
        c = rng.choice([0.5, 1.0, 0.25])
        lines.append(f"    a{k} = 0.5 * a{k - 1} + {c}")
        value = 0.5 * value + c
    lines.append(f"    o[i: n] = x[i] + a{count}")
    src = head + "\n" + "\n".join(lines) + "\n    return o\n"
    if not np.isfinite(value):
        raise Skip("overflow")
    return Case(NAME, seed, src, "big", {"x": x, "s": s}, vec(lambda i: x[i] + value),
                may_reject=True, may_raise=True, note=f"{kind} {count}")

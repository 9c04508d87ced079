"""Derived sizes: ranges written as arithmetic of size symbols (LANGUAGE.md section 13).

A range such as ``n - k + 1`` or ``n / 2`` is a size symbol of its own, a
*derived* size, whose value is fixed by the sizes it is written in.  Its name is
its canonical text (``"n - k + 1"``, ``"(n - 1) / 2"``), which no user symbol can
spell (names have no spaces), so a derived size travels through every stage as
an ordinary size symbol, in ``Dim`` positions, as a ``SizeVar`` and in cost
polynomials, and its definition is always recoverable from the name alone: a
program read back from disk, or inlined into a caller, needs no side table.

The stages that must know what a derived size means ask here: the bounds
prover adds ``den * d == numerator`` and ``d >= 1`` to its facts, a call
computes the value (an odd ``n`` under ``n / 2``, or an empty range, is a
``TLShapeError``), and cost polynomials evaluate it and print it in brackets.

Only one division, at the top: ``(affine in sizes) / positive integer``.
Anything else (a product of two sizes, a division inside a sum) is rejected
where it is written, so the prover only ever sees linear facts.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from functools import lru_cache


@dataclass(frozen=True)
class SizeExpr:
    """``(sum coef * symbol + const) / den`` with integer coefficients and den >= 1."""
    terms: tuple[tuple[str, int], ...]
    const: int = 0
    den: int = 1

    def symbols(self) -> list[str]:
        return [s for s, _ in self.terms]

    def numerator(self, sizes: dict) -> int:
        return sum(c * sizes[s] for s, c in self.terms) + self.const


class NotASize(ValueError):
    """The expression is not an affine form of sizes over one integer divisor."""


def canonical(terms: dict, const: int, den: int = 1):
    """The Dim for ``(terms + const) / den``: an int, a plain symbol, or a derived name."""
    if den < 1:
        raise NotASize("a size can only be divided by a positive integer")
    terms = {s: c for s, c in terms.items() if c}
    g = den
    for c in (*terms.values(), const):
        g = math.gcd(g, c)
    if g > 1:
        terms = {s: c // g for s, c in terms.items()}
        const //= g
        den //= g
    if not terms:
        if const % den:
            raise NotASize(f"{const} / {den} is not an integer")
        return const // den
    if den == 1 and const == 0 and len(terms) == 1:
        (s, c), = terms.items()
        if c == 1:
            return s
    return _text(SizeExpr(tuple(sorted(terms.items())), const, den))


def _text(e: SizeExpr) -> str:
    # Positive terms first, so `n - k + 1` reads as written most of the time.
    order = sorted(e.terms, key=lambda sc: (sc[1] < 0, sc[0]))
    out = ""
    for k, (s, c) in enumerate(order):
        mag = abs(c)
        word = s if mag == 1 else f"{mag} * {s}"
        if k == 0:
            out = word if c > 0 else f"-{word}"
        else:
            out += (" + " if c > 0 else " - ") + word
    if e.const:
        out += (" + " if e.const > 0 else " - ") + str(abs(e.const))
    if e.den == 1:
        return out
    if len(e.terms) == 1 and not e.const and e.terms[0][1] == 1:
        return f"{out} / {e.den}"
    return f"({out}) / {e.den}"


_TOKEN = re.compile(r"\s*(\d+|[A-Za-z_][A-Za-z0-9_]*|[-+*/()])")


@lru_cache(maxsize=4096)
def parse(name) -> SizeExpr | None:
    """The definition of a derived size from its name; None for a plain symbol or an int."""
    if not isinstance(name, str) or " " not in name:
        return None
    toks = _TOKEN.findall(name)
    den = 1
    if len(toks) >= 2 and toks[-2] == "/":
        den = int(toks[-1])
        toks = toks[:-2]
    if toks and toks[0] == "(" and toks[-1] == ")":
        toks = toks[1:-1]
    terms: dict = {}
    const = 0
    sign = 1
    k = 0
    while k < len(toks):
        t = toks[k]
        if t in "+-":
            sign = 1 if t == "+" else -1
            k += 1
            continue
        if t.isdigit() and k + 1 < len(toks) and toks[k + 1] == "*":
            terms[toks[k + 2]] = terms.get(toks[k + 2], 0) + sign * int(t)
            k += 3
        elif t.isdigit():
            const += sign * int(t)
            k += 1
        else:
            terms[t] = terms.get(t, 0) + sign
            k += 1
        sign = 1
    return SizeExpr(tuple(sorted(terms.items())), const, den)


def is_derived(d) -> bool:
    return parse(d) is not None


def base_symbols(d) -> list[str]:
    """The user size symbols a Dim is written in (itself for a plain symbol)."""
    e = parse(d)
    if e is not None:
        return e.symbols()
    return [d] if isinstance(d, str) else []


def undivided(name: str) -> list[str]:
    """The symbols of a derived size whose multiples the divisor does not take whole
    (n in `(n - 4 * k + 4) / 4`): only they decide whether the size is whole."""
    e = parse(name)
    return [s for s, c in e.terms if c % e.den] if e is not None else []


def as_written(name: str) -> str:
    """A derived size with the parts its divisor takes whole moved out of the
    division, as a user writes it: `(n - 4 * k + 4) / 4` is `n / 4 - k + 1`.  A
    constant the divisor does not take whole stays inside, whole: `(h - 3) / 2`,
    not `(h - 1) / 2 - 1`."""
    e = parse(name)
    if e is None or e.den == 1:
        return name
    inside = {s: c for s, c in e.terms if c % e.den}
    if not inside:
        return name
    outside = {s: c // e.den for s, c in e.terms if not c % e.den}
    const_in = 0 if e.const % e.den == 0 else e.const
    const_out = (e.const - const_in) // e.den
    text = _text(SizeExpr(tuple(sorted(inside.items())), const_in, e.den))
    for sym, c in sorted(outside.items(), key=lambda sc: (sc[1] < 0, sc[0])):
        word = sym if abs(c) == 1 else f"{abs(c)} * {sym}"
        text += (" + " if c > 0 else " - ") + word
    if const_out:
        text += (" + " if const_out > 0 else " - ") + str(abs(const_out))
    return text


def value(name: str, sizes: dict) -> int:
    """The derived size at these sizes; ValueError saying why it has none."""
    e = parse(name)
    num = e.numerator(sizes)
    if num % e.den:
        at = ", ".join(f"{s} = {sizes[s]}" for s in undivided(name))
        raise ValueError(f"the size {as_written(name)} is not a whole number at {at}: "
                         f"/ is exact division of sizes")
    at = ", ".join(f"{s} = {sizes[s]}" for s in e.symbols())
    v = num // e.den
    if v < 1:
        raise ValueError(f"the range {name} is {v} at {at}, but ranges are at least 1")
    return v


def bind(names, sizes: dict) -> dict:
    """sizes with every derived size among names added (ValueError when one has no value)."""
    out = dict(sizes)
    for name in names:
        if name not in out and is_derived(name):
            out[name] = value(name, out)
    return out


def display(name: str) -> str:
    """How a size is shown inside a larger expression: derived ones in brackets."""
    return f"({name})" if is_derived(name) else name


def split(symbols) -> tuple[list[str], list[str]]:
    """(the plain sizes, including those derived sizes are written in; the derived
    sizes), each sorted: samplers choose values for the first and `complete` the rest."""
    plain, derived = set(), set()
    for s in symbols:
        e = parse(s)
        if e is None:
            plain.add(s)
        else:
            derived.add(s)
            plain.update(e.symbols())
    return sorted(plain), sorted(derived)


def complete(point: dict, derived) -> dict:
    """point (values of plain sizes) with each derived size computed from it, rounded
    down and at least 1: for comparing costs at sampled sizes, where the sizes need
    not satisfy every exact division."""
    for d in derived:
        e = parse(d)
        point[d] = max(1, e.numerator(point) // e.den)
    return point


def admissible(point: dict, derived) -> bool:
    """Can a call have the plain sizes of `point`: is each derived size at least 1
    there (rounded down)?  `n - k + 1` at k = 65536, n = 8 is no call's size."""
    for d in derived:
        e = parse(d)
        if e.numerator(point) // e.den < 1:
            return False
    return True


def substitute(d, mapping: dict):
    """The Dim d with its sizes replaced by the Dims of `mapping` (a callee's sizes
    in terms of its caller's), canonical again.  A derived size mapped through
    derived sizes keeps one division: (n - k + 1) with n = p / 2 is (p - 2k + 2) / 2."""
    if isinstance(d, int):
        return d
    e = parse(d)
    if e is None:
        return mapping.get(d, d)
    parts = []                        # (coefficient, numerator terms, const, den)
    for s, c in e.terms:
        m = mapping.get(s, s)
        if isinstance(m, int):
            parts.append((c, {}, m, 1))
        else:
            me = parse(m)
            parts.append((c, {m: 1}, 0, 1) if me is None else (c, dict(me.terms), me.const, me.den))
    lcm = 1
    for *_, den in parts:
        lcm = lcm * den // math.gcd(lcm, den)
    terms: dict = {}
    const = e.const * lcm
    for c, ts, k, den in parts:
        scale = c * (lcm // den)
        for s, x in ts.items():
            terms[s] = terms.get(s, 0) + scale * x
        const += scale * k
    return canonical(terms, const, e.den * lcm)

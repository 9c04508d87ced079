"""Random well-typed programs: printing is a fixed point, and values are right.

A Hypothesis strategy writes random `.tl` functions in surface syntax.  Every
expression node it produces carries two things: its source text and a small
Python function that computes the node's value at given integer index values
with explicit loops.  That second half is an evaluator written independently of
the compiler, with the language's bracket rule spelled out directly: a false
bracket yields 0 and the expression it multiplies is never evaluated (so a
guarded out-of-range read or a guarded NaN cannot leak through).

For each program we check
  (a) print -> parse -> print is a fixed point, the reparsed program equals the
      original, and both pass ``verify``;
  (b) the original and the reparsed function give bit-identical results;
  (c) the reference interpreter agrees with the generator's own evaluator, both
      on the program as lowered and through the public call.

Numbers are compared with rtol 1e-9 and atol 1e-12 scaled by the largest
magnitude the evaluator saw being added or summed: the compiler reorders and
expands arithmetic, so a cancellation between terms of size M can leave an
absolute rounding difference of a few ulp of M.

Access indices are always provably in bounds: every shifted index is
multiplied directly by the bracket that guards it, e.g. `[i + 1 < n] * x[i + 1]`.
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field, replace
from typing import Callable

import numpy as np
import pytest
from hypothesis import HealthCheck, given, reject, settings
from hypothesis import strategies as st

import tensorlang as tl
from tensorlang.backend.numpy_ref import evaluate
from tensorlang.ssa.verify import verify

RTOL = 1e-9
ATOL = 1e-12
# Programs whose evaluation reaches magnitudes beyond this are discarded: the
# comparison would be about overflow, not about the compiler.
MAX_MAGNITUDE = 1e8

# Index variable names (none of them is a tensor, size or function name).
INDEX_NAMES = ("i", "j", "r", "v", "a", "b", "d", "e", "g", "l") + tuple(
    f"i{k}" for k in range(2, 40))


# Operator precedence of the text a node produces (higher binds tighter).
ADD, MUL, UNARY, POW, ATOM = 1, 2, 3, 4, 5
# Precedence of predicates: `or` < `and` < `not` < a comparison or atom.
P_OR, P_AND, P_NOT, P_CMP = 0, 1, 2, 3


class GeneratorBug(AssertionError):
    """The generator produced something it promised not to (e.g. an unguarded
    out-of-range read); a bug in this file, not in the compiler."""


class Overflow(Exception):
    """The evaluator hit a value too large to compare meaningfully."""


# ---------------------------------------------------------------------------
# evaluation helpers
# ---------------------------------------------------------------------------

def _track(env, *values):
    """Remember the largest magnitude that took part in an addition."""
    for v in values:
        a = abs(v)
        if not a < MAX_MAGNITUDE:          # also catches inf and nan
            raise Overflow(v)
        if a > env["__mag__"][0]:
            env["__mag__"][0] = a


def _read(env, name, idx):
    arr = env[name]
    if len(idx) != arr.ndim:
        raise GeneratorBug(f"{name} read with {len(idx)} indices")
    for k, i in enumerate(idx):
        if not 0 <= i < arr.shape[k]:
            raise GeneratorBug(f"{name}{list(idx)} read outside shape {arr.shape}")
    return arr[tuple(idx)]


def _sigmoid(v):
    if v >= 0:
        return 1.0 / (1.0 + math.exp(-v))
    e = math.exp(v)
    return e / (1.0 + e)


def _exp(v):
    try:
        return math.exp(v)
    except OverflowError:
        raise Overflow(v) from None


def _pow(v, p):
    try:
        return float(v) ** p
    except OverflowError:
        raise Overflow(v) from None


# ---------------------------------------------------------------------------
# nodes: source text + an evaluator
# ---------------------------------------------------------------------------

@dataclass(frozen=True)
class Val:
    """A value expression."""
    text: str
    prec: int
    ev: Callable                  # (env, ix) -> float
    uses: frozenset = frozenset()  # index names used as a whole index of a tensor
    # Does the text read as a float value (not an index) on one side of a
    # comparison?  An integer literal or a size name alone does not.
    valueish: bool = True


@dataclass(frozen=True)
class Pred:
    """A predicate (the inside of a bracket)."""
    text: str
    prec: int
    ev: Callable                  # (env, ix) -> bool
    uses: frozenset = frozenset()
    # True when it reads a tensor at an index that only a conjunct of this very
    # predicate keeps in range; such a predicate must not be negated.
    guarded: bool = False


@dataclass(frozen=True)
class Ix:
    """An affine index expression."""
    text: str
    ev: Callable                  # (env, ix) -> int
    plain: str | None = None      # the index name when it stands alone
    prec: int = ATOM


def par(node, need: int) -> str:
    return node.text if node.prec >= need else f"({node.text})"


def const(text: str) -> Val:
    value = float(text)
    return Val(text, ATOM, lambda env, ix: value, valueish=not text.isdigit())


def add(a: Val, b: Val) -> Val:
    def ev(env, ix):
        x, y = a.ev(env, ix), b.ev(env, ix)
        _track(env, x, y)
        return x + y
    return Val(f"{par(a, ADD)} + {par(b, MUL)}", ADD, ev, a.uses | b.uses,
               a.valueish or b.valueish)


def sub(a: Val, b: Val) -> Val:
    def ev(env, ix):
        x, y = a.ev(env, ix), b.ev(env, ix)
        _track(env, x, y)
        return x - y
    return Val(f"{par(a, ADD)} - {par(b, MUL)}", ADD, ev, a.uses | b.uses,
               a.valueish or b.valueish)


def mul(a: Val, b: Val) -> Val:
    return Val(f"{par(a, MUL)} * {par(b, UNARY)}", MUL,
               lambda env, ix: a.ev(env, ix) * b.ev(env, ix), a.uses | b.uses,
               a.valueish or b.valueish)


def div(a: Val, b: Val) -> Val:
    return Val(f"{par(a, MUL)} / {par(b, UNARY)}", MUL,
               lambda env, ix: a.ev(env, ix) / b.ev(env, ix), a.uses | b.uses)


def neg(a: Val) -> Val:
    inner = par(a, UNARY)
    if inner.startswith("-"):
        inner = f"({a.text})"
    return Val(f"-{inner}", UNARY, lambda env, ix: -a.ev(env, ix), a.uses, a.valueish)


def power(a: Val, p: str) -> Val:
    k = float(p)
    return Val(f"{par(a, ATOM)} ** {p}", POW, lambda env, ix: _pow(a.ev(env, ix), k), a.uses)


def call(fn: str, args, f) -> Val:
    text = f"{fn}({', '.join(a.text for a in args)})"
    uses = frozenset().union(*[a.uses for a in args])
    return Val(text, ATOM, lambda env, ix: f(*[a.ev(env, ix) for a in args]), uses)


def bracket(p: Pred) -> Val:
    return Val(f"[{p.text}]", ATOM, lambda env, ix: 1.0 if p.ev(env, ix) else 0.0, p.uses)


def guarded(p: Pred, e: Val, bracket_first: bool = True) -> Val:
    """`[p] * e`: 0 where p is false, and e is then not evaluated at all."""
    text = (f"[{p.text}] * {par(e, UNARY)}" if bracket_first
            else f"{par(e, MUL)} * [{p.text}]")
    return Val(text, MUL, lambda env, ix: e.ev(env, ix) if p.ev(env, ix) else 0.0,
               p.uses | e.uses)


def summation(binders, body: Val, explicit: bool) -> Val:
    names = [n for n, _ in binders]
    dims = [d for _, d in binders]
    head = ", ".join(f"{n}: {d}" if explicit else n for n, d in binders)

    def ev(env, ix):
        total = 0.0
        for vals in itertools.product(*[range(env[d]) for d in dims]):
            inner = dict(ix)
            inner.update(zip(names, vals))
            t = body.ev(env, inner)
            _track(env, t, total)
            total += t
        return total
    return Val(f"sum[{head}]({body.text})", ATOM, ev, body.uses - frozenset(names))


def reduction(op: str, binders, body: Val, explicit: bool) -> Val:
    """`max[...](e)`, `min[...](e)` or `logsumexp[...](e)` (ranges are never empty)."""
    names = [n for n, _ in binders]
    dims = [d for _, d in binders]
    head = ", ".join(f"{n}: {d}" if explicit else n for n, d in binders)

    def ev(env, ix):
        vals = []
        for point in itertools.product(*[range(env[d]) for d in dims]):
            inner = dict(ix)
            inner.update(zip(names, point))
            vals.append(body.ev(env, inner))
        _track(env, *vals)
        if op == "max":
            return max(vals)
        if op == "min":
            return min(vals)
        top = max(vals)
        return top + math.log(math.fsum(math.exp(v - top) for v in vals))
    return Val(f"{op}[{head}]({body.text})", ATOM, ev, body.uses - frozenset(names))


def p_and(a: Pred, b: Pred) -> Pred:
    return Pred(f"{par(a, P_AND)} and {par(b, P_NOT)}", P_AND,
                lambda env, ix: a.ev(env, ix) and b.ev(env, ix), a.uses | b.uses,
                a.guarded or b.guarded)


def p_or(a: Pred, b: Pred) -> Pred:
    return Pred(f"{par(a, P_OR)} or {par(b, P_AND)}", P_OR,
                lambda env, ix: a.ev(env, ix) or b.ev(env, ix), a.uses | b.uses,
                a.guarded or b.guarded)


def p_not(a: Pred, paren: bool) -> Pred:
    if a.guarded:
        raise GeneratorBug("a guarded predicate must not be negated")
    inner = f"({a.text})" if (paren or a.prec < P_NOT) else a.text
    return Pred(f"not {inner}", P_NOT, lambda env, ix: not a.ev(env, ix), a.uses)


def conj(guards, last: Pred | None = None) -> Pred:
    """guard1 and guard2 and ... [and last], evaluated left to right."""
    parts = list(guards) + ([last] if last is not None else [])
    out = parts[0]
    for p in parts[1:]:
        out = p_and(out, p)
    if last is not None and guards:
        out = replace(out, guarded=True)
    return out


_CMP = {"<": lambda a, b: a < b, "<=": lambda a, b: a <= b, ">": lambda a, b: a > b,
        ">=": lambda a, b: a >= b, "==": lambda a, b: a == b, "!=": lambda a, b: a != b}


def compare_chain(operands, ops, uses=frozenset()) -> Pred:
    text = operands[0].text
    for op, o in zip(ops, operands[1:]):
        text += f" {op} {o.text}"

    def ev(env, ix):
        vals = [o.ev(env, ix) for o in operands]
        return all(_CMP[op](vals[k], vals[k + 1]) for k, op in enumerate(ops))
    return Pred(text, P_CMP, ev, uses)


# ---------------------------------------------------------------------------
# the generator
# ---------------------------------------------------------------------------

@dataclass
class Ctx:
    """What an expression may refer to."""
    tensors: dict                           # f64 tensor name -> dims
    scalars: list                           # f64 scalar names
    sizes: tuple                            # size symbols (ranges and values)
    relation: tuple | None = None           # (name, dim) of a bool[d, d]
    gather: tuple | None = None             # (labels, label dim, table, table dims)
    scope: dict = field(default_factory=dict)   # index name -> dim

    def bind(self, pairs) -> "Ctx":
        scope = dict(self.scope)
        scope.update(pairs)
        return replace(self, scope=scope)

    def fresh(self, k: int = 0) -> str:
        free = [n for n in INDEX_NAMES if n not in self.scope]
        return free[min(k, len(free) - 1)]


class Gen:
    def __init__(self, draw):
        self.draw = draw

    def sum_index(self, ctx: Ctx) -> str:
        """A name for a summed index: usually the first one free, so sibling
        sums often share it (sum[i](x[i]) * sum[i](y[i]))."""
        return ctx.fresh(1 if self.coin(20) else 0)

    # -- drawing primitives (the first choice is what Hypothesis shrinks to)
    def pick(self, seq):
        return self.draw(st.sampled_from(list(seq)))

    def coin(self, percent: int = 50) -> bool:
        return self.draw(st.integers(0, 99)) < percent

    def integer(self, lo: int, hi: int) -> int:
        return self.draw(st.integers(lo, hi))

    # ------------------------------------------------------------ indices
    def lower_guard(self, v: str, c: int) -> Pred:
        """v >= c, written one of several ways."""
        form = self.pick(["ge", "le", "diff", "not", "gt"])
        text = {"ge": f"{v} >= {c}", "le": f"{c} <= {v}", "diff": f"{v} - {c} >= 0",
                "not": f"not ({v} < {c})", "gt": f"{v} > {c - 1}"}[form]
        return Pred(text, P_NOT if form == "not" else P_CMP, lambda env, ix: ix[v] >= c)

    def upper_guard(self, e: Ix, d: str) -> Pred:
        """e < d, written one of several ways."""
        form = self.pick(["lt", "le", "gt", "not"])
        text = {"lt": f"{e.text} < {d}", "le": f"{e.text} <= {d} - 1", "gt": f"{d} > {e.text}",
                "not": f"not ({e.text} >= {d})"}[form]
        return Pred(text, P_NOT if form == "not" else P_CMP,
                    lambda env, ix: e.ev(env, ix) < env[d])

    def index_for(self, ctx: Ctx, d: str, allow_guards: bool = True):
        """An index into a dimension of size d, and the guards it needs."""
        same = [v for v, dv in ctx.scope.items() if dv == d]
        kinds = []
        if same:
            kinds += ["plain", "plain", "plain"]
        kinds += ["zero", "last"]
        if same:
            kinds.append("rev")
        if allow_guards and ctx.scope:
            kinds += ["shift", "shift", "shift", "double"]
            if len(ctx.scope) >= 2:
                kinds.append("pair")
        kind = self.pick(kinds)
        if kind == "plain":
            v = self.pick(same)
            return Ix(v, lambda env, ix: ix[v], plain=v), []
        if kind == "zero":
            return Ix("0", lambda env, ix: 0), []
        if kind == "last":
            return Ix(f"{d} - 1", lambda env, ix: env[d] - 1, prec=ADD), []
        if kind == "rev":
            v = self.pick(same)
            return Ix(f"{d} - 1 - {v}", lambda env, ix: env[d] - 1 - ix[v], prec=ADD), []
        if kind == "double":
            v = self.pick(list(ctx.scope))
            e = Ix(f"2 * {v}", lambda env, ix: 2 * ix[v], prec=MUL)
            return e, [self.upper_guard(e, d)]
        if kind == "pair":
            v, w = self.pick(list(itertools.permutations(ctx.scope, 2)))
            e = Ix(f"{v} + {w}", lambda env, ix: ix[v] + ix[w], prec=ADD)
            return e, [self.upper_guard(e, d)]
        # shift: v + c for any index in scope (of this size or another one)
        v = self.pick(list(ctx.scope))
        shifts = [1, -1, 2, -2]
        if ctx.scope[v] != d:
            shifts.append(0)         # x[j + 0] for j over another size: not a plain use
        c = self.pick(shifts)
        text = f"{v} + {c}" if c >= 0 else f"{v} - {-c}"
        e = Ix(text, lambda env, ix: ix[v] + c, prec=ADD)
        need_low = c < 0
        need_high = c > 0 or ctx.scope[v] != d
        if need_low and (need_high or self.coin(30)):
            text2 = f"0 <= {text} < {d}"
            chain = Pred(text2, P_CMP, lambda env, ix: 0 <= ix[v] + c < env[d])
            return e, [chain]
        guards = []
        if need_low:
            guards.append(self.lower_guard(v, -c))
        if need_high:
            guards.append(self.upper_guard(e, d))
        return e, guards

    def access_parts(self, ctx: Ctx, allow_guards: bool = True):
        """(text, reader, uses, guards) of one tensor access."""
        choices = sorted(ctx.tensors)
        if ctx.gather is not None:
            choices.append("<gather>")
        name = self.pick(choices)
        guards, texts, readers, uses = [], [], [], set()
        if name == "<gather>":
            lab, lab_dim, table, table_dims = ctx.gather
            ix0, g0 = self.index_for(ctx, lab_dim, allow_guards)
            guards += g0
            uses |= {ix0.plain} if ix0.plain else set()
            texts.append(f"{lab}[{ix0.text}]")
            readers.append(lambda env, ix: int(_read(env, lab, (ix0.ev(env, ix),))))
            name, dims = table, table_dims[1:]
        else:
            dims = ctx.tensors[name]
        for d in dims:
            e, g = self.index_for(ctx, d, allow_guards)
            guards += g
            if e.plain:
                uses.add(e.plain)
            texts.append(e.text)
            readers.append(lambda env, ix, e=e: e.ev(env, ix))
        text = f"{name}[{', '.join(texts)}]"

        def read(env, ix):
            return float(_read(env, name, tuple(r(env, ix) for r in readers)))
        return text, read, frozenset(uses), guards

    def access(self, ctx: Ctx) -> Val:
        text, read, uses, guards = self.access_parts(ctx)
        acc = Val(text, ATOM, read, uses)
        if not guards:
            return acc
        # Sometimes the guard also carries an unrelated condition.
        if self.coin(20):
            guards = guards + [self.pred(ctx, 0)]
        return guarded(conj(guards), acc, bracket_first=self.coin(75))

    # ------------------------------------------------------------ values
    def leaf(self, ctx: Ctx) -> Val:
        kinds = ["const", "access", "access", "access"]
        if ctx.scalars:
            kinds.append("scalar")
        kinds.append("size")
        kind = self.pick(kinds)
        if kind == "const":
            return const(self.pick(["1.0", "2.0", "0.5", "0.25", "3.0", "0.1", "2", "1.5",
                                    ".5", "1e-1"]))
        if kind == "scalar":
            name = self.pick(ctx.scalars)
            return Val(name, ATOM, lambda env, ix: float(env[name]))
        if kind == "size":
            d = self.pick(ctx.sizes)
            return Val(d, ATOM, lambda env, ix: float(env[d]), valueish=False)
        return self.access(ctx)

    def expr(self, ctx: Ctx, depth: int) -> Val:
        if depth <= 0:
            return self.leaf(ctx)
        kind = self.pick(["leaf", "access", "add", "mul", "sub", "sum", "bracket_mul",
                          "builtin", "div", "neg", "pow", "bracket", "unsafe", "add", "mul",
                          "sum", "bracket_mul", "builtin", "access", "builtin", "builtin",
                          "reduce"])
        d1 = depth - 1
        if kind == "leaf":
            return self.leaf(ctx)
        if kind == "access":
            return self.access(ctx)
        if kind == "add":
            return add(self.expr(ctx, d1), self.expr(ctx, d1))
        if kind == "sub":
            return sub(self.expr(ctx, d1), self.expr(ctx, d1))
        if kind == "mul":
            return mul(self.expr(ctx, d1), self.expr(ctx, d1))
        if kind == "div":
            return div(self.expr(ctx, d1), self.denominator(ctx, d1))
        if kind == "neg":
            return neg(self.expr(ctx, d1))
        if kind == "pow":
            return power(self.expr(ctx, d1), self.pick(["2", "2.0", "3"]))
        if kind == "builtin":
            return self.builtin(ctx, d1)
        if kind == "sum":
            return self.sum(ctx, d1)
        if kind == "reduce":
            return self.sum(ctx, d1, op=self.pick(["max", "min", "logsumexp"]))
        if kind == "bracket":
            return bracket(self.pred(ctx, self.pick([1, 0, 2])))
        if kind == "bracket_mul":
            return guarded(self.pred(ctx, self.pick([1, 0, 2])), self.expr(ctx, d1),
                           bracket_first=self.coin(70))
        return self.unsafe(ctx)

    def square(self, e: Val) -> Val:
        return mul(e, e) if self.coin() else power(e, "2")

    def builtin(self, ctx: Ctx, depth: int) -> Val:
        fn = self.pick(["tanh", "exp", "sin", "cos", "sigmoid", "abs", "max", "min", "sqrt",
                        "log", "log1p", "pow"])
        e = self.expr(ctx, depth)
        if fn == "exp":
            return call("exp", [mul(const("0.1"), e)], _exp)
        if fn in ("max", "min"):
            other = self.expr(ctx, depth) if self.coin(70) else const("0.0")
            args = [e, other] if self.coin() else [other, e]
            return call(fn, args, max if fn == "max" else min)
        if fn == "sqrt":
            return call("sqrt", [add(const("1.0"), self.square(e))], math.sqrt)
        if fn == "log":
            return call("log", [add(const("1.0"), self.square(e))], math.log)
        if fn == "log1p":
            return call("log1p", [self.square(e)], math.log1p)
        if fn == "pow":
            if self.coin():
                return call("pow", [e, const("2")], lambda a, b: _pow(a, 2))
            return call("pow", [add(const("2.0"), self.square(e)), const("0.5")],
                        lambda a, b: math.sqrt(a))
        f = {"tanh": math.tanh, "sin": math.sin, "cos": math.cos, "sigmoid": _sigmoid,
             "abs": abs}[fn]
        return call(fn, [e], f)

    def denominator(self, ctx: Ctx, depth: int) -> Val:
        """Something safely positive (at least 1 in size, or a size)."""
        kind = self.pick(["square", "size", "sizes", "sumsq", "exp", "abs"])
        if kind == "size":
            d = self.pick(ctx.sizes)
            return Val(d, ATOM, lambda env, ix: float(env[d]))
        if kind == "sizes":
            d1, d2 = self.pick(ctx.sizes), self.pick(ctx.sizes)
            return Val(f"({d1} + {d2})", ATOM, lambda env, ix: float(env[d1] + env[d2]))
        if kind == "sumsq":
            v = self.sum_index(ctx)
            dim = self.pick(ctx.sizes)
            inner = ctx.bind([(v, dim)])
            body = self.square(self.force_use(inner, v, self.leaf(inner)))
            s = summation([(v, dim)], body, explicit=v not in body.uses or self.coin(30))
            return Val(f"(1.0 + {s.text})", ATOM, add(const("1.0"), s).ev, s.uses)
        e = self.expr(ctx, depth)
        if kind == "exp":
            inner = add(const("1.0"), call("exp", [mul(const("0.1"), e)], _exp))
        elif kind == "abs":
            inner = add(const("1.0"), call("abs", [e], abs))
        else:
            inner = add(const("2.0"), self.square(e))
        return Val(f"({inner.text})", ATOM, inner.ev, inner.uses)

    def force_use(self, ctx: Ctx, v: str, body: Val) -> Val:
        """body times an access that uses index v whole (so its range is inferred)."""
        if v in body.uses:
            return body
        d = ctx.scope[v]
        holders = {n: dims for n, dims in ctx.tensors.items() if d in dims}
        if not holders:
            return body
        name = self.pick(sorted(holders))
        dims = holders[name]
        pos = self.pick([k for k, dk in enumerate(dims) if dk == d])
        guards, texts, readers = [], [], []
        for k, dk in enumerate(dims):
            if k == pos:
                e = Ix(v, lambda env, ix: ix[v], plain=v)
            else:
                e, g = self.index_for(ctx, dk)
                guards += g
            texts.append(e.text)
            readers.append(e.ev)
        acc = Val(f"{name}[{', '.join(texts)}]", ATOM,
                  lambda env, ix: float(_read(env, name, tuple(r(env, ix) for r in readers))),
                  frozenset({v}))
        if guards:
            acc = guarded(conj(guards), acc)
        return mul(acc, body) if self.coin() else mul(body, acc)

    def sum(self, ctx: Ctx, depth: int, op: str = "sum") -> Val:
        count = 2 if self.coin(25) else 1
        binders = []
        inner = ctx
        for _ in range(count):
            v = self.sum_index(inner)
            d = self.pick(ctx.sizes)
            binders.append((v, d))
            inner = inner.bind([(v, d)])
        body = self.expr(inner, depth)
        for v, _ in binders:
            if self.coin(70):
                body = self.force_use(inner, v, body)
        explicit = any(v not in body.uses for v, _ in binders) or self.coin(30)
        if op != "sum":
            return reduction(op, binders, body, explicit)
        return summation(binders, body, explicit)

    def unsafe(self, ctx: Ctx) -> Val:
        """A builtin that is NaN or -inf off its domain, under a bracket that keeps it there."""
        text, read, uses, _ = self.access_parts(ctx, allow_guards=False)
        x = Val(text, ATOM, read, uses)
        kind = self.pick(["log", "sqrt", "log_shift"])
        if kind == "log":
            p = Pred(f"{text} > 0.0", P_CMP, lambda env, ix: read(env, ix) > 0.0, uses)
            e = call("log", [x], math.log)
        elif kind == "sqrt":
            p = Pred(f"{text} >= 0.0", P_CMP, lambda env, ix: read(env, ix) >= 0.0, uses)
            e = call("sqrt", [x], math.sqrt)
        else:
            p = Pred(f"{text} > 0.5", P_CMP, lambda env, ix: read(env, ix) > 0.5, uses)
            e = call("log", [sub(x, const("0.5"))], math.log)
        return guarded(p, e, bracket_first=self.coin(80))

    # ------------------------------------------------------------ predicates
    def affine(self, ctx: Ctx) -> Ix:
        kinds = ["const", "size", "last"]
        if ctx.scope:
            kinds = ["var", "var", "var", "double", "plus", "minus"] + kinds
        kind = self.pick(kinds)
        if kind == "const":
            c = self.integer(0, 3)
            return Ix(str(c), lambda env, ix: c)
        if kind == "size":
            d = self.pick(ctx.sizes)
            return Ix(d, lambda env, ix: env[d])
        if kind == "last":
            d = self.pick(ctx.sizes)
            return Ix(f"{d} - 1", lambda env, ix: env[d] - 1, prec=ADD)
        v = self.pick(list(ctx.scope))
        if kind == "var":
            return Ix(v, lambda env, ix: ix[v], plain=v)
        if kind == "double":
            return Ix(f"2 * {v}", lambda env, ix: 2 * ix[v], prec=MUL)
        c = self.integer(1, 2)
        if kind == "plus":
            return Ix(f"{v} + {c}", lambda env, ix: ix[v] + c, prec=ADD)
        return Ix(f"{v} - {c}", lambda env, ix: ix[v] - c, prec=ADD)

    def value_operand(self, ctx: Ctx):
        """A value for a comparison: (Val, guards that keep it in range)."""
        kind = self.pick(["access", "access", "scalar", "expr"])
        if kind == "scalar" and ctx.scalars:
            name = self.pick(ctx.scalars)
            return Val(name, ATOM, lambda env, ix: float(env[name])), []
        if kind == "expr":
            return self.expr(ctx, 1), []
        text, read, uses, guards = self.access_parts(ctx)
        return Val(text, ATOM, read, uses), guards

    def pred(self, ctx: Ctx, depth: int) -> Pred:
        kinds = ["idx", "idx", "value", "chain"]
        if ctx.relation is not None:
            kinds.append("rel")
        if ctx.gather is not None:
            kinds.append("gather")
        if depth > 0:
            kinds += ["and", "or", "not", "and", "or"]
        kind = self.pick(kinds)
        if kind == "idx":
            a, b = self.affine(ctx), self.affine(ctx)
            op = self.pick(["==", "<", "!=", "<=", ">", ">="])
            return compare_chain([a, b], [op])
        if kind == "chain":
            a, b, c = self.affine(ctx), self.affine(ctx), self.affine(ctx)
            ops = [self.pick(["<=", "<", "==", "!="]), self.pick(["<", "<=", "!="])]
            if self.coin(30):
                ops = [{"<": ">", "<=": ">="}.get(o, o) for o in ops]
            return compare_chain([a, b, c], ops)
        if kind == "value":
            left, guards = self.value_operand(ctx)
            right, more = None, []
            if self.coin(40):
                right, more = self.value_operand(ctx)
            if right is None or not (left.valueish or right.valueish):
                right, more = const(self.pick(["0.0", "0.5", "-0.5", "1.0"])), []
            op = self.pick(["<", ">", "<=", ">=", "==", "!="])
            cmp = compare_chain([left, right], [op], left.uses | right.uses)
            return conj(guards + more, cmp) if guards + more else cmp
        if kind == "rel":
            name, d = ctx.relation
            i1, g1 = self.index_for(ctx, d)
            i2, g2 = self.index_for(ctx, d)
            uses = frozenset(x.plain for x in (i1, i2) if x.plain)
            text = f"{name}[{i1.text}, {i2.text}]"
            atom = Pred(text, P_CMP,
                        lambda env, ix: bool(_read(env, name, (i1.ev(env, ix), i2.ev(env, ix)))),
                        uses)
            if not (g1 or g2) and self.coin(25):
                atom = p_not(atom, paren=False)
            return conj(g1 + g2, atom) if g1 + g2 else atom
        if kind == "gather":
            lab, lab_dim, _, _ = ctx.gather
            i1, g1 = self.index_for(ctx, lab_dim)
            g = Ix(f"{lab}[{i1.text}]", lambda env, ix: int(_read(env, lab, (i1.ev(env, ix),))))
            other = self.affine(ctx)
            # `lab[i]` uses i whole (a bare index compared with it does not)
            plains = [i1.plain]
            if self.coin(20):
                i2, g2 = self.index_for(ctx, lab_dim)
                g1 = g1 + g2
                plains.append(i2.plain)
                other = Ix(f"{lab}[{i2.text}]",
                           lambda env, ix: int(_read(env, lab, (i2.ev(env, ix),))))
            op = self.pick(["==", "!=", "<", "<=", ">", ">="])
            pair = [g, other] if self.coin() else [other, g]
            uses = frozenset(v for v in plains if v)
            cmp = compare_chain(pair, [op], uses)
            return conj(g1, cmp) if g1 else cmp
        a = self.pred(ctx, depth - 1)
        if kind == "not":
            if a.guarded:
                return a
            return p_not(a, paren=self.coin(70) or a.prec < P_NOT)
        b = self.pred(ctx, depth - 1)
        return p_and(a, b) if kind == "and" else p_or(a, b)


# ---------------------------------------------------------------------------
# whole functions
# ---------------------------------------------------------------------------

def fmt_type(dims) -> str:
    return f"f64[{', '.join(dims)}]" if dims else "f64"


@dataclass
class Func:
    name: str
    source: str
    params: list                  # (name, elem, dims)
    run: Callable                 # env -> list of output values
    tuple_return: bool
    out_dims: list                # dims of each output


def _fill(env, dims, names, body: Val):
    if not dims:
        return float(body.ev(env, {}))
    out = np.zeros([env[d] for d in dims])
    for vals in itertools.product(*[range(env[d]) for d in dims]):
        out[vals] = body.ev(env, dict(zip(names, vals)))
    return out


def statement(gen: Gen, ctx: Ctx, name: str, shapes, max_depth: int):
    """One `name[...] = expr` line and a step that computes it."""
    dims = gen.pick(shapes)
    names = []
    for _ in dims:
        names.append(gen.pick([n for n in INDEX_NAMES[:4] if n not in names]))
    inner = ctx.bind(list(zip(names, dims)))
    body = gen.expr(inner, gen.pick([2, 1, 3][:max_depth]))
    if dims and gen.coin(60):
        for v in names:
            body = gen.force_use(inner, v, body)
    explicit = any(v not in body.uses for v in names) or gen.coin(30)
    if dims:
        head = ", ".join(f"{v}: {d}" if explicit else v for v, d in zip(names, dims))
        text = f"{name}[{head}] = {body.text}"
    else:
        text = f"{name} = {body.text}"

    def step(env):
        env[name] = _fill(env, dims, names, body)
    return text, tuple(dims), step


def returns(gen: Gen, ctx: Ctx, defined: list, allow_tuple: bool = True):
    """The return line, the output types and a function computing the outputs."""
    last, last_dims = defined[-1]
    others = [(n, d) for n, d in defined[:-1]]

    def scalar_of(name, dims):
        if not dims:
            return Val(name, ATOM, lambda env, ix: float(env[name]))
        names = list(INDEX_NAMES[:len(dims)])
        inner = ctx.bind(list(zip(names, dims)))
        acc = Val(f"{name}[{', '.join(names)}]", ATOM,
                  lambda env, ix: float(env[name][tuple(ix[v] for v in names)]),
                  frozenset(names))
        body = acc if gen.coin(60) else mul(acc, gen.expr(inner, 1))
        return summation(list(zip(names, dims)), body, explicit=gen.coin(30))

    kinds = ["tensor", "sum", "expr"]
    if allow_tuple:
        kinds.append("tuple")
    kind = gen.pick(kinds)
    if kind == "tensor" or (kind == "sum" and not last_dims):
        items = [(last, last_dims, None)]
    elif kind == "sum":
        items = [(None, (), scalar_of(last, last_dims))]
    elif kind == "expr":
        e = scalar_of(last, last_dims)
        extra = gen.expr(ctx, 1)
        e = add(e, extra) if gen.coin() else div(e, gen.denominator(ctx, 0))
        items = [(None, (), e)]
    else:
        if others and gen.coin():
            o, od = gen.pick(others)
            second = (o, od, None)
        else:
            second = (None, (), scalar_of(last, last_dims))
        items = [(last, last_dims, None), second]
    texts = [n if n is not None else e.text for n, _, e in items]
    dims = [d for _, d, _ in items]

    def outputs(env):
        return [env[n] if n is not None else float(e.ev(env, {})) for n, _, e in items]
    return "return " + ", ".join(texts), dims, outputs


MAIN_PARAMS = [("x", "f64", ("n",)), ("y", "f64", ("n",)), ("A", "f64", ("n", "m")),
               ("s", "f64", ())]


def main_context(params) -> Ctx:
    names = {p[0] for p in params}
    tensors = {p: d for p, e, d in params if e == "f64" and d}
    scalars = [p for p, e, d in params if e == "f64" and not d]
    sizes = ("n", "m") + (("k",) if "E" in names else ())
    return Ctx(tensors, scalars, sizes,
               relation=("M", "n") if "M" in names else None,
               gather=("lab", "n", "E", ("k", "m")) if "lab" in names else None)


def signature(name, params) -> str:
    ps = ", ".join(f"{p}: {e}[{', '.join(d)}]" if d else f"{p}: {e}" for p, e, d in params)
    return f"def {name}({ps})"


def assemble(gen: Gen, name: str, params, ctx: Ctx, lines, steps, defined,
             allow_tuple=True) -> Func:
    ret, dims, outputs = returns(gen, ctx, defined, allow_tuple)
    types = [fmt_type(d) for d in dims]
    is_tuple = len(dims) > 1
    head = signature(name, params)
    if gen.coin(60):
        head += " -> " + (f"({', '.join(types)})" if is_tuple else types[0])
    source = "\n".join([head + ":"] + [f"    {ln}" for ln in lines + [ret]]) + "\n"

    def run(env):
        for step in steps:
            step(env)
        return outputs(env)
    return Func(name, source, list(params), run, is_tuple, dims)


def function_body(gen: Gen, ctx: Ctx, count: int, shapes, lines, steps, defined,
                  max_depth: int = 3):
    """Append `count` statements t1, t2, ... each free to use the earlier ones."""
    for _ in range(count):
        name = f"t{len(defined) + 1}"
        text, dims, step = statement(gen, ctx, name, shapes, max_depth)
        lines.append(text)
        steps.append(step)
        defined.append((name, dims))
        if dims:
            ctx.tensors = {**ctx.tensors, name: dims}
        else:
            ctx.scalars = ctx.scalars + [name]


@st.composite
def single_functions(draw):
    gen = Gen(draw)
    params = list(MAIN_PARAMS)
    if gen.coin(50):
        params.append(("M", "bool", ("n", "n")))
    if gen.coin(35):
        params += [("lab", "i64", ("n",)), ("E", "f64", ("k", "m"))]
    ctx = main_context(params)
    shapes = [("n",), ("n", "m"), (), ("m",), ("n", "n")]
    lines, steps, defined = [], [], []
    function_body(gen, ctx, gen.pick([2, 1, 3]), shapes, lines, steps, defined)
    return [assemble(gen, "fz", params, ctx, lines, steps, defined)]


@st.composite
def calling_modules(draw):
    """A helper over its own size names, and a function that calls it."""
    gen = Gen(draw)
    # The helper's sizes p0, p1 are bound to the caller's n, m; with (p, q)
    # the renaming reverses their alphabetical order.
    p0, p1 = gen.pick([("p", "q"), ("q", "p")])
    hparams = [("u", "f64", (p0,)), ("w", "f64", (p0,)), ("B", "f64", (p0, p1)),
               ("c", "f64", ())]
    hctx = Ctx({"u": (p0,), "w": (p0,), "B": (p0, p1)}, ["c"], (p0, p1))
    lines, steps, defined = [], [], []
    function_body(gen, hctx, gen.integer(1, 2), [(p0,), (p0, p1), (), (p1,)],
                  lines, steps, defined, max_depth=2)
    helper = assemble(gen, "h", hparams, hctx, lines, steps, defined, allow_tuple=False)

    params = list(MAIN_PARAMS)
    ctx = main_context(params)
    shapes = [("n",), ("n", "m"), ()]
    lines, steps, defined = [], [], []
    if gen.coin():
        function_body(gen, ctx, 1, shapes, lines, steps, defined, max_depth=2)
    # Arguments: the two vectors possibly swapped, the scalar as an expression.
    vec1, vec2 = ("x", "y") if gen.coin() else ("y", "x")
    scalar_args = ["s", "0.5 * s", "s + 1.0"] + [n for n, d in defined if not d]
    sarg = gen.pick(scalar_args)
    scalar_value = {"s": lambda env: env["s"], "0.5 * s": lambda env: 0.5 * env["s"],
                    "s + 1.0": lambda env: env["s"] + 1.0}.get(sarg, lambda env: env[sarg])
    lines.append(f"z = h({vec1}, {vec2}, A, {sarg})")

    def call_step(env):
        henv = {"u": env[vec1], "w": env[vec2], "B": env["A"], "c": scalar_value(env),
                p0: env["n"], p1: env["m"], "__mag__": env["__mag__"]}
        env["z"] = helper.run(henv)[0]
    steps.append(call_step)
    out_dims = tuple({p0: "n", p1: "m"}[d] for d in helper.out_dims[0])
    defined.append(("z", out_dims))
    if out_dims:
        ctx.tensors = {**ctx.tensors, "z": out_dims}
    else:
        ctx.scalars = ctx.scalars + ["z"]
    function_body(gen, ctx, gen.integer(1, 2), shapes, lines, steps, defined, max_depth=2)
    main = assemble(gen, "fz", params, ctx, lines, steps, defined)
    return [helper, main]


# ---------------------------------------------------------------------------
# inputs and comparison
# ---------------------------------------------------------------------------

def random_case(funcs, sizes, seed):
    """(spec, function, inputs, rng) for one generated single-output function;
    rejects the example when the function returns a tuple."""
    (spec,) = funcs
    f = tl.parse(spec.source)[spec.name]
    if f.program.tuple_return:
        reject()
    n, m, k = sizes
    dims = {"n": n, "m": m, "k": k, "p": n, "q": m}
    rng = np.random.default_rng(seed)
    return spec, f, make_inputs(spec.params, dims, rng), rng


def make_inputs(params, sizes: dict, rng) -> dict:
    out = {}
    for name, elem, dims in params:
        shape = tuple(sizes[d] for d in dims)
        if elem == "bool":
            out[name] = rng.random(shape) < 0.5
        elif elem == "i64":
            out[name] = rng.integers(0, sizes["k"], size=shape).astype(np.int64)
        elif rng.random() < 0.3:
            # values on a coarse grid: ties, exact zeros, equal entries
            out[name] = rng.choice([-1.0, -0.5, 0.0, 0.5, 1.0], size=shape)
        else:
            out[name] = rng.standard_normal(shape)
        if elem == "f64" and not dims:
            out[name] = float(out[name])
    return out


def as_list(result, is_tuple):
    return list(result) if is_tuple else [result]


def check_function(f, spec: Func, inputs: dict, sizes: dict):
    """(b) and (c) for one input set."""
    env = dict(inputs)
    env.update(sizes)
    env["__mag__"] = [1.0]
    try:
        want = spec.run(env)
    except Overflow:
        reject()
    if not all(np.all(np.abs(w) < MAX_MAGNITUDE) for w in want):
        reject()
    tol = ATOL * env["__mag__"][0]
    # The program exactly as lowered, straight through the reference interpreter.
    arrays, call_sizes = f.prepare((), inputs)
    raw = evaluate(f.program, arrays, call_sizes)
    assert len(raw) == len(want)
    for k, (r, w) in enumerate(zip(raw, want)):
        np.testing.assert_allclose(r, w, rtol=RTOL, atol=tol,
                                   err_msg=f"unoptimised output {k} of\n{spec.source}")
    # The public call (which may run a simplified program).
    got = as_list(f(**inputs), spec.tuple_return)
    assert len(got) == len(want)
    for k, (g, w) in enumerate(zip(got, want)):
        if np.ndim(w) == 0:
            assert isinstance(g, float), f"output {k}: expected a float, got {type(g)}"
        else:
            assert isinstance(g, np.ndarray) and g.shape == w.shape, \
                f"output {k}: shape {np.shape(g)} != {w.shape}"
        np.testing.assert_allclose(g, w, rtol=RTOL, atol=tol,
                                   err_msg=f"output {k} of\n{spec.source}\ninputs {inputs}")
    return got


def check_roundtrip(mod, name: str):
    """(a): printing is a fixed point and the program survives a reparse."""
    f = mod[name]
    verify(f.program)
    src1 = f.source
    g = tl.parse(src1)[name]
    verify(g.program)
    assert g.program == f.program, f"reparsed program differs:\n{src1}"
    assert g.source == src1, f"printing is not a fixed point:\n{src1}\n---\n{g.source}"
    return f, g


def run_case(funcs, sizes_drawn, seed):
    source = "\n".join(fn.source for fn in funcs)
    try:
        mod = tl.parse(source)
    except tl.TLError as exc:
        raise AssertionError(f"generated program rejected:\n{source}\n{exc}") from None
    rng = np.random.default_rng(seed)
    for spec in funcs:
        f, g = check_roundtrip(mod, spec.name)
        for n, m, k in [sizes_drawn, (1, 1, 1)]:
            sizes = {"n": n, "m": m, "k": k}
            if spec.name == "h":
                # the helper's own sizes, as its parameters order them
                p0, p1 = spec.params[2][2]
                sizes.update({p0: n, p1: m})
            call_sizes = {d: v for d, v in sizes.items()
                          if any(d in dims for _, _, dims in spec.params)}
            inputs = make_inputs(spec.params, sizes, rng)
            got = check_function(f, spec, inputs, call_sizes)
            again = as_list(g(**inputs), spec.tuple_return)
            for a, b in zip(got, again):
                assert np.array_equal(a, b, equal_nan=True), \
                    f"reparsed function differs:\n{f.source}"


SIZES = st.tuples(st.integers(1, 5), st.integers(1, 5), st.integers(1, 4))
FUZZ = settings(derandomize=True, database=None, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.filter_too_much])


@settings(FUZZ, max_examples=150)
@given(funcs=single_functions(), sizes=SIZES, seed=st.integers(0, 2**32 - 1))
def test_random_function_roundtrip_and_values(funcs, sizes, seed):
    run_case(funcs, sizes, seed)


@settings(FUZZ, max_examples=50)
@given(funcs=calling_modules(), sizes=SIZES, seed=st.integers(0, 2**32 - 1))
def test_random_call_of_earlier_function(funcs, sizes, seed):
    run_case(funcs, sizes, seed)


# ---------------------------------------------------------------------------
# regression examples (deterministic)
# ---------------------------------------------------------------------------

def _roundtrip_source(source: str, name: str):
    mod = tl.parse(source)
    return check_roundtrip(mod, name)


def _both(f, g, **inputs):
    a, b = f(**inputs), g(**inputs)
    for u, v in zip(as_list(a, isinstance(a, tuple)), as_list(b, isinstance(b, tuple))):
        assert np.array_equal(u, v, equal_nan=True)
    return a


RNG_SEED = 20240601


def test_sibling_sums_reuse_an_index_name():
    src = """
def f(x: f64[n], y: f64[n], A: f64[n, m]) -> (f64, f64[n]):
    t[i] = sum[j](A[i, j]) * sum[j](A[i, j] * x[i]) - sum[j](A[i, j] ** 2)
    return sum[j](x[j]) * sum[j](y[j]), t
"""
    f, g = _roundtrip_source(src, "f")
    rng = np.random.default_rng(RNG_SEED)
    for n, m in [(1, 1), (4, 3)]:
        x, y, A = rng.standard_normal(n), rng.standard_normal(n), rng.standard_normal((n, m))
        total, t = _both(f, g, x=x, y=y, A=A)
        np.testing.assert_allclose(total, x.sum() * y.sum(), rtol=RTOL, atol=ATOL)
        want = A.sum(1) * (A.sum(1) * x) - (A ** 2).sum(1)
        np.testing.assert_allclose(t, want, rtol=RTOL, atol=ATOL)


def test_division_by_a_sum():
    src = """
def f(x: f64[n], A: f64[n, m]) -> f64[n]:
    t[i] = x[i] / sum[j](A[i, j] * A[i, j] + 1.0)
    return t
"""
    f, g = _roundtrip_source(src, "f")
    rng = np.random.default_rng(RNG_SEED)
    x, A = rng.standard_normal(3), rng.standard_normal((3, 4))
    np.testing.assert_allclose(_both(f, g, x=x, A=A), x / (A ** 2 + 1.0).sum(1),
                               rtol=RTOL, atol=ATOL)


def test_square_of_a_sum():
    src = """
def f(x: f64[n], y: f64[n]) -> f64[n]:
    t[i] = (x[i] + y[i]) ** 2 - (x[i] - 2.0 * y[i]) ** 2
    return t
"""
    f, g = _roundtrip_source(src, "f")
    rng = np.random.default_rng(RNG_SEED)
    x, y = rng.standard_normal(5), rng.standard_normal(5)
    np.testing.assert_allclose(_both(f, g, x=x, y=y), (x + y) ** 2 - (x - 2 * y) ** 2,
                               rtol=RTOL, atol=ATOL)


def test_negated_disjunction_of_index_comparisons():
    src = """
def f(x: f64[n]) -> f64[n]:
    t[i] = [not (i < 2 or i > 3)] * x[i]
    return t
"""
    f, g = _roundtrip_source(src, "f")
    for n in (1, 3, 4, 6):
        x = np.arange(1.0, n + 1)
        want = np.where((np.arange(n) >= 2) & (np.arange(n) <= 3), x, 0.0)
        assert np.array_equal(_both(f, g, x=x), want)


def test_bracket_guards_nan_exactly():
    src = """
def f(x: f64[n], A: f64[n, m]) -> (f64[n], f64):
    t[i] = [x[i] > 0.0] * log(x[i])
    return t, sum[i, j](A[i, j] * [x[i] >= 0.0] * sqrt(x[i]))
"""
    f, g = _roundtrip_source(src, "f")
    x = np.array([1.0, -2.0, 0.0, 0.5, -1e-300])
    A = np.ones((5, 2))
    t, total = _both(f, g, x=x, A=A)
    assert not np.isnan(t).any() and not np.isnan(total)
    assert np.array_equal(t[[1, 2, 4]], np.zeros(3))     # exactly 0 where the bracket is false
    np.testing.assert_allclose(t[[0, 3]], np.log([1.0, 0.5]), rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(total, 2.0 * (1.0 + math.sqrt(0.5)), rtol=RTOL, atol=ATOL)


def test_call_of_an_earlier_function():
    src = """
def f(x: f64[n], A: f64[n, m]) -> f64[m]:
    y[j] = sum[i](A[i, j] * x[i])
    return y

def g(x: f64[n], A: f64[n, m], s: f64) -> f64:
    z = f(x, A)
    w = f(x, A)
    return sum[j](z[j] * w[j]) + s * sum[j](z[j])
"""
    mod = tl.parse(src)
    check_roundtrip(mod, "f")
    g1, g2 = check_roundtrip(mod, "g")
    rng = np.random.default_rng(RNG_SEED)
    x, A = rng.standard_normal(4), rng.standard_normal((4, 3))
    z = x @ A
    np.testing.assert_allclose(_both(g1, g2, x=x, A=A, s=0.5), z @ z + 0.5 * z.sum(),
                               rtol=RTOL, atol=ATOL)


BUILTIN_CASES = [
    ("exp(x[i])", lambda x, y: np.exp(x)),
    ("log(2.0 + x[i])", lambda x, y: np.log(2.0 + x)),
    ("log1p(y[i] * y[i])", lambda x, y: np.log1p(y * y)),
    ("sqrt(3.0 + x[i])", lambda x, y: np.sqrt(3.0 + x)),
    ("sin(x[i])", lambda x, y: np.sin(x)),
    ("cos(x[i])", lambda x, y: np.cos(x)),
    ("tan(0.5 * x[i])", lambda x, y: np.tan(0.5 * x)),
    ("tanh(3.0 * x[i])", lambda x, y: np.tanh(3.0 * x)),
    ("sigmoid(4.0 * x[i])", lambda x, y: 1.0 / (1.0 + np.exp(-4.0 * x))),
    ("abs(x[i])", lambda x, y: np.abs(x)),
    ("max(x[i], y[i])", lambda x, y: np.maximum(x, y)),
    ("min(x[i], y[i])", lambda x, y: np.minimum(x, y)),
    ("pow(2.0 + x[i], y[i])", lambda x, y: (2.0 + x) ** y),
    ("pow(x[i], 3)", lambda x, y: x ** 3),
]


@pytest.mark.parametrize("text,ref", BUILTIN_CASES, ids=[t for t, _ in BUILTIN_CASES])
def test_each_builtin_against_numpy(text, ref):
    src = f"""
def f(x: f64[n], y: f64[n]) -> f64[n]:
    t[i] = {text}
    return t
"""
    f, g = _roundtrip_source(src, "f")
    rng = np.random.default_rng(RNG_SEED)
    x = rng.uniform(-1.0, 1.0, 7)
    y = np.concatenate([x[:2], rng.uniform(-1.0, 1.0, 5)])      # ties for max and min
    np.testing.assert_allclose(_both(f, g, x=x, y=y), ref(x, y), rtol=RTOL, atol=ATOL)


GATHER_CASES = [
    ("[lab[i] < j]", lambda lab, i, j: lab[i] < j),
    ("[lab[i] == j + 1]", lambda lab, i, j: lab[i] == j + 1),
    ("[j - 1 >= lab[n - 1 - i]]", lambda lab, i, j: j - 1 >= lab[len(lab) - 1 - i]),
    ("[lab[i] != lab[0] and 2 * j <= lab[i] + 1]",
     lambda lab, i, j: lab[i] != lab[0] and 2 * j <= lab[i] + 1),
]


@pytest.mark.parametrize("bracket,ref", GATHER_CASES, ids=[b for b, _ in GATHER_CASES])
def test_comparison_of_a_gather_with_an_offset(bracket, ref):
    # The printer writes these with the offset on the gather's side
    # (`j - lab[i] >= 1`); they must still parse back to the same program.
    src = f"""
def f(lab: i64[n], E: f64[k, m]) -> f64[n, m]:
    t[i, j] = {bracket} * E[lab[i], j]
    return t
"""
    f, g = _roundtrip_source(src, "f")
    rng = np.random.default_rng(RNG_SEED)
    lab = rng.integers(0, 3, size=6)
    E = rng.standard_normal((3, 4))
    want = np.array([[E[lab[i], j] if ref(lab, i, j) else 0.0 for j in range(4)]
                     for i in range(6)])
    assert np.array_equal(_both(f, g, lab=lab, E=E), want)


def test_a_derivative_reading_at_a_computed_label_prints_as_source():
    """Bracket elimination turns `sum[k]([k + 1 == y[s]] * P[s, k])` into a read at
    the label minus one, `P[s, y[s] - 1]`, which the language does not accept (a
    label stands alone as an index); the derivative's .source writes it as the sum
    it came from, so it parses back and computes the same values."""
    src = """
def f(P: f64[b, m], y: i64[b]) -> f64:
    lo[s] = sum[k]([k + 1 == y[s]] * P[s, k])
    return sum[s](lo[s] ** 2)
"""
    f = tl.parse(src)["f"]
    rng = np.random.default_rng(RNG_SEED)
    args = dict(P=rng.standard_normal((5, 3)), y=np.array([0, 1, 3, 2, 1]))
    for kind in ("grad", "hessian"):
        d = getattr(tl, kind)(f, wrt="P")
        assert "y[s] - 1" in d.source or "y[k] - 1" in d.source
        again = tl.parse(d.source)[d.name]
        np.testing.assert_allclose(again(**args), d(**args), rtol=1e-13, atol=0)
    want = np.zeros((5, 3))
    for s, lab in enumerate(args["y"]):
        if 1 <= lab <= 3:
            want[s, lab - 1] = 2 * args["P"][s, lab - 1]
    np.testing.assert_allclose(tl.grad(f, wrt="P")(**args), want, rtol=1e-13)

def test_zero_shift_across_sizes():
    # Printed as x[j] under the explicit range j: m; that must not read as a
    # conflicting plain use of j at a dimension of size n.
    src = """
def f(x: f64[n], A: f64[n, m]) -> f64[m]:
    t[j] = [j < n] * x[j + 0] * A[0, j]
    return t
"""
    f, g = _roundtrip_source(src, "f")
    rng = np.random.default_rng(RNG_SEED)
    for n, m in [(2, 4), (4, 2), (1, 1)]:
        x, A = rng.standard_normal(n), rng.standard_normal((n, m))
        want = np.array([x[j] * A[0, j] if j < n else 0.0 for j in range(m)])
        assert np.array_equal(_both(f, g, x=x, A=A), want)


def test_value_comparison_of_sizes_is_a_fixed_point():
    src = """
def f(x: f64[n], A: f64[n, m]) -> f64:
    return [1.0 * n > m] * sum[i](x[i])
"""
    _roundtrip_source(src, "f")


def test_guard_inside_negated_conjunction_is_accepted():
    src = """
def f(x: f64[n]) -> f64[n]:
    t[i] = [not (i >= 1 and x[i - 1] > 0.0)] * x[i]
    return t
"""
    f, g = _roundtrip_source(src, "f")
    # The read x[i - 1] is only reached where i >= 1: alternatives that compare
    # indices only are tested first, so the other alternative may assume i >= 1.
    x = np.array([1.0, -2.0, 0.5, -0.1])
    assert np.array_equal(_both(f, g, x=x), np.array([1.0, 0.0, 0.5, 0.0]))
    assert np.array_equal(f.compile("numba")(x=x), np.array([1.0, 0.0, 0.5, 0.0]))


def test_size_comparison_in_an_inlined_call():
    # Inlining renames p, q to n, m, which sort the other way round; the
    # comparison must come out in canonical form.
    src = """
def h(u: f64[p], B: f64[p, q]) -> f64:
    return [p == q] + 2.0 * [p < q + 1]

def f(x: f64[n], A: f64[n, m]) -> f64:
    return h(x, A)
"""
    f, g = _roundtrip_source(src, "f")
    for n, m in [(2, 2), (3, 2), (2, 3)]:
        want = float(n == m) + 2.0 * float(n < m + 1)
        assert _both(f, g, x=np.ones(n), A=np.ones((n, m))) == want


def test_quotient_of_sums_over_the_same_index_name():
    src = """
def f(x: f64[n], y: f64[n]) -> (f64, f64):
    return sum[i](x[i]) / sum[i](y[i]), sum[i](x[i]) * exp(sum[i](y[i]))
"""
    f, g = _roundtrip_source(src, "f")
    x, y = np.array([1.0, -2.0, 0.5]), np.array([3.0, 1.0, 0.25])
    q, e = _both(f, g, x=x, y=y)
    np.testing.assert_allclose(q, x.sum() / y.sum(), rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(e, x.sum() * np.exp(y.sum()), rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("defn,use,want", [
    ("t1[i] = x[i]", "t1[i] < s", [1.0, 1.0, 0.0]),
    ("t1 = -1.0", "t1 > s", [1.0, 0.0, 0.0]),
])
def test_copy_used_only_inside_a_disjunction(defn, use, want):
    # The copy (or constant) is forwarded into its uses, including the one inside `or`.
    src = f"""
def f(x: f64[n], s: f64) -> f64[n]:
    {defn}
    t2[i: n] = [i == 0 or {use}]
    return t2
"""
    f, g = _roundtrip_source(src, "f")
    x = np.array([1.0, -2.0, 0.5])
    assert np.array_equal(_both(f, g, x=x, s=0.0), np.array(want))


def test_power_inside_a_disjunction_on_the_compiled_backend():
    pytest.importorskip("numba")
    src = """
def f(x: f64[n]) -> f64[n]:
    t[i] = [x[i] ** 2 > 0.5 or i == 0]
    return t
"""
    f, _ = _roundtrip_source(src, "f")
    x = np.array([1.0, -2.0, 0.5])
    assert np.array_equal(f.compile("numba")(x=x), np.array([1.0, 1.0, 0.0]))

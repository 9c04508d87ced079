"""The instrumented loop runner: executes the loop-nest plans one scalar at a time.

It runs exactly the loops of ``tensorlang.loops`` (bounds, filters, scatters)
and counts operations by the rules of ``tensorlang.cost``, but only the work
that really happens: the body of a term is counted where its filters pass.
So its count equals the static polynomial when no bracket filters inside a
loop, and is at most the polynomial otherwise.  It is slow (pure Python) and
meant for small inputs: it backs ``Function.count_ops`` and is a second,
independent evaluator the tests compare with the NumPy interpreter.
"""
from __future__ import annotations

import itertools
import math

import numpy as np

from ..builtins import BUILTINS, ieee_power, quotient
from ..costs import REDUCTION_OPS, as_label_check, power_ops, product_ops
from ..errors import TLBoundsError
from ..bounds import size_facts
from ..shared import joined_factors
from ..ties import TIE_OPS, reduction_of, tie_sums, weighted
from ..loops import group_by_filters, plan_program, plan_term, reduce_plan
from ..ssa.recur import recurrences, step_program
from ..ssa.traverse import check_statements
from .kernels import alternative_rank, filter_rank, mentions_indices
from ..ssa.ir import (Access, Affine, AnyOf, Apply, Gather, Group, IdxCmp, IndexVar, NotAtom,
                      Program, Reduce, Rel, SizeValue, SizeVar, ValCmp)

_CMP = {"<": lambda a, b: a < b, "<=": lambda a, b: a <= b, ">": lambda a, b: a > b,
        ">=": lambda a, b: a >= b, "==": lambda a, b: a == b, "!=": lambda a, b: a != b}


class LoopRunner:
    def __init__(self, prog: Program):
        self.prog = prog
        self.plans = plan_program(prog)
        self.base = size_facts(prog)
        self.ops = 0
        self.tie, self.tie_points, self.tie_weights = None, 0, []
        self.shared = frozenset()
        self.checking = frozenset()       # the terms of the label check being run

    def run(self, inputs: dict, sizes: dict):
        self.env = dict(inputs)
        self.sizes = sizes
        self.ops = 0
        groups = {g.members[0]: g for g in recurrences(self.prog)}
        done: set[str] = set()
        # A sum over a maximum's ties runs in the maximum's pass (tensorlang/ties.py):
        # its values are computed as written, its operations counted as that pass does
        # them, an equality test, an addition and the weight at each point the
        # maximum visited.
        counts = tie_sums(self.prog)
        maxima: dict[str, list] = {}
        for c, (m, weight) in counts.items():
            maxima.setdefault(m, []).append(weight)
        visited: dict[str, int] = {}
        # A statement joined to a shared pass (tensorlang/shared.py) reads the factor
        # the pass evaluated in its host's product: computed as written, not counted.
        joined = joined_factors(self.prog)
        # A label check's kernel takes each read through a label as 1.0 (labelcheck.py):
        # its products are counted as costs.as_label_check counts them.
        checks = check_statements(self.prog)
        with np.errstate(all="ignore"):
            for sp in self.plans:
                g = groups.get(sp.stmt.name)
                if g is not None:
                    self.recurrence(g)
                    done.update(g.members)
                if sp.stmt.name in done:
                    continue
                name = sp.stmt.name
                if name in maxima:
                    self.tie, self.tie_points = reduction_of(sp.stmt), 0
                    self.tie_weights = [w for w in maxima[name] if weighted(w)]
                    self.statement(sp)
                    visited[name] = self.tie_points
                    self.tie = None
                elif name in joined:
                    self.shared = frozenset((joined[name],))
                    self.statement(sp)
                    self.shared = frozenset()
                elif name in checks:
                    self.checking = frozenset(sp.stmt.body)
                    self.statement(sp)
                    self.checking = frozenset()
                elif name in counts:
                    before = self.ops
                    self.statement(sp)
                    self.ops = before + self.env[name].size + TIE_OPS * visited[counts[name][0]]
                else:
                    self.statement(sp)
        return [self.env[o] for o in self.prog.outputs]

    # ------------------------------------------------------------ statements
    def statement(self, sp):
        s = sp.stmt
        shape = tuple(self.dim(d) for _, d in s.indices)
        out = np.zeros(shape)
        names = [n for n, _ in s.indices]
        self.points(sp, out, np.ndindex(*shape) if shape else [()])
        for tp in sp.scatter_terms:
            self.scatter(tp, out, names)
        self.env[s.name] = out

    def recurrence(self, g):
        """A recurrence group: step by step, each member's step statement
        (ssa/recur.step_program) run as the kernels run it."""
        symbols = [f"step'{q}" for q in range(g.lead)]
        plans = plan_program(step_program(self.prog, g, symbols))
        first = self.prog.stmt(g.members[0])
        for name in g.members:
            self.env[name] = np.zeros(tuple(self.dim(d) for d in self.prog.stmt(name).dims))
        steps = [range(self.dim(d)) if step < 0 else range(self.dim(d) - 1, -1, -1)
                 for (_, d), step in zip(first.indices[:g.lead], g.steps)]
        sizes = self.sizes
        for at in itertools.product(*steps):
            self.sizes = dict(sizes, **{s: v + 1 for s, v in zip(symbols, at)})
            for name, sp in zip(g.members, plans):
                self.statement(sp)
                self.env[name][at] = self.env.pop(sp.stmt.name)
        self.sizes = sizes

    def points(self, sp, out, points):
        """The statement's gather terms at the given points of its output."""
        s = sp.stmt
        names = [n for n, _ in s.indices]
        groups = group_by_filters(sp.gather_terms)
        for point in points:
            env = dict(zip(names, point))
            acc = 0.0
            for group in groups:
                if len(group) == 1:
                    acc += self.term(group[0], env)
                elif self.filters(group[0].filters, env):
                    # the group's shared brackets are tested once, as the kernel does
                    for tp in group:
                        acc += self.product(tp.term, env)
                        self.ops += 1                      # accumulate
            out[point] = acc
            self.ops += 1                                  # the write

    def dim(self, d) -> int:
        return d if isinstance(d, int) else self.sizes[d]

    def bound(self, a: Affine) -> int:
        return a.const + sum(c * self.sizes[x.name] for x, c in a.terms)

    def iterate(self, loops, env):
        if not loops:
            yield env
            return
        first, rest = loops[0], loops[1:]
        lo = max([self.bound(first.lo)] + [-(-self.affine(b.aff, env) // b.q) for b in first.lows])
        hi = min([self.bound(first.hi)] + [self.affine(b.aff, env) // b.q for b in first.highs])
        for v in range(lo, hi + 1):
            inner = dict(env)
            inner[first.var] = v
            yield from self.iterate(rest, inner)

    def term(self, tp, env) -> float:
        """Sum of the term over its loops, at the enclosing point env."""
        total = 0.0
        t = tp.term
        if not self.filters(tp.outer_filters, env):
            return total
        for point in self.iterate(tp.loops, env):
            if not self.filters(tp.filters, point):
                continue
            total += self.product(t, point)
            self.ops += 1                                  # accumulate
        return total

    def scatter(self, tp, out, names):
        """A scatter term as the kernels' scatter passes run it (kernels.scatter_pass):
        the brackets tested with the solved generators that do not need them come
        first, so a label they exclude is never read (`[t >= 1]` before
        `p = a[t - 1]`); an unstaged plan tests all its brackets there, a staged one
        its other brackets inside the deeper loops."""
        t = tp.term
        depth = tp.solve_depth
        staged = tp.stage is not None
        tested = tp.staged if staged else tp.filters
        solved = {g for g, _ in tp.solved}
        early = [a for a in tested if not (tp.solved and mentions_indices(a, solved))]
        late = [a for a in tested if not any(a is b for b in early)]
        for outer in self.iterate(tp.loops[:depth], {}):
            if not self.filters(early, outer):
                continue
            for g, expr in tp.solved:
                outer[g] = self.affine(expr, outer)
            if not self.filters(late, outer):
                continue
            for point in self.iterate(tp.loops[depth:], outer):
                if staged and not self.filters(tp.filters, point):
                    continue
                val = self.product(t, point)
                out[tuple(point[n] for n in names)] += val
                self.ops += 1

    # ------------------------------------------------------------ values
    def filters(self, atoms, env) -> bool:
        """Do all of a conjunction's atoms hold?  Tested in the kernels' order
        (`filter_rank`), stopping at the first false one, so a comparison of labels
        at `s - 2` is never read where its guard `s >= 2` fails."""
        for a in sorted(atoms, key=filter_rank):
            if not self.atom(a, env):
                return False
        return True

    def product(self, t, env) -> float:
        """c * n1 * n2 / d1 / d2 in the order the compiled kernels use (the
        factors of negative power divide; no reciprocal is formed)."""
        # (the check's own terms only: values a bracket of it compares are computed)
        counted = as_label_check(t) if t in self.checking else t
        self.ops += product_ops(counted)
        items = []
        for f, p in t.factors:
            items.append((np.float64(self.factor(f, env)), p))
        for _, p in counted.factors:
            self.ops += power_ops(p)
        return float(quotient(t.coeff, items, _pow))

    def factor(self, f, env) -> float:
        if f in self.shared:
            # a joined statement's shared factor: its pass evaluated it at this point
            # in the host's product (shared.py); its value as written, no operations
            before = self.ops
            value = self.unshared_factor(f, env)
            self.ops = before
            return value
        return self.unshared_factor(f, env)

    def unshared_factor(self, f, env) -> float:
        if isinstance(f, Access):
            return self.read(f.name, f.idx, env)
        if isinstance(f, Apply):
            builtin = BUILTINS[f.fn]
            self.ops += builtin.cost
            args = [self.body(b, env) for b in f.args]
            return float(builtin.numpy(*[np.float64(a) for a in args]))
        if isinstance(f, Group):
            return self.body(f.body, env)
        if isinstance(f, SizeValue):
            return float(self.sizes[f.name])
        if isinstance(f, Reduce):
            return self.reduce(f, env)
        raise TypeError(f)

    def reduce(self, f: Reduce, env) -> float:
        """The reduction over the points of its plan (counted as costs.reduction says)."""
        tp = reduce_plan(f, self.base)
        per_point, once = REDUCTION_OPS[f.op]
        values = []
        if self.filters(tp.outer_filters, env):
            for point in self.iterate(tp.loops, env):
                if not self.filters(tp.filters, point):
                    continue
                values.append(self.body(f.body, point))
                self.ops += 1 + per_point
                if self.tie is not None and f == self.tie:
                    # the weights of the sums over the ties in this pass (see run)
                    self.tie_points += 1
                    for w in self.tie_weights:
                        self.product(w, point)
        self.ops += once
        return reduce_values(f.op, np.array(values, dtype=np.float64))

    def body(self, body, env) -> float:
        total = 0.0
        for t in body:
            tp = plan_term(t, (), self.base, top=False)
            total += self.term(tp, env)
        return total

    def read(self, name, idx, env):
        data = self.env[name]
        pos = tuple(self.affine(a, env) for a in idx)
        for k, p in enumerate(pos):
            if not 0 <= p < data.shape[k]:
                raise TLBoundsError(f"index {p} is out of range for dimension {k} of {name} "
                                    f"(size {data.shape[k]})")
        return data[pos] if pos else float(data)

    def affine(self, a: Affine, env) -> int:
        v = a.const
        for x, c in a.terms:
            if isinstance(x, IndexVar):
                v += c * env[x.name]
            elif isinstance(x, SizeVar):
                v += c * self.sizes[x.name]
            elif isinstance(x, Gather):
                v += c * int(self.read(x.name, x.idx, env))
        return int(v)

    def atom(self, a, env) -> bool:
        self.ops += 1 if isinstance(a, (IdxCmp, Rel, ValCmp)) else 0
        if isinstance(a, IdxCmp):
            v = self.affine(a.aff, env)
            if a.op == ">=":
                return v >= 0
            if a.op == "==":
                return v == 0
            if a.op == "!=":
                return v != 0
            return v % a.mod == 0
        if isinstance(a, Rel):
            return bool(self.read(a.name, a.idx, env))
        if isinstance(a, ValCmp):
            return bool(_CMP[a.op](self.body(a.left, env), self.body(a.right, env)))
        if isinstance(a, NotAtom):
            return not self.atom(a.atom, env)
        if isinstance(a, AnyOf):
            # Short-circuit like compiled code: alternatives and their atoms in the
            # kernels' order, each stopping at its first false atom (so a guarded
            # label or relation read never leaves its tensor).
            return any(self.filters(alt, env) for alt in sorted(a.alts, key=alternative_rank))
        raise TypeError(a)


def reduce_values(op: str, v: np.ndarray) -> float:
    """max / min / logsumexp of a vector (NaN propagates; -inf / +inf when empty)."""
    if op == "min":
        return float(np.min(v)) if v.size else math.inf
    top = float(np.max(v)) if v.size else -math.inf
    if op == "max":
        return top
    shift = top if math.isfinite(top) else 0.0
    return float(np.log(np.sum(np.exp(v - shift)))) + shift


def _pow(x: float, p: float) -> float:
    try:
        return float(ieee_power(np.float64(x), p))
    except (OverflowError, ZeroDivisionError):  # pragma: no cover
        return math.inf


def count_ops(prog: Program, inputs: dict, sizes: dict) -> tuple[int, list]:
    runner = LoopRunner(prog)
    outs = runner.run(inputs, sizes)
    return runner.ops, outs

"""Kernel text: one statement's loop nest as the source of a Numba function.

The loops are exactly the plans of ``tensorlang.loops`` (the same ones the
cost model counts): a statement loops over its generators with a scalar
accumulator for its gather terms, guards on summed indices are loop bounds,
other brackets are ``if``s (tested in a safe order, so a guarded read is never
taken), and scatter terms add into a zero-filled output.  Guards on a
generator split its loop where they change value (``peel.peel_segments``), so
the bulk of a stencil runs with no tests.  Each statement exists in a serial
form and, when it has generators and no scatter, a ``prange`` form.

Names.  Every name from the program lives in a namespace of its own in the
generated text (see `Names`): a tensor or scalar `x` is `v_x`, a size symbol
`n` is `s_n`, an index `i` is `i_i`, and a name longer than `LONG_NAME`
characters is shortened with a number (`v3_...`).  Every identifier the
generator makes up itself (kernels `k3` / `k3_par` named by statement number,
accumulators `acc`, temporaries `b1`, `e2`, `g3`, `o4`, the driver's `out`,
`env`, `sizes`, the helpers `tl_*`, `np`, `njit`, `prange`, and `max` / `min`
in loop bounds) starts with something else, so no program name can collide
with a generated one, a Python keyword, a builtin or a module.

Safety.  Every read through a gathered label (`E[y[s]]`, every level of
`E[y[z[s]]]`, a relation `M[y[s], c]`, the inner labels of a comparison
`[t == y[z[s]]]`) is range-checked in the kernel right where it is taken (so a
label masked by an earlier bracket is never checked); a bad label raises
`GatherOutOfRange`, and the wrapper reports it through the interpreter.  All
gather-free index arithmetic is proven to stay inside int64 by the bounds
checker (`tensorlang.bounds.MAX_SIZE`); `affine` re-checks each expression it
prints and refuses (``Unsupported``) one whose bound it cannot confirm.

"""
from __future__ import annotations

import os
import re
from dataclasses import replace

from ..builtins import BUILTINS
from ..bounds import INT64_MAX, dim_bound, magnitude, size_facts
from ..loops import StmtPlan, TermPlan, group_by_filters, plan_loops, plan_term, reduce_plan
from ..ssa.ir import (Access, Affine, AnyOf, Apply, Gather, Group, IdxCmp, IndexVar, NotAtom,
                      Program, Reduce, Rel, SizeValue, SizeVar, Stmt, Term, ValCmp)
from ..ssa import build as B
from ..ssa import traverse as T
from ..ssa.traverse import binders_of, iter_nodes
from ..ssa.printer import fmt_affine, fmt_num
from ..ties import reduction_of, weighted
from .peel import PEEL_BUDGET, peel_segments
from .siblings import canonical, connected, factor_key, nest_of, worth_sharing
from .tiling import TILE

# the parallel forms' note of a bad label (an identifier no program name can take)
BAD_LABEL = "tl_badlabel"
# what a serial kernel does at a bad label (deferred_label_checks finds it after the
# check `KernelWriter.read` writes, to defer it in a parallel form)
RAISE_BAD_LABEL = "raise GatherOutOfRange()"

# Partial sums of an inner sum loop (`KernelWriter.unrolled`): 4 independent chains
# of additions hide the add latency (a dot product 1.9x, a row sum 3x faster than one
# chain); 8 measured no faster (benchmarks/results/reduction_unroll.md).
UNROLL = 4
# A loop of fewer points runs one chain (at run time): below about 16 points the
# processor overlaps the chains of consecutive elements by itself, and the blocks
# were slower (a 3-point row sum 0.7x, a 128-point one 1.4x faster).
UNROLL_MIN_POINTS = 32
# A point of more lines than this keeps one running sum (its text would be repeated).
UNROLL_MAX_LINES = 12

# builtins with a vectorisable form in vmath (the generated module's names)
VECTOR_TRIG = {"sin": "tl_vsin", "cos": "tl_vcos"}


# A max, min or logsumexp over at most this many constant points (one index of constant
# range) is written point by point (KernelWriter.reduction_unrolled).
UNROLL_REDUCTION_POINTS = 4


def constant_points(f: Reduce) -> list | None:
    """[(filter atoms, body)] at each point of a reduction over one index of constant
    range (at most UNROLL_REDUCTION_POINTS), the index replaced by the point's value
    and brackets that are then constant folded away (a point whose filter is false
    left out); None for any other reduction."""
    if len(f.over) != 1:
        return None
    name, dim = f.over[0]
    if not isinstance(dim, int) or not 1 <= dim <= UNROLL_REDUCTION_POINTS:
        return None
    out = []
    for k in range(dim):
        at = {name: Affine(k)}
        domain = B.canon_body((T.substitute_term(Term(1.0, (), f.where, ()), at),))
        if not domain:
            continue                            # the filter is false at this point
        body = B.canon_body(T.substitute_body(f.body, at))
        out.append((domain[0].pred, body))
    return out


class Unsupported(Exception):
    """A construct this generator does not handle; the interpreter runs the program."""


# Names longer than this are shortened (with a number that keeps them apart) in
# the generated text: the module stays readable and no tool meets a 5000-character
# identifier.
LONG_NAME = 40


class Names:
    """Python identifiers for the program's names, one namespace per kind.

    A value (tensor or scalar) `x` becomes `v_x`, a size symbol `n` becomes `s_n`
    and an index `i` becomes `i_i`; a name longer than LONG_NAME characters becomes
    `v<k>_<its first 24 characters>` (k counts the long names of that kind).  So
    every program name's identifier starts with one of `v_ s_ i_` or `v s i`
    followed by a digit, and no identifier the generator makes up does (see
    `is_program_identifier`): no program name can collide with a generated
    name, with another kind of program name, a Python keyword, a builtin or a module.
    """

    KINDS = {"value": "v", "size": "s", "index": "i"}

    def __init__(self):
        self.table: dict[tuple[str, str], str] = {}
        self.long_count = {k: 0 for k in self.KINDS.values()}

    def _get(self, kind: str, name: str) -> str:
        key = (kind, name)
        got = self.table.get(key)
        if got is None:
            letter = self.KINDS[kind]
            if len(name) <= LONG_NAME and name.isidentifier():
                got = f"{letter}_{name}"
            else:
                # long names, and derived sizes (`n - k + 1`), which are not identifiers
                self.long_count[letter] += 1
                readable = "".join(ch if ch.isalnum() or ch == "_" else "_" for ch in name)
                got = f"{letter}{self.long_count[letter]}_{readable[:24]}"
            self.table[key] = got
        return got

    def value(self, name: str) -> str:
        return self._get("value", name)

    def size(self, name: str) -> str:
        return self._get("size", name)

    def index(self, name: str) -> str:
        return self._get("index", name)


def is_program_identifier(ident: str) -> bool:
    """Is `ident` in the namespace `Names` gives program names (`v_x`, `s_n`, `i_i`, `v3_...`)?"""
    return len(ident) >= 2 and ident[0] in "vsi" and (ident[1] == "_" or ident[1].isdigit())


def filter_rank(atom) -> tuple:
    """Evaluation order of a conjunction's atoms: plain index guards first, then
    comparisons with labels (shallow labels before nested ones), relations, and
    value tests last.  Every earlier atom guards the reads of the later ones, which
    is what the bounds proof assumes (it uses all of a conjunction's index guards)."""
    if isinstance(atom, IdxCmp):
        return (0, gather_depth(atom.aff))
    if isinstance(atom, Rel):
        return (1, max((gather_depth(a) for a in atom.idx), default=0))
    return (2, 0)


def alternative_rank(alt) -> int:
    """Evaluation order of a disjunction's alternatives: the ones of plain index
    comparisons first (they read nothing, and the bounds proof of the others assumes
    they are false), then index comparisons with labels,
    then the rest."""
    if all(isinstance(x, IdxCmp) for x in alt):
        return 0 if all(gather_depth(x.aff) == 0 for x in alt) else 1
    return 2


def gather_depth(aff: Affine) -> int:
    depth = 0
    for atom, _ in aff.terms:
        if isinstance(atom, Gather):
            depth = max(depth, 1 + max((gather_depth(a) for a in atom.idx), default=0))
    return depth


def has_gather(aff: Affine) -> bool:
    return any(isinstance(a, Gather) for a in aff.atoms())


class Emitter:
    """Lines of one kernel, with fresh temporaries (numbered across the whole kernel:
    an emitter made for a part of a kernel shares its parent's counter)."""

    def __init__(self, parent: "Emitter | None" = None):
        self.lines: list[str] = []
        self.counter = parent.counter if parent is not None else [0]

    def fresh(self, stem: str) -> str:
        self.counter[0] += 1
        return f"{stem}{self.counter[0]}"

    def emit(self, depth: int, text: str):
        self.lines.append("    " * depth + text)


class KernelWriter:
    def __init__(self, prog: Program, names: Names | None = None):
        self.prog = prog
        self.names = names or Names()
        self.shapes = prog.shapes()
        self.base = size_facts(prog)
        self.reads: set[str] = set()
        self.sizes_used: set[str] = set()
        self.builtins_used: set[str] = set()
        self.ranges: dict = {}            # index -> dim, for the statement being written
        self.unsigned = False             # subscripts as np.uint64 (parallel forms)
        self.unsigned_serial = False      # ... and in serial forms too (recurrence steps)
        self.branch_free_lse = False      # logsumexp in two passes (see `reduction`)
        self.generators: list[str] = []   # the statement's generator indices
        # max statement -> the sums over its ties computed in its pass, as
        # (statement, weight term) pairs (tensorlang/ties.py)
        self.ties: dict[str, list] = {}
        self.tie = None         # (reduction, [(weight, element to write)]) while writing one
        # sin and cos as vmath's plain arithmetic where a statement allows it (see
        # `statement`); `trig_counted` says whether the form being written has one
        self.vector_trig = False
        self._trig_now = False
        self.trig_counted = False
        # factor key (siblings.factor_key) -> the local holding its value, while the
        # point of a sibling nest is written (`shared_point`)
        self.shared: dict = {}

    # ------------------------------------------------------------ names
    def value(self, name: str) -> str:
        return self.names.value(name)

    def size(self, name: str) -> str:
        self.sizes_used.add(name)
        return self.names.size(name)

    def index(self, name: str) -> str:
        return self.names.index(name)

    # ------------------------------------------------------------ affine and atoms
    def affine(self, a: Affine, em: Emitter | None = None, depth: int = 0) -> str:
        """An integer expression; parenthesised when it has more than one part.

        A gathered label whose own index is gathered is range-checked first: the
        checks go to `em` at `depth` (so the caller must use the text right there)."""
        if magnitude(a, self.ranges, labels=True) > INT64_MAX:
            raise Unsupported(f"the index expression {fmt_affine(a)} may overflow int64")
        parts = []
        for atom, c in a.terms:
            if isinstance(atom, IndexVar):
                text = self.index(atom.name)
            elif isinstance(atom, SizeVar):
                text = self.size(atom.name)
            else:
                text = self.read(atom.name, atom.idx, em, depth)
            parts.append((c, text))
        if a.const or not parts:
            parts.append((a.const, None))
        out = ""
        for k, (c, text) in enumerate(parts):
            mag = abs(c)
            piece = str(mag) if text is None else (text if mag == 1 else f"{mag} * {text}")
            if k == 0:
                out = ("-" if c < 0 else "") + piece
            else:
                out += (" - " if c < 0 else " + ") + piece
        return out if len(parts) == 1 else f"({out})"

    def read(self, name: str, idx, em: Emitter | None, depth: int) -> str:
        """`name[idx]` as text; every gathered position is computed into a local and
        range-checked first (a bad label raises GatherOutOfRange, never a wild read)."""
        self.reads.add(name)
        arr = self.value(name)
        texts = []
        for k, a in enumerate(idx):
            if not has_gather(a):
                texts.append(self.affine(a))
                continue
            if em is None:
                raise Unsupported("a gathered index where no check can be placed")
            tmp = em.fresh("g")
            em.emit(depth, f"{tmp} = {self.affine(a, em, depth)}")
            em.emit(depth, f"if {tmp} < 0 or {tmp} >= {arr}.shape[{k}]:")
            em.emit(depth + 1, RAISE_BAD_LABEL)
            texts.append(tmp)
        return f"{arr}[{', '.join(self.subscript(t) for t in texts)}]"

    def subscript(self, text: str) -> str:
        """An array subscript.  In a parallel form it is cast to np.uint64: a subscript is
        never negative (reads are proven in bounds, gathered labels checked), but inside a
        prange loop, whose bounds Numba passes at run time, LLVM cannot see that and
        keeps NumPy's wrap-around test for negative subscripts on every access; with it
        a one-dimensional loop runs several times slower than its serial form.  So in a
        recurrence's step (`unsigned_serial`), whose step number LLVM cannot bound (read
        from an array, numba_module.reads_group, or counted down): a scalar step of a
        backward group written `x_bar[t - 1] = d[t - 1] + x_bar[t]` ran 5.6 times slower
        than its forward mirror, the wrap-around tests keeping the value just stored
        from being reused.  A literal subscript stays as written: its test folds away, and
        each cast is a call Numba must type (compiling a kernel costs more per cast)."""
        if not self.unsigned or text.isdigit():
            return text
        return f"np.uint64({text})"

    def dim(self, d) -> str:
        if isinstance(d, int):
            return str(d)
        return self.size(d)

    def atom(self, a, em: Emitter, depth: int) -> str:
        """A boolean expression; may emit lines computing nested values first."""
        if isinstance(a, IdxCmp):
            v = self.affine(a.aff, em, depth)
            if a.op == "%":
                return f"({v} % {a.mod} == 0)"
            return f"({v} {a.op} 0)"
        if isinstance(a, Rel):
            return self.read(a.name, a.idx, em, depth)
        if isinstance(a, ValCmp):
            left = self.body(a.left, em, depth)
            right = self.body(a.right, em, depth)
            return f"({left} {a.op} {right})"
        if isinstance(a, NotAtom):
            return f"(not {self.atom(a.atom, em, depth)})"
        if isinstance(a, AnyOf):
            return self.any_of(a, em, depth)
        raise Unsupported(type(a).__name__)

    def any_of(self, a: AnyOf, em: Emitter, depth: int) -> str:
        """A disjunction, tested alternative by alternative (plain index comparisons first:
        the bounds proof of the others assumes they are false), each conjunction in
        `filter_rank` order.

        When no alternative needs lines of its own it is one Python expression (`or`
        and `and` short-circuit).  Otherwise (a reduction, or a checked gather inside)
        a flag is set by the first alternative that holds, and a later alternative is
        only computed while the flag is still false."""
        alts = [sorted(alt, key=filter_rank) for alt in sorted(a.alts, key=alternative_rank)]
        trial = Emitter(em)
        texts = []
        for alt in alts:
            conds = [self.atom(x, trial, depth) for x in alt]
            texts.append("(" + " and ".join(conds or ["True"]) + ")")
        if not trial.lines:
            return "(" + " or ".join(texts) + ")"
        flag = em.fresh("o")
        em.emit(depth, f"{flag} = False")
        for k, alt in enumerate(alts):
            d = depth
            if k:
                em.emit(d, f"if not {flag}:")
                d += 1
            for x in alt:
                em.emit(d, f"if {self.atom(x, em, d)}:")
                d += 1
            em.emit(d, f"{flag} = True")
        return flag

    # ------------------------------------------------------------ values
    def factor(self, f, em: Emitter, depth: int) -> str:
        if self.shared:
            local = self.shared.get(factor_key(f))
            if local is not None:
                return local
        if isinstance(f, Access):
            if not f.idx:
                self.reads.add(f.name)
                return self.value(f.name)
            return self.read(f.name, f.idx, em, depth)
        if isinstance(f, Apply):
            args = [self.body(b, em, depth) for b in f.args]
            self.builtins_used.add(f.fn)
            if self._trig_now and f.fn in VECTOR_TRIG:
                # the argument once, counted when vmath's form does not apply to it
                arg = args[0]
                if not arg.isidentifier():
                    arg = em.fresh("t")
                    em.emit(depth, f"{arg} = {args[0]}")
                em.emit(depth, f"tl_wide += tl_trig_wide({arg})")
                self.trig_counted = True
                return f"{VECTOR_TRIG[f.fn]}({arg})"
            return BUILTINS[f.fn].numba_call(args)
        if isinstance(f, Group):
            return f"({self.body(f.body, em, depth)})"
        if isinstance(f, SizeValue):
            return f"float({self.size(f.name)})"
        if isinstance(f, Reduce):
            return self.reduction(f, em, depth)
        raise Unsupported(type(f).__name__)

    def reduction(self, f: Reduce, em: Emitter, depth: int) -> str:
        """A reduction in one pass over its points (`loops.reduce_plan`), into a local.

        max / min keep the best value so far; a NaN entry wins and stays (as with
        np.max).  logsumexp keeps a running max m and the sum s of exp(v - m),
        rescaled when the max grows, so no exp ever overflows and the body is
        evaluated once per point; the value is m + log(s) (-inf over no point,
        +inf when an entry is +inf, NaN when one is NaN)."""
        tied = self.tie is not None and self.tie[0] == f
        points = None if tied else constant_points(f)
        if points is not None:
            return self.reduction_unrolled(f, points, em, depth)
        tp = reduce_plan(f, self.base)
        best = em.fresh("r")
        em.emit(depth, f"{best} = {'np.inf' if f.op == 'min' else '-np.inf'}")
        sums = []
        if tied:
            # the sums over the statement's ties (tensorlang/ties.py) in the same pass:
            # over the entries equal to the best value so far, restarted when it
            # changes (and 0 after a NaN, which equals nothing)
            for weight, element in self.tie[1]:
                acc = em.fresh("c")
                em.emit(depth, f"{acc} = 0.0")
                sums.append((acc, weight, element))
        total = None
        if f.op == "logsumexp" and not self.branch_free_lse:
            total = em.fresh("q")
            em.emit(depth, f"{total} = 0.0")

        def points():
            d = self.open_plan(tp, em, depth)
            v = em.fresh("e")
            em.emit(d, f"{v} = {self.body(f.body, em, d)}")
            return v, d
        v, d = points()
        if f.op == "logsumexp" and self.branch_free_lse:
            # Two passes, the max m and then the sum s of exp(v - m), with no branch that
            # depends on the values but the max's (which LLVM turns into a select): for
            # a loop around this one to vectorise.  The body is evaluated twice.  An
            # infinite or NaN m is the result itself, as in the one-pass form.
            em.emit(d, f"if {v} > {best}:")
            em.emit(d + 1, f"{best} = {v}")
            em.emit(d, f"elif {v} != {v}:")
            em.emit(d + 1, f"{best} = {v}")
            total = em.fresh("q")
            em.emit(depth, f"{total} = 0.0")
            v, d = points()
            em.emit(d, f"{total} += np.exp({v} - {best})")
            out = em.fresh("r")
            em.emit(depth, f"{out} = {best} if {best} - {best} != 0.0 else {best} + np.log({total})")
            return out
        if sums:
            def weight(w):
                return self.product(w, em, d + 1) if weighted(w) else "1.0"
            em.emit(d, f"if {v} {'>' if f.op == 'max' else '<'} {best}:")
            em.emit(d + 1, f"{best} = {v}")
            for acc, w, _ in sums:
                em.emit(d + 1, f"{acc} = {weight(w)}")
            em.emit(d, f"elif {v} == {best}:")
            for acc, w, _ in sums:
                em.emit(d + 1, f"{acc} += {weight(w)}")
            em.emit(d, f"elif {v} != {v}:")
            em.emit(d + 1, f"{best} = {v}")
            for acc, _, _ in sums:
                em.emit(d + 1, f"{acc} = 0.0")
            for acc, _, element in sums:
                em.emit(depth, f"{element} = {acc}")
            return best
        if f.op in ("max", "min"):
            # (the NaN test apart, in the else branch: LLVM then turns the loop into a
            # running max as fast as NumPy's)
            em.emit(d, f"if {v} {'>' if f.op == 'max' else '<'} {best}:")
            em.emit(d + 1, f"{best} = {v}")
            em.emit(d, f"elif {v} != {v}:")
            em.emit(d + 1, f"{best} = {v}")
            return best
        em.emit(d, f"if {v} > {best}:")
        em.emit(d + 1, f"{total} = {total} * np.exp({best} - {v}) + 1.0")
        em.emit(d + 1, f"{best} = {v}")
        em.emit(d, f"elif {v} < {best}:")
        em.emit(d + 1, f"{total} += np.exp({v} - {best})")
        em.emit(d, f"elif {v} == {best}:")
        em.emit(d + 1, f"{total} += 1.0")
        em.emit(d, "else:")
        em.emit(d + 1, f"{best} = {best} + {v}")         # NaN, and it stays NaN
        out = em.fresh("r")
        em.emit(depth, f"{out} = {best} + np.log({total})")
        return out

    def reduction_unrolled(self, f: Reduce, points: list, em: Emitter, depth: int) -> str:
        """A reduction over a few constant points (`constant_points`), one point after
        another with no loop: each point's value under its own filter, the neutral
        value (-inf, or +inf for min) where the filter fails, then the same max / min
        / logsumexp as the loop forms (a NaN entry wins and stays; logsumexp is m +
        log(sum exp(v - m)), -inf over no point, +inf or NaN as its max is).

        A choice among a few cases (`logsumexp[c: 3]([c == 0] * a + [c == 1] * b + [c
        == 2] * d)`, the soft minimum of a dynamic program) folds its brackets per
        point, so no case is tested at run time; and the kernel is far smaller: a
        loop whose body selects among the cases with conditional expressions gives
        Numba's SSA pass blocks and variables to rewrite that grow with the square
        of the body's size, seconds of compile time per recurrence step."""
        neutral = "np.inf" if f.op == "min" else "-np.inf"
        values = []
        for where, body in points:
            v = em.fresh("e")
            if not where:
                em.emit(depth, f"{v} = {self.body(body, em, depth)}")
            else:
                em.emit(depth, f"{v} = {neutral}")
                d = depth
                for a in sorted(where, key=filter_rank):
                    em.emit(d, f"if {self.atom(a, em, d)}:")
                    d += 1
                em.emit(d, f"{v} = {self.body(body, em, d)}")
            values.append(v)
        best = em.fresh("r")
        if not values:                  # every point's filter folded to false
            em.emit(depth, f"{best} = {neutral}")
            return best
        # np.maximum / np.minimum of two floats: NaN if either is, no branch
        pick = "np.minimum" if f.op == "min" else "np.maximum"
        text = values[0]
        for v in values[1:]:
            text = f"{pick}({text}, {v})"
        em.emit(depth, f"{best} = {text}")
        if f.op != "logsumexp":
            return best
        total = " + ".join(f"np.exp({v} - {best})" for v in values)
        out = em.fresh("r")
        em.emit(depth, f"{out} = {best} if {best} - {best} != 0.0 else {best} + np.log({total})")
        return out

    def product(self, t: Term, em: Emitter, depth: int) -> str:
        """The term's value as printed: `c * n1 * n2 / d1 / d2`, where the d are the
        factors of negative power.  A quotient is divided, never multiplied by a
        reciprocal: x * (1 / x) is inf at x = 5e-324, and 1e308 * (1 / 1e308) is
        not 1.0."""
        num = [] if t.coeff == 1 else [fmt_num(t.coeff)]
        den = []
        for f, p in t.factors:
            v = self.factor(f, em, depth)
            if p > 0:
                num.append(self.power(v, p, em, depth))
            else:
                den.append(self.power(v, -p, em, depth))
        text = " * ".join(num) if num else "1.0"
        for d in den:
            text += f" / {d}"
        return text

    def power(self, v: str, p: float, em: Emitter, depth: int) -> str:
        """v ** p (p > 0) as one operand of `*` or `/`."""
        if p == 1:
            return v
        if float(p).is_integer() and 2 <= p <= 4:
            if "(" in v.split("[")[0]:
                # an expression (a fused producer, say): evaluate it once
                tmp = em.fresh("e")
                em.emit(depth, f"{tmp} = {v}")
                v = tmp
            return "(" + " * ".join([v] * int(p)) + ")"   # a read, repeated
        return f"({v}) ** {fmt_num(p)}"         # ** binds tighter than * and /

    def body(self, body, em: Emitter, depth: int) -> str:
        """A nested body's value: inline when it has no loops, else computed into a local."""
        if not body:
            return "0.0"
        if all(not t.sums for t in body):
            parts = []
            for t in body:
                inner = Emitter(em)
                conds = [self.atom(a, inner, depth) for a in sorted(t.pred, key=filter_rank)]
                value = self.product(t, inner, depth)
                if inner.lines:
                    break
                parts.append(f"({value} if {' and '.join(conds)} else 0.0)" if conds
                             else f"({value})")
            else:
                # Added up from 0.0 like every other sum (a local accumulator, the
                # interpreter), so a body whose terms are -0.0 is +0.0 on every backend.
                return "(0.0 + " + " + ".join(parts) + ")"
        acc = em.fresh("b")
        em.emit(depth, f"{acc} = 0.0")
        for t in body:
            self.term(plan_term(t, (), self.base, top=False), acc, em, depth)
        return acc

    def element_loop(self, plans, var, lo, hi, rng, target, em: Emitter, depth: int):
        """The innermost generator loop: accumulate the gather terms, write once."""
        em.emit(depth, f"for {self.index(var)} in {rng}({lo}, {hi}):")
        em.emit(depth + 1, "acc = 0.0")
        for group in group_by_filters(plans):
            if len(group) == 1:
                self.term(group[0], "acc", em, depth + 1)
            else:
                self.shared_filter_terms(group, "acc", em, depth + 1)
        em.emit(depth + 1, f"{target} = acc")

    def shared_filter_terms(self, plans, acc: str, em: Emitter, depth: int):
        """Loop-free terms under the same brackets: the brackets are tested once.

        A gradient typically has several terms per bracket (one per factor the
        bracket multiplied); testing each bracket once per element instead of once
        per term keeps the kernel, and its compile time, proportional to the
        brackets rather than to the terms."""
        d = depth
        for a in sorted(plans[0].filters, key=filter_rank):
            em.emit(d, f"if {self.atom(a, em, d)}:")
            d += 1
        for tp in plans:
            em.emit(d, f"{acc} += {self.product(tp.term, em, d)}")

    def pieces(self, plans, var, dim, conds: list | None, budget: int):
        """The pieces [lo, hi) of a generator's loop, with the plans alive on each, and
        the budget left for each piece's inner loops: split where the guards change
        value (`peel_segments`, the conditions it assumes appended to `conds`) when
        `conds` is given and the pieces fit the budget, else one piece."""
        segments = None
        if conds is not None and budget >= 1:
            segments = peel_segments(plans, var, dim)
            if segments is not None and len(segments[1]) > budget:
                segments = None
        if segments is None:
            return [(Affine(0), Affine.dim(dim), plans)], budget
        conds.extend(segments[0])
        return segments[1], budget // len(segments[1])

    def nest(self, plans, gens, level, target, em: Emitter, depth: int, parallel: bool,
             conds: list | None, budget: int, tiled: bool = False):
        """The generator loops from `level` inward.

        With `conds` given, each generator's loop is split where its guards change
        value (see `peel_segments`) while the number of innermost loops stays
        within `budget`; the conditions the split assumes are appended to `conds`.
        Only one loop of the outermost generator runs with prange: the bulk piece
        when it is split (the border pieces are a few iterations each).  With
        `tiled`, the last two generators run in blocks (`tile_pair`)."""
        var, dim = gens[level]
        pieces, inner_budget = self.pieces(plans, var, dim, conds, budget)
        for lo, hi, kept in pieces:
            bulk = not (hi - lo).is_const or len(pieces) == 1
            rng = "prange" if (parallel and level == 0 and bulk) else "range"
            lo_text = self.affine(lo)
            hi_text = self.dim(dim) if hi == Affine.dim(dim) else self.affine(hi)
            if tiled and level == len(gens) - 2 and not (hi - lo).is_const:
                self.tile_pair(kept, gens, lo_text, hi_text, rng, target, em, depth, conds,
                               inner_budget)
            elif level == len(gens) - 1:
                self.element_loop(kept, var, lo_text, hi_text, rng, target, em, depth)
            else:
                em.emit(depth, f"for {self.index(var)} in {rng}({lo_text}, {hi_text}):")
                self.nest(kept, gens, level + 1, target, em, depth + 1, parallel, conds,
                          inner_budget, tiled)

    def tile_pair(self, plans, gens, lo: str, hi: str, rng: str, target, em: Emitter,
                  depth: int, conds: list | None, budget: int):
        """The last two generators' loops in `TILE` x `TILE` blocks: the outer one (over
        [lo, hi)) by blocks, numbered so that `rng` (prange in a parallel form) splits
        whole blocks among the threads, and inside each block the inner one by blocks
        too, each block's outer loop around its inner one.  A full block's inner loop
        runs a constant `TILE` iterations (LLVM unrolls it); the last, partial one and
        the inner generator's border pieces (guard peeling, a few iterations each) run
        inside the outer block as they are.  Every element is still computed by the
        same element loop, so the values are those of the untiled nest."""
        (outer, _), (inner, dim) = gens[-2], gens[-1]
        block, first, stop = em.fresh("t"), em.fresh("t"), em.fresh("t")
        span = hi if lo == "0" else f"{hi} - {lo}"
        em.emit(depth, f"for {block} in {rng}(0, ({span} + {TILE - 1}) // {TILE}):")
        em.emit(depth + 1, f"{first} = {block} * {TILE}" if lo == "0"
                else f"{first} = {lo} + {block} * {TILE}")
        em.emit(depth + 1, f"{stop} = min({first} + {TILE}, {hi})")
        outer_loop = f"for {self.index(outer)} in range({first}, {stop}):"
        pieces, _ = self.pieces(plans, inner, dim, conds, budget)
        for ilo, ihi, kept in pieces:
            ilo_text = self.affine(ilo)
            ihi_text = self.dim(dim) if ihi == Affine.dim(dim) else self.affine(ihi)
            if (ihi - ilo).is_const:
                em.emit(depth + 1, outer_loop)
                self.element_loop(kept, inner, ilo_text, ihi_text, "range", target, em,
                                  depth + 2)
                continue
            at = em.fresh("t")
            em.emit(depth + 1, f"for {at} in range({ilo_text}, {ihi_text}, {TILE}):")
            em.emit(depth + 2, f"if {at} + {TILE} <= {ihi_text}:")
            em.emit(depth + 3, outer_loop)
            self.element_loop(kept, inner, at, f"{at} + {TILE}", "range", target, em,
                              depth + 4)
            em.emit(depth + 2, "else:")
            em.emit(depth + 3, outer_loop)
            self.element_loop(kept, inner, at, ihi_text, "range", target, em, depth + 4)

    def open_plan(self, tp: TermPlan, em: Emitter, depth: int, parallel: bool = False) -> int:
        """A plan's tests before its loops, its loops (the outermost with prange when
        `parallel`) and its tests at each point, opened; the depth inside them."""
        d = depth
        for a in sorted(tp.outer_filters, key=filter_rank):
            em.emit(d, f"if {self.atom(a, em, d)}:")
            d += 1
        for q, lp in enumerate(tp.loops):
            rng = "prange" if parallel and q == 0 else "range"
            em.emit(d, f"for {self.index(lp.var)} in {rng}({self.loop_start(lp)}, "
                       f"{self.loop_stop(lp)}):")
            d += 1
        for a in sorted(tp.filters, key=filter_rank):
            em.emit(d, f"if {self.atom(a, em, d)}:")
            d += 1
        return d

    def loop_start(self, lp) -> str:
        """The first iteration: the largest lower bound (ceil(a / q) is -((-a) // q))."""
        parts = [self.affine(lp.lo)]
        for b in lp.lows:
            a = self.affine(b.aff)
            parts.append(a if b.q == 1 else f"-((-{a}) // {b.q})")
        return parts[0] if len(parts) == 1 else f"max({', '.join(parts)})"

    def loop_stop(self, lp) -> str:
        """One past the last iteration: the smallest upper bound, plus one."""
        if not lp.highs:
            return self.affine(lp.hi.shift(1))
        parts = [self.affine(lp.hi)]
        for b in lp.highs:
            a = self.affine(b.aff)
            parts.append(a if b.q == 1 else f"{a} // {b.q}")
        return f"min({', '.join(parts)}) + 1"

    def affine_text(self, conds) -> str:
        """A conjunction of `aff >= 0` conditions in sizes, as Python."""
        texts = dict.fromkeys(f"{self.affine(a)} >= 0" for a in conds)
        return " and ".join(texts) or "True"

    def term(self, tp: TermPlan, acc: str, em: Emitter, depth: int, target: str | None = None,
             outer_prange: bool = False):
        """Loops of one term adding into `acc` (or into `target[...]` for a scatter)."""
        if target is not None and tp.solved:
            order = scatter_order(tp, self.generators[-1] if self.generators else None)
            if order is not None:
                return self.scatter_in_order(tp, order, em, depth, target)
        d = depth
        for a in sorted(tp.outer_filters, key=filter_rank):
            em.emit(d, f"if {self.atom(a, em, d)}:")
            d += 1
        for k, lp in enumerate(tp.loops):
            if k == tp.solve_depth:
                d = self.solve(tp, tp.staged, em, d)
            parallel = outer_prange and k == 0
            # A scatter adds along its innermost loop into one element when that loop
            # is not over a generator and its solved generators are computed
            # outside it: a chain too.
            fixed = target is None or (lp.var not in self.generators and (
                not tp.solved or tp.solve_depth < len(tp.loops)))
            if (k == len(tp.loops) - 1 and fixed
                    and self.unrolled(tp, lp, acc if target is None else target, em, d,
                                      carry=target is not None or not outer_prange,
                                      parallel=parallel)):
                return
            rng = "prange" if parallel else "range"
            em.emit(d, f"for {self.index(lp.var)} in {rng}({self.loop_start(lp)}, "
                       f"{self.loop_stop(lp)}):")
            d += 1
        self.addend(tp, acc, em, d, target)

    def addend(self, tp: TermPlan, acc: str | None, em: Emitter, depth: int,
               target: str | None = None):
        """One point of a term inside its loops: its brackets, its solved generators and
        the addition of its value into `acc` (or into `target[...]` for a scatter)."""
        d = depth
        if target is None and tp.filters and not tp.solved:
            selected = self.selected(tp, em, d)
            if selected is not None:
                em.emit(d, f"{acc} += {selected}")
                return
        if tp.solve_depth == len(tp.loops):
            d = self.solve(tp, tp.filters, em, d)
        else:
            for a in sorted(tp.filters, key=filter_rank):
                em.emit(d, f"if {self.atom(a, em, d)}:")
                d += 1
        value = self.product(tp.term, em, d)
        if target is None:
            em.emit(d, f"{acc} += {value}")
        else:
            em.emit(d, f"{target} += {value}")

    def unrolled(self, tp: TermPlan, lp, acc: str, em: Emitter, depth: int,
                 carry: bool = True, parallel: bool = False) -> bool:
        """A sum's innermost loop `lp` with `width` partial sums, the first starting at
        `acc` (with `carry`, else at 0.0, added to `acc`: inside a prange loop, where
        Numba needs `acc +=` to see a reduction), the partials added in a fixed tree
        after the loop; False (nothing emitted) where that does not apply.  `acc` is
        a local accumulator or, for a scatter whose element stays the same along the
        loop, that element of the output.

        One running sum is a chain of dependent additions: LLVM may not reorder
        floating-point additions, so the loop runs one addition per add latency
        (several cycles), however cheap its body.  With `width` partial sums the
        additions of consecutive points are independent and overlap.  The sum is
        then added in another order, so it may differ from the one-sum loop in its
        last bits, but the order is fixed by the text (an element of a tensor gets
        the same bits on every call and in the serial and parallel forms).  NaN and
        infinities
        reach the result as before (every partial starts at +0.0, so a sum of
        zeros is +0.0 as before).

        Point `lo + q` adds into partial q mod `width`, in order.  The points up to
        the last whole block of `width` run in a loop that adds each point into the
        first partial and rotates the partials by one place (`b1, b2, b3, b4 = b2,
        b3, b4, b1 + v`): after each whole block every partial is back in its place,
        and the point is written once (a block of `width` copies of it compiled
        about 40 % slower, for no faster loop).  The points after the last whole
        block add into the first partial.  A loop of fewer than `UNROLL_MIN_POINTS`
        points (known at run time) runs all its points into the first partial, one
        chain as before (bit for bit, with `carry`: the other partials are +0.0):
        the processor already overlaps a short chain with the next element's.  In
        a prange loop (`parallel`) the whole blocks are split among the threads, as
        `width` copies of the point, since Numba must see each partial's `+=` to
        keep it per thread.  A loop that is not innermost (its body has a loop: the
        inner one gets partial sums instead), runs few points for every size, or
        whose point is long keeps one running sum."""
        width = unroll_width()
        if width < 2 or short_loop(lp):
            return False
        trial = Emitter(em)
        self.addend(tp, "tl_sum", trial, 0)
        if len(trial.lines) > UNROLL_MAX_LINES or any(
                line.lstrip().startswith(("for ", "while ")) for line in trial.lines):
            return False
        var = self.index(lp.var)
        lo, hi, top = (em.fresh("o") for _ in range(3))
        parts = [em.fresh("b") for _ in range(width)]
        em.emit(depth, f"{lo} = {self.loop_start(lp)}")
        em.emit(depth, f"{hi} = {self.loop_stop(lp)}")
        em.emit(depth, f"{top} = {lo} + ({hi} - {lo}) // {width} * {width} "
                       f"if {hi} - {lo} >= {UNROLL_MIN_POINTS} else {lo}")
        em.emit(depth, f"{parts[0]} = {acc if carry else '0.0'}")
        for p in parts[1:]:
            em.emit(depth, f"{p} = 0.0")
        if parallel:
            block, first = em.fresh("o"), em.fresh("o")
            em.emit(depth, f"for {block} in prange(0, ({top} - {lo}) // {width}):")
            em.emit(depth + 1, f"{first} = {lo} + {width} * {block}")
            for k, p in enumerate(parts):
                em.emit(depth + 1, f"{var} = {first}" + (f" + {k}" if k else ""))
                self.addend(tp, p, em, depth + 1)
        else:
            point = em.fresh("b")
            em.emit(depth, f"for {var} in range({lo}, {top}):")
            em.emit(depth + 1, f"{point} = {parts[0]}")
            self.addend(tp, point, em, depth + 1)
            em.emit(depth + 1, f"{', '.join(parts)} = {', '.join(parts[1:] + [point])}")
        em.emit(depth, f"for {var} in range({top}, {hi}):")
        self.addend(tp, parts[0], em, depth + 1)
        em.emit(depth, f"{acc} {'=' if carry else '+='} {pairwise(parts)}")
        return True

    def selected(self, tp: TermPlan, em: Emitter, depth: int) -> str | None:
        """`(value if brackets else 0.0)` for a term whose brackets all compare values
        and whose value is reads, products and whole powers (nothing that could fail
        or cost much when computed where a bracket is false); None otherwise.

        A value bracket (`[x[l] > 0.0]`) depends on the data, so as an `if` it is a
        branch the processor mispredicts about as often as the data changes sign; as
        a selection it is none, and a map over it vectorises.  The sum is the same:
        the accumulator starts at +0.0 and is never -0.0, so adding 0.0 where the
        bracket is false changes nothing (NaN and infinities included), and the
        value computed there is dropped."""
        if not all(isinstance(a, ValCmp) for a in tp.filters):
            return None
        for f, p in tp.term.factors:
            if not isinstance(f, (Access, SizeValue)) or not float(p).is_integer():
                return None
            if isinstance(f, Access) and any(has_gather(a) for a in f.idx):
                return None
        trial = Emitter(em)
        conds = [self.atom(a, trial, depth) for a in sorted(tp.filters, key=filter_rank)]
        value = self.product(tp.term, trial, depth)
        if trial.lines:
            return None
        return f"({value} if {' and '.join(conds)} else 0.0)"

    def scatter_pass(self, group, em: Emitter, depth: int, target: str):
        """Scatter terms that share the loops their generators are computed from
        (loops.fuse_scatters): those loops once, then each term's generators,
        brackets, deeper loops and addition."""
        head = group[0]
        top = depth
        for lp in head.loops[:head.solve_depth]:
            em.emit(top, f"for {self.index(lp.var)} in range({self.loop_start(lp)}, "
                         f"{self.loop_stop(lp)}):")
            top += 1
        last_generator = self.generators[-1] if self.generators else None
        for tp in group:
            staged = tp.stage is not None
            d = self.solve(tp, tp.staged if staged else tp.filters, em, top)
            inner = list(tp.loops[tp.solve_depth:])
            inner = unit_stride_innermost(tp, inner, last_generator) or inner
            for k, lp in enumerate(inner):
                if k == len(inner) - 1 and not (staged and tp.filters) \
                        and self.hoisted(tp, lp, em, d, target):
                    break
                em.emit(d, f"for {self.index(lp.var)} in range({self.loop_start(lp)}, "
                           f"{self.loop_stop(lp)}):")
                d += 1
            else:
                self.pass_addend(tp, staged, em, d, target)

    def hoisted(self, tp: TermPlan, lp, em: Emitter, depth: int, target: str) -> bool:
        """The innermost loop `lp` of a scatter pass's term with the gathered positions
        that do not move along it (`g = neg[m, p]` and its range check, for a loop along
        the row Q[g, l]) computed once before it, when the loop runs at all (a label is
        checked only where it is read); False, emitting nothing, when every position
        moves along it or there is none.  The loop body is then one addition along
        contiguous rows."""
        trial = Emitter(em)
        value = self.product(tp.term, trial, depth + 1)
        index = self.index(lp.var)
        if not trial.lines or any(re.search(rf"\b{re.escape(index)}\b", line)
                                  for line in trial.lines):
            return False
        start, stop = self.loop_start(lp), self.loop_stop(lp)
        em.emit(depth, f"if {stop} > {start}:")
        em.lines.extend(trial.lines)
        em.emit(depth + 1, f"for {index} in range({start}, {stop}):")
        em.emit(depth + 2, f"{target} += {value}")
        return True

    def pass_addend(self, tp: TermPlan, staged: bool, em: Emitter, depth: int, target: str):
        """A scatter pass's term inside all its loops: its staged brackets and addition."""
        d = depth
        if staged:
            for a in sorted(tp.filters, key=filter_rank):
                em.emit(d, f"if {self.atom(a, em, d)}:")
                d += 1
        em.emit(d, f"{target} += {self.product(tp.term, em, d)}")

    def solve(self, tp: TermPlan, atoms, em: Emitter, depth: int) -> int:
        """A scatter's solved generators and the brackets `atoms` tested with them;
        returns the depth inside the tests."""
        d = depth
        filters = sorted(atoms, key=filter_rank)
        # A scatter's solved generators are computed after the brackets that do not
        # need them, so a label those brackets exclude is never read (`[z[s] >= 0]`
        # before `k = y[z[s]]`).
        solved = {g for g, _ in tp.solved}
        early = [a for a in filters if tp.solved and not mentions_indices(a, solved)]
        for a in early:
            em.emit(d, f"if {self.atom(a, em, d)}:")
            d += 1
        for g, expr in tp.solved:
            em.emit(d, f"{self.index(g)} = {self.affine(expr, em, d)}")
        for a in filters:
            if any(a is b for b in early):
                continue
            em.emit(d, f"if {self.atom(a, em, d)}:")
            d += 1
        return d

    def scatter_in_order(self, tp: TermPlan, order: list, em: Emitter, depth: int,
                         target: str):
        """A scatter term with its loops in `order` (see `scatter_order`): each bracket is
        tested in the outermost loop where all its indices are bound, and the solved
        generators are computed once every bracket that does not need them has been
        tested (those brackets guard the labels the solutions read)."""
        d = depth
        for a in sorted(tp.outer_filters, key=filter_rank):
            em.emit(d, f"if {self.atom(a, em, d)}:")
            d += 1
        # A staged plan's range checks (tp.staged) are tested here too, with the rest:
        # with its loops reordered there is no stage to test them at.
        filters = sorted(tuple(tp.filters) + tuple(tp.staged), key=filter_rank)
        solved = {g for g, _ in tp.solved}
        early = [a for a in filters if not mentions_indices(a, solved)]
        late = [a for a in filters if mentions_indices(a, solved)]
        bound: set = set()
        placed: list = []
        done_solved = False
        for lp in order:
            em.emit(d, f"for {self.index(lp.var)} in range({self.loop_start(lp)}, "
                       f"{self.loop_stop(lp)}):")
            d += 1
            bound.add(lp.var)
            for a in early:
                if not any(a is b for b in placed) and _uses_only(a, bound):
                    em.emit(d, f"if {self.atom(a, em, d)}:")
                    d += 1
                    placed.append(a)
            if not done_solved and len(placed) == len(early) and all(
                    expr.index_vars() <= bound for _, expr in tp.solved):
                for g, expr in tp.solved:
                    em.emit(d, f"{self.index(g)} = {self.affine(expr, em, d)}")
                bound |= solved
                done_solved = True
        for a in early:
            if not any(a is b for b in placed):
                em.emit(d, f"if {self.atom(a, em, d)}:")
                d += 1
        if not done_solved:
            for g, expr in tp.solved:
                em.emit(d, f"{self.index(g)} = {self.affine(expr, em, d)}")
        for a in late:
            em.emit(d, f"if {self.atom(a, em, d)}:")
            d += 1
        em.emit(d, f"{target} += {self.product(tp.term, em, d)}")

    def strided(self, plan, out: str, em: Emitter):
        """A `strided_write` statement: each output entry written once, in order, the
        solved positions with the term's value and the c - 1 entries after each (c the
        stride) with zeros, then the entries before the first and after the last block
        (the driver passes an unfilled output).  One store per entry, where the scatter
        form zero-fills the output first and then adds into every c-th entry."""
        tp, stride = plan
        (lp,) = tp.loops
        ((g, expr),) = tp.solved
        n = self.dim(self.ranges[g])
        pos, z = self.index(g), em.fresh("o")
        lo, hi = em.fresh("o"), em.fresh("o")
        em.emit(1, f"{lo} = {self.loop_start(lp)}")
        em.emit(1, f"{hi} = {self.loop_stop(lp)}")
        em.emit(1, f"if {lo} < {hi}:")
        em.emit(2, f"{self.index(lp.var)} = {lo}")
        em.emit(2, f"{pos} = {self.affine(expr)}")
        em.emit(2, f"for {z} in range(0, {pos}):")
        em.emit(3, f"{out}[{z}] = 0.0")
        em.emit(2, f"for {self.index(lp.var)} in range({lo}, {hi}):")
        em.emit(3, f"{pos} = {self.affine(expr)}")
        em.emit(3, f"{out}[{pos}] = {self.product(tp.term, em, 3)}")
        if stride > 1:
            em.emit(3, f"if {pos} + {stride} <= {n}:")
            for j in range(1, stride):
                em.emit(4, f"{out}[{pos} + {j}] = 0.0")
            em.emit(3, "else:")
            em.emit(4, f"for {z} in range({pos} + 1, {n}):")
            em.emit(5, f"{out}[{z}] = 0.0")
        em.emit(2, f"for {z} in range({pos} + {stride}, {n}):")
        em.emit(3, f"{out}[{z}] = 0.0")
        em.emit(1, "else:")
        em.emit(2, f"for {z} in range(0, {n}):")
        em.emit(3, f"{out}[{z}] = 0.0")

    def exchanged(self, sp: StmtPlan, target: str, em: Emitter, depth: int):
        """A one-index statement's single gather term with its sum loop outside the
        generator's, adding into the (zeroed) output: see `exchanged_loops`."""
        (var, _), = sp.stmt.indices
        tp = sp.gather_terms[0]
        outer, inner, rest = exchanged_loops(sp, self.base)
        em.emit(depth, f"for {self.index(outer.var)} in range({self.loop_start(outer)}, "
                       f"{self.loop_stop(outer)}):")
        em.emit(depth + 1, f"for {self.index(var)} in range({self.loop_start(inner)}, "
                           f"{self.loop_stop(inner)}):")
        self.term(replace(tp, loops=(), outer_filters=(), filters=rest), None, em, depth + 2,
                  target=target)

    # ------------------------------------------------------------ statements
    def generator_nest(self, sp: StmtPlan, gens: list, target: str, em: Emitter, depth: int,
                       parallel: bool, tiled: bool = False) -> list:
        """A statement's generator loops (in the order `gens`) at `depth`, peeled where
        their guards change value; returns the conditions on sizes the parallel form
        assumes (the serial form tests them and has the guarded nest besides)."""
        peeled, conds = Emitter(em), []
        self.nest(sp.gather_terms, gens, 0, target, peeled, depth + 1, parallel, conds,
                  budget=PEEL_BUDGET, tiled=tiled)
        if conds and parallel:
            em.lines.extend(line[4:] for line in peeled.lines)
            return conds
        if conds:
            # The peeled loops assume the breakpoints are in their large-size
            # order; for tiny sizes the guarded nest runs.
            em.emit(depth, f"if {self.affine_text(conds)}:")
            em.lines.extend(peeled.lines)
            em.emit(depth, "else:")
            self.nest(sp.gather_terms, list(sp.stmt.indices), 0, target, em, depth + 1, False,
                      None, budget=0)
        else:
            self.nest(sp.gather_terms, gens, 0, target, em, depth, parallel, None, budget=0,
                      tiled=tiled)
        return []

    def crowded_test(self, sp: StmtPlan, reads) -> str:
        """The call-time test of `tile_plan`'s reads: does any one's walk along the
        innermost generator crowd the cache (`tiling.crowded`)?"""
        (_, dim) = sp.stmt.indices[-1]
        count = self.dim(dim)
        tests = []
        for name, position in reads:
            dims = self.shapes[name][1][position + 1:]
            stride = " * ".join(self.dim(d) for d in dims)
            tests.append(f"tl_crowded({stride}, {count})")
        return " or ".join(dict.fromkeys(tests))

    def statement(self, sp: StmtPlan, parallel: bool, kernel: str, extra=((), ())):
        """Source of one statement kernel (see `_statement`).

        With `vector_trig` set, a tensor statement that writes every element of its
        output exactly once (no scatter, no interchanged loops, no strided write, no
        tie sums) computes its sin and cos with vmath's plain arithmetic, which LLVM
        vectorises (NumPy's are calls into the C library, which keep a loop scalar:
        about 8 ns an element against 1): each argument is counted in `tl_wide` when
        vmath's form does not apply to it (|x| > vmath.TRIG_LIMIT, or NaN), and a call
        that counted any runs the statement again with the C library's functions,
        writing every element again."""
        s = sp.stmt
        if not (self.vector_trig and s.indices and not sp.scatter_terms and not sp.passes
                and not interchanged(sp, self.base) and s.name not in self.ties
                and strided_write(sp) is None
                and any(isinstance(n, Apply) and n.fn in VECTOR_TRIG
                        for n in iter_nodes(s.body))):
            return self._statement(sp, parallel, kernel, extra)
        self._trig_now, self.trig_counted = True, False
        try:
            fast, reads, sizes, valid = self._statement(sp, parallel, kernel, extra)
        finally:
            self._trig_now = False
        if not self.trig_counted:
            return fast, reads, sizes, valid
        exact = self._statement(sp, parallel, kernel, extra)
        assert exact[1:] == (reads, sizes, valid)
        fast, exact = fast.split("\n"), exact[0].split("\n")
        # head (decorator, def), the `# statement` comment, the body, `return`
        src = (fast[:3] + ["    tl_wide = 0"] + fast[3:-1]
               + ["    if tl_wide > 0:",
                  "        # an argument of sin or cos beyond vmath.TRIG_LIMIT, or NaN"]
               + ["    " + line for line in exact[3:-1]] + fast[-1:])
        return "\n".join(src), reads, sizes, valid

    def _statement(self, sp: StmtPlan, parallel: bool, kernel: str, extra=((), ())):
        """Source of one statement kernel, the function `kernel` (`_par` added when parallel).

        Returns (source, tensors read, sizes used, valid): `valid` is None, or the
        condition on sizes under which the parallel form may be called.  The serial
        form keeps a guarded loop nest for the sizes where guard peeling does not
        apply; the parallel form has only the peeled loops (it compiles faster, and
        those sizes are too small for threads anyway)."""
        s = sp.stmt
        self.reads, self.sizes_used = set(), set()
        self.ranges = statement_ranges(s)
        self.unsigned = parallel or self.unsigned_serial
        self.generators = [n for n, _ in s.indices]
        em = Emitter()
        em.emit(1, f"# statement {s.name}")
        out = self.value(s.name)
        valid = None
        target = f"{out}[{', '.join(self.subscript(self.index(n)) for n, _ in s.indices)}]"
        self.tie = None
        if s.name in self.ties:
            # the arrays of the sums over its ties are arguments the kernel writes (a
            # 1-element array for a scalar), see numba_module.generate
            at = ", ".join(self.subscript(self.index(n)) for n, _ in s.indices) or "0"
            sums = []
            for name, weight in self.ties[s.name]:
                self.reads.add(name)
                sums.append((weight, f"{self.value(name)}[{at}]"))
            self.tie = (reduction_of(s), sums)
        # Tensor outputs are allocated by the driver with NumPy (faster on first
        # touch than an allocation inside the kernel) and passed in.
        if not s.indices:
            em.emit(1, f"{out} = 0.0")
        if interchanged(sp, self.base):
            # The sum loop outside, the generator inside (the driver passes a zeroed
            # output): see `interchanged`.  The loops are planned again in that order,
            # so the guards that tie the sum index to the generator (a triangle,
            # `[k <= l]`) bound the inner loop, and guards on the generator alone
            # (`[k >= 1]`) too.
            self.exchanged(sp, target, em, 1)
        elif s.indices and (sp.gather_terms or not sp.scatter_terms):
            tile = None if self.tie is not None else tile_plan(sp, self.shapes)
            if tile is None:
                conds = self.generator_nest(sp, list(s.indices), target, em, 1, parallel)
            else:
                # See tiling.py: blocks where a strided read's walk would not stay in
                # the cache (a test at call time), the plain nest otherwise.
                outer, reads = tile
                em.emit(1, f"if {self.crowded_test(sp, reads)}:")
                gens = [g for g in s.indices if g[0] != outer]
                gens[-1:-1] = [g for g in s.indices if g[0] == outer]
                conds = self.generator_nest(sp, gens, target, em, 2, parallel, tiled=True)
                em.emit(1, "else:")
                conds += self.generator_nest(sp, list(s.indices), target, em, 2, parallel)
            if conds:
                valid = self.affine_text(conds)
            if not parallel and long_sums_small_output(sp, self.base):
                # See `long_sums_small_output`: for a short output, the sum loop runs
                # outside and the output takes the additions; otherwise the nest above.
                (var, dim), = s.indices
                nest = em.lines[1:]
                del em.lines[1:]
                em.emit(1, f"if {self.dim(dim)} <= {SMALL_OUTPUT}:")
                em.emit(2, f"for {self.index(var)} in range(0, {self.dim(dim)}):")
                em.emit(3, f"{target} = 0.0")
                self.exchanged(sp, target, em, 2)
                em.emit(1, "else:")
                em.lines.extend("    " + line for line in nest)
        elif not s.indices:
            em.emit(1, "acc = 0.0")
            for tp in sp.gather_terms:
                # A scalar reduction runs its outer loop in parallel; Numba turns
                # `acc += ...` inside prange into a per-thread sum.
                self.term(tp, "acc", em, 1, outer_prange=parallel)
            em.emit(1, f"{out} = acc")
        strided = strided_write(sp)
        if strided is not None:
            self.strided(strided, out, em)
        for group in (() if strided is not None else sp.passes):
            if len(group) == 1:
                self.term(group[0], None, em, 1, target=target)
            else:
                self.scatter_pass(group, em, 1, target)
        if parallel:
            em.lines[1:] = deferred_label_checks(em.lines[1:], 1)
        em.emit(1, f"return {out}")
        assert em.lines[0].startswith("    # statement ")
        self.tie = None
        # `extra` (sizes, tensors) widens the signature, so that the serial and the
        # parallel form of one statement take the same arguments.
        reads = sorted(self.reads | set(extra[1]))
        sizes = sorted(self.sizes_used | set(extra[0]))
        args = (([out] if s.indices else []) + [self.names.size(z) for z in sizes]
                + [self.value(r) for r in reads])
        name = kernel + ("_par" if parallel else "")
        decorator = "@njit(parallel=True, **JIT)" if parallel else "@njit(**JIT)"
        head = [decorator, f"def {name}({', '.join(args)}):"]
        return "\n".join(head + em.lines), reads, sizes, valid

    # ------------------------------------------------------------ shared passes
    def shared_pass(self, p, plan: TermPlan, parallel: bool, kernel: str, extra=((), ())):
        """Source of the kernel of a shared pass (tensorlang/shared.py): the host's
        loops over all its points; at each, the shared factor into a local, the
        host's product added into its element and each joined statement's (its
        indices renamed onto the host's, its own brackets tested) into its element.
        Every output is passed in zeroed (a scalar as an array of one element); the
        parallel form runs the outermost loop with prange (`shared_pass_parallel`).
        Returns (source, tensors read, sizes used); `extra` as for `statement`."""
        prog = self.prog
        host = prog.stmt(p.host)
        joined = [(j, prog.stmt(j.name)) for j in p.joined]
        self.reads, self.sizes_used = set(), set()
        self.ranges = dict(p.points)
        self.unsigned = parallel
        self.generators = [n for n, _ in host.indices]
        self.tie = None
        em = Emitter()
        em.emit(1, f"# statements {', '.join(p.names)} in one pass")
        outs = [self.value(n) for n in p.names]
        d = self.open_plan(plan, em, 1, parallel)
        local = em.fresh("e")
        em.emit(d, f"{local} = {self.factor(p.factor, em, d)}")
        shared = {factor_key(p.factor): local}
        bodies = []
        for j, st in joined:
            sub = {n: Affine.of(IndexVar(h)) for n, h in j.rename}
            t = T.substitute_term(Term(st.body[0].coeff, (), st.body[0].pred,
                                       st.body[0].factors), sub)
            shared[factor_key(T.substitute(j.factor, sub))] = local
            at = [dict(j.rename)[n] for n, _ in st.indices]
            bodies.append((t, at))
        t = host.body[0]
        outer, self.shared = self.shared, {**self.shared, **shared}
        try:
            at = [n for n, _ in host.indices]
            items = [(Term(t.coeff, (), (), t.factors), (), at)]
            tested = set(t.pred)
            items += [(Term(u.coeff, (), (), u.factors),
                       tuple(a for a in u.pred if a not in tested), at2)
                      for u, at2 in bodies]
            for out, (term, pred, at) in zip(outs, items):
                e = d
                for a in sorted(pred, key=filter_rank):
                    em.emit(e, f"if {self.atom(a, em, e)}:")
                    e += 1
                where = ", ".join(self.subscript(self.index(n)) for n in at) or "0"
                # a map (its points are its elements) writes each element once, as
                # its own kernel does; a sum adds each point into its element
                op = "=" if len(at) == len(p.points) and not pred else "+="
                em.emit(e, f"{out}[{where}] {op} {self.product(term, em, e)}")
        finally:
            self.shared = outer
        if parallel:
            em.lines[1:] = deferred_label_checks(em.lines[1:], 1)
        em.emit(1, "return None")
        return self.kernel_source(kernel, parallel, outs, em, extra)

    def kernel_source(self, kernel: str, parallel: bool, outs: list, em: Emitter, extra):
        """(source, tensors read, sizes used) of a kernel of several outputs whose body
        `em` holds: its signature takes the outputs, then the sizes and tensors it used
        (and `extra`'s: the serial and parallel forms take the same arguments)."""
        reads = sorted(self.reads | set(extra[1]))
        sizes = sorted(self.sizes_used | set(extra[0]))
        args = outs + [self.names.size(z) for z in sizes] + [self.value(r) for r in reads]
        name = kernel + ("_par" if parallel else "")
        decorator = "@njit(parallel=True, **JIT)" if parallel else "@njit(**JIT)"
        head = [decorator, f"def {name}({', '.join(args)}):"]
        return "\n".join(head + em.lines), reads, sizes

    # ------------------------------------------------------------ sibling groups
    def siblings(self, group, parallel: bool, kernel: str, extra=((), ())):
        """Source of the kernel of a sibling group (backend/siblings.py): one
        accumulator per member statement, each nest's loops once with its terms
        added at each point (`fused_nest`), then the members' other terms as in their
        own kernels; it returns the members' values in order.  Returns (source,
        tensors read, sizes used); `extra` as for `statement`."""
        self.reads, self.sizes_used = set(), set()
        terms = [tp.term for nest in group.nests for _, tp in nest.terms]
        terms += [tp.term for _, tp in group.alone]
        self.ranges = statement_ranges(Stmt("'siblings", group.generators, tuple(terms)))
        self.unsigned = parallel
        self.generators = [n for n, _ in group.generators]
        self.tie = None
        em = Emitter()
        em.emit(1, f"# statements {', '.join(group.names)}")
        accs = [em.fresh("b") for _ in group.names]
        # Tensor members: one loop over each generator (the outermost with prange in
        # a parallel form), every element of every member written once, after its
        # terms; scalar members: the accumulators are per-thread sums of the nests'
        # outer prange loops.
        # (scalar members of a group over generators sum across its loops)
        scalars = set(group.scalars) if group.generators else set(range(len(accs)))
        for m in sorted(scalars):
            em.emit(1, f"{accs[m]} = 0.0")
        d = 1
        for q, (var, dim) in enumerate(group.generators):
            rng = "prange" if parallel and q == 0 else "range"
            em.emit(d, f"for {self.index(var)} in {rng}(0, {self.dim(dim)}):")
            d += 1
        inner = parallel and not group.generators
        for m, acc in enumerate(accs):
            if m not in scalars:
                em.emit(d, f"{acc} = 0.0")
        for nest in group.nests:
            self.fused_nest(nest, accs, em, d, inner)
        for m, tp in group.alone:
            self.term(tp, accs[m], em, d, outer_prange=inner)
        outs = [(self.value(n), accs[m]) for m, n in enumerate(group.names) if m not in scalars]
        at = ", ".join(self.subscript(self.index(n)) for n, _ in group.generators)
        for out, acc in outs:
            em.emit(d, f"{out}[{at}] = {acc}")
        if parallel:
            em.lines[1:] = deferred_label_checks(em.lines[1:], 1)
        em.emit(1, f"return {', '.join(accs[m] for m in sorted(scalars)) or 'None'}")
        return self.kernel_source(kernel, parallel, [out for out, _ in outs], em, extra)

    def fused_nest(self, nest, accs: list, em: Emitter, depth: int, parallel: bool):
        """The loops of a sibling nest once (the outermost with prange in a parallel
        form); at each point the terms under equal brackets are tested together and
        share the factors they have in common (`shared_point`)."""
        d = depth
        for a in sorted(nest.outer_filters, key=filter_rank):
            em.emit(d, f"if {self.atom(a, em, d)}:")
            d += 1
        if not nest.loops:                  # terms of tensor members without sums
            self.nest_point(nest, accs, em, d)
            return
        *outer, last = nest.loops
        for q, lp in enumerate(outer):
            rng = "prange" if parallel and q == 0 else "range"
            em.emit(d, f"for {self.index(lp.var)} in {rng}({self.loop_start(lp)}, "
                       f"{self.loop_stop(lp)}):")
            d += 1
        if parallel and not outer or not self.unrolled_nest(nest, last, accs, em, d):
            rng = "prange" if parallel and not outer else "range"
            em.emit(d, f"for {self.index(last.var)} in {rng}({self.loop_start(last)}, "
                       f"{self.loop_stop(last)}):")
            self.nest_point(nest, accs, em, d + 1)

    def nest_point(self, nest, accs: list, em: Emitter, depth: int):
        """One point of a sibling nest: its terms by their sets of brackets, each set
        tested once (`shared_point`)."""
        by_filters: dict = {}
        for m, tp in nest.terms:
            by_filters.setdefault(frozenset(tp.filters), []).append((m, tp))
        for filters, items in by_filters.items():
            e = depth
            for a in sorted(filters, key=filter_rank):
                em.emit(e, f"if {self.atom(a, em, e)}:")
                e += 1
            self.shared_point(items, accs, em, e)

    def unrolled_nest(self, nest, lp, accs: list, em: Emitter, depth: int) -> bool:
        """A sibling nest's innermost loop `lp` with `unroll_width()` partial sums per
        accumulator, as `unrolled` writes one sum's (the same blocks, rotation, short-loop
        rule and tree), the partials added into the accumulators after it; False
        (nothing emitted) where that does not apply: a point with a loop of its own or
        longer than `UNROLL_MAX_LINES` lines per accumulator, a loop that runs few
        points.  Without it the point's sums are chains of dependent additions, and
        the fused loop runs slower than one sum's unrolled loop reading the same
        arrays."""
        width = unroll_width()
        used = sorted({m for m, _ in nest.terms})
        if width < 2 or short_loop(lp):
            return False
        trial = Emitter(em)
        self.nest_point(nest, ["tl_sum"] * len(accs), trial, 0)
        if len(trial.lines) > UNROLL_MAX_LINES * len(used) or any(
                line.lstrip().startswith(("for ", "while ")) for line in trial.lines):
            return False
        var = self.index(lp.var)
        lo, hi, top = (em.fresh("o") for _ in range(3))
        parts = {m: [em.fresh("b") for _ in range(width)] for m in used}
        em.emit(depth, f"{lo} = {self.loop_start(lp)}")
        em.emit(depth, f"{hi} = {self.loop_stop(lp)}")
        em.emit(depth, f"{top} = {lo} + ({hi} - {lo}) // {width} * {width} "
                       f"if {hi} - {lo} >= {UNROLL_MIN_POINTS} else {lo}")
        for m in used:
            em.emit(depth, f"{', '.join(parts[m])} = {', '.join(['0.0'] * width)}")
        points = {m: em.fresh("b") for m in used}
        em.emit(depth, f"for {var} in range({lo}, {top}):")
        for m in used:
            em.emit(depth + 1, f"{points[m]} = {parts[m][0]}")
        self.nest_point(nest, [points.get(m, a) for m, a in enumerate(accs)], em, depth + 1)
        for m in used:
            em.emit(depth + 1, f"{', '.join(parts[m])} = {', '.join(parts[m][1:] + [points[m]])}")
        em.emit(depth, f"for {var} in range({top}, {hi}):")
        self.nest_point(nest, [parts[m][0] if m in parts else a for m, a in enumerate(accs)],
                        em, depth + 1)
        for m in used:
            em.emit(depth, f"{accs[m]} += {pairwise(parts[m])}")
        return True

    def sibling_sums(self, items, em: Emitter, depth: int) -> dict:
        """The sums inside the terms' factors (a group of one summed term, each
        distinct up to the names of its indices) that fuse with one another as the
        siblings' own terms do (equal loops, a shared read), run as one nest into a
        local each: {factor key: local}.  The siblings of option's or sinkhorn's
        gradients read `sum[j](...) * x[k]` per point of the outer loop."""
        keys, canons = [], []
        for _, tp in items:
            for f, _ in tp.term.factors:
                if f.__class__ is not Group or len(f.body) != 1 or not f.body[0].sums:
                    continue
                key = factor_key(f)
                if key not in keys:
                    keys.append(key)
                    canons.append(canonical(f.body[0], (), self.base, prefix=f"'n{depth}_"))
        locals_ = {}
        for part in connected(canons):
            accs = [em.fresh("b") for _ in part]
            for acc in accs:
                em.emit(depth, f"{acc} = 0.0")
            self.fused_nest(nest_of(canons, part, list(range(len(part)))), accs, em, depth,
                            False)
            locals_.update({keys[b]: acc for b, acc in zip(part, accs)})
        return locals_

    def shared_point(self, items, accs: list, em: Emitter, depth: int):
        """Terms (member, plan) at one point under their common brackets: a factor
        (up to the names of the indices summed inside it) that two of them have is
        computed once into a local, and terms with the same factors once as a
        product, each then added into its member's accumulator times its
        coefficient."""
        counts: dict = {}
        for _, tp in items:
            for key in {factor_key(f) for f, _ in tp.term.factors if worth_sharing(f)}:
                counts[key] = counts.get(key, 0) + 1
        shared = self.sibling_sums(items, em, depth)
        for _, tp in items:
            for f, _ in tp.term.factors:
                key = factor_key(f)
                if counts.get(key, 0) >= 2 and key not in shared:
                    value = self.factor(f, em, depth)
                    local = em.fresh("e")
                    em.emit(depth, f"{local} = {value}")
                    shared[key] = local
        outer, self.shared = self.shared, {**self.shared, **shared}
        try:
            # A product is shared by terms of the same coefficient only, written as a
            # lone term's kernel writes it (`c * x / y`): `c * (x / y)` is another
            # number where c * x overflows or x / y underflows (tests/test_hard_inputs.py).
            def product_key(t):
                return (t.coeff, tuple((factor_key(f), p) for f, p in t.factors))
            products: dict = {}
            for m, tp in items:
                t = tp.term
                key = product_key(t)
                if key not in products:
                    value = self.product(Term(t.coeff, (), (), t.factors), em, depth)
                    if sum(1 for _, other in items if product_key(other.term) == key) >= 2:
                        local = em.fresh("e")
                        em.emit(depth, f"{local} = {value}")
                        value = local
                    products[key] = value
                em.emit(depth, f"{accs[m]} += {products[key]}")
        finally:
            self.shared = outer


def shared_pass_plan(p, prog: Program, base) -> TermPlan | None:
    """The loops of shared pass `p` (tensorlang/shared.py): its host's term as one sum
    over all its points, generators included, planned as a scalar's; None when the
    plan solves an index or makes one up (the pass then runs as its statements)."""
    host = prog.stmt(p.host)
    t = host.body[0]
    plan = plan_term(Term(t.coeff, p.points, t.pred, t.factors), (), base, top=False)
    if plan.solved or plan.fresh or plan.scatter \
            or sorted(lp.var for lp in plan.loops) != sorted(n for n, _ in p.points):
        return None
    # An index every statement keeps goes outermost, where the parallel form splits
    # it across threads (`shared_pass_parallel`), when its loop's bounds read no
    # other loop's index (then it may run outside them all).
    kept = _kept_by_all(p, prog)
    if plan.loops and plan.loops[0].var not in kept:
        for q, lp in enumerate(plan.loops):
            if lp.var in kept and not lp.lows and not lp.highs:
                loops = (lp,) + plan.loops[:q] + plan.loops[q + 1:]
                return replace(plan, loops=loops)
    return plan


def _kept_by_all(p, prog: Program) -> set:
    """The host's indices that are an index of every statement of pass `p` (each
    statement's own, renamed onto the host's)."""
    kept = {n for n, _ in prog.stmt(p.host).indices}
    for j in p.joined:
        rename = dict(j.rename)
        kept &= {rename[n] for n, _ in prog.stmt(j.name).indices}
    return kept


def shared_pass_parallel(p, prog: Program, plan: TermPlan) -> bool:
    """May the pass's outermost loop run with prange?  When every statement's
    element is at that loop's index (no two threads add into one element)."""
    return bool(plan.loops) and plan.loops[0].var in _kept_by_all(p, prog)


def unroll_width() -> int:
    """The number of partial sums of an inner sum loop (`KernelWriter.unrolled`):
    `UNROLL`, or ``TENSORLANG_UNROLL`` when set (1 keeps one running sum; the
    benchmark builds both forms in one process).  Read when a module is generated:
    the width is in the module's text, so each width is a module of its own."""
    text = os.environ.get("TENSORLANG_UNROLL", "").strip()
    return int(text) if text.isdigit() and int(text) >= 1 else UNROLL


def short_loop(lp) -> bool:
    """Does the loop run fewer than `UNROLL_MIN_POINTS` points whatever the sizes (a
    constant range, or a band of constant width)?  It would never use its partial
    sums, so it is written with one."""
    counts = [(lp.hi - lp.lo, 1)] + list(lp.widths)
    return any(d.is_const and d.const // q + 1 < UNROLL_MIN_POINTS for d, q in counts)


def pairwise(parts: list) -> str:
    """The partial sums added as a balanced tree, left to right: `((p1 + p2) + (p3 + p4))`."""
    level = list(parts)
    while len(level) > 1:
        pairs = [f"({a} + {b})" for a, b in zip(level[::2], level[1::2])]
        level = pairs + level[len(pairs) * 2:]
    return level[0]


def exchanged_loops(sp: StmtPlan, base):
    """The loops of an `interchanged` statement, sum index outside: (outer, inner,
    filters), `Loop`s each bounded by the guards that bound it there (the inner one,
    over the generator, by the sum index too: a triangle `[k <= l]` starts it at l),
    and the brackets left to test; None when the outer loop would not be bounded by
    sizes alone."""
    (var, dim), = sp.stmt.indices
    tp = sp.gather_terms[0]
    lp = tp.loops[0]
    order = [(lp.var, dict(tp.term.sums)[lp.var]), (var, dim)]
    (outer, inner), filters = plan_loops(order, list(tp.term.pred), base.with_ranges(order))
    if not outer.exact:
        return None
    return outer, inner, filters


# An output of at most this many elements (16 KB) stays in the first-level cache
# while a long sum loop adds into it (see `long_sums_small_output`).
SMALL_OUTPUT = 2048


def long_sums_small_output(sp: StmtPlan, base) -> bool:
    """Does a one-index statement get a second loop order for short outputs?

    `w_bar[l: k] = sum[m: n]([l + m < n] * x[l + m] * y_bar[m])` (a filter's
    gradient: k taps, each a sum over the n-long signal) adds each output's n terms
    one after another: a chain of n dependent additions, a few cycles each, that no
    processor overlaps.  Run with the sum loop outside, each pass adds one term to
    every output, k independent additions that pipeline (and vectorise); every
    element still adds its terms in increasing order, from 0.0, so the values are the
    same.  The serial kernel takes that order when the output has at most
    `SMALL_OUTPUT` elements (it stays in cache while the sums stream by), and the
    plain one otherwise.  Chosen for a statement of one generator, sized by a
    symbol, with one gather term over one sum loop as `interchanged` takes (bounds
    in sizes and the generator, no gathered label) that it does not take already,
    and no matrix read along its rows by the sum index (the exchange would read it
    down its columns)."""
    s = sp.stmt
    if len(s.indices) != 1 or not isinstance(s.indices[0][1], str):
        return False
    if len(sp.gather_terms) != 1 or sp.scatter_terms or interchanged(sp, base):
        return False
    tp = sp.gather_terms[0]
    if len(tp.loops) != 1 or tp.solved or any(isinstance(nd, Gather)
                                              for nd in iter_nodes((tp.term,))):
        return False
    lp = tp.loops[0]
    var = s.indices[0][0]
    if any(b.q != 1 or b.aff.index_vars() - {var} for b in lp.lows + lp.highs):
        return False
    if not isinstance(dict(tp.term.sums)[lp.var], str):
        return False                      # a sum of constant length: short anyway
    for node in iter_nodes((tp.term,)):
        if isinstance(node, Access) and len(node.idx) >= 2 and lp.var in node.idx[-1].index_vars():
            return False                  # the order that reads its rows along is the plain one
    return exchanged_loops(sp, base) is not None


# The largest stride `strided_write` writes with unrolled zeros (a wider one leaves
# most entries zero, and the scatter into a zero-filled output does no worse).
MAX_WRITE_STRIDE = 8


def zeroed_output(sp: StmtPlan, base=None) -> bool:
    """Must a tensor statement's output be zeroed before its kernel runs?  Only when an
    element may be written by additions alone: scatter terms or interchanged loops add
    into the output, and nothing assigns every element first.  A statement with gather
    terms whose loops are not interchanged assigns every element in its nest (`acc`
    from 0.0, then `out[...] = acc`, over the whole range of every generator) before its
    scatter passes add to them, and a strided write (`strided_write`) writes every
    entry: a zero fill there is a pass over the output that changes nothing (a softmax
    cross-entropy's logit adjoint: the softmax for every entry, then the label's -1)."""
    swapped = interchanged(sp, base)
    if not (sp.scatter_terms or swapped) or strided_write(sp) is not None:
        return False
    return swapped or not (sp.stmt.indices and sp.gather_terms)


def strided_write(sp: StmtPlan):
    """(term plan, stride c) when a one-index statement is one scatter term over one
    loop whose solved position is c * l + (sizes and constants), 1 <= c <=
    MAX_WRITE_STRIDE, with no bracket left to test: its positions increase with the
    loop, each is written once, and the other entries are zero, so the kernel can
    write the output once in order (`KernelWriter.strided`) instead of adding into a
    zero-filled one (`x_bar[k] = sum[l]([k == 2 l] r[l])`, a stride-2 read's adjoint)."""
    s = sp.stmt
    if len(s.indices) != 1 or sp.gather_terms or len(sp.scatter_terms) != 1:
        return None
    tp = sp.scatter_terms[0]
    if (len(tp.loops) != 1 or len(tp.solved) != 1 or tp.filters or tp.outer_filters
            or tp.staged or tp.fresh or tp.solved[0][0] != s.indices[0][0]):
        return None
    var = tp.loops[0].var
    expr = tp.solved[0][1]
    if has_gather(expr) or expr.index_vars() != {var}:
        return None
    coef = [c for a, c in expr.terms if isinstance(a, IndexVar) and a.name == var]
    if len(coef) != 1 or not float(coef[0]).is_integer() \
            or not 1 <= coef[0] <= MAX_WRITE_STRIDE:
        return None
    return tp, int(coef[0])


def interchanged(sp: StmtPlan, base=None) -> bool:
    """Does a one-index statement run its sum loop outside its generator loop?

    `x_bar[k] = sum[l](B[l, k] * g[l])` (a transposed matrix-vector product that
    brackets or shifts keep from BLAS) would read B down its columns, one cache line
    per element, if its inner loop ran over l.  With the loops exchanged, each row of
    B is read in order and added into the whole output (`x_bar[k] += ...`), a loop
    that vectorises; every element still adds its terms in increasing l, from 0.0,
    so the values are the same.  Chosen when the statement has one generator, one
    gather term with one sum loop whose bounds are sizes only, no gathered label, and
    the matrix reads put the generator last and the sum index before it (and none puts
    the sum index last).  Such a statement has no parallel form: its outer loop writes
    every element."""
    s = sp.stmt
    if len(s.indices) != 1 or len(sp.gather_terms) != 1 or sp.scatter_terms:
        return False
    tp = sp.gather_terms[0]
    if len(tp.loops) != 1 or tp.solved:
        return False
    if not tp.loops[0].exact:
        # bounds that move with the generator (a triangle): exchanged when the sum
        # loop, planned outside, is bounded by sizes alone
        lp = tp.loops[0]
        if base is None or any(b.q != 1 for b in lp.lows + lp.highs) or any(
                b.aff.index_vars() - {s.indices[0][0]} for b in lp.lows + lp.highs):
            return False
        if exchanged_loops(sp, base) is None:
            return False
    (k, _), l = s.indices[0], tp.loops[0].var
    walks = in_order = 0
    for node in iter_nodes((tp.term,)):
        if isinstance(node, Gather):
            return False
        if isinstance(node, Access) and len(node.idx) >= 2:
            last = node.idx[-1].index_vars()
            before = set().union(*(a.index_vars() for a in node.idx[:-1]))
            if l in last:
                in_order += 1
            elif k in last and l in before:
                walks += 1
    return walks > 0 and in_order == 0


def tile_plan(sp: StmtPlan, shapes: dict):
    """Which generator runs in blocks with the innermost one, and the reads that ask
    for it; None for a statement whose loop nest stays as it is.

    The kernel writes its output along the innermost generator l.  A read whose last
    subscript is another generator k (plus a constant, either direction) and which
    takes l, alone, in one earlier subscript walks the l-loop with a stride (`B[l, k]`
    in `A_bar[k, l] = B[l, k]`): each of its reads is on a line of its own, used again
    at the next k (tiling.py).  The generator that is the last subscript of the most
    such reads (the later one in the statement's order on a tie) is the one; reads
    under a sum or a reduction that take its index, through a gathered label, or in
    a statement with scatter terms are not considered (the blocks only reorder which
    element is computed when, so each element's value is the same).  Decided by
    structure alone; whether the blocks are used is decided at call time from the
    reads' strides (`KernelWriter.crowded_test`)."""
    s = sp.stmt
    if len(s.indices) < 2 or sp.scatter_terms or not sp.gather_terms:
        return None
    gens = [g for g, _ in s.indices]
    inner = gens[-1]
    found: dict = {}
    for tp in sp.gather_terms:
        for node in iter_nodes((tp.term,)):
            if not isinstance(node, Access) or len(node.idx) < 2:
                continue
            if any(has_gather(a) or not a.index_vars() <= set(gens) for a in node.idx):
                continue
            last = _unit_index(node.idx[-1])
            if last is None or last == inner:
                continue
            at = [p for p, a in enumerate(node.idx) if inner in a.index_vars()]
            if len(at) != 1 or _unit_index(node.idx[at[0]]) != inner:
                continue
            found.setdefault(last, {})[(node.name, at[0])] = None
    if not found:
        return None
    outer = max(found, key=lambda g: (len(found[g]), gens.index(g)))
    return outer, list(found[outer])           # in the order the term is read


def _unit_index(a: Affine) -> str | None:
    """The index of a subscript `i + c` or `c - i` (one index, coefficient +-1), else None."""
    if len(a.terms) != 1:
        return None
    atom, c = a.terms[0]
    return atom.name if isinstance(atom, IndexVar) and abs(c) == 1 else None


def scatter_order(tp: TermPlan, last_generator: str | None) -> list | None:
    """The loops of a scatter term reordered for memory order, or None to keep them.

    The plan lists a scatter's loops generators first (`E_bar[k, l] += G[m, l]` with
    `k = y[m]` loops over l, then m: G is read down its columns, and the labels are
    tested once per element).  When every loop's bounds are sizes only (so the loops
    commute), the loop whose index is the last subscript of the most reads and of the
    written element goes innermost, and the others keep their order."""
    return unit_stride_innermost(tp, list(tp.loops), last_generator)


def unit_stride_innermost(tp: TermPlan, loops: list, last_generator: str | None) -> list | None:
    """`loops` (some of a term's loops, nested in this order) with the one that walks
    memory in order moved innermost, or None to keep them.  When every loop's bounds are
    sizes only (so the loops commute), the loop whose index is the last subscript (unit
    stride, row-major) of the most reads of the term and of the written element goes
    innermost, and the others keep their order.  A gathered row read across its rows
    (`Q[g[m, p], l]` inside a loop over l, p innermost) is then read along the row."""
    if len(loops) < 2 or not all(lp.exact for lp in loops):
        return None
    solved = {g for g, _ in tp.solved}
    score = dict.fromkeys((lp.var for lp in loops), 0)
    for node in iter_nodes((tp.term,)):
        if isinstance(node, Access) and len(node.idx) >= 2:
            for v in node.idx[-1].index_vars() & set(score):
                score[v] += 1
    if last_generator in score:            # the written element's last subscript
        score[last_generator] += 1
    best = max(loops, key=lambda lp: score[lp.var])
    if score[best.var] == 0 or best is loops[-1] or best.var in solved:
        return None
    return [lp for lp in loops if lp is not best] + [best]


def _uses_only(atom, bound: set) -> bool:
    """Does `atom` visibly use no index outside `bound`?"""
    if isinstance(atom, IdxCmp):
        return atom.aff.index_vars() <= bound
    if isinstance(atom, Rel):
        return all(a.index_vars() <= bound for a in atom.idx)
    return False


def mentions_indices(atom, names: set) -> bool:
    """Might `atom` use one of the index `names`?  (True unless it is an index comparison
    or a relation that visibly does not.)"""
    if isinstance(atom, IdxCmp):
        return bool(atom.aff.index_vars() & names)
    if isinstance(atom, Rel):
        return any(a.index_vars() & names for a in atom.idx)
    return True


_LABEL_CHECK = re.compile(r"^(\s*)if (\w+) < 0 or \2 >= .*:$")


def deferred_label_checks(lines: list[str], depth: int) -> list[str]:
    """The body `lines` of a parallel form (at indentation `depth`) with its label checks
    deferred: a prange loop that may raise is run serially by Numba (which warns the
    user), so a bad label is noted in BAD_LABEL, an in-range position read in its place,
    and the kernel raises GatherOutOfRange after its loops.  Unchanged without checks."""
    out, deferred = [], False
    k = 0
    while k < len(lines):
        check = _LABEL_CHECK.match(lines[k])
        if check and k + 1 < len(lines) and \
                lines[k + 1] == check.group(1) + "    " + RAISE_BAD_LABEL:
            pad = check.group(1) + "    "
            out += [lines[k], f"{pad}{BAD_LABEL}[0] = 1", f"{pad}{check.group(2)} = 0"]
            deferred = True
            k += 2
            continue
        out.append(lines[k])
        k += 1
    if not deferred:
        return lines
    pad = "    " * depth
    return ([f"{pad}{BAD_LABEL} = np.zeros(1, np.int64)"] + out
            + [f"{pad}if {BAD_LABEL}[0]:", f"{pad}    {RAISE_BAD_LABEL}"])


def statement_ranges(s) -> dict:
    """Every index bound in a statement (generators and all sums) -> the largest of its dims."""
    ranges: dict = {}
    binders = list(s.indices) + [nd for t in iter_nodes(s.body)
                                 if t.__class__ is Term or t.__class__ is Reduce
                                 for nd in binders_of(t)]
    for name, d in binders:
        old = ranges.get(name)
        if old is None or dim_bound(d) > dim_bound(old):
            ranges[name] = d
    return ranges

"""Checked AST -> Tensor SSA, reporting every semantic error on the way.

Input: a parsed :class:`ModuleAST`.  Output: one :class:`Program` per function,
in file order, with calls inlined.  Checking and lowering walk the same tree
with the same scopes (which index is bound, to which range; what a name
denotes), so they are one traversal: each visitor validates a node and returns
its IR, or ``None`` after recording a diagnostic.  All diagnostics of a module
are raised together.  Bounds are proven afterwards on the IR (``check.bounds``),
where each access sits next to the brackets that guard it.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from .. import sizexpr
from ..builtins import ARITY, BUILTIN_NAMES
from ..errors import (ErrorSink, SourceText, Span, TLCallError, TLNameError, TLRecurrenceError,
                      TLShapeError, TLSyntaxError, TLTypeError, article)
from ..syntax import ast as A
from ..syntax.parse import KEYWORDS, short_literal, size_dim
from . import build as B
from .names import unique_name
from .inline import CallInliner
from .recur import check_and_order
from .ranges import RangeInference
from .resolve import Entity, NameResolver, _Fail, _unwrap
from . import traverse as T
from .ir import (Access, Affine, AnyOf, Apply, Dim, Gather, IdxCmp, IndexVar, Param, Program,
                 Reduce, Rel, SizeVar, Stmt, Term, ValCmp)

ELEM_TYPES = ("f64", "bool", "i64")
INT64_LIMIT = 2 ** 63            # index constants lie below this


@dataclass
class Lowered:
    """A function's lowered program plus what callers need to inline it."""
    program: Program
    out_types: list[tuple[str, tuple]]
    span: Span | None = None






class FunctionLowerer(NameResolver, RangeInference, CallInliner):
    def __init__(self, fn: A.FuncDef, done: dict[str, Lowered], later: set[str],
                 sink: ErrorSink, failed: frozenset = frozenset()):
        self.fn = fn
        self.done = done
        self.later = later
        self.failed = failed        # earlier functions with errors: their calls stay silent
        self.sink = sink
        self.names: dict[str, Entity] = {}
        self.sizes: dict[str, Span | None] = {}
        self.stmts: list[Stmt] = []
        self.used: set[str] = set()
        for st in fn.body:
            if isinstance(st, A.Assign):
                self.used.add(st.name)
            elif isinstance(st, A.Destructure):
                self.used.update(st.names)
        self.used.update(p.name for p in fn.params)
        self.poisoned: set[str] = set()
        # Statements read at or before their definition (recurrences): their
        # ranges are declared when their first reader is lowered.
        self.ahead, self.reads_ahead = _read_ahead(fn.body)
        self.forward: dict[str, tuple] = {}

    # ------------------------------------------------------------ diagnostics
    def err(self, kind, span, msg, hint=None):
        self.sink.add(kind, span, msg, hint)

    def fail(self, kind, span, msg, hint=None):
        self.err(kind, span, msg, hint)
        raise _Fail()

    # ------------------------------------------------------------ signature
    def lower_params(self) -> list[Param]:
        params = []
        computed = []          # dimensions written as size expressions
        for p in self.fn.params:
            t = p.type
            ok = True
            if p.name in self.names:
                self.err(TLNameError, p.span, f"parameter {p.name} is declared twice")
                continue
            if p.name in BUILTIN_NAMES or p.name in KEYWORDS:
                self.err(TLNameError, p.span, f"{p.name} is a builtin name and cannot name a parameter")
                ok = False
            if t.elem not in ELEM_TYPES:
                self.err(TLTypeError, t.span, f"unknown type {t.elem}",
                         "types are f64, f64[n, ...], bool[n, ...] and i64[n, ...]")
                ok = False
            elif t.elem != "f64" and not t.dims:
                self.err(TLTypeError, t.span, f"{t.elem} needs dimensions",
                         f"{article(t.elem)} parameter is a tensor, e.g. {t.elem}[n]")
                ok = False
            dims = []
            for d in t.dims:
                if isinstance(d.value, int):
                    if d.value < 1:
                        self.err(TLShapeError, d.span, f"dimension {d.value} must be at least 1")
                        ok = False
                elif sizexpr.is_derived(d.value):
                    computed.append(d)         # checked once every plain size is bound
                else:
                    if d.value in BUILTIN_NAMES or d.value in KEYWORDS:
                        self.err(TLNameError, d.span, f"{d.value} cannot name a size")
                        ok = False
                    self.sizes.setdefault(d.value, d.span)
                dims.append(d.value)
            if not ok:
                self.poisoned.add(p.name)      # later uses stay silent
                continue
            self.names[p.name] = Entity("param", t.elem, tuple(dims), p.name, p.span)
            params.append(Param(p.name, t.elem, tuple(dims)))
        for name in list(self.names):
            if name in self.sizes:
                self.err(TLNameError, self.names[name].span,
                         f"{name} is both a parameter and a size symbol")
        for d in computed:
            for sym in sizexpr.base_symbols(d.value):
                if sym not in self.sizes:
                    self.err(TLNameError, d.span,
                             f"size {sym} is not bound: a dimension written as an expression "
                             f"({d.value}) is computed from sizes other parameters bind",
                             f"give some parameter a dimension that is plainly {sym}")
        return params

    # ------------------------------------------------------------ statements
    def lower(self) -> Lowered | None:
        params = self.lower_params()
        outputs: list[str] | None = None
        out_types: list = []
        ret_span = None
        body = self.fn.body
        for k, st in enumerate(body):
            if outputs is not None:
                self.err(TLSyntaxError, st.span, "statement after return",
                         "return must be the last statement of a function")
                break
            try:
                if isinstance(st, A.Assign):
                    for name in self.reads_ahead.get(k, ()):
                        if name not in self.names and name not in self.poisoned:
                            self.declare_ahead(self.ahead[name])
                    self.assign(st)
                elif isinstance(st, A.Destructure):
                    self.destructure(st)
                elif isinstance(st, A.Return):
                    ret_span = st.span
                    outputs, out_types = self.ret(st)
            except _Fail:
                if isinstance(st, A.Return):
                    outputs = []
                # Later uses of a failed statement's names stay silent: one error, one report.
                # That holds for a name the statement failed to define again (a parameter
                # or an earlier statement): its later readers meant the new value.
                for n in ([st.name] if isinstance(st, A.Assign) else
                          list(st.names) if isinstance(st, A.Destructure) else []):
                    self.poisoned.add(n)
                    self.names.pop(n, None)
                continue
        if outputs is None:
            self.err(TLSyntaxError, self.fn.name_span, f"function {self.fn.name} has no return",
                     "end the body with `return EXPR`")
            return None
        if not outputs:
            return None
        self.check_annotation(out_types, ret_span)
        prog = Program(self.fn.name, tuple(params), tuple(self.stmts), tuple(outputs),
                       self.fn.ret_is_tuple or len(outputs) > 1)
        # Reads of later statements or of itself: recurrence groups, checked and
        # put in the order they are evaluated in (ssa/recur.py).
        prog, problems = check_and_order(prog)
        for pr in problems:
            self.err(TLRecurrenceError, pr.span, pr.message, pr.hint)
        if problems:
            return None
        # sum[i](x[i]) / sum[i](y[i]) puts one sum inside a group the other binds
        # around: rename so that no nested sum shadows an enclosing index.
        prog = B.separate_program_binders(prog)
        return Lowered(prog, out_types, self.fn.span)

    def check_annotation(self, out_types, ret_span):
        if self.fn.ret is None:
            return
        declared = [(t.elem, tuple(d.value for d in t.dims)) for t in self.fn.ret]
        show = lambda ts: ", ".join(f"{e}[{', '.join(map(str, d))}]" if d else e for e, d in ts)  # noqa
        if len(declared) != len(out_types):
            self.err(TLTypeError, ret_span,
                     f"function {self.fn.name} returns {len(out_types)} value(s) but its "
                     f"annotation declares {len(declared)}",
                     f"returns ({show(out_types)})")
            return
        for (de, dd), (ae, ad), t in zip(declared, out_types, self.fn.ret):
            if (de, tuple(dd)) != (ae, tuple(ad)):
                self.err(TLTypeError, t.span,
                         f"return type mismatch: declared {show([(de, dd)])} but the function "
                         f"returns {show([(ae, ad)])}")

    def assign(self, st: A.Assign):
        expr = _unwrap(st.expr)
        if st.binders is None and isinstance(expr, A.Call) and expr.fn not in BUILTIN_NAMES:
            outs = self.inline_call(expr, {})
            if len(outs) != 1:
                self.fail(TLTypeError, st.expr.span,
                          f"{expr.fn} returns {len(outs)} values",
                          f"unpack them: {', '.join(f'v{k}' for k in range(len(outs)))} = {expr.fn}(...)")
            ent = outs[0]
            self.define(st.name, st.name_span, Entity("alias", ent.elem, ent.dims, ent.ssa, st.span))
            return
        if st.binders is None and isinstance(expr, A.Name) and expr.id in self.names:
            ent = self.names[expr.id]
            if ent.dims:
                if ent.elem != "f64":
                    self.fail(TLTypeError, expr.span,
                              f"{expr.id} is a {ent.elem} tensor and cannot be aliased",
                              "statements define f64 values")
                self.define(st.name, st.name_span, Entity("alias", ent.elem, ent.dims, ent.ssa, st.span))
                return
        scope: dict[str, Dim] = {}
        idx = []
        if st.binders:
            seen = set()
            for b in st.binders:
                if b.name in seen:
                    self.fail(TLNameError, b.span, f"index {b.name} appears twice in {st.name}[...]")
                seen.add(b.name)
                self.check_binder_name(b)
            ranges = self.infer_ranges(st.binders, st.expr, lambda: self.declared_sizes(st))
            for b in st.binders:
                scope[b.name] = ranges[b.name]
                idx.append((b.name, ranges[b.name]))
        body = self.value(st.expr, scope)
        dims = tuple(d for _, d in idx)
        if st.name in self.forward:
            declared = self.forward.pop(st.name)
            del self.names[st.name]
            if declared != dims:
                self.fail(TLShapeError, st.name_span,
                          f"{st.name} ranges over ({', '.join(map(str, dims))}) here, but its "
                          f"reads before this definition assumed ({', '.join(map(str, declared))})",
                          "give the ranges explicitly, e.g. "
                          f"{st.name}[{', '.join(f'{n}: {d}' for n, d in idx)}]")
        self.define(st.name, st.name_span, Entity("stmt", "f64", dims, st.name, st.span))
        self.stmts.append(Stmt(st.name, tuple(idx), body, st.span))

    def declare_ahead(self, st: A.Assign):
        """Declare a statement that is read before its definition (a recurrence):
        its dimensions come from explicit ranges or from plain uses of tensors
        already known."""
        expr = _unwrap(st.expr)
        if st.binders is None:
            if (isinstance(expr, A.Call) and expr.fn not in BUILTIN_NAMES) or \
                    (isinstance(expr, A.Name) and expr.id in self.names
                     and self.names[expr.id].dims):
                self.fail(TLRecurrenceError, st.name_span,
                          f"{st.name} is read before it is defined, but it names a call result "
                          "or another tensor",
                          "only a statement defined by an expression may be read ahead")
            dims: tuple = ()
        else:
            names = {b.name for b in st.binders}
            uses: dict[str, list] = {n: [] for n in names}
            stack = [st.expr]
            while stack:
                e = stack.pop()
                if isinstance(e, A.Access):
                    ent = self.names.get(e.name)
                    if ent is not None and len(ent.dims) == len(e.indices):
                        for ix, d in zip(e.indices, ent.dims):
                            u = _unwrap(ix)
                            if isinstance(u, A.Name) and u.id in names:
                                uses[u.id].append(d)
                stack.extend(A.children(e))
            found = []
            for b in st.binders:
                d = self.binder_dim(b)
                if d is None and uses[b.name]:
                    d = uses[b.name][0]
                if d is None:
                    self.fail(TLShapeError, b.span,
                              f"cannot infer the range of index {b.name} of {st.name}, which is "
                              "read before its definition",
                              f"give it explicitly, e.g. {st.name}[{b.name}: "
                              f"{next(iter(self.sizes), 'n')}, ...]")
                found.append(d)
            dims = tuple(found)
        self.forward[st.name] = dims
        self.names[st.name] = Entity("stmt", "f64", dims, st.name, st.span)

    def destructure(self, st: A.Destructure):
        expr = _unwrap(st.expr)
        if not (isinstance(expr, A.Call) and expr.fn not in BUILTIN_NAMES):
            self.fail(TLTypeError, st.expr.span,
                      "only a call of a function that returns several values can be unpacked")
        outs = self.inline_call(expr, {})
        if len(outs) != len(st.names):
            self.fail(TLTypeError, st.span,
                      f"{expr.fn} returns {len(outs)} value(s) but {len(st.names)} names are given")
        for name, span, ent in zip(st.names, st.name_spans, outs):
            self.define(name, span, Entity("alias", ent.elem, ent.dims, ent.ssa, st.span))

    def declared_sizes(self, st) -> dict:
        """{index: size} that the function's return type gives the indices of statement
        st when st is returned by name with a declared type of its rank (for hints)."""
        if self.fn.ret is None or not st.binders:
            return {}
        for ret in (s for s in self.fn.body if isinstance(s, A.Return)):
            for e, t in zip(ret.exprs, self.fn.ret):
                u = _unwrap(e)
                if isinstance(u, A.Name) and u.id == st.name and len(t.dims) == len(st.binders):
                    return {b.name: d.value for b, d in zip(st.binders, t.dims)}
        return {}

    def ret(self, st: A.Return):
        outputs, types = [], []
        for k, e in enumerate(st.exprs):
            u = _unwrap(e)
            if isinstance(u, A.Call) and u.fn not in BUILTIN_NAMES:
                outs = self.inline_call(u, {})
                if len(outs) != 1:
                    self.fail(TLTypeError, e.span, f"{u.fn} returns {len(outs)} values",
                              "unpack them into names and return those")
                outputs.append(outs[0].ssa)
                types.append((outs[0].elem, outs[0].dims))
                continue
            if isinstance(u, A.Name) and u.id in self.names:
                ent = self.names[u.id]
                if ent.elem != "f64":
                    self.fail(TLTypeError, u.span,
                              f"{u.id} is a {ent.elem} tensor and cannot be returned")
                outputs.append(ent.ssa)
                types.append((ent.elem, ent.dims))
                continue
            body = self.value(e, {})
            name = unique_name("out" if len(st.exprs) == 1 else f"out{k}", self.used)
            self.used.add(name)
            self.stmts.append(Stmt(name, (), body, e.span))
            outputs.append(name)
            types.append(("f64", ()))
        return outputs, types

    # ------------------------------------------------------------ calls
    def value(self, e, scope: dict[str, Dim]) -> tuple:
        """A value expression -> Body."""
        if isinstance(e, A.Num):
            if not math.isfinite(e.value):
                self.fail(TLTypeError, e.span, f"the value literal {short_literal(e.text)} is not "
                          "finite in float64", "float64 values lie within about ±1.8e308")
            return B.const(e.value)
        if isinstance(e, A.Paren):
            return self.value(e.inner, scope)
        if isinstance(e, A.Name):
            return self.value_name(e, scope)
        if isinstance(e, A.Access):
            return B.factor_body(self.f64_access(e, scope))
        if isinstance(e, A.Neg):
            return B.neg(self.value(e.operand, scope))
        if isinstance(e, A.BinOp):
            if e.op == "%":
                self.fail(TLTypeError, e.span, "% may only appear in a divisibility guard",
                          "write [a % q == 0] inside a bracket")
            if e.op == "**":
                return self.finite(self.power(self.value(e.left, scope), e.right, scope), e)
            return self.arith_chain(e, scope)
        if isinstance(e, A.Sum):
            return self.sum(e, scope)
        if isinstance(e, A.Reduce):
            return self.reduction(e, scope)
        if isinstance(e, A.Bracket):
            pred = self.pred(e.pred, scope)
            return B.pred_body((pred,))
        if isinstance(e, A.Call):
            return self.call_value(e, scope)
        if isinstance(e, (A.Compare, A.BoolOp, A.Not)):
            self.fail(TLTypeError, e.span, "a comparison or logical operator outside a bracket",
                      "write it inside an Iverson bracket, e.g. [a < b]")
        raise AssertionError(e)  # pragma: no cover

    def arith_chain(self, e: A.BinOp, scope) -> tuple:
        """`a + b - c ...` or `a * b / c ...`: a left-leaning chain of binary operators,
        lowered in a loop from its leftmost operand, so a long flat sum needs no deep
        recursion.  The IR is the same as folding the operators one at a time."""
        chain = []
        node = e
        while isinstance(node, A.BinOp) and node.op in ("+", "-", "*", "/"):
            chain.append(node)
            node = node.left
        acc = self.value(node, scope)
        sc = set(scope)
        for b in reversed(chain):
            right = self.value(b.right, scope)
            if b.op == "+":
                acc = B.add(acc, right)
            elif b.op == "-":
                acc = B.sub(acc, right)
            elif b.op == "*":
                acc = B.mul(acc, right, sc)
            else:
                acc = B.divide(acc, right, sc)
            acc = self.finite(acc, b)
        return acc

    def finite(self, body, e) -> tuple:
        """Constants folded while building must stay finite (1e300 * 1e300 is not,
        nor the coefficient of x[0] * 1e300 * 1e300)."""
        if any(not math.isfinite(t.coeff) for t in body):
            self.fail(TLTypeError, e.span, "the constants of this expression multiply to a "
                      "value that is not finite in float64",
                      "float64 values lie within about ±1.8e308")
        return body

    def power(self, base, exp_expr, scope) -> tuple:
        exp = self.value(exp_expr, scope)
        k = _const_of(exp)
        if k is not None:
            return B.power(base, k)
        return B.factor_body(Apply("pow", (base, exp)))

    def binders(self, e, scope, what: str) -> tuple[dict, list]:
        """The scope inside `sum[...]` or a reduction, and its (index, range) pairs."""
        seen = set()
        for b in e.binders:
            if b.name in scope:
                self.fail(TLNameError, b.span, f"index {b.name} is already bound here",
                          f"use a different name for the {what} index")
            if b.name in seen:
                self.fail(TLNameError, b.span, f"index {b.name} appears twice in {e_name(e)}[...]")
            seen.add(b.name)
            self.check_binder_name(b)
        exprs = (e.body,) if e.where is None else (e.where, e.body)
        ranges = self.infer_ranges(e.binders, exprs)
        inner = dict(scope)
        pairs = []
        for b in e.binders:
            inner[b.name] = ranges[b.name]
            pairs.append((b.name, ranges[b.name]))
        return inner, pairs

    def where(self, e, scope) -> tuple | None:
        """The filter `| p` of a sum or reduction as a conjunction of atoms (None: false)."""
        if e.where is None:
            return ()
        return B.canon_pred(_as_conj(self.pred(e.where, scope)))

    def sum(self, e: A.Sum, scope) -> tuple:
        inner, sums = self.binders(e, scope, "summed")
        body = self.value(e.body, inner)
        where = self.where(e, inner)
        # `sum[j | p](e)` is `sum[j]([p] * e)`: over the points where p holds.
        body = B.mul(B.pred_body((False,) if where is None else where), body, set(inner))
        # Sums inside the body were renamed apart from scope already; the new
        # binders are fresh too, so prefixing them binds exactly their uses.
        return B.canon_body([Term(t.coeff, tuple(sums) + t.sums, t.pred, t.factors)
                             for t in body])

    def reduction(self, e: A.Reduce, scope) -> tuple:
        """`max[j](e)`, `min[j](e)`, `logsumexp[j](e)`: a Reduce factor (not a sum: its
        indices are bound by the reduction, see ir.Reduce)."""
        inner, over = self.binders(e, scope, "reduced")
        body = self.value(e.body, inner)
        where = self.where(e, inner)
        red = Reduce(e.op, tuple(over), () if where is None else where, body)
        return B.factor_body(T.empty_reduce(red) if where is None else red)

    def call_value(self, e: A.Call, scope) -> tuple:
        if e.fn == "logsumexp":
            self.fail(TLCallError, e.span, "logsumexp is a reduction over indices, not a function",
                      "write logsumexp[j](e) for log(sum[j](exp(e))), computed stably")
        if e.fn in BUILTIN_NAMES:
            n = ARITY[e.fn]
            if len(e.args) != n:
                reduction = e.fn in ("max", "min") and len(e.args) == 1
                self.fail(TLCallError, e.span,
                          f"{e.fn} takes {n} argument{'s' if n > 1 else ''} but "
                          f"{len(e.args)} {'were' if len(e.args) != 1 else 'was'} given",
                          f"for the {'largest' if e.fn == 'max' else 'smallest'} entry over an "
                          f"index write {e.fn}[j](e)" if reduction else None)
            args = tuple(self.value(a, scope) for a in e.args)
            if e.fn == "pow":
                k = _const_of(args[1])
                if k is not None:
                    return B.power(args[0], k)
            return B.factor_body(Apply(e.fn, args))
        if e.fn not in self.done and e.fn not in self.later and e.fn != self.fn.name \
                and e.fn not in self.failed:
            self.fail(TLNameError, e.name_span, f"unknown function {e.fn}",
                      "builtins are " + ", ".join(sorted(BUILTIN_NAMES)))
        outs = self.inline_call(e, scope)
        if len(outs) != 1 or outs[0].dims:
            self.fail(TLShapeError, e.span,
                      f"{e.fn} returns a tensor or several values, which cannot be used inside "
                      "an expression",
                      f"assign it to a name first: r = {e.fn}(...)")
        return B.factor_body(Access(outs[0].ssa, (), e.span))

    # ------------------------------------------------------------ indices
    def index(self, e, scope, whole) -> Affine:
        """An affine index expression.

        whole=True: a gather `y[s]` may be the whole expression (a tensor index);
        whole=False: no gather (inside arithmetic of a tensor index);
        whole="any": gathers anywhere (inside a comparison, which reads no tensor
        at the gathered position, so nothing needs a run-time range check).
        """
        inner = "any" if whole == "any" else False
        if isinstance(e, A.Paren):
            return self.index(e.inner, scope, whole)
        if isinstance(e, A.Num):
            if not e.is_int:
                self.fail(TLTypeError, e.span, f"index {e.text} is not an integer")
            return Affine(self.int_literal(e))
        if isinstance(e, A.Name):
            if e.id in scope:
                return Affine.of(IndexVar(e.id))
            if e.id in self.sizes:
                return Affine.of(SizeVar(e.id))
            if e.id in self.names:
                ent = self.names[e.id]
                self.fail(TLTypeError, e.span,
                          f"{e.id} is a{'n' if ent.elem[0] in 'aeiou' else ''} {ent.elem} "
                          f"{'tensor' if ent.dims else 'value'}, not an index",
                          "indices are index variables, sizes and integers")
            self.fail(TLNameError, e.span, f"unbound index {e.id}",
                      f"bind it on the left (y[{e.id}] = ...) or with sum[{e.id}](...)")
        if isinstance(e, A.Access):
            ent = self.names.get(e.name)
            if ent is not None and ent.elem == "i64":
                if not whole:
                    self.fail(TLTypeError, e.span,
                              f"the gather {e.name}[...] must stand alone as an index",
                              "arithmetic on gathered indices is not supported; compare a "
                              "new index with the expression instead, e.g. W[k, 3 - y[s]] as "
                              "sum[c]([c == 3 - y[s]] * W[k, c])")
                idx = self.indices(e, ent, scope)
                return Affine.of(Gather(ent.ssa, idx, e.span))
            if ent is None and e.name not in scope and e.name not in self.sizes:
                self.unknown_name(e.name_span, e.name)
            self.fail(TLTypeError, e.span, f"{e.name}[...] is not an index",
                      "only entries of i64 tensors may be used as indices")
        if isinstance(e, A.Neg):
            return self.index(e.operand, scope, inner).scale(-1)
        if isinstance(e, A.BinOp):
            if e.op in ("+", "-", "*"):
                return self.index_chain(e, scope, inner)
            if e.op == "%":
                self.fail(TLTypeError, e.span, "% may only appear in a divisibility guard",
                          "write [a % q == 0] inside a bracket")
            if e.op == "/" and self.is_size_expression(e):
                # `n / 2`: exact division of sizes, a derived size (LANGUAGE.md 13)
                return Affine.dim(size_dim(e, _ErrorsToSink(self)))
            self.fail(TLTypeError, e.span, f"operator {e.op} is not allowed in an index",
                      "indices are affine: sums of integer multiples of indices and sizes")
        if isinstance(e, (A.Sum, A.Reduce, A.Call, A.Bracket)):
            self.fail(TLTypeError, e.span, "this expression is not an index",
                      "indices are affine: sums of integer multiples of indices and sizes")
        self.fail(TLTypeError, e.span, "this expression is not an index")

    def index_chain(self, e: A.BinOp, scope, inner) -> Affine:
        """`i + j - 1 ...` (or with `*`): a left-leaning chain folded in a loop."""
        chain = []
        node = e
        while isinstance(node, A.BinOp) and node.op in ("+", "-", "*"):
            chain.append(node)
            node = node.left
        acc = self.index(node, scope, inner)
        for b in reversed(chain):
            right = self.index(b.right, scope, inner)
            if b.op == "+":
                acc = acc + right
            elif b.op == "-":
                acc = acc - right
            elif acc.is_const:
                acc = right.scale(acc.const)
            elif right.is_const:
                acc = acc.scale(right.const)
            else:
                self.fail(TLTypeError, b.span, "index expression is not affine",
                          "an index may multiply variables by integer constants only")
            if any(not -INT64_LIMIT <= c < INT64_LIMIT
                   for c in (acc.const, *(k for _, k in acc.terms))):
                self.fail(TLTypeError, b.span, "the constants of this index expression combine "
                          "to a value that does not fit in int64",
                          "index constants and coefficients must lie in [-2**63, 2**63)")
        return acc

    # ------------------------------------------------------------ predicates
    def pred(self, e, scope):
        """A predicate -> a single atom (an AnyOf for compound ones), True or False."""
        if isinstance(e, A.Paren):
            return self.pred(e.inner, scope)
        if isinstance(e, A.BoolOp):
            # `a or b or c ...`: a left-leaning chain, folded in a loop
            chain = []
            node = e
            while isinstance(node, A.BoolOp):
                chain.append(node)
                node = node.left
            # A run of `or` becomes one disjunction at once (any_of splices a
            # nested one, so this equals folding them pairwise, in linear time).
            acc = self.pred(node, scope)
            alts = None
            for b in reversed(chain):
                right = self.pred(b.right, scope)
                if b.op == "or":
                    alts = alts or [_as_conj(acc)]
                    alts.append(_as_conj(right))
                    continue
                if alts is not None:
                    acc, alts = B.any_of(alts), None
                acc = B.conj_all([acc, right])
            return B.any_of(alts) if alts is not None else acc
        if isinstance(e, A.Not):
            inner = self.pred(e.operand, scope)
            if isinstance(inner, bool):
                return not inner
            return B.negate_atom(inner)
        if isinstance(e, A.Compare):
            atoms = []
            for k, op in enumerate(e.ops):
                atoms.append(self.compare(e.operands[k], op, e.operands[k + 1], scope, e.span))
            return B.conj_all(atoms)
        if isinstance(e, A.Access):
            ent = self.names.get(e.name)
            if ent is not None and ent.elem == "bool":
                idx = self.indices(e, ent, scope)
                return Rel(ent.ssa, idx, e.span)
        if isinstance(e, A.Name):
            ent = self.names.get(e.id)
            if ent is not None and ent.elem == "bool":
                self.fail(TLShapeError, e.span, f"relation {e.id} used without indices")
        if isinstance(e, A.Bracket):
            self.fail(TLSyntaxError, e.span, "a bracket inside a bracket",
                      "combine predicates with `and`, `or`, `not`")
        # Evaluate for its own diagnostics (unknown names, misuse) before the generic one.
        self.value(e, scope)
        self.fail(TLTypeError, e.span, "a bracket needs a predicate, not a value",
                  "compare it, e.g. [x[i] > 0.0], or use a relation entry M[i, j]")

    def compare(self, le, op, re, scope, span):
        div = self.divisibility(le, op, re, scope, span)
        if div is not None:
            return div
        if self.is_value_side(le) or self.is_value_side(re):
            self.refuse_abs_of_indices(le, op, re, scope)
            if op in ("==", "!="):
                self.refuse_float_labels(le, re, scope)
            left = self.value(le, scope)
            right = self.value(re, scope)
            return ValCmp(op, left, right)
        left = self.index(le, scope, "any")
        right = self.index(re, scope, "any")
        return B.norm_cmp(op, left, right, span)

    def refuse_abs_of_indices(self, le, op, re, scope):
        """`[abs(i - j) <= 1]` (a band) would be reported as "index i used as a value"
        inside abs; an index comparison has no abs, but the band it means is two
        comparisons, so that is what is said."""
        for side, other in ((le, re), (re, le)):
            call, other = _unwrap(side), _unwrap(other)
            if not (isinstance(call, A.Call) and call.fn == "abs" and len(call.args) == 1):
                continue
            arg = call.args[0]
            if self.is_value_side(arg) or self.is_value_side(other) \
                    or not _mentions_index(arg, scope):
                continue
            self.fail(TLTypeError, call.span, "abs of an index expression is not an index",
                      "a band is two comparisons: write [abs(a) <= c] as [-c <= a <= c] "
                      "(e.g. [-1 <= i - j <= 1] for [abs(i - j) <= 1])")

    def refuse_float_labels(self, le, re, scope):
        """`[t == y[s]]` (a one-hot row) with y an f64 tensor would be reported as "index
        t used as a value"; the likelier mistake is y's type, so that is what is said."""
        for side, other in ((le, re), (re, le)):
            other = _unwrap(other)
            ent = self.names.get(other.name) if isinstance(other, A.Access) else None
            if ent is None or ent.elem != "f64" or self.is_value_side(side) \
                    or not _mentions_index(side, scope):
                continue
            dims = ", ".join(map(str, ent.dims))
            self.fail(TLTypeError, other.span,
                      f"{other.name} is an f64 tensor: its entries are values, which cannot be "
                      f"compared with an index",
                      f"declare it {other.name}: i64[{dims}] to use its entries as labels"
                      if ent.kind == "param" else
                      "only entries of i64 parameters are labels an index can be compared with")

    def divisibility(self, le, op, re, scope, span):
        """`[a % q == 0]` (or `!= 0`): an integer divisibility guard, q a positive literal."""
        le, re = _unwrap(le), _unwrap(re)
        if not (isinstance(le, A.BinOp) and le.op == "%"):
            if isinstance(re, A.BinOp) and re.op == "%":
                le, re = re, le
            else:
                return None
        q = _unwrap(le.right)
        if not (isinstance(q, A.Num) and q.is_int and self.int_literal(q) > 0):
            self.fail(TLTypeError, le.right.span, "the modulus of % must be a positive integer")
        if not (isinstance(re, A.Num) and re.is_int and self.int_literal(re) == 0) \
                or op not in ("==", "!="):
            if isinstance(re, A.Num) and re.is_int and op in ("==", "!="):
                self.fail(TLTypeError, span,
                          "a remainder may only be compared with 0 (a divisibility guard)",
                          f"[a % q {op} r] is [(a - r) % q {op} 0]")
            self.fail(TLTypeError, span, "% may only appear in a divisibility guard",
                      "write [a % q == 0] or [a % q != 0]")
        aff = self.index(le.left, scope, "any")
        atom = B.fold_idxcmp(IdxCmp("%", aff, span, int(q.text)))
        if op == "!=":
            return (not atom) if isinstance(atom, bool) else B.negate_atom(atom)
        return atom

    def int_literal(self, e: A.Num) -> int:
        """An integer literal used as an index constant: it must fit in int64."""
        digits = e.text.lstrip("0")
        if len(digits) > len(str(INT64_LIMIT)) or (digits and int(digits) >= INT64_LIMIT):
            self.fail(TLTypeError, e.span, f"the index constant {short_literal(e.text)} does not "
                      "fit in int64", "index constants must be below 2**63 = 9223372036854775808")
        return int(digits or "0")

    def is_size_expression(self, e) -> bool:
        """Is e arithmetic (+ - * /) of sizes and integers only, such as `n / 2`?"""
        stack = [e]
        while stack:
            e = _unwrap(stack.pop())
            if isinstance(e, A.Num):
                if not e.is_int:
                    return False
            elif isinstance(e, A.Name):
                if e.id not in self.sizes:
                    return False
            elif isinstance(e, A.Neg):
                stack.append(e.operand)
            elif isinstance(e, A.BinOp) and e.op in ("+", "-", "*", "/"):
                stack += [e.right, e.left]
            else:
                return False
        return True

    def is_value_side(self, e) -> bool:
        """Does this side of a comparison denote a float value (not an index)?"""
        stack = [e]         # any part that is a value makes the whole side one
        while stack:
            e = _unwrap(stack.pop())
            if isinstance(e, A.Num):
                if not e.is_int:
                    return True
            elif isinstance(e, A.Name):
                ent = self.names.get(e.id)
                if ent is not None and ent.elem == "f64":
                    return True
            elif isinstance(e, A.Access):
                ent = self.names.get(e.name)
                if ent is not None and ent.elem == "f64":
                    return True
            elif isinstance(e, (A.Sum, A.Reduce, A.Call, A.Bracket)):
                return True
            elif isinstance(e, A.BinOp):
                if e.op == "/" and self.is_size_expression(e):
                    continue                   # `n / 2` is a size, not a float
                if e.op in ("/", "**"):
                    return True
                stack += [e.right, e.left]
            elif isinstance(e, A.Neg):
                stack.append(e.operand)
        return False


def _mentions_index(e, scope) -> bool:
    """Does the index expression e use an index variable of `scope`?"""
    stack = [e]
    while stack:
        e = _unwrap(stack.pop())
        if isinstance(e, A.Name) and e.id in scope:
            return True
        if isinstance(e, A.BinOp):
            stack += [e.left, e.right]
        elif isinstance(e, A.Neg):
            stack.append(e.operand)
    return False


def e_name(e) -> str:
    return "sum" if isinstance(e, A.Sum) else e.op


class _ErrorsToSink:
    """Lets the parser's size arithmetic (which raises `src.error(...)`) report into
    the lowering's error sink, with the same location and hint."""

    def __init__(self, lowerer):
        self.lowerer = lowerer

    def error(self, kind, span, msg, hint=None):
        self.lowerer.err(kind, span, msg, hint)
        return _Fail()


def _as_conj(atom):
    if atom is True:
        return ()
    if atom is False:
        return (False,)
    if isinstance(atom, AnyOf) and len(atom.alts) == 1:
        return atom.alts[0]
    return (atom,)


def _const_of(body) -> float | None:
    if not body:
        return 0.0
    if len(body) == 1 and body[0].is_const:
        return body[0].coeff
    return None




















def _read_ahead(body) -> tuple[dict, dict]:
    """Statements of a body read at or before their own definition: name -> its
    Assign, and statement position -> the names it reads ahead."""
    pos = {st.name: k for k, st in enumerate(body) if isinstance(st, A.Assign)}
    ahead: dict[str, A.Assign] = {}
    reads: dict[int, list[str]] = {}
    for k, st in enumerate(body):
        if not isinstance(st, A.Assign):
            continue
        # Names bound as indices here (by the statement or a sum) are not reads.
        bound = {b.name for b in st.binders or ()}
        stack = [st.expr]
        while stack:
            e = stack.pop()
            if isinstance(e, A.Sum):
                bound.update(b.name for b in e.binders)
            stack.extend(A.children(e))
        stack = [st.expr]
        found: list[str] = []
        while stack:
            e = stack.pop()
            name = e.name if isinstance(e, A.Access) else e.id if isinstance(e, A.Name) else None
            if name is not None and pos.get(name, -1) >= k and name not in found \
                    and name not in bound:
                found.append(name)
            stack.extend(A.children(e))
        for name in found:
            ahead[name] = body[pos[name]]
        if found:
            reads[k] = found
    return ahead, reads


def lower_module(mod: A.ModuleAST, source: SourceText, sink: ErrorSink | None = None,
                 broken: frozenset = frozenset()) -> tuple[list[Program], list[Program]]:
    """Check and lower every function; raise all diagnostics together, or with a
    `sink`, add them to it and return the programs of the functions that passed
    (the driver's later stages check those, so one file's errors come at once).
    `broken`: functions whose text did not parse; a call of one stays silent.

    Returns the programs and the programs as written: the same functions with
    their zero terms kept (``0.0 * x[5]``, ``x[1] - x[1]``, ``x[5] ** 0``), which the
    bounds stage checks, since every read the source writes must be in range even
    where its value is multiplied away.  Lowering is repeated for them only when
    the first pass dropped a term that reads something; otherwise both lists are
    the same.
    """
    own = sink if sink is not None else ErrorSink(source)
    with B.zero_terms(keep=False) as zeros:
        programs = _lower_functions(mod, own, broken)
    written = programs
    if zeros.dropped:
        # (its diagnostics are the first pass's: the sink shows each once)
        with B.zero_terms(keep=True):
            written = _lower_functions(mod, own, broken)
    if sink is None:
        own.raise_if_any()
    return programs, written


def _lower_functions(mod: A.ModuleAST, sink: ErrorSink, broken: frozenset) -> list[Program]:
    done: dict[str, Lowered] = {}
    failed: set[str] = set(broken)
    all_names = [f.name for f in mod.functions]
    programs = []
    for k, fn in enumerate(mod.functions):
        if fn.name in done or fn.name in all_names[:k]:
            sink.add(TLNameError, fn.name_span, f"function {fn.name} is defined twice")
            continue
        if fn.name in BUILTIN_NAMES:
            sink.add(TLNameError, fn.name_span, f"{fn.name} is a builtin and cannot be redefined")
            continue
        later = set(all_names[k + 1:])
        lowered = FunctionLowerer(fn, done, later, sink, frozenset(failed)).lower()
        if lowered is not None:
            done[fn.name] = lowered
            programs.append(lowered.program)
        else:
            failed.add(fn.name)
    return programs

"""Reverse mode by transposition: adjoints read off <L dx, ybar> = <dx, L^T ybar>.

Input: a Program, the parameters to differentiate, and the cotangent of its
(single) output: either a new parameter ``d_out`` (vjp) or the constant 1
(grad of a scalar).  Output: a Program whose statements are the primal ones
followed by one adjoint statement ``<name>_bar`` per tensor that lies on a
path from a differentiated input to the output, in reverse order.

For a use of ``x`` at ``x[a(I, S)]`` inside a term of ``y[I] = ...`` with
cotangent ``ybar``, the transposition rule gives the contribution

    x_bar[K] = sum_{I, S} [K == a(I, S)] * [P] * c * ybar[I] * (the other factors)

and all contributions to one tensor are added as an explicit sum: no ``+=``,
no tape.  Factors under a builtin are handled by the chain rule: the builtin's
argument is transposed with the cotangent ``ybar * f'(args) * (the others)``.
The brackets ``[K == a]`` are what simplification then eliminates.
"""
from __future__ import annotations

from ..errors import TLError
from ..ssa import build as B
from ..ssa.ir import (Access, Affine, Apply, Group, IndexVar, Param, Program, SizeValue, Stmt,
                      Term)
from ..ssa.build import norm_cmp
from ..ssa.names import fresh, unique_name
from ..ssa.traverse import UnknownNode, index_names, substitute_term, tensor_reads
from .forward import all_names, check_wrt, zero_stmt
from .rules import partials, stored_calls

INDEX_POOL = ("k", "l", "p", "q", "r", "s", "t", "u", "v", "w", "a", "b", "c", "e", "g", "h")


def program_index_names(prog: Program) -> set[str]:
    names = set()
    for s in prog.stmts:
        names |= {n for n, _ in s.indices}
        names |= index_names(s.body)
    return names


class Transposer:
    def __init__(self, prog: Program, needs: set[str]):
        self.prog = prog
        self.needs = needs                # tensors whose adjoint we want contributions to
        self.shapes = prog.shapes()
        self.contrib: dict[str, list[Term]] = {}
        self.targets: dict[str, tuple] = {}   # name -> adjoint generator indices

    def target_indices(self, name: str) -> tuple:
        """Fresh generator names for name's adjoint (the supply's: bound nowhere else)."""
        if name not in self.targets:
            dims = self.shapes[name][1]
            self.targets[name] = tuple((fresh(INDEX_POOL[k % len(INDEX_POOL)]), d)
                                       for k, d in enumerate(dims))
        return self.targets[name]

    def depends(self, f) -> bool:
        if isinstance(f, Access):
            return f.name in self.needs
        if isinstance(f, Apply):
            return any(self.body_depends(a) for a in f.args)
        if isinstance(f, Group):
            return self.body_depends(f.body)
        if isinstance(f, SizeValue):
            return False
        raise UnknownNode("factor", f)

    def body_depends(self, body) -> bool:
        return any(self.depends(f) for t in body for f, _ in t.factors)

    def term(self, t: Term, cot, bound: tuple, known=()):
        """Send cotangent `cot` (a body over `bound`) back through term t.

        `known`: builtin outputs already stored (see rules.stored_calls); they can
        only be t's own factors, so the terms of arguments are sent back without."""
        bound2 = bound + t.sums
        scope = {n for n, _ in bound2}
        for k, (f, p) in enumerate(t.factors):
            if not self.depends(f):
                continue
            mult = B.mul(B.partial_of_term(t, k, scope), cot, scope)
            if isinstance(f, Access):
                self.emit(f, mult, bound2)
            elif isinstance(f, Apply):
                for arg, part in zip(f.args, partials(f, known)):
                    if self.body_depends(arg):
                        sub_cot = B.mul(mult, part, scope)
                        for u in arg:
                            self.term(u, sub_cot, bound2)
            elif isinstance(f, Group):
                for u in f.body:
                    self.term(u, mult, bound2)

    def emit(self, f: Access, mult, bound: tuple):
        gens = self.target_indices(f.name)
        eqs = tuple(norm_cmp("==", Affine.of(IndexVar(g)), a) for (g, _), a in zip(gens, f.idx))
        lst = self.contrib.setdefault(f.name, [])
        for m in mult:
            lst.append(Term(m.coeff, bound + m.sums, eqs + m.pred, m.factors))


def vjp_program(prog: Program, wrt, *, seed: str = "param", name: str | None = None,
                keep_outputs: bool = False) -> Program:
    """Reverse mode.

    seed="param": a cotangent parameter ``d_out`` is appended (vjp).
    seed="one":   the output must be a scalar; its cotangent is 1 (grad).
    keep_outputs: the primal outputs come first (value_and_grad).
    """
    wrt = check_wrt(prog, wrt, what="grad" if seed == "one" else "vjp")
    if len(prog.outputs) != 1:
        raise TLError(f"{'grad' if seed == 'one' else 'vjp'}: {prog.name} returns "
                      f"{len(prog.outputs)} values; differentiate a function with one output")
    out = prog.outputs[0]
    shapes = prog.shapes()
    out_dims = shapes[out][1]
    if seed == "one" and out_dims:
        raise TLError(f"grad: {prog.name} returns a tensor of shape "
                      f"[{', '.join(map(str, out_dims))}]; grad needs a scalar output "
                      "(use vjp for tensor outputs)")
    used = all_names(prog)
    params = list(prog.params)

    # Which tensors lie on a path from wrt to the output?
    reach = set(wrt)
    for s in prog.stmts:
        if any(n in reach for n in tensor_reads(s.body)):
            reach.add(s.name)
    back = {out}
    for s in reversed(prog.stmts):
        if s.name in back:
            back |= tensor_reads(s.body)
    needs = reach & back

    tr = Transposer(prog, needs)
    adj_name: dict[str, str] = {}

    def adjoint_name(n):
        if n not in adj_name:
            adj_name[n] = unique_name(f"{n}_bar", used)
            used.add(adj_name[n])
        return adj_name[n]

    if seed == "param":
        d_out = unique_name("d_out", used)
        used.add(d_out)
        params.append(Param(d_out, "f64", out_dims))
    stmts = list(prog.stmts)
    adj_stmts = []
    if out in needs:
        # (When the output is a parameter itself, this seed is its whole adjoint.)
        gens = tr.target_indices(out)
        if seed == "param":
            cot_body = B.factor_body(Access(d_out, tuple(Affine.of(IndexVar(g)) for g, _ in gens)))
        else:
            cot_body = B.const(1.0)
        tr.contrib[out] = [Term(t.coeff, (), t.pred, t.factors) for t in cot_body]
    for s in reversed(prog.stmts):
        if s.name not in needs or s.name not in tr.contrib:
            continue
        gens = tr.target_indices(s.name)
        body = B.canon_body(tr.contrib.pop(s.name))
        if not body:
            continue
        bar = adjoint_name(s.name)
        adj_stmts.append(Stmt(bar, gens, body, s.span))
        # Express s's terms over the adjoint's generator names, then transpose.
        rename = {n: Affine.of(IndexVar(g)) for (n, _), (g, _) in zip(s.indices, gens)}
        cot = B.factor_body(Access(bar, tuple(Affine.of(IndexVar(g)) for g, _ in gens)))
        terms = tuple(substitute_term(t, rename) for t in s.body)
        known = stored_calls(s.name, gens, terms)
        for t in terms:
            tr.term(t, cot, gens, known)
    outs = []
    for w in wrt:
        gens = tr.target_indices(w)
        body = B.canon_body(tr.contrib.pop(w, []))
        bar = adjoint_name(w)
        if body:
            adj_stmts.append(Stmt(bar, gens, body))
        else:
            adj_stmts.append(zero_stmt(bar, shapes[w][1]))
        outs.append(bar)
    outputs = (prog.outputs if keep_outputs else ()) + tuple(outs)
    suffix = "grad" if seed == "one" else "vjp"
    return Program(name or f"{prog.name}_{suffix}", tuple(params), tuple(stmts + adj_stmts),
                   outputs, keep_outputs or len(outs) > 1)


__all__ = ["vjp_program", "SizeValue"]

"""Calls: a call to an earlier function is inlined, its names renamed apart.

The callee's statements are copied into the caller with their tensors renamed
to fresh names of the caller and their size symbols bound to the caller's
sizes (or literals) by the arguments' shapes; a mismatch is a located error.
A mixin of ``lower.FunctionLowerer``.
"""
from __future__ import annotations

from .. import sizexpr
from ..errors import TLCallError, TLNameError, TLShapeError, TLTypeError
from ..syntax import ast as A
from . import build as B
from . import traverse as T
from .names import unique_name
from .resolve import Entity, _Fail, _unwrap
from ..memo import Memo
from .ir import (Access, Affine, AnyOf, Apply, Dim, Gather, Group, IdxCmp, NotAtom, Program, Reduce,
                 Rel, SizeValue, SizeVar, Stmt, Term, ValCmp, written_at)
from .traverse import statement_reads


class CallInliner:
    """Inlining of calls to functions defined earlier in the file."""

    def inline_call(self, call: A.Call, scope) -> list[Entity]:
        """Inline a user function; returns entities for its outputs."""
        name = call.fn
        if name == "logsumexp":
            self.fail(TLCallError, call.span, "logsumexp is a reduction over indices, not a "
                      "function", "write logsumexp[j](e) for log(sum[j](exp(e))), computed stably")
        if name == self.fn.name:
            self.fail(TLNameError, call.name_span, f"recursive call of {name}",
                      "recursion is not supported; functions are inlined")
        if name in self.later:
            self.fail(TLNameError, call.name_span,
                      f"{name} is defined after {self.fn.name}",
                      "a function may only call functions defined before it (no recursion)")
        if name in self.failed:
            raise _Fail()           # its own errors are reported; a call adds nothing
        if name not in self.done:
            self.fail(TLNameError, call.name_span, f"unknown function {name}")
        callee = self.done[name]
        cp = callee.program
        if len(call.args) != len(cp.params):
            self.fail(TLCallError, call.span,
                      f"{name} takes {len(cp.params)} argument(s) but {len(call.args)} were given")
        tensor_map: dict[str, str] = {}
        size_map: dict[str, Dim] = {}
        size_from: dict[str, str] = {}
        computed: list = []             # parameters declared with derived sizes
        for p, a in zip(cp.params, call.args):
            u = _unwrap(a)
            if p.dims or p.elem != "f64":
                if isinstance(u, A.Name) and u.id not in self.names and u.id not in scope \
                        and u.id not in self.sizes:
                    # a typo, or a statement whose own error is reported: not a misuse
                    self.unknown_name(u.span, u.id)
                if isinstance(u, A.Call) and u.fn in self.done \
                        and _returns_tensor(self.done[u.fn].program):
                    # a call's tensor result passed on directly, `dil(dil(img))`: the rule
                    # for every tensor-valued call inside an expression
                    self.fail(TLShapeError, a.span,
                              f"{u.fn} returns a tensor or several values, which cannot be used "
                              "inside an expression, even as an argument",
                              f"assign it to a name first: r = {u.fn}(...), then "
                              f"{name}(..., r, ...)")
                if not (isinstance(u, A.Name) and u.id in self.names):
                    self.fail(TLTypeError, a.span,
                              f"argument {p.name} of {name} must be a whole tensor "
                              f"({p.elem}[{', '.join(map(str, p.dims))}])")
                ent = self.names[u.id]
                if ent.elem != p.elem or len(ent.dims) != len(p.dims):
                    self.fail(TLTypeError, a.span,
                              f"argument {p.name} of {name} must be "
                              f"{p.elem}[{', '.join(map(str, p.dims))}], got "
                              f"{ent.elem}[{', '.join(map(str, ent.dims))}]")
                for pd, ad in zip(p.dims, ent.dims):
                    if sizexpr.is_derived(pd):
                        computed.append((pd, ad, p.name, a.span))
                    elif isinstance(pd, int):
                        if pd != ad:
                            self.fail(TLShapeError, a.span,
                                      f"argument {p.name} of {name} needs a dimension of size {pd}, got {ad}")
                    elif pd in size_map and size_map[pd] != ad:
                        self.fail(TLShapeError, a.span,
                                  f"conflicting sizes in call of {name}: its size {pd} is bound to "
                                  f"both {size_map[pd]} (from {size_from[pd]}) and {ad} "
                                  f"(from {p.name})")
                    else:
                        size_map[pd] = ad
                        size_from[pd] = p.name
                tensor_map[p.name] = ent.ssa
            else:
                if isinstance(u, A.Name) and u.id in self.names and not self.names[u.id].dims:
                    ent = self.names[u.id]
                    if ent.elem != "f64":
                        self.fail(TLTypeError, a.span, f"argument {p.name} of {name} must be f64")
                    tensor_map[p.name] = ent.ssa
                    continue
                body = self.value(a, scope)
                free = T.index_names(body)
                if free:
                    self.fail(TLTypeError, a.span,
                              f"argument {p.name} of {name} depends on index "
                              f"{sorted(free)[0]}",
                              "arguments of user functions are whole tensors or scalars; "
                              "compute per-element values with a statement instead")
                tmp = unique_name(f"{name}_{p.name}", self.used)
                self.used.add(tmp)
                self.stmts.append(Stmt(tmp, (), body, a.span))
                tensor_map[p.name] = tmp
        # The callee's derived sizes (`n - k + 1`) in the caller's sizes; a parameter
        # declared with one must receive exactly that dimension.
        for d in cp.sizes():
            if sizexpr.is_derived(d):
                size_map[d] = sizexpr.substitute(d, size_map)
        for pd, ad, pname, span in computed:
            if size_map[pd] != ad:
                self.fail(TLShapeError, span,
                          f"argument {pname} of {name} needs a dimension of size "
                          f"{size_map[pd]} ({pd}), got {ad}")
        stmts, same = distinct_statements(cp)
        for s in stmts:
            new = unique_name(f"{name}_{s.name}", self.used)
            self.used.add(new)
            tensor_map[s.name] = new
        for s in stmts:
            self.stmts.append(rename_stmt(s, tensor_map, size_map))
        for dup, first in same.items():
            tensor_map[dup] = tensor_map[first]
        outs = []
        shapes = cp.shapes()
        for o in cp.outputs:
            elem, dims = shapes[o]
            outs.append(Entity("call", elem, tuple(_map_dim(d, size_map) for d in dims),
                               tensor_map[o], call.span))
        return outs

    # ------------------------------------------------------------ index ranges


def distinct_statements(prog: Program) -> tuple[tuple[Stmt, ...], dict[str, str]]:
    """prog's statements without those equal to an earlier one once the reads of
    those before are renamed to the earlier ones, and {dropped name: the earlier
    statement's name}.

    A function that calls another twice with the same arguments holds the callee's
    statements twice; inlined as they are, a chain of such functions doubles at every
    level (f_k calling f_(k-1) twice is 2^k copies of f_0).  Equal statements
    compute equal values, so a caller inlines one of each, and the chain grows by a
    statement per level.  (The simplifier would share them afterwards, after
    building, checking and costing every copy.)"""
    return _DISTINCT.compute((prog, written_at(prog)), lambda: _distinct_statements(prog))


_DISTINCT = Memo(256)


def _distinct_statements(prog: Program) -> tuple[tuple[Stmt, ...], dict[str, str]]:
    same: dict[str, str] = {}
    first: dict = {}
    kept = []
    for s in prog.stmts:
        if same and statement_reads(s) & same.keys():
            s = rename_stmt(s, same, {})
        key = (s.indices, s.body)
        if key in first:
            same[s.name] = first[key]
            continue
        first[key] = s.name
        kept.append(s)
    return tuple(kept), same


def _map_dim(d, size_map):
    return size_map.get(d, d) if isinstance(d, str) else d


def _map_aff(a: Affine, tmap, smap) -> Affine:
    acc = Affine(a.const)
    for atom, c in a.terms:
        if isinstance(atom, SizeVar) and atom.name in smap:
            acc = acc + Affine.dim(smap[atom.name]).scale(c)
        elif isinstance(atom, Gather):
            g = Gather(tmap.get(atom.name, atom.name), tuple(_map_aff(x, tmap, smap) for x in atom.idx),
                       atom.span)
            acc = acc + Affine(0, ((g, c),))
        else:
            acc = acc + Affine(0, ((atom, c),))
    return acc.in_plain_sizes()       # a callee's n - 1 with n = p - 2 is p - 3


def _map_body(body, tmap, smap):
    out = []
    for t in body:
        out.append(Term(t.coeff, tuple((n, _map_dim(d, smap)) for n, d in t.sums),
                        tuple(_map_atom(a, tmap, smap) for a in t.pred),
                        tuple((_map_factor(f, tmap, smap), p) for f, p in t.factors)))
    return B.canon_body(out)


def _map_factor(f, tmap, smap):
    if isinstance(f, Access):
        return Access(tmap.get(f.name, f.name), tuple(_map_aff(a, tmap, smap) for a in f.idx), f.span)
    if isinstance(f, Apply):
        return Apply(f.fn, tuple(_map_body(b, tmap, smap) for b in f.args))
    if isinstance(f, Group):
        return Group(_map_body(f.body, tmap, smap))
    if isinstance(f, Reduce):
        where = B.canon_pred(tuple(_map_atom(a, tmap, smap) for a in f.where))
        red = Reduce(f.op, tuple((n, _map_dim(d, smap)) for n, d in f.over),
                     () if where is None else where, _map_body(f.body, tmap, smap))
        return T.empty_reduce(red) if where is None else red
    if isinstance(f, SizeValue) and f.name in smap:
        d = smap[f.name]
        return SizeValue(d) if isinstance(d, str) else Group(B.const(float(d)))
    return f


def _map_atom(a, tmap, smap):
    if isinstance(a, IdxCmp):
        r = B.fold_idxcmp(IdxCmp(a.op, _map_aff(a.aff, tmap, smap), a.span, a.mod))
        return r
    if isinstance(a, Rel):
        return Rel(tmap.get(a.name, a.name), tuple(_map_aff(x, tmap, smap) for x in a.idx), a.span)
    if isinstance(a, ValCmp):
        return ValCmp(a.op, _map_body(a.left, tmap, smap), _map_body(a.right, tmap, smap))
    if isinstance(a, NotAtom):
        inner = _map_atom(a.atom, tmap, smap)
        return (not inner) if isinstance(inner, bool) else B.negate_atom(inner) if isinstance(
            inner, IdxCmp) else NotAtom(inner)
    if isinstance(a, AnyOf):
        return B.any_of([tuple(_map_atom(x, tmap, smap) for x in alt) for alt in a.alts])
    return a


def rename_stmt(s: Stmt, tmap: dict[str, str], smap: dict[str, Dim]) -> Stmt:
    """A callee statement renamed into the caller: tensors by tmap, sizes by smap."""
    return Stmt(tmap.get(s.name, s.name), tuple((n, _map_dim(d, smap)) for n, d in s.indices),
                _map_body(s.body, tmap, smap), s.span)


def _returns_tensor(prog: Program) -> bool:
    """Does a function return a tensor, or several values?"""
    shapes = prog.shapes()
    return len(prog.outputs) != 1 or bool(shapes[prog.outputs[0]][1])

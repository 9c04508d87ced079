"""Names: what a name denotes inside a function, and how it is read.

Parameters, statements and call results are entities with an element type and
dimensions; reading one checks its kind (f64 values, i64 labels in index
position, bool relations in brackets), rank and, for unknown names, suggests
what was meant.  A mixin of ``lower.FunctionLowerer``.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..builtins import BUILTIN_NAMES
from ..errors import Span, TLNameError, TLShapeError, TLTypeError
from ..syntax import ast as A
from ..syntax.parse import KEYWORDS
from . import build as B
from .ir import Access, SizeValue


def _unwrap(e):
    while isinstance(e, A.Paren):
        e = e.inner
    return e

class _Fail(Exception):
    """Abandons the current statement after its diagnostic was recorded."""

def _letters(k):
    return ["i", "j", "k", "l", "m", "p", "q", "r"][:k]

def _src_access(e: A.Access) -> str:
    return f"{e.name}[...]"


@dataclass
class Entity:
    """What a name denotes inside a function."""
    kind: str                    # "param", "stmt", "output-of-call"
    elem: str                    # f64 / bool / i64
    dims: tuple                  # () for a scalar
    ssa: str                     # the name in the lowered program
    span: Span | None = None


class NameResolver:
    """Name resolution and typed reads of tensors."""

    def define(self, name: str, span, entity: Entity):
        if name in self.names and self.names[name].kind == "param":
            self.fail(TLNameError, span, f"{name} is a parameter and cannot be assigned",
                      "each name is assigned once; choose a new name")
        if name in self.names:
            self.fail(TLNameError, span, f"{name} is already defined",
                      "each name is assigned once; choose a new name")
        if name in self.sizes:
            self.fail(TLNameError, span, f"{name} is a size symbol and cannot be assigned")
        if name in BUILTIN_NAMES or name in KEYWORDS:
            self.fail(TLNameError, span, f"{name} is a builtin name and cannot be assigned")
        if name in self.done or name == self.fn.name:
            self.fail(TLNameError, span, f"{name} is a function name and cannot be assigned")
        self.names[name] = entity

    def value_name(self, e: A.Name, scope) -> tuple:
        n = e.id
        if n in scope:
            self.fail(TLTypeError, e.span, f"index {n} used as a value",
                      "indices are not numbers; only sizes (like n) may be used as values")
        if n in self.sizes:
            return B.factor_body(SizeValue(n))
        ent = self.names.get(n)
        if ent is None:
            self.unknown_name(e.span, n)
        if ent.elem == "bool":
            self.fail(TLTypeError, e.span, f"relation {n} used as a value",
                      f"a bool tensor may only appear inside a bracket, e.g. [{n}[i, j]]")
        if ent.elem == "i64":
            self.fail(TLTypeError, e.span, f"integer tensor {n} used as a value",
                      f"an i64 tensor may only be used as an index, e.g. E[{n}[s], c]")
        if ent.dims:
            self.fail(TLShapeError, e.span,
                      f"tensor {n} used without indices inside an expression",
                      f"write {n}[{', '.join(_letters(len(ent.dims)))}]")
        return B.factor_body(Access(ent.ssa, (), e.span))

    def unknown_name(self, span, n):
        if n in self.poisoned:
            raise _Fail()
        if n in BUILTIN_NAMES:
            self.fail(TLTypeError, span, f"builtin {n} used without arguments")
        if n in self.done:
            self.fail(TLTypeError, span, f"function {n} used without a call")
        self.fail(TLNameError, span, f"unknown name {n}")

    def f64_access(self, e: A.Access, scope) -> Access:
        ent = self.names.get(e.name)
        if ent is None:
            if e.name in scope:
                self.fail(TLTypeError, e.name_span, f"index {e.name} cannot be indexed")
            if e.name in self.sizes:
                self.fail(TLTypeError, e.name_span, f"size {e.name} cannot be indexed")
            self.unknown_name(e.name_span, e.name)
        if ent.elem == "bool":
            self.fail(TLTypeError, e.span, f"relation {e.name} used as a value",
                      f"a bool tensor may only appear inside a bracket: [{_src_access(e)}]")
        if ent.elem == "i64":
            self.fail(TLTypeError, e.span, f"integer tensor {e.name} used as a value",
                      "an i64 entry may only be used as an index, e.g. E[y[s], c]")
        idx = self.indices(e, ent, scope)
        return Access(ent.ssa, idx, e.span)

    def indices(self, e: A.Access, ent: Entity, scope) -> tuple:
        if len(e.indices) != len(ent.dims):
            what = "a scalar" if not ent.dims else f"of rank {len(ent.dims)}"
            self.fail(TLShapeError, e.span,
                      f"{e.name} is {what} but is indexed with {len(e.indices)} "
                      f"ind{'ex' if len(e.indices) == 1 else 'ices'}")
        return tuple(self.index(ix, scope, whole=True) for ix in e.indices)

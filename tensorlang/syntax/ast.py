"""The surface AST: what the user wrote, with a source span on every node.

Nodes are frozen dataclasses.  Spans never take part in equality, so two
parses of texts that differ only in layout compare equal.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import Span

_span = lambda: field(default=None, compare=False, repr=False)  # noqa: E731


@dataclass(frozen=True)
class Dim:
    value: str | int          # a size symbol or an integer literal
    span: Span | None = _span()


@dataclass(frozen=True)
class TypeNode:
    elem: str                 # "f64", "bool" or "i64"
    dims: tuple[Dim, ...]     # () for a scalar
    span: Span | None = _span()

    @property
    def rank(self) -> int:
        return len(self.dims)

    def __str__(self) -> str:
        if not self.dims:
            return self.elem
        return f"{self.elem}[{', '.join(str(d.value) for d in self.dims)}]"


@dataclass(frozen=True)
class Param:
    name: str
    type: TypeNode
    span: Span | None = _span()


@dataclass(frozen=True)
class Binder:
    """An index variable introduced by a statement target or a sum, with an optional range."""
    name: str
    dim: Dim | None
    span: Span | None = _span()


# ---------------------------------------------------------------- expressions
class Expr:
    span: Span | None


@dataclass(frozen=True)
class Num(Expr):
    value: float
    text: str
    span: Span | None = _span()

    @property
    def is_int(self) -> bool:
        return self.text.isdigit()


@dataclass(frozen=True)
class Name(Expr):
    id: str
    span: Span | None = _span()


@dataclass(frozen=True)
class Access(Expr):
    name: str
    indices: tuple[Expr, ...]
    span: Span | None = _span()
    name_span: Span | None = _span()


@dataclass(frozen=True)
class Sum(Expr):
    binders: tuple[Binder, ...]
    body: Expr
    span: Span | None = _span()
    where: Expr | None = None         # `sum[j | p](e)`: the points where p holds


@dataclass(frozen=True)
class Reduce(Expr):
    """`max[j](e)`, `min[j](e)`, `logsumexp[j](e)`, optionally `op[j | p](e)`."""
    op: str
    binders: tuple[Binder, ...]
    body: Expr
    where: Expr | None = None
    span: Span | None = _span()


@dataclass(frozen=True)
class Bracket(Expr):
    pred: Expr
    span: Span | None = _span()


@dataclass(frozen=True)
class Call(Expr):
    fn: str
    args: tuple[Expr, ...]
    span: Span | None = _span()
    name_span: Span | None = _span()


@dataclass(frozen=True)
class Paren(Expr):
    inner: Expr
    span: Span | None = _span()


@dataclass(frozen=True)
class BinOp(Expr):
    op: str                   # + - * / **
    left: Expr
    right: Expr
    span: Span | None = _span()


@dataclass(frozen=True)
class Neg(Expr):
    operand: Expr
    span: Span | None = _span()


@dataclass(frozen=True)
class Compare(Expr):
    """A comparison chain `a < b <= c`: operands and the operators between them."""
    operands: tuple[Expr, ...]
    ops: tuple[str, ...]
    span: Span | None = _span()


@dataclass(frozen=True)
class BoolOp(Expr):
    op: str                   # "and" / "or"
    left: Expr
    right: Expr
    span: Span | None = _span()


@dataclass(frozen=True)
class Not(Expr):
    operand: Expr
    span: Span | None = _span()


# ---------------------------------------------------------------- statements
class Stmt:
    span: Span | None


@dataclass(frozen=True)
class Assign(Stmt):
    """`name = e` (binders is None) or `name[i, j: n] = e`."""
    name: str
    binders: tuple[Binder, ...] | None
    expr: Expr
    span: Span | None = _span()
    name_span: Span | None = _span()


@dataclass(frozen=True)
class Destructure(Stmt):
    """`a, b = f(x)`: names for the parts of a tuple-returning call."""
    names: tuple[str, ...]
    expr: Expr
    span: Span | None = _span()
    name_spans: tuple[Span, ...] | None = _span()


@dataclass(frozen=True)
class Return(Stmt):
    exprs: tuple[Expr, ...]
    span: Span | None = _span()


@dataclass(frozen=True)
class FuncDef:
    name: str
    params: tuple[Param, ...]
    ret: tuple[TypeNode, ...] | None     # None: no annotation
    ret_is_tuple: bool
    body: tuple[Stmt, ...]
    span: Span | None = _span()
    name_span: Span | None = _span()


@dataclass(frozen=True)
class ModuleAST:
    functions: tuple[FuncDef, ...]
    filename: str = "<string>"


def children(e) -> list:
    """The sub-expressions of an expression node, in source order."""
    if isinstance(e, Paren):
        return [e.inner]
    if isinstance(e, (BinOp, BoolOp)):
        return [e.left, e.right]
    if isinstance(e, (Neg, Not)):
        return [e.operand]
    if isinstance(e, Compare):
        return list(e.operands)
    if isinstance(e, Bracket):
        return [e.pred]
    if isinstance(e, Call):
        return list(e.args)
    if isinstance(e, Access):
        return list(e.indices)
    if isinstance(e, (Sum, Reduce)):
        return ([e.where] if e.where is not None else []) + [e.body]
    return []

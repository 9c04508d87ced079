"""The AST as parsed, in a fully parenthesised prefix form (``tensorlang explain``)."""
from __future__ import annotations

from . import ast as A


def sexpr(e) -> str:
    """An expression as a fully parenthesised prefix form: shows how it parsed."""
    if isinstance(e, A.Num):
        return e.text
    if isinstance(e, A.Name):
        return e.id
    if isinstance(e, A.Paren):
        return sexpr(e.inner)
    if isinstance(e, A.Access):
        return f"{e.name}[{', '.join(sexpr(i) for i in e.indices)}]"
    if isinstance(e, (A.Sum, A.Reduce)):
        op = "sum" if isinstance(e, A.Sum) else e.op
        where = f" | {sexpr(e.where)}" if e.where is not None else ""
        return f"({op} [{_binders(e.binders)}{where}] {sexpr(e.body)})"
    if isinstance(e, A.Bracket):
        return f"[{sexpr(e.pred)}]"
    if isinstance(e, A.Call):
        return f"({e.fn} {' '.join(sexpr(a) for a in e.args)})"
    if isinstance(e, (A.BinOp, A.BoolOp)):
        # a left-leaning chain (a long flat sum) is built in a loop, not by recursion
        chain = []
        while isinstance(e, (A.BinOp, A.BoolOp)):
            chain.append(e)
            e = e.left
        out = sexpr(e)
        for b in reversed(chain):
            out = f"({b.op} {out} {sexpr(b.right)})"
        return out
    if isinstance(e, A.Neg):
        return f"(- {sexpr(e.operand)})"
    if isinstance(e, A.Compare):
        parts = [sexpr(e.operands[0])]
        for op, x in zip(e.ops, e.operands[1:]):
            parts += [op, sexpr(x)]
        return f"({' '.join(parts)})"
    if isinstance(e, A.Not):
        return f"(not {sexpr(e.operand)})"
    raise TypeError(e)


def _binders(binders) -> str:
    return ", ".join(b.name + (f": {b.dim.value}" if b.dim is not None else "") for b in binders)


def dump_ast(fn: A.FuncDef) -> str:
    """A function as parsed: its signature, then each statement in prefix form."""
    params = ", ".join(f"{p.name}: {p.type}" for p in fn.params)
    ret = ""
    if fn.ret is not None:
        types = ", ".join(str(t) for t in fn.ret)
        ret = f" -> ({types})" if fn.ret_is_tuple else f" -> {types}"
    lines = [f"def {fn.name}({params}){ret}"]
    for st in fn.body:
        if isinstance(st, A.Assign):
            lhs = st.name + (f"[{_binders(st.binders)}]" if st.binders else "")
            lines.append(f"  {lhs} = {sexpr(st.expr)}")
        elif isinstance(st, A.Destructure):
            lines.append(f"  {', '.join(st.names)} = {sexpr(st.expr)}")
        else:
            lines.append(f"  return {', '.join(sexpr(e) for e in st.exprs)}")
    return "\n".join(lines)

"""Canonical printer: Tensor SSA -> `.tl` text.

The output is valid source: parsing and lowering it gives back an equal
program, and printing that again gives the same bytes.  Every index range is
written explicitly (``y[i: n]``, ``sum[j: n]``) so the text needs no inference.
"""
from __future__ import annotations

from .. import sizexpr
from .ir import (Access, AnyOf, Apply, Affine, Gather, Group, IdxCmp, IndexVar, NotAtom,
                 Program, Reduce, Rel, SizeValue, SizeVar, Stmt, Term, ValCmp)


def fmt_num(x: float) -> str:
    text = repr(float(x))
    if text in ("inf", "-inf", "nan"):
        raise ValueError(f"cannot print non-finite constant {x}")
    return text


def fmt_dim(d) -> str:
    return str(d)


def _atom_text(a) -> str:
    if isinstance(a, IndexVar):
        return a.name
    if isinstance(a, SizeVar):
        return sizexpr.display(a.name)      # a derived size `(n - k + 1)` in brackets
    if isinstance(a, Gather):
        return f"{a.name}[{', '.join(fmt_affine(i) for i in a.idx)}]"
    raise TypeError(a)


def _signed_parts(aff: Affine) -> list[tuple[int, str]]:
    """Signed pieces in reading order: positive atoms, positive constant, the rest."""
    pos = [(c, _atom_text(a)) for a, c in aff.terms if c > 0]
    neg = [(c, _atom_text(a)) for a, c in aff.terms if c < 0]
    parts = [(1, t if c == 1 else f"{c} * {t}") for c, t in pos]
    if aff.const > 0:
        parts.append((1, str(aff.const)))
    parts += [(-1, t if c == -1 else f"{-c} * {t}") for c, t in neg]
    if aff.const < 0:
        parts.append((-1, str(-aff.const)))
    return parts


def fmt_affine(aff: Affine) -> str:
    parts = _signed_parts(aff)
    if not parts:
        return "0"
    out = ("-" if parts[0][0] < 0 else "") + parts[0][1]
    for sign, text in parts[1:]:
        out += (" + " if sign > 0 else " - ") + text
    return out


def _split_index_cmp(aff: Affine):
    """aff = V + S + k: index/gather part V, size part S, constant k."""
    v = Affine.make(0, [(a, c) for a, c in aff.terms if not isinstance(a, SizeVar)])
    s = Affine.make(0, [(a, c) for a, c in aff.terms if isinstance(a, SizeVar)])
    return v, s, aff.const


def fmt_idxcmp(atom: IdxCmp) -> str:
    aff = atom.aff
    if atom.op == "%":
        text = fmt_affine(aff)
        if len(_signed_parts(aff)) > 1 or text.startswith("-"):
            text = f"({text})"
        return f"{text} % {atom.mod} == 0"
    v, s, k = _split_index_cmp(aff)
    if atom.op in ("==", "!="):
        # Positive atoms on the left, everything else moved to the right.
        left = Affine.make(0, [(a, c) for a, c in aff.terms if c > 0])
        right = (aff - left).scale(-1)
        if not left.terms:
            left, right = right, Affine(0)
        return f"{fmt_affine(left)} {atom.op} {fmt_affine(right)}"
    # aff >= 0
    if not v.terms:
        return f"{fmt_affine(s)} >= {fmt_affine(Affine(-k))}"
    if v.terms[0][1] > 0:
        return f"{fmt_affine(v)} >= {fmt_affine(s.scale(-1).shift(-k))}"
    # -V <= S + k, written with < when that reads better (i + 1 < n).
    nv = v.scale(-1)
    if s.terms and k <= -1:
        return f"{fmt_affine(nv.shift(-k - 1))} < {fmt_affine(s)}"
    return f"{fmt_affine(nv)} <= {fmt_affine(s.shift(k))}"


def fmt_atom(atom) -> str:
    if isinstance(atom, IdxCmp):
        return fmt_idxcmp(atom)
    if isinstance(atom, Rel):
        return f"{atom.name}[{', '.join(fmt_affine(i) for i in atom.idx)}]"
    if isinstance(atom, ValCmp):
        left = fmt_body(atom.left)
        if not (_reads_values(atom.left) or _reads_values(atom.right)):
            # `n > m` would parse as an index comparison; `1.0 * n > m` is a value one.
            left = f"1.0 * ({left})" if len(atom.left) > 1 else f"1.0 * {left}"
        return f"{left} {atom.op} {fmt_body(atom.right)}"
    if isinstance(atom, NotAtom):
        inner = fmt_atom(atom.atom)
        if isinstance(atom.atom, (AnyOf,)):
            return f"not {inner}"
        return f"not ({inner})" if isinstance(atom.atom, (IdxCmp, ValCmp)) else f"not {inner}"
    if isinstance(atom, AnyOf):
        alts = [" and ".join(_atom_in_and(a) for a in alt) or "0 == 0" for alt in atom.alts]
        return "(" + " or ".join(alts) + ")"
    raise TypeError(atom)


def _reads_values(body) -> bool:
    """Does the printed body show the parser it is a float value (a decimal, a read, a call)?"""
    for t in body:
        if t.sums or t.pred or not float(t.coeff).is_integer():
            return True
        for f, p in t.factors:
            if not isinstance(f, SizeValue) or p != 1:
                return True
    return not body                         # `0.0`


def _atom_in_and(atom) -> str:
    return fmt_atom(atom)


def fmt_pred(pred) -> str:
    return " and ".join(fmt_atom(a) for a in pred)


def fmt_factor(f) -> str:
    if isinstance(f, Access):
        return f.name if not f.idx else f"{f.name}[{', '.join(fmt_affine(i) for i in f.idx)}]"
    if isinstance(f, Apply):
        return f"{f.fn}({', '.join(fmt_body(b) for b in f.args)})"
    if isinstance(f, Group):
        return f"({fmt_body(f.body)})"
    if isinstance(f, SizeValue):
        return f.name
    if isinstance(f, Reduce):
        over = ", ".join(f"{n}: {fmt_dim(d)}" for n, d in f.over)
        where = f" | {_filter_text(f.where)}" if f.where else ""
        return f"{f.op}[{over}{where}]({fmt_body(f.body)})"
    raise TypeError(f)


def _filter_text(where) -> str:
    """A reduction's filter; the contradiction of a reduction over no point as `0 >= 1`
    (fmt_idxcmp cannot show a constant comparison)."""
    return " and ".join("0 >= 1" if isinstance(a, IdxCmp) and a.aff.is_const else fmt_atom(a)
                        for a in where)


def _powered(f, p: float) -> str:
    base = fmt_factor(f)
    if p == 1:
        return base
    return f"{base} ** {fmt_num(p)}"


def _product_text(term: Term, with_coeff: float | None) -> str:
    """pred, numerator and denominator of a term, optionally led by a coefficient."""
    num = []
    if with_coeff is not None:
        num.append(fmt_num(with_coeff))
    if term.pred:
        num.append(f"[{fmt_pred(term.pred)}]")
    den = []
    for f, p in term.factors:
        if p > 0:
            num.append(_powered(f, p))
        else:
            den.append(_powered(f, -p))
    text = " * ".join(num) if num else "1.0"
    for d in den:
        text += f" / {d}"
    return text


def fmt_term_abs(term: Term) -> str:
    """The term with the sign of its coefficient removed (the caller writes it)."""
    c = abs(term.coeff)
    if term.sums:
        inner = _product_text(term, None)
        sums = ", ".join(f"{n}: {fmt_dim(d)}" for n, d in term.sums)
        text = f"sum[{sums}]({inner})"
        return text if c == 1 else f"{fmt_num(c)} * {text}"
    if not term.pred and not term.factors:
        return fmt_num(c)
    return _product_text(term, None if c == 1 else c)


def fmt_body(body) -> str:
    if not body:
        return "0.0"
    out = ""
    for k, t in enumerate(body):
        neg = t.coeff < 0
        text = fmt_term_abs(t)
        if k == 0:
            out = ("-" if neg else "") + text
        else:
            out += (" - " if neg else " + ") + text
    return out


def fmt_type(elem: str, dims) -> str:
    return elem if not dims else f"{elem}[{', '.join(fmt_dim(d) for d in dims)}]"


def fmt_stmt(s: Stmt) -> str:
    lhs = s.name
    if s.indices:
        lhs += "[" + ", ".join(f"{n}: {fmt_dim(d)}" for n, d in s.indices) + "]"
    return f"{lhs} = {fmt_body(s.body)}"


def print_program(prog: Program) -> str:
    from .names import readable_binders
    prog = spelled_gathers(readable_binders(prog))
    shapes = prog.shapes()
    params = ", ".join(f"{p.name}: {fmt_type(p.elem, p.dims)}" for p in prog.params)
    out_types = [fmt_type(*shapes[o]) for o in prog.outputs]
    ret = f"({', '.join(out_types)})" if prog.tuple_return else out_types[0]
    lines = [f"def {prog.name}({params}) -> {ret}:"]
    for s in prog.stmts:
        lines.append("    " + fmt_stmt(s))
    lines.append("    return " + ", ".join(prog.outputs))
    return "\n".join(lines) + "\n"




def _computed_label(aff: Affine) -> bool:
    """Is this index a gathered label with arithmetic (`y[s] - 1`), which the
    language does not accept as an index (a label stands alone there)?"""
    return (any(isinstance(a, Gather) for a, _ in aff.terms)
            and not (aff.const == 0 and len(aff.terms) == 1 and aff.terms[0][1] == 1))


def spelled_gathers(prog: Program) -> Program:
    """prog with every read at a computed label written as the language allows.

    Bracket elimination turns `sum[k]([k + 1 == y[s]] * cdf[s, k])` into
    `[y[s] >= 1 and y[s] <= m] * cdf[s, y[s] - 1]`; the source language lets a
    label stand alone as an index only, so such a read prints as the sum it came
    from, `(sum[q: m]([q == y[s] - 1] * cdf[s, q]))`: the same value (one point at
    most, the read's own), so the text parses back to a program that computes the
    same.  The new index takes a name no statement, tensor or size uses."""
    from . import traverse as T
    from .names import binder_names_of, unique_name
    shapes = prog.shapes()
    used = ({p.name for p in prog.params} | {s.name for s in prog.stmts} | set(prog.sizes())
            | set(binder_names_of(prog)))

    def spelled(f: Access) -> Group:
        idx, sums, pred = list(f.idx), [], []
        for k, aff in enumerate(f.idx):
            if _computed_label(aff):
                q = unique_name("q", used)
                used.add(q)
                sums.append((q, shapes[f.name][1][k]))
                pred.append(IdxCmp("==", Affine.of(IndexVar(q)) - aff))
                idx[k] = Affine.of(IndexVar(q))
        return Group((Term(1.0, tuple(sums), tuple(pred), ((Access(f.name, tuple(idx)), 1.0),)),))

    def term(t: Term) -> Term:
        t = T.map_term_children(t, body, T.keep)
        if not any(isinstance(f, Access) and any(_computed_label(a) for a in f.idx)
                   for f, _ in t.factors):
            return t
        factors = tuple((spelled(f) if isinstance(f, Access) and any(
            _computed_label(a) for a in f.idx) else f, p) for f, p in t.factors)
        return Term(t.coeff, t.sums, t.pred, factors)

    def body(b: tuple) -> tuple:
        new = tuple(term(t) for t in b)
        return b if all(x is y for x, y in zip(new, b)) else new

    stmts = tuple(Stmt(s.name, s.indices, body(s.body), s.span) for s in prog.stmts)
    if all(a.body is b.body for a, b in zip(stmts, prog.stmts)):
        return prog
    return Program(prog.name, prog.params, stmts, prog.outputs, prog.tuple_return)


def sort_key(obj) -> str:
    """A deterministic key for canonical ordering of terms, factors and atoms."""
    if isinstance(obj, Term):
        sums = ",".join(f"{n}:{d}" for n, d in obj.sums)
        inner = Term(1.0, (), obj.pred, obj.factors)
        return f"{sums}|{_product_text(inner, None)}"
    if isinstance(obj, (IdxCmp, Rel, ValCmp, NotAtom, AnyOf)):
        return fmt_atom(obj)
    return fmt_factor(obj)

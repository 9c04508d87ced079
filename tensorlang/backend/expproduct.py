"""Statements that are a sum of exponentials of separable terms, run as a matrix product.

    X[k, l] = c * sum[m]([guards on m] * G * exp(e_1 + e_2 + ...))

where each factor of G and each term e_i is a product of reads whose indices depend on
k, l and m in any way except all three at once, is one exponential per (k, l, m) as
written: a kernel takes K1 K2 M of them.  Split by the indices they depend on, the terms
are P[k, l] + Q[m, k] + R[m, l] (a term over m alone goes with R) and the factors
Go[k, l] Gk[m, k] Gl[m, l], and stepmath.expproduct computes the sum with the shifts it
documents as M (K1 + K2) + K1 K2 exponentials and one BLAS product, with the entries
whose shifted factors leave the range of doubles summed as written.  (An HMM's gradient
with respect to its transition matrix is of this form: its kernel took 25-30 times the
forward's time.)

`exp_product` recognises the form from the statement alone (never from a name: the
output's first index plays k, its second l, the sum's index m); `driver_lines` builds
the operands with NumPy (the rows m where the guards hold, a view when they are
consecutive, stepmath.take; an operand of one read of whole rows is that read, not a
copy, stepmath.operand; a G without factors is None) and `call` runs the product.  The
driver runs the statement's own kernel instead below stepmath.PRODUCT_MIN_TERMS terms.
This is a choice of kernel: the statement, its cost and its value are those of the
program.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..memo import Memo
from ..shared import pass_statements, shared_passes
from ..ssa.ir import Access, Affine, Apply, Gather, IdxCmp, IndexVar, SizeVar, Stmt

# The operands, by the indices they range over (stepmath.expproduct's arguments).
AXES = {"P": "kl", "Q": "mk", "R": "ml", "Go": "kl", "Gk": "mk", "Gl": "ml"}


@dataclass(frozen=True)
class Read:
    """An access as operand text: per axis ('fixed', affine), ('out', role, offset)
    (role 'k' or 'l', the index plus a size-affine offset) or ('sum', affine in m)."""
    name: str
    axes: tuple


@dataclass(frozen=True)
class ExpProduct:
    name: str
    out: tuple               # ((k, dim), (l, dim))
    over: tuple              # (m, dim)
    guards: tuple            # IdxCmp atoms over m and sizes
    coeff: float
    exponent: tuple          # (operand P/Q/R, coeff, ((Read, power), ...)) per term
    factors: tuple           # (operand Go/Gk/Gl, Read, power) per factor

    def terms(self, names) -> str:
        """The number of terms as written, K1 K2 M, as a driver expression."""
        dims = [_dim(d, names) for d in (self.out[0][1], self.out[1][1], self.over[1])]
        return " * ".join(dims)

    def work(self, names) -> str:
        """The product's multiply-adds times two, as a driver expression."""
        dims = [_dim(d, names) for d in (self.out[0][1], self.out[1][1], self.over[1])]
        return "(" + " * ".join(["2"] + dims) + ")"

    def driver_lines(self, names) -> list[str]:
        """Driver statements leaving the summed index's values in xp_m and the operands
        in xp_P .. xp_Gl, for `call`."""
        m, dm = self.over
        dk, dl = _dim(self.out[0][1], names), _dim(self.out[1][1], names)
        index = {"k": (self.out[0][0], dk), "l": (self.out[1][0], dl)}
        # the values of m where the guards hold
        lines = [f"xp_m = np.arange({_dim(dm, names)})"]
        if self.guards:
            keep = " & ".join(_guard_text(g, m, names) for g in self.guards)
            lines.append(f"xp_m = xp_m[np.broadcast_to({keep}, xp_m.shape)]")
        shape = {"k": dk, "l": dl, "m": "xp_m.shape[0]"}
        for op, axes in AXES.items():
            if op.startswith("G"):
                parts = [_read_text(r, p, axes, index, m, names)
                         for o, r, p in self.factors if o == op]
                if not parts:
                    lines.append(f"xp_{op} = None")
                    continue
                value = " * ".join(parts)
            else:
                value = ""
                for o, c, reads in self.exponent:
                    if o != op:
                        continue
                    text = " * ".join(_read_text(r, p, axes, index, m, names) for r, p in reads)
                    sign = "-" if c < 0 else "+"
                    if abs(c) != 1 or not text:
                        text = f"{abs(c)!r} * {text}" if text else repr(abs(c))
                    value += f" {sign} {text}" if value or sign == "-" else text
                value = value.strip() or "0.0"
            lines.append(f"xp_{op} = tl_operand({value}, ({', '.join(shape[a] for a in axes)}))")
        return lines

    def call(self, names) -> str:
        dk, dl = _dim(self.out[0][1], names), _dim(self.out[1][1], names)
        return (f"tl_expproduct(xp_P, xp_Q, xp_R, xp_Gk, xp_Gl, xp_Go, {self.coeff!r}, "
                f"tl_empty(({dk}, {dl})))")

    # what the driver deletes after the call (the operands hold M (K1 + K2) entries each)
    TEMPORARIES = "del xp_m, xp_P, xp_Q, xp_R, xp_Go, xp_Gk, xp_Gl"


def _dim(d, names) -> str:
    return names.size(d) if isinstance(d, str) else str(d)


def _affine_text(a: Affine, m: str, names) -> str:
    """An affine form over sizes and the summed index m (as the array xp_m)."""
    parts = [str(a.const)] if a.const else []
    for x, c in a.terms:
        var = "xp_m" if isinstance(x, IndexVar) and x.name == m else names.size(x.name)
        parts.append(f"{c} * {var}")
    return " + ".join(parts) or "0"


def _guard_text(g: IdxCmp, m: str, names) -> str:
    text = _affine_text(g.aff, m, names)
    if g.op == "%":
        return f"(({text}) % {g.mod} == 0)"
    return f"(({text}) {g.op} 0)"


def _read_text(r: Read, power: float, want: str, index: dict, m: str, names) -> str:
    """NumPy text of a read, its axes ordered as `want` (a length-1 axis for each of
    want's indices it does not depend on)."""
    subs, have = [], []
    for kind, *rest in r.axes:
        if kind == "fixed":
            subs.append(_affine_text(rest[0], m, names))
        elif kind == "out":
            role, off = rest
            lo = _affine_text(off, m, names)
            subs.append(f":{index[role][1]}" if lo == "0" else f"{lo}:{lo} + {index[role][1]}")
            have.append(role)
        else:
            subs.append(":")
            have.append("m")
    text = f"env[{r.name!r}]" + (f"[{', '.join(subs)}]" if subs else "")
    for kind, *rest in r.axes:
        if kind == "sum":
            text = f"tl_take({text}, {_affine_text(rest[0], m, names)}, {have.index('m')})"
    order = [have.index(a) for a in want if a in have]
    if order != sorted(order):
        text = f"{text}.transpose({', '.join(map(str, order))})"
    if have and len(have) < len(want):
        text += "[" + ", ".join(":" if a in have else "None" for a in want) + "]"
    if power != 1:
        text = f"({text}) ** {power!r}"
    return text


def _plain_sizes(a: Affine) -> bool:
    return all(isinstance(x, SizeVar) for x, _ in a.terms)


def _read(f: Access, roles: dict) -> tuple[Read, set] | None:
    """The Read of an access and the roles it depends on, or None when an axis mixes
    indices, an output index is scaled, or an index is read on two axes."""
    axes, seen = [], set()
    for a in f.idx:
        if any(isinstance(x, Gather) for x in a.atoms()):
            return None
        used = a.index_vars()
        if not used:
            axes.append(("fixed", a))
            continue
        if len(used) != 1:
            return None
        (v,) = used
        role = roles.get(v)
        if role is None or role in seen:
            return None
        seen.add(role)
        if role == "m":
            axes.append(("sum", a))
            continue
        coef = dict((x, c) for x, c in a.terms if isinstance(x, IndexVar))
        off = Affine.make(a.const, [(x, c) for x, c in a.terms if not isinstance(x, IndexVar)])
        if list(coef.values()) != [1] or not _plain_sizes(off):
            return None
        axes.append(("out", role, off))
    return Read(f.name, tuple(axes)), seen


def _reads(factors, roles: dict):
    """((Read, power), ...) and their roles for a product of reads, or None."""
    out, used = [], set()
    for f, p in factors:
        if not isinstance(f, Access):
            return None
        r = _read(f, roles)
        if r is None:
            return None
        out.append((r[0], p))
        used |= r[1]
    return tuple(out), used


def exp_product(st: Stmt) -> ExpProduct | None:
    """The statement as an ExpProduct, or None when it is not of the form."""
    if len(st.indices) != 2 or len(st.body) != 1:
        return None
    t = st.body[0]
    if len(t.sums) != 1:
        return None
    (k, dk), (l, dl) = st.indices
    m, dm = t.sums[0]
    if len({k, l, m}) != 3:
        return None
    roles = {k: "k", l: "l", m: "m"}
    for g in t.pred:
        if not isinstance(g, IdxCmp) or not g.aff.index_vars() <= {m} \
                or any(isinstance(x, Gather) for x in g.aff.atoms()):
            return None
    # exp(x)^p exp(y) ... is exp(p x + y + ...)
    exps = [(f, p) for f, p in t.factors if isinstance(f, Apply) and f.fn == "exp"]
    if not exps or any(len(f.args) != 1 for f, _ in exps):
        return None
    exponent = []
    for f, p in exps:
        for term in f.args[0]:
            if term.sums or term.pred:
                return None
            got = _reads(term.factors, roles)
            if got is None or got[1] == {"k", "l", "m"}:
                return None
            reads, used = got
            op = "P" if "m" not in used else ("Q" if "k" in used else "R")
            exponent.append((op, p * term.coeff, reads))
    factors = []
    for f, p in t.factors:
        if (f, p) in exps:
            continue
        got = _reads(((f, p),), roles)
        if got is None or got[1] == {"k", "l", "m"}:
            return None
        used = got[1]
        op = "Go" if "m" not in used else ("Gk" if "k" in used else "Gl")
        factors.append((op, got[0][0][0], p))
    return ExpProduct(st.name, st.indices, t.sums[0], t.pred, t.coeff, tuple(exponent),
                      tuple(factors))


# ------------------------------------------------------------ shared passes as they run
# The statements of a program that run as products, by program (the preparation asks
# for the backend's passes at every stage).
_AS_PRODUCTS = Memo(4096)


def _run_as_products(prog) -> frozenset:
    return _AS_PRODUCTS.compute(prog, lambda: frozenset(
        st.name for st in prog.stmts if exp_product(st) is not None))


def passes_as_run(prog) -> tuple:
    """The shared passes (tensorlang/shared.py) the backend runs: formed among the
    statements that do not run as a product of exponentials.  Such a statement takes
    M (K1 + K2) + K1 K2 exponentials as a product, fewer than a pass evaluating one per
    point; the others of its pass then share one evaluation among themselves (the cost
    model, which charges the product as written, counts a pass with it as host: an
    upper bound of this)."""
    return shared_passes(prog, _run_as_products(prog))


def pass_statements_as_run(prog) -> set[str]:
    """Every statement of `passes_as_run(prog)`."""
    return pass_statements(prog, _run_as_products(prog))

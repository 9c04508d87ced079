"""Row groups: consecutive statements run as one loop over a shared leading index.

A GMM's gradient computes, for every point i, tensors `xc[i, k, j]`, `z[i, k, r]`, their
adjoints, and sums of them over the points.  Each such statement on its own is a loop nest
over all n points whose result is stored whole: at a million points every n x K x D
intermediate is gigabytes, written once and read back by the next statement, with fresh
pages faulted in on every call.  None of them is needed whole: statement after statement
reads row i of the one before.

A **row group** is a run of statements over one leading extent N (a size symbol):

* a *row statement* has N as its first index, say i, and reads every earlier row statement
  of the group at row i (`T[i, ...]`, the first index exactly i);
* a *row reduction* sums over N: every term sums over one index p of range N and reads the
  group's row statements at row p only (`R[k, l] = sum[p](xc[p, k, l] * z_bar[p, k, l])`).
  Nothing in the group reads a reduction (it is complete only after the loop).

The group runs as one loop over the rows: per row, each row statement's kernel writes its
row (a slice of D values, or a scalar) and each reduction adds that row's term to an
accumulator.  A row statement that only the group reads is **contracted** to a buffer of
one row, allocated once per loop (per thread); the others are written into their whole
arrays.  In parallel the rows are split into one contiguous chunk per thread, each with its
own buffers and its own partial sums of the reductions, which are added after the loop.

Two preparation passes make the groups long (`split_row_sums`, `order_rows`); `row_groups`
finds them in the prepared program, `row_program` writes one row as a program of its own
(as a recurrence's step is, `recur.step_program`).  Whether a call runs the group fused is
decided at run time from the bytes its contracted tensors would take (`fused`): below
`MIN_BYTES` the statements run as before (NumPy products, each kernel parallel on its own).
Only a code-generation choice: the program's meaning and cost polynomial are unchanged.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, replace

from ..ssa.ir import Access, Affine, Gather, IdxCmp, IndexVar, Program, SizeVar, Stmt, Term
from ..ssa.names import unique_name
from ..ssa.recur import group_of
from ..ssa import traverse as T
from ..ssa.traverse import iter_nodes, statement_reads
from .expproduct import exp_product, pass_statements_as_run

# A group runs fused when its contracted tensors would take at least this many bytes
# together (at smaller sizes they stay in cache, or in the heap's reused blocks, and the
# statement-by-statement form keeps its BLAS calls).  Read by the driver at each call.
# (TENSORLANG_ROWS_MIN_BYTES overrides it: 0 runs every group fused, as a test of the form.)
def _min_bytes(default: int = 32 * 2 ** 20) -> int:
    text = os.environ.get("TENSORLANG_ROWS_MIN_BYTES", "").strip()
    return int(text) if text.isdigit() else default


MIN_BYTES = _min_bytes()


# A member that the statement-by-statement form computes as a BLAS product keeps that
# form when the product sums over more than this many elements per output entry: a loop
# over the rows would make it one matrix-vector product per row, which for long sums (a
# wide layer's `sum[e](X[i, e] * W[e, c])`) is several times slower than the blocked
# matrix product, while a short one (a mixture's D x D factor) costs about what it costs
# in the product and saves storing its operands.
MAX_PRODUCT_SUM = 64


def fused(nbytes: int, sums=()) -> bool:
    """Does a call run a row group as one loop over its rows?  `nbytes`: what its
    contracted tensors would take whole; `sums`: the summed extents of its members
    that are BLAS products in the statement-by-statement form."""
    return nbytes >= MIN_BYTES and all(s <= MAX_PRODUCT_SUM for s in sums)


@dataclass(frozen=True)
class RowGroup:
    start: int               # index of the first member in prog.stmts
    stop: int                # one past the last
    extent: str              # the size symbol N the rows run over
    rows: tuple              # row statements, in order: (name, lead index name)
    reductions: tuple        # row reductions: (name, per-term summed index names)
    contracted: frozenset    # row statements read only inside the group

    @property
    def members(self) -> tuple:
        return tuple(n for n, _ in self.rows) + tuple(n for n, _ in self.reductions)


def _plain(a: Affine):
    """The index variable a is, or None."""
    if a.const or len(a.terms) != 1 or a.terms[0][1] != 1:
        return None
    atom = a.terms[0][0]
    return atom.name if isinstance(atom, IndexVar) else None


def _reads_at(x, names, var: str) -> bool:
    """Does every read in x of a tensor in `names` have `var` as its first index?"""
    for node in iter_nodes(x):
        if node.__class__ is Access and node.name in names:
            if not node.idx or _plain(node.idx[0]) != var:
                return False
    return True


def _reads_any(x, names) -> bool:
    return any(node.__class__ is Access and node.name in names for node in iter_nodes(x))


def _row_form(st: Stmt, extent: str, rows) -> bool:
    if not st.indices or st.indices[0][1] != extent:
        return False
    return _reads_at(st.body, rows, st.indices[0][0])


def _sum_index(t: Term, extent: str, rows):
    """The index of range `extent` that term t sums over and reads `rows` at, or None."""
    over = [n for n, d in t.sums if d == extent]
    if len(over) != 1 or not _reads_any(t, rows):
        return None
    return over[0] if _reads_at(t, rows, over[0]) else None


def _fixes_output(t: Term, outputs) -> bool:
    """Does a bracket of term t fix an output index (`[k == h[p]]`)?"""
    return any(isinstance(a, IdxCmp) and a.op == "==" and outputs & a.aff.index_vars()
               for a in t.pred)


def _fixes_output_by_label(t: Term, outputs) -> bool:
    """Does a bracket of term t set an output index to a label read (`[k == h[p]]`)?"""
    return any(isinstance(a, IdxCmp) and a.op == "==" and outputs & a.aff.index_vars()
               and any(isinstance(atom, Gather) for atom, _ in a.aff.terms)
               for a in t.pred)


def is_scatter(st: Stmt) -> bool:
    """Does every term of st set an output index to a label, so that one row of the sum
    adds at positions the row's labels choose (the adjoint of a gather)?  A position
    that is a function of the row index alone (`[k == 2 p]`, a strided read's adjoint)
    is not one: on its own such a sum is written once in order (kernels.strided_write)."""
    outputs = {n for n, _ in st.indices}
    return bool(outputs) and all(_fixes_output_by_label(t, outputs) for t in st.body)


def _reduction_form(st: Stmt, extent: str, rows):
    """The summed index of each term when st is a row reduction over `rows`, else None.

    A scatter (`[k == h[p]] * part[p, l]`, the adjoint of a gather) is one only when
    every term is one: the loop then adds each row's terms where they fall, into the
    running sum itself (numba_module's emit_rows), B rows of work for B rows.  A sum
    that mixed scatter terms with dense ones would clear and add a buffer of its whole
    output per row, B times the output for what is B rows of work (the embedding
    gradient of a batch with a dense term beside it)."""
    if any(d == extent for _, d in st.indices):
        return None
    outputs = {n for n, _ in st.indices}
    if any(_fixes_output(t, outputs) for t in st.body) and not is_scatter(st):
        return None
    out = tuple(_sum_index(t, extent, rows) for t in st.body)
    return None if not out or None in out else out


def _candidates(prog: Program) -> dict[str, str]:
    """Statements that could be row statements: name -> extent (first index's size).
    A sum of exponentials that runs as a matrix product (expproduct.py) is none: a row
    of it would take an exponential per term again; nor is a statement of a shared
    pass (tensorlang/shared.py), which runs in its pass's kernel."""
    members = group_of(prog)
    shared = pass_statements_as_run(prog)
    return {st.name: st.indices[0][1] for st in prog.stmts
            if st.indices and isinstance(st.indices[0][1], str) and st.name not in members
            and st.name not in shared and exp_product(st) is None}



def split_row_sums(prog: Program) -> Program:
    """Give the terms of a statement that sum a row statement over its leading index a
    statement of their own, so that sum can join the row group as a reduction.

    `a_bar[k] = c * exp(a[k]) + sum[l](b_bar[l, k])` becomes `a_bar'rows[k] =
    sum[l](b_bar[l, k])` and `a_bar[k] = c * exp(a[k]) + a_bar'rows[k]`: b_bar need not
    be stored whole for the second term to read it."""
    cand = _candidates(prog)
    members = group_of(prog)
    if not cand:
        return prog
    used = {p.name for p in prog.params} | {st.name for st in prog.stmts}
    outputs = set(prog.outputs)
    stmts, changed = [], False
    for st in prog.stmts:
        if len(st.body) < 2 or st.name in members:
            stmts.append(st)
            continue
        take, rest = [], []
        for t in st.body:
            ok = False
            for n, d in t.sums:
                rows = {c for c, e in cand.items() if e == d and c not in outputs}
                if sum(1 for _, e in t.sums if e == d) == 1 and _reads_any(t, rows) \
                        and _reads_at(t, rows, n) and not any(e == d for _, e in st.indices):
                    ok = True
                    break
            (take if ok else rest).append(t)
        if not take or not rest:
            stmts.append(st)
            continue
        name = unique_name(f"{st.name}'rows", used)
        used.add(name)
        stmts.append(Stmt(name, st.indices, tuple(take), checked_labels=st.checked_labels))
        idx = tuple(Affine.of(IndexVar(n)) for n, _ in st.indices)
        rest.append(Term(1.0, (), (), ((Access(name, idx), 1.0),)))
        stmts.append(replace(st, body=tuple(rest)))
        changed = True
    if not changed:
        return prog
    return Program(prog.name, prog.params, tuple(stmts), prog.outputs, prog.tuple_return)


def order_rows(prog: Program) -> Program:
    """Statements reordered so a row group is contiguous: from a group's first row
    statement on, a statement that reads nothing of the group (or of what must follow
    it) moves before the group, and one that reads the group without joining it moves
    after.  Any order in which every statement follows what it reads is the program.
    Of the leading extents the statements have, the one whose groups would contract
    the most elements (all sizes at one sample value) is chosen."""
    extents = sorted(set(_candidates(prog).values()))
    best, best_score = prog, _score(prog)
    for extent in extents:
        trial = _order_for(prog, extent)
        score = _score(trial)
        if score > best_score:
            best, best_score = trial, score
    if [st.name for st in best.stmts] == [st.name for st in prog.stmts]:
        return prog
    return best


def _score(prog: Program) -> int:
    shapes = {st.name: st.dims for st in prog.stmts}
    total = 0
    for g in row_groups(prog):
        for name in g.contracted:
            size = 1
            for d in shapes[name]:
                size *= d if isinstance(d, int) else 64
            total += size
    return total


def _order_for(prog: Program, extent: str) -> Program:
    stmts = list(prog.stmts)
    out: list[Stmt] = []
    members = group_of(prog)
    cand = {n: e for n, e in _candidates(prog).items() if e == extent}
    while stmts:
        k = next((i for i, st in enumerate(stmts) if st.name in cand), None)
        if k is None:
            out += stmts
            break
        out += stmts[:k]
        before, group, after = [], [stmts[k]], []
        rows, reductions, late = {stmts[k].name}, set(), set()
        for st in stmts[k + 1:]:
            reads = statement_reads(st)
            if st.name in members:          # a recurrence stays whole, after the group
                after.append(st)
                late.add(st.name)
                continue
            if reads & (reductions | late):
                after.append(st)
                late.add(st.name)
            elif st.name in cand and _row_form(st, extent, rows):
                group.append(st)
                rows.add(st.name)
            elif reads & rows and _reduction_form(st, extent, rows) is not None:
                group.append(st)
                reductions.add(st.name)
            elif reads & rows:
                after.append(st)
                late.add(st.name)
            else:
                before.append(st)
        out += before + group
        stmts = after
    return Program(prog.name, prog.params, tuple(out), prog.outputs, prog.tuple_return)


def row_groups(prog: Program) -> list[RowGroup]:
    """The row groups of a prepared program, each a run of consecutive statements with
    at least one contracted row statement of more than one element per row."""
    cand = _candidates(prog)
    members = group_of(prog)
    shared = pass_statements_as_run(prog)
    outputs = set(prog.outputs)
    stmts = prog.stmts
    groups = []
    readers: dict[str, set] = {}
    for s in stmts:
        for r in statement_reads(s):
            readers.setdefault(r, set()).add(s.name)
    k = 0
    while k < len(stmts):
        st = stmts[k]
        if st.name not in cand:
            k += 1
            continue
        extent = cand[st.name]
        rows = [(st.name, st.indices[0][0])]
        names = {st.name}
        reductions = []
        j = k + 1
        while j < len(stmts):
            s = stmts[j]
            if statement_reads(s) & {n for n, _ in reductions}:
                break
            if s.name in cand and cand[s.name] == extent and _row_form(s, extent, names):
                rows.append((s.name, s.indices[0][0]))
                names.add(s.name)
            else:
                over = _reduction_form(s, extent, names) \
                    if statement_reads(s) & names and s.name not in members \
                    and s.name not in shared else None
                if over is None:
                    break
                reductions.append((s.name, over))
            j += 1
        inside = {stmts[q].name for q in range(k, j)}
        contracted = frozenset(n for n in names if n not in outputs
                               and readers.get(n, set()) <= inside)
        # A row of several elements is what a loop over the rows saves storing whole;
        # intermediates of one element per row (a matrix-vector product's result) stay
        # with the statement-by-statement form and its BLAS calls, unless every row
        # statement is elementwise (one index, no sums) and every reduction over the
        # rows a scatter (the adjoint of a gather, added where each row's terms fall):
        # a chain such as the prefix and suffix products of a many-factor gradient, or
        # an interpolation's gathers, its adjoint's scatter and the partials beside
        # it, then runs as one loop that reads each input once and keeps the
        # intermediates in registers.
        shapes = {s.name: s.dims for s in stmts}
        byname = {s.name: s for s in stmts[k:j]}
        elementwise = (all(_elementwise(byname[n]) for n, _ in rows)
                       and all(is_scatter(byname[n]) for n, _ in reductions))
        if (any(len(shapes[n]) >= 2 for n in contracted)
                or (contracted and elementwise)) and j - k >= 2:
            groups.append(RowGroup(k, j, extent, tuple(rows), tuple(reductions), contracted))
        k = j
    return groups


def _elementwise(st: Stmt) -> bool:
    """One index, and no term sums or reduces: a value per element from reads."""
    return len(st.indices) == 1 and not T.sums_or_reduces(st.body)


def contracted_names(prog: Program) -> set[str]:
    return set().union(*(g.contracted for g in row_groups(prog))) if prog.stmts else set()


def row_program(prog: Program, g: RowGroup, symbol: str, accumulate=frozenset()) -> Program:
    """One row of group g as a program: the row index is ``S - 1`` for the size-like
    symbol S (`symbol`) the loop sets to the row number plus one.  Row statement T
    becomes ``T'row`` over T's other indices; reduction R becomes ``R'row``, its
    term for one row (R's indices, the sum over the rows taken off).  Reads of a
    contracted T at the row become reads of ``T'row``; every whole tensor read is a
    parameter.  A reduction named in `accumulate` gets the term ``R'acc[...]`` (its
    running sum, at the output's own element) added: its kernel then adds the row to
    the running sum where it stands, given that array as both output and read."""
    from ..ssa.ir import Param
    byname = {st.name: st for st in prog.stmts}
    at = Affine.of(SizeVar(symbol)).shift(-1)
    contracted = g.contracted

    def to_buffer(a: Access) -> Access:
        if a.name in contracted:
            return Access(f"{a.name}'row", a.idx[1:], a.span)
        return a

    stmts = []
    for name, lead in g.rows:
        st = byname[name]
        body = _map_reads(T.substitute(st.body, {lead: at}), to_buffer)
        stmts.append(Stmt(f"{name}'row", st.indices[1:], body, st.span))
    for name, over in g.reductions:
        st = byname[name]
        terms = []
        for t, p in zip(st.body, over):
            t = Term(t.coeff, tuple(s for s in t.sums if s[0] != p), t.pred, t.factors)
            terms.append(_map_reads(T.substitute(t, {p: at}), to_buffer))
        if name in accumulate:
            idx = tuple(Affine.of(IndexVar(n)) for n, _ in st.indices)
            terms.append(Term(1.0, (), (), ((Access(f"{name}'acc", idx), 1.0),)))
        stmts.append(Stmt(f"{name}'row", st.indices, tuple(terms), st.span))
    params = prog.params + tuple(Param(st.name, "f64", st.dims) for st in prog.stmts
                                 if st.name not in contracted)
    params += tuple(Param(f"{name}'acc", "f64", byname[name].dims) for name in accumulate)
    return Program(prog.name, params, tuple(stmts), tuple(st.name for st in stmts))


def _map_reads(x, fn):
    """x (a body or a term) with every tensor read replaced by fn(read), at any depth."""
    if isinstance(x, tuple):
        return tuple(_map_reads(t, fn) for t in x)
    t = T.map_term_children(x, lambda b: _map_reads(b, fn), T.keep)
    factors = tuple(((fn(f) if f.__class__ is Access else f), p) for f, p in t.factors)
    return Term(t.coeff, t.sums, t.pred, factors)


__all__ = ["MIN_BYTES", "RowGroup", "fused", "split_row_sums", "order_rows", "row_groups",
           "row_program", "contracted_names"]

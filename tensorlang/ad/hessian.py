"""Dense Hessians from a Hessian-vector product applied to one-hot seeds.

Input: the tangent program of a gradient (forward over reverse), in which the
tangent direction is a parameter ``d_x``.  Output: a program where ``d_x`` is
replaced by the one-hot seeds ``[a == l]`` for new generator indices ``l``
(one per dimension of x), and every statement that depended on the seed
carries those generators too.  The result ``H[k, l]`` has shape
``x.shape + x.shape``.  Bracket elimination then removes the seed loops: for
``x^T A x`` the tangent ``sum_j A[i, j] * [j == l]`` becomes ``A[i, l]``, so
the Hessian costs O(n^2), not the O(n^3) of n separate products.
"""
from __future__ import annotations

from ..ssa import build as B
from ..ssa.ir import Access, Affine, IndexVar, Program, Stmt, Term
from ..ssa.names import fresh, unique_name
from ..ssa.traverse import statement_reads
from .reverse import program_index_names


def seed_one_hot(prog: Program, seed: str, output: str, name: str) -> Program:
    """Replace parameter `seed` by one-hot brackets over fresh generator indices."""
    shapes = prog.shapes()
    seed_dims = shapes[seed][1]
    taken = program_index_names(prog) | {p.name for p in prog.params} | set(prog.sizes()) \
        | {s.name for s in prog.stmts}
    gens = []
    for d in seed_dims:
        g = fresh("l" if not gens else "m")
        taken.add(g)
        gens.append((g, d))
    gens = tuple(gens)
    gen_affs = tuple(Affine.of(IndexVar(g)) for g, _ in gens)

    # What depends on the seed (until nothing changes: a recurrence group reads its
    # later members); seeded statements get the seed's generators after their own,
    # so a group's leading indices stay leading.
    seeded = {seed}
    while True:
        more = {s.name for s in prog.stmts if statement_reads(s) & seeded} - seeded
        if not more:
            break
        seeded |= more
    stmts = []
    for s in prog.stmts:
        if s.name not in seeded:
            stmts.append(s)
            continue
        body = _reseed(s.body, seeded, seed, gen_affs, {n for n, _ in s.indices} | {g for g, _ in gens})
        stmts.append(Stmt(s.name, s.indices + gens, body, s.span))
    params = tuple(p for p in prog.params if p.name != seed)
    out = output
    if out == seed:
        # The output is the direction itself (the tangent of a function that returns
        # its parameter): the identity, one bracket per dimension, in a statement of
        # its own, since the seed parameter is gone.
        z = unique_name(f"{out}_h", taken)
        idx = tuple((fresh("i"), d) for d in seed_dims)
        read = B.factor_body(Access(seed, tuple(Affine.of(IndexVar(i)) for i, _ in idx)), 1)
        stmts.append(Stmt(z, idx + gens, _reseed(read, seeded, seed, gen_affs,
                                                  {i for i, _ in idx} | {g for g, _ in gens})))
        out = z
    elif out not in seeded:
        # The Hessian does not depend on the direction at all: it is zero.
        z = unique_name(f"{out}_h", taken)
        dims = shapes[out][1] + seed_dims
        stmts.append(Stmt(z, tuple((fresh("i"), d) for d in dims), ()))
        out = z
    return Program(name, params, tuple(stmts), (out,), False)


def _reseed(body, seeded: set[str], seed: str, gen_affs, scope: set[str]):
    out = []
    for t in body:
        out.extend(_reseed_term(t, seeded, seed, gen_affs, scope))
    return B.canon_body(out)


def _reseed_term(t: Term, seeded, seed, gen_affs, scope):
    from ..ssa.ir import Apply, Group, Reduce
    inner = set(scope) | {n for n, _ in t.sums}
    body = (Term(t.coeff, (), t.pred, ()),)
    for f, p in t.factors:
        if isinstance(f, Access) and f.name == seed:
            eqs = tuple(B.norm_cmp("==", a, g) for a, g in zip(f.idx, gen_affs))
            piece = B.pred_body(eqs)
            piece = piece if p == 1 else B.power(piece, p)
        elif isinstance(f, Access) and f.name in seeded:
            piece = B.factor_body(Access(f.name, f.idx + gen_affs, f.span), p)
        elif isinstance(f, Apply):
            piece = B.factor_body(Apply(f.fn, tuple(_reseed(a, seeded, seed, gen_affs, inner)
                                                     for a in f.args)), p)
        elif isinstance(f, Group):
            piece = B.factor_body(Group(_reseed(f.body, seeded, seed, gen_affs, inner)), p)
        elif isinstance(f, Reduce):
            # the program at each seed: every seeded read inside gains the seed indices
            over = inner | {n for n, _ in f.over}
            where = tuple(_reseed_atom(a, seeded, seed, gen_affs, over) for a in f.where)
            piece = B.factor_body(Reduce(f.op, f.over, where,
                                         _reseed(f.body, seeded, seed, gen_affs, over)), p)
        else:
            piece = B.factor_body(f, p)
        body = B.mul(body, piece, inner)
    return [Term(u.coeff, t.sums + u.sums, u.pred, u.factors) for u in body]


def _reseed_atom(a, seeded, seed, gen_affs, scope):
    """A reduction's filter atom at each seed (a value comparison may read seeded tensors)."""
    from ..ssa import traverse as T
    return T.map_atom(a, lambda b: _reseed(b, seeded, seed, gen_affs, scope), T.keep)

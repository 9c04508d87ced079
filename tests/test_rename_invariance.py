"""No cost depends on what the indices are called.

Every function of the examples, the benchmark workloads and the regression
suite is compiled again with every index binder renamed through a fixed
permutation onto fresh names (reversed alphabetical order, and two seeded
shuffles), printed as `.tl` and parsed back.  The cost of the function, of its
gradient (a vjp for tensor outputs) and its jvp with respect to each f64
parameter, and of the Hessian of a scalar function with respect to each vector
parameter, must be the same polynomial as for the original names.  A choice
made by name, such as eliminating an equality for whichever index sorts first,
shows up here as a different polynomial for some permutation.
"""
import keyword
import pathlib
import random

import pytest

import tensorlang as tl
from tensorlang.builtins import BUILTINS
from tensorlang.ssa.names import binder_names_of, rename_binders
from tensorlang.ssa.printer import print_program
from suite_programs import CASES

ROOT = pathlib.Path(__file__).resolve().parent.parent
FILES = sorted((ROOT / "examples").glob("*.tl")) + sorted((ROOT / "benchmarks" / "workloads").glob("*.tl"))
SOURCES = ([(p.relative_to(ROOT).as_posix(), p.read_text()) for p in FILES]
           + [(f"suite:{k}", c["src"]) for k, c in CASES.items()])

LETTERS = "abcdefghijklmnopqrstuvwxyz"
POOL = list(LETTERS) + [a + b for a in LETTERS for b in LETTERS]
RESERVED = (set(BUILTINS) | set(keyword.kwlist)
            | {"sum", "max", "min", "logsumexp", "and", "or", "not", "def", "return"})


def permutations(prog) -> dict[str, dict[str, str]]:
    """Renamings of every binder of prog onto fresh names: the binders in sorted order
    go to the fresh names in reverse order, or in two seeded shuffles of them."""
    taken = ({p.name for p in prog.params} | {s.name for s in prog.stmts} | set(prog.sizes())
             | RESERVED)
    names = sorted(binder_names_of(prog))
    pool = [p for p in POOL if p not in taken and p not in names][:len(names)]
    out = {"reversed": dict(zip(names, reversed(pool)))}
    for seed in (1, 2):
        shuffled = list(pool)
        random.Random(seed).shuffle(shuffled)
        out[f"shuffled{seed}"] = dict(zip(names, shuffled))
    return out


def costs(f) -> dict[str, str]:
    """The printed cost of f and of its derivatives, by what they are."""
    prog = f.program
    scalar = len(prog.outputs) == 1 and prog.shapes()[prog.outputs[0]][1] == ()
    out = {"f": str(tl.cost(f))}
    for p in prog.params:
        if p.elem != "f64":
            continue
        if len(prog.outputs) == 1:
            g = tl.grad(f, wrt=p.name) if scalar else tl.vjp(f, wrt=p.name)
            out[f"reverse {p.name}"] = str(tl.cost(g))
        out[f"jvp {p.name}"] = str(tl.cost(tl.jvp(f, wrt=p.name)))
        if scalar and len(p.dims) == 1:
            out[f"hessian {p.name}"] = str(tl.cost(tl.hessian(f, wrt=p.name)))
    return out


@pytest.mark.parametrize("label,src", SOURCES, ids=[label for label, _ in SOURCES])
def test_costs_do_not_depend_on_index_names(label, src):
    mod = tl.parse(src)
    for name in mod.names:
        f = mod[name]
        want = costs(f)
        for how, mapping in permutations(f.program).items():
            prog = rename_binders(f.program, lambda n, m=mapping: m.get(n, n))
            text = print_program(prog)
            got = costs(tl.parse(text)[name])
            diff = {k: (want[k], got.get(k)) for k in want if got.get(k) != want[k]}
            assert not diff, f"{label}:{name} with indices renamed ({how}): {diff}\n{text}"


def test_the_renaming_reaches_every_binder():
    f = tl.parse(CASES["T20"]["src"])["f"]
    mapping = permutations(f.program)["reversed"]
    prog = rename_binders(f.program, lambda n: mapping.get(n, n))
    assert set(binder_names_of(prog)) == set(mapping.values())
    assert set(binder_names_of(prog)).isdisjoint(binder_names_of(f.program))


MIRRORED_CALL = """
def f(s: f64[n], q: i64[n], tau: f64) -> f64:
    pos[i] = 1.0 + sum[j]([q[j] == q[i] and j != i] * sigmoid((s[j] - s[i]) / tau))
    return sum[i](log(pos[i]))
"""


def test_a_call_stored_once_is_read_under_either_spelling():
    """The gradient stores `sigmoid(s[i] / tau - s[j] / tau)` as a table; the forward's
    occurrence `sigmoid(-s[i] / tau + s[j] / tau)` is the same call with i and j swapped,
    but the terms of its argument are in an order that follows the names, so it was
    recognised under one naming only (8 n against 6 n; lambdarank's gradient 107 n^2
    + 25 n against + 23 n).  Calls are now keyed with their arguments' terms as sets
    (simplify._unordered_key).  (32 n^2 since a sum under a bracket of labels,
    `[q[j] == q[i]]`, is ordered as a contraction: `/ tau` leaves it; 22 n^2 since
    sigmoid' is one factor, sigmoid_slope(sigmoid(..)), and its two adjoint sums
    evaluate it in one pass: joined under every naming since shared._join compares the
    joined term's brackets in canonical form, `[k != y]` renamed being `[l != k]`,
    which the host writes `[k != l]` (29 n^2 under i -> z, j -> y before).)"""
    f = tl.parse(MIRRORED_CALL)["f"]
    want = str(tl.cost(tl.grad(f, wrt=("s", "tau"))))
    assert want == "22*n^2 + 18*n + 9", want
    for mapping in ({"i": "j", "j": "i"}, {"i": "b", "j": "a"}, {"i": "z", "j": "y"}):
        prog = rename_binders(f.program, lambda n, m=mapping: m.get(n, n))
        g = tl.parse(print_program(prog))["f"]
        assert str(tl.cost(tl.grad(g, wrt=("s", "tau")))) == want, mapping


YEE = """
def fdtd(src: f64[T], leps: f64[n], c: f64) -> f64:
    H[t: T, i: n] = [t >= 1] * (H[t - 1, i] + c * ([i + 1 < n] * E[t - 1, i + 1] - E[t - 1, i]))
    E[t: T, i: n] = [t >= 1] * (E[t - 1, i] + c * exp(-leps[i]) * (H[t, i] - [i >= 1] * H[t, i - 1])) + [i == 0] * src[t]
    return sum[t](E[t, n - 1] ** 2)
"""


def test_a_call_hoisted_from_two_terms_is_one_statement_under_any_naming():
    """E's two terms hold exp(-leps[i]) under [t >= 1] and under [i >= 1 and t >= 1]:
    hoisted out of the t loop with each term's brackets on i, they were two statements
    (`[i >= 1] * exp(-leps[i])` and `exp(-leps[i])`) when the bracketed term came first,
    one when the other did, and the terms' order follows the index names (the fdtd of
    tests/newuser14_programs.py: the function 20 T n or 19 T n, its gradient 49 or 48 T n).  A hoisted body that is finite wherever
    its reads are and in range without the brackets is stored without them
    (hoist._Hoister.hoist_body)."""
    f = tl.parse(YEE)["fdtd"]
    want = (str(tl.cost(f)), str(tl.cost(tl.grad(f, wrt=("src", "leps", "c")))))
    for mapping in ({"t": "i", "i": "t"}, {"t": "b", "i": "a"}, {"t": "q", "i": "z"}):
        prog = rename_binders(f.program, lambda n, m=mapping: m.get(n, n))
        g = tl.parse(print_program(prog))["fdtd"]
        got = (str(tl.cost(g)), str(tl.cost(tl.grad(g, wrt=("src", "leps", "c")))))
        assert got == want, (mapping, got, want)


BAYER_RED = """
def red(raw: f64[h, w], tr: f64[h - 2, w - 2]) -> f64:
    R[r: h - 2, c: w - 2] = ([(r + 1) % 2 == 0 and (c + 1) % 2 == 0] * raw[r + 1, c + 1]
        + [(r + 1) % 2 == 0 and c % 2 == 0] * 0.5 * (raw[r + 1, c] + raw[r + 1, c + 2])
        + [r % 2 == 0 and (c + 1) % 2 == 0] * 0.5 * (raw[r, c + 1] + raw[r + 2, c + 1])
        + [r % 2 == 0 and c % 2 == 0] * 0.25 * (raw[r, c] + raw[r, c + 2] + raw[r + 2, c] + raw[r + 2, c + 2]))
    return sum[r, c]((R[r, c] - tr[r, c]) ** 2)
"""


def test_a_term_in_two_residue_classes_steps_the_outer_index_under_any_naming():
    """A term under [r % 2 == 0 and c % 2 == 0] runs one of its generators in steps of
    2 and tests the other; which one was the bracket that sorts first, by name, so
    demosaic's red plane cost 12 (h - 2) + 4 (w - 2) in lower-order terms under one
    naming and 4 (h - 2) + 12 (w - 2) under the other.  The outermost generator in a
    residue class is stepped (loops.py)."""
    f = tl.parse(BAYER_RED)["red"]
    want = (str(tl.cost(f)), str(tl.cost(tl.grad(f, wrt="raw"))))
    for mapping in ({"r": "c", "c": "r"}, {"r": "b", "c": "a"}):
        prog = rename_binders(f.program, lambda n, m=mapping: m.get(n, n))
        g = tl.parse(print_program(prog))["red"]
        assert (str(tl.cost(g)), str(tl.cost(tl.grad(g, wrt="raw")))) == want, mapping


def _by_position(stmt, terms) -> list:
    """terms of stmt with its generators named by their position, in canonical form."""
    from tensorlang.ssa import build as B
    from tensorlang.ssa import traverse as T
    from tensorlang.ssa.ir import Affine, IndexVar
    places = {n: Affine.of(IndexVar(f"g{p}")) for p, (n, _) in enumerate(stmt.indices)}
    return [repr(B.canon_term(T.substitute_term(t, places))) for t in terms]


def test_a_long_statement_compares_the_same_terms_under_any_naming():
    """Common-factor search compares the terms of a statement pairwise, the first
    factor.PAIR_LIMIT of a longer one.  Taken in canonical order, which sorts by index
    names, which terms those were followed the names (a four-qubit circuit's jvp,
    whose layer statement has 108 terms, cost 2945 L or 2913 L as they were named);
    they are taken in an order no name decides (simplify.terms_by_structure)."""
    import itertools
    from tensorlang.opt.factor import PAIR_LIMIT, pair_seeds
    terms = [f"[i == {a} and j == {b} and k == {c}] * x[{a}] * w[{b}] * v[k, {c}]"
             for a, b, c in itertools.product(range(3), repeat=3)]
    src = ("def f(x: f64[3], w: f64[3], v: f64[3, 3]) -> f64[3, 3, 3]:\n"
           f"    y[i: 3, j: 3, k: 3] = {' + '.join(terms)}\n    return y\n")
    f = tl.parse(src)["f"]
    s = f.program.stmts[0]
    assert len(s.body) > PAIR_LIMIT
    want = _by_position(s, pair_seeds(s))
    canonical_first = _by_position(s, s.body[:PAIR_LIMIT])
    moved = 0
    for how, mapping in permutations(f.program).items():
        g = tl.parse(print_program(rename_binders(f.program, lambda n, m=mapping: m.get(n, n))))
        s2 = g["f"].program.stmts[0]
        assert _by_position(s2, pair_seeds(s2)) == want, how
        moved += _by_position(s2, s2.body[:PAIR_LIMIT]) != canonical_first
    assert moved, "the renamings should move the canonical order's first terms"

"""The Fourier-Motzkin facts: proofs split into independent groups decide the same."""
from tensorlang.bounds import Facts, _independent_groups, constraint, infeasible
from tensorlang.ssa.ir import Affine, IndexVar, SizeVar


def v(name):
    return Affine.of(IndexVar(name))


def test_groups_split_on_shared_variables_only():
    cs = (constraint(v("i")), constraint(v("j") - v("i")), constraint(v("k")), constraint(Affine(3)))
    groups = _independent_groups(cs)
    assert sorted(len(g) for g in groups) == [1, 1, 2]


def test_a_contradiction_elsewhere_still_proves_everything():
    # [j < 0] with j >= 0 is false: any goal about i follows, as it did unsplit.
    facts = Facts().with_ranges((("i", "n"), ("j", "n"))).with_pred(())
    contradictory = Facts(facts.items + (constraint(v("j").scale(-1).shift(-1)),))
    assert contradictory.proves(v("i").shift(-5))
    assert not facts.proves(v("i").shift(-5))


def test_many_indices_prove_quickly_and_alike():
    ranges = tuple((f"i{k}", f"d{k}") for k in range(60))
    facts = Facts([constraint(Affine.of(SizeVar(f"d{k}")).shift(-1)) for k in range(60)]
                  ).with_ranges(ranges)
    top = Affine.of(SizeVar("d7")).shift(-1) - v("i7")
    assert facts.proves(top) and facts.proves(v("i7"))
    assert not facts.proves(v("i7").shift(-1))
    assert infeasible(set(facts.items) | {constraint(v("i7").scale(-1).shift(-1))})


def test_scope_partition_decides_as_the_whole_system():
    # A scope's facts are partitioned once and each goal joins the groups it touches:
    # every answer must be the one Fourier-Motzkin gives on facts and goal together.
    import numpy as np
    rng = np.random.default_rng(7)
    names = ["i", "j", "k", "l"]

    def random_affine():
        picks = rng.choice(len(names), size=rng.integers(0, 3), replace=False)
        aff = Affine(int(rng.integers(-4, 5)))
        for p in picks:
            aff = aff + v(names[p]).scale(int(rng.integers(-2, 3)))
        return aff

    disagreements = 0
    for _ in range(60):
        items = [constraint(random_affine()) for _ in range(rng.integers(1, 6))]
        facts = Facts(items).with_ranges((("i", 6), ("j", 6)))
        for _ in range(5):
            goal = random_affine()
            whole = infeasible(set(facts.items) | {constraint(goal.scale(-1).shift(-1))})
            disagreements += facts.proves(goal) != whole
    assert disagreements == 0


def test_projecting_out_an_index_keeps_exactly_the_points_it_extends():
    # Random constraints, coefficients 1 to 3 on the indices projected out; a point of
    # the kept indices satisfies the projection exactly when some values of the others
    # satisfy all the constraints (checked by enumeration over small boxes).
    import itertools
    import numpy as np
    from tensorlang.bounds import project_out
    rng = np.random.default_rng(3)
    kept, gone = ["p", "q"], ["k", "l"]
    exact = 0
    for _ in range(200):
        cons = [v(g) for g in gone] + [v(g).scale(-1).shift(4) for g in gone]   # 0..4
        for _ in range(rng.integers(1, 4)):
            aff = Affine(int(rng.integers(-3, 4)))
            for name in kept:
                aff = aff + v(name).scale(int(rng.integers(-2, 3)))
            for name in rng.permutation(gone)[:rng.integers(1, 3)]:
                aff = aff + v(name).scale(int(rng.choice([-3, -2, -1, -1, 1, 1, 2, 3])))
            cons.append(aff)
        projected = project_out(cons, gone)
        if projected is None:
            continue          # two bounds of coefficients above 1 on one index
        exact += 1

        def holds(affs, point):
            return all(a.const + sum(c * point[x.name] for x, c in a.terms) >= 0 for a in affs)
        for p, q in itertools.product(range(-3, 8), repeat=2):
            extends = any(holds(cons, dict(p=p, q=q, k=k, l=l))
                          for k, l in itertools.product(range(5), repeat=2))
            assert holds(projected, dict(p=p, q=q)) == extends, (cons, projected, p, q)
    assert exact >= 100


def test_checked_labels_bound_reads_of_the_same_form_whatever_their_indices():
    """A label form checked into a dimension (F[q, 0] with q over n, into V) bounds
    every read of that form, whatever its index is called; a read over another range
    (F[q + 1, 0] with q over n - 1), another column, or outside such facts does not."""
    from tensorlang.bounds import label_form
    from tensorlang.ssa.ir import Gather
    sizes = Facts([constraint(Affine.of(SizeVar(s)).shift(-1)) for s in ("n", "V")])

    def label(i, col=0):
        return Affine.of(Gather("F", (i, Affine(col))))

    form = label_form(label(v("q")), {"q": "n"})
    checked = sizes.with_checked_labels(((form, "V"),))
    top = Affine.of(SizeVar("V")).shift(-1)
    for name in ("q", "e"):
        inside = checked.with_ranges(((name, "n"),))
        assert inside.proves(label(v(name))) and inside.proves(top - label(v(name)))
        assert not inside.proves(label(v(name), 1))
        assert not sizes.with_ranges(((name, "n"),)).proves(label(v(name)))
    shifted = checked.with_ranges((("q", "n - 1"),))
    assert not shifted.proves(label(v("q").shift(1)))
    assert checked.key() != sizes.key() and checked.with_checked_labels(((form, "V"),)) is checked

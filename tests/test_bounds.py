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

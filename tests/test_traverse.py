"""The one IR walk: substitution, identity, folds and unknown nodes."""
import pytest

import tensorlang as tl
from tensorlang.ssa import traverse as T
from tensorlang.ssa.ir import Access, Affine, Apply, IndexVar, Term


def var(name):
    return Affine.of(IndexVar(name))


def read(name, *idx):
    return Access(name, tuple(var(i) for i in idx))


def test_substitution_renames_a_sum_that_would_capture():
    # sum[i](x[r + i]) with r := i must not become sum[i](x[2 i]).
    inner = Term(1.0, (("i", "m"),), (), ((Access("x", (var("r") + var("i"),)), 1.0),))
    out = T.substitute_term(inner, {"r": var("i")})
    (bound, _), = out.sums
    assert bound != "i"
    (f, _), = out.factors
    assert f.idx == (var("i") + var(bound),)


def test_substitution_stops_at_a_sum_that_binds_the_name():
    t = Term(1.0, (("i", "n"),), (), ((read("x", "i"), 1.0),))
    assert T.substitute_term(t, {"i": var("j")}) is t


def test_maps_return_the_same_node_when_nothing_changes():
    t = Term(2.0, (), (), ((Apply("exp", ((Term(1.0, (), (), ((read("x", "i"), 1.0),)),),)), 1.0),))
    assert T.map_term_children(t, lambda b: b, lambda a: a) is t
    assert T.substitute_term(t, {"k": var("j")}) is t


def test_folds_see_nested_bodies():
    f = tl.parse("def f(x: f64[n], y: i64[n]) -> f64:\n"
                 "    return sum[i](exp(sum[j]([y[j] >= 0] * x[j])) * x[i])\n")["f"]
    body = f.program.stmts[-1].body
    assert T.tensor_reads(body) == {"x"}
    assert T.gathered_tensors(body) == {"y"}
    assert T.index_names(body) == {"i", "j"}
    assert T.binder_names(body) == {"i", "j"}


def test_an_unknown_node_is_an_error():
    with pytest.raises(T.UnknownNode):
        T.map_factor("not a node", lambda b: b, lambda a: a)
    with pytest.raises(T.UnknownNode):
        list(T.iter_nodes(Term(1.0, (), (), ((object(), 1.0),))))

"""The direct parser (syntax/descent.py) builds exactly the AST of the Lark parser,
spans included, or leaves the text to Lark."""
import dataclasses
from pathlib import Path

import pytest

from suite_programs import CASES
from tensorlang.errors import SourceText, TLError
from tensorlang.syntax import descent
from tensorlang.syntax.parse import lark_module, parse_text

ROOT = Path(__file__).resolve().parent.parent


def fields_of(node):
    """Every field of an AST node, spans included (they take no part in ==)."""
    if dataclasses.is_dataclass(node):
        return (type(node).__name__,) + tuple(fields_of(getattr(node, f.name))
                                              for f in dataclasses.fields(node))
    if isinstance(node, (tuple, list)):
        return tuple(fields_of(x) for x in node)
    return (type(node).__name__, node)


def both(text: str):
    """(Lark's AST or "error", the direct parser's AST or "bail")."""
    text = text if text.endswith("\n") else text + "\n"
    src = SourceText(text, "t.tl")
    try:
        ref = fields_of(lark_module(text, src))
    except TLError:
        ref = "error"
    try:
        mine = fields_of(descent.parse_module(text, src))
    except descent.Bail:
        mine = "bail"
    return ref, mine


FILES = sorted(p for p in ROOT.glob("**/*.tl") if ".git" not in p.parts)


def test_every_source_file_parses_the_same():
    assert len(FILES) >= 30
    for path in FILES:
        ref, mine = both(path.read_text())
        assert mine == ref, path


@pytest.mark.parametrize("name", sorted(CASES))
def test_suite_programs_parse_the_same(name):
    ref, mine = both(CASES[name]["src"])
    assert mine == ref


ACCEPTED = [
    # comments and blank lines everywhere, a continuation inside brackets
    "# head\n\ndef f(x: f64[n],\n      y: f64[n]) -> f64:  # tail\n\n    # inside\n"
    "    a[i: n] = x[i] * (y[i]\n        + 1.0)  # c\n    return sum[i](a[i])\n\n# end",
    # trailing commas, a tuple return, destructuring, reductions with filters
    "def g(x: f64[n, m,],) -> (f64, f64,):\n    return sum[i, j,](x[i, j]), x[0, 1,]\n",
    "def g(x: f64[n, m]) -> (f64, f64):\n    return 1.0, 2.0\n"
    "def h(x: f64[n, m]) -> f64:\n    a, b = g(x)\n"
    "    c[i: n] = max[j | j >= i and not j > i + 2](x[i, j]) + min(a, b)\n"
    "    return logsumexp[i](c[i]) + logsumexp(a, b) + sum[i, j | i < j or i == 0](x[i, j])\n",
    # predicates, chains, brackets, powers, unary minus, numbers of every form
    "def f(x: f64[n]) -> f64:\n    return sum[i]([0 <= i < n - 1] * -x[i] ** -2 % 3.0 / 1e-3 + .5 - 2. + 7)\n",
    # derived sizes
    "def f(x: f64[n], k: f64[m]) -> f64:\n    y[i: n - m + 1] = sum[j](x[i + j] * k[j])\n"
    "    z[i: (n - m) / 2 + 1] = y[2 * i]\n    return sum[i](z[i])\n",
]


@pytest.mark.parametrize("k", range(len(ACCEPTED)))
def test_accepted_texts_parse_the_same(k):
    ref, mine = both(ACCEPTED[k])
    assert ref != "error" and mine != "bail"
    assert mine == ref


LEFT_TO_LARK = [
    "def f(x: f64[n]) -> f64:\n    return +x[0]\n",            # unary plus
    "def f(x: f64[n]) -> f64:\n    max = x[0]\n    return max\n",  # `max` as a name
    "def f(x: f64[n]) -> f64:\n    return x[0] + \\\n        x[1]\n",  # continuation
    "def f(x: f64[n]) -> f64:\n    return sum[i](x[i]\n",       # unclosed bracket
    "def f(x: f64[n]) -> f64:\n    return x[0] $ 2.0\n",        # bad character
    "def f(x: f64[n]) -> f64:\n        a = x[0]\n    return a\n",  # bad dedent
    "def f(x: f64[99999999999999999999]) -> f64:\n    return x[0]\n",  # dimension overflow
    "def f(sum: f64[n]) -> f64:\n    return 1.0\n",             # keyword as a name
]


@pytest.mark.parametrize("k", range(len(LEFT_TO_LARK)))
def test_texts_it_does_not_accept_go_to_lark(k):
    ref, mine = both(LEFT_TO_LARK[k])
    assert mine == "bail"
    if ref == "error":           # the error is Lark's, from parse_text as before
        with pytest.raises(TLError) as info:
            parse_text(LEFT_TO_LARK[k], "t.tl")
        with pytest.raises(TLError) as again:
            lark_module(LEFT_TO_LARK[k], SourceText(LEFT_TO_LARK[k], "t.tl"))
        assert str(info.value) == str(again.value)

"""A derivative does not depend on what the process built before it: the compiler's
memos (statement costs, simplified programs, factoring trials, plans) are keyed by
everything their values depend on.  The same derivatives, built in a fresh process
and here after others, print alike and cost alike."""
import os
import subprocess
import sys
import warnings

import tensorlang as tl
from benchmarks.compile_time_scaling import chain_source

# a maximum over bracketed entries (a fuzz program of tests/test_numba_fuzz.py) and a
# quadratic form
PROGRAMS = """
def fz(q: f64[a, b], c: f64, lab: i64[p], u: f64[p]) -> f64[p]:
    best[t: p] = max[g: a, h: a]([g + 1 < b and t + g < p and g - lab[t + g] <= 0]
                                 * q[h, b - 1] * q[g, g + 1] * c)
    return best

def quad(x: f64[n], A: f64[n, n]) -> f64:
    y[i] = sum[j](A[i, j] * x[j])
    return sum[i](x[i] * y[i])
"""

SHOW = """
import sys, warnings
import tensorlang as tl
mod = tl.parse(sys.stdin.read())
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    for d in (tl.jvp(mod.fz, wrt=("q", "c")), tl.vjp(mod.fz, wrt=("q", "c")),
              tl.hessian(mod.quad, wrt="x")):
        print(d.source)
        print(tl.cost(d))
"""


def _shown(mod) -> str:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = []
        for d in (tl.jvp(mod.fz, wrt=("q", "c")), tl.vjp(mod.fz, wrt=("q", "c")),
                  tl.hessian(mod.quad, wrt="x")):
            out += [d.source, str(tl.cost(d))]
    return "\n".join(out) + "\n"


def test_a_derivative_is_the_same_after_other_programs_were_built():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([root, os.environ.get("PYTHONPATH", "")]))
    fresh = subprocess.run([sys.executable, "-c", SHOW], input=PROGRAMS, env=env, cwd=root,
                           capture_output=True, text=True, check=True).stdout
    # other programs first: a long chain, and the same functions under other names
    other = tl.parse(chain_source(40))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tl.grad(other.f, wrt="x").optimized_program()
        renamed = tl.parse(PROGRAMS.replace("best", "top").replace("lab", "ids"))
        _shown(renamed)
    assert _shown(tl.parse(PROGRAMS)) == fresh

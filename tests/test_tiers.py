"""Two tiers: a function whose backend nobody chose answers its first calls on the
interpreter while its kernels compile in the background (backend/tiers.py)."""
import threading
import warnings

import numpy as np
import pytest

import tensorlang as tl
from tensorlang.backend import kernels, tiers
from tensorlang.backend.numpy_ref import evaluate

SOURCE = """
def smooth(x: f64[n]) -> f64:
    y[i] = [i >= 1] * x[i - 1] + {c} * x[i] + [i + 1 < n] * x[i + 1]
    return sum[i](tanh(y[i]) ** 2)
"""


def fresh_function(c: float, monkeypatch):
    """A program no other test compiled (its constant differs), on the default backend."""
    monkeypatch.delenv("TENSORLANG_BACKEND", raising=False)
    monkeypatch.delenv("TENSORLANG_TIERS", raising=False)
    f = tl.parse(SOURCE.format(c=c))["smooth"]
    return tl.grad(f, wrt="x")


def reference(g, x):
    prog = g.optimized_program()
    return evaluate(prog, {"x": x}, {"n": len(x)})[0]


@pytest.fixture
def gate(monkeypatch):
    """Hold every build until the test opens the gate, so no timing decides the tier."""
    opened = threading.Event()
    build = tiers.KernelBuild._build

    def held(self):
        opened.wait(60)
        build(self)
    monkeypatch.setattr(tiers.KernelBuild, "_build", held)
    yield opened
    opened.set()
    tiers.wait_for_builds()


def test_first_calls_run_on_the_interpreter_until_the_kernels_are_ready(gate, monkeypatch):
    g = fresh_function(1.5, monkeypatch)
    assert g.tiered and g.backend == "numba"
    x = np.random.default_rng(0).standard_normal(50)
    first = g(x)
    assert np.array_equal(first, reference(g, x))     # the interpreter answered
    assert g._kernels is None and g._build is not None
    assert np.array_equal(g(2 * x), reference(g, 2 * x))
    assert g._kernels is None                          # still compiling
    gate.set()
    tiers.wait_for_builds()
    compiled = g(x)
    assert g._build is None and g._kernels not in (None, False)
    assert np.allclose(compiled, first, rtol=1e-12, atol=1e-14)


def test_a_call_too_big_for_the_interpreter_waits_for_the_kernels(gate, monkeypatch):
    monkeypatch.setattr(tiers, "INTERPRETER_LIMIT", 10)
    g = fresh_function(1.75, monkeypatch)
    x = np.random.default_rng(1).standard_normal(40)
    gate.set()
    got = g(x)
    assert g._kernels not in (None, False)
    assert np.allclose(got, reference(g, x), rtol=1e-12, atol=1e-14)


def test_tiers_can_be_switched_off(monkeypatch):
    g = fresh_function(2.25, monkeypatch)
    monkeypatch.setenv("TENSORLANG_TIERS", "0")
    x = np.random.default_rng(2).standard_normal(30)
    got = g(x)
    assert g._build is None and g._kernels not in (None, False)
    assert np.allclose(got, reference(g, x), rtol=1e-12, atol=1e-14)


def test_an_explicit_backend_is_used_from_the_first_call(monkeypatch):
    g = fresh_function(2.5, monkeypatch).compile("numba")
    assert not g.tiered
    x = np.random.default_rng(3).standard_normal(30)
    g(x)
    assert g._build is None and g._kernels not in (None, False)
    monkeypatch.setenv("TENSORLANG_BACKEND", "numba")        # chosen in the environment
    assert not tl.parse(SOURCE.format(c=2.5))["smooth"].tiered


def test_a_program_numba_cannot_take_warns_once_after_its_build(gate, monkeypatch):
    def refuse(*args, **kwargs):
        raise kernels.Unsupported("a construct made up for this test")
    monkeypatch.setattr(kernels.KernelWriter, "statement", refuse)
    g = fresh_function(2.75, monkeypatch)
    x = np.random.default_rng(4).standard_normal(20)
    want = reference(g, x)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert np.array_equal(g(x), want)              # first tier: no warning yet
    gate.set()
    tiers.wait_for_builds()
    with pytest.warns(UserWarning, match="made up for this test"):
        assert np.array_equal(g(x), want)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert np.array_equal(g(x), want)              # warned once


def test_a_long_recurrence_is_not_cheap_for_the_interpreter():
    """The interpreter evaluates a recurrence step by step (about a millisecond each,
    however little a step does): a second-order filter of 2000 steps costs 12000
    operations but took 20 s there, against a second to compile.  Its steps count."""
    f = tl.parse("def f(x: f64[T], a: f64[2]) -> f64:\n"
                 "    y[t: T] = x[t] + [t >= 1] * a[0] * y[t - 1] + [t >= 2] * a[1] * y[t - 2]\n"
                 "    return sum[t](y[t] ** 2)\n")["f"]
    prog = f.optimized_program()
    assert tiers.interpreted_steps(prog, {"T": 2000}) == 2000
    assert tiers.cheap_enough(prog, {"T": 20})
    assert not tiers.cheap_enough(prog, {"T": 2000})
    g = tl.parse("def g(x: f64[n]) -> f64:\n    return sum[i](x[i] ** 2)\n")["g"]
    assert tiers.interpreted_steps(g.optimized_program(), {"n": 10 ** 6}) == 0
    assert tiers.cheap_enough(g.optimized_program(), {"n": 10 ** 6})


def test_the_time_tensorlang_run_reports_is_the_kernels(gate, monkeypatch, tmp_path, capsys):
    """`tensorlang run` times a second call as the numba backend's: that call must not be
    answered by the interpreter while the kernels still compile (it was, and a 90 ms
    interpreted recurrence was printed as the compiled backend's time)."""
    from tensorlang import api
    from tensorlang.cli import main
    monkeypatch.delenv("TENSORLANG_BACKEND", raising=False)
    monkeypatch.delenv("TENSORLANG_TIERS", raising=False)
    path = tmp_path / "smooth.tl"
    path.write_text(SOURCE.format(c=2.75))
    interpreted = []
    interpret = api._interpret

    def counted(*args):
        interpreted.append(1)
        return interpret(*args)
    monkeypatch.setattr(api, "_interpret", counted)
    opener = threading.Timer(0.3, gate.set)        # the build finishes after the first call
    opener.start()
    assert main(["run", str(path), "--size", "n=20"]) == 0
    opener.join()
    assert "numba backend" in capsys.readouterr().out
    assert len(interpreted) == 1                    # the first call only


def test_a_call_that_waits_for_its_kernels_waits_for_no_other_program(monkeypatch):
    """Builds run one at a time on one thread; a call too big for the interpreter whose
    build has not started takes it off the queue and compiles in its own thread, so it
    does not wait behind the builds of the functions derived before it (a process that
    derives many functions had one thread per build, all on Numba's compiler lock)."""
    opened = threading.Event()
    build = tiers.KernelBuild._build

    def held(self):
        if threading.current_thread().name.startswith("tensorlang-build"):
            opened.wait(120)          # the background thread is busy with others' builds
        build(self)
    monkeypatch.setattr(tiers.KernelBuild, "_build", held)
    x = np.random.default_rng(3).standard_normal(30)
    try:
        for c in (2.5, 2.625, 2.75):
            other = fresh_function(c, monkeypatch).optimized_program()
            tiers.KernelBuild(other, {"x": x}, {"n": len(x)})
        monkeypatch.setattr(tiers, "INTERPRETER_LIMIT", 10)
        g = fresh_function(2.875, monkeypatch)
        got = []
        caller = threading.Thread(target=lambda: got.append(g(x)), name="caller")
        caller.start()
        caller.join(120)
        assert not caller.is_alive() and not opened.is_set()
        assert g._kernels not in (None, False)
        assert np.allclose(got[0], reference(g, x), rtol=1e-12, atol=1e-14)
    finally:
        opened.set()
        tiers.wait_for_builds()

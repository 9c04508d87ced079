"""Loaded modules and derived programs kept on disk (tensorlang/progcache.py): a later
process gets the same programs without parsing or differentiating again, a damaged entry is
a miss, a changed compiler or source misses, and `cache clear` removes the entries."""
import numpy as np
import pytest

import tensorlang as tl
import tensorlang.api as api
import tensorlang.driver as driver
import tensorlang.progcache as progcache
from tensorlang import diskcache

SOURCE = """def energy(x: f64[n], w: f64[n]) -> f64:
    return sum[i](w[i] * (x[i + 1] - x[i]) ** 2 * [i + 1 < n])
"""


@pytest.fixture
def cache(tmp_path, monkeypatch):
    root = tmp_path / "cache"
    monkeypatch.setenv("TENSORLANG_CACHE_DIR", str(root))
    monkeypatch.setenv(progcache.VARIABLE, "1")
    monkeypatch.setattr(progcache, "_state", {})

    def fresh_process():
        """What a new process would start with: no remembered front ends (and the
        entries of this one written)."""
        progcache.flush()
        driver._FRONT_ENDS.clear()
    fresh_process()
    yield root, fresh_process
    driver._FRONT_ENDS.clear()


def derive_all(path):
    f = tl.load(path)["energy"]
    return [tl.grad(f, wrt="x"), tl.hessian(f, wrt="x"), tl.jvp(f, wrt="w")]


def test_a_second_process_reads_what_the_first_derived(cache, monkeypatch):
    root, fresh_process = cache
    src = root.parent / "energy.tl"
    src.write_text(SOURCE)
    first = derive_all(src)
    progcache.flush()
    entries = sorted(root.glob("tl_prog_*.pickle"))
    assert len(entries) == 4                     # the front end and three derivatives
    assert diskcache.info(str(root))["programs"] == 4
    fresh_process()

    def recompute(*_):
        raise AssertionError("derived again")
    monkeypatch.setattr(api, "_derivation", recompute)
    monkeypatch.setattr(driver, "_compile_source", recompute)
    second = derive_all(src)
    assert [g.program for g in second] == [g.program for g in first]
    x, w = np.random.default_rng(0).standard_normal((2, 7))
    np.testing.assert_allclose(second[0](x=x, w=w), first[0](x=x, w=w))


def test_changed_source_compiler_or_damaged_entry_misses(cache, monkeypatch):
    root, fresh_process = cache
    src = root.parent / "energy.tl"
    src.write_text(SOURCE)
    g = tl.grad(tl.load(src)["energy"], wrt="x").program
    progcache.flush()
    for entry in root.glob("tl_prog_*.pickle"):
        entry.write_bytes(b"not a pickle")
    fresh_process()
    assert tl.grad(tl.load(src)["energy"], wrt="x").program == g
    progcache.flush()
    n = len(list(root.glob("tl_prog_*.pickle")))
    src.write_text(SOURCE.replace("** 2", "** 4"))
    fresh_process()
    assert tl.grad(tl.load(src)["energy"], wrt="x").program != g
    progcache.flush()
    assert len(list(root.glob("tl_prog_*.pickle"))) == n + 2
    before = progcache.key_of(("x",))
    monkeypatch.setitem(progcache._state, "fingerprint", "another compiler")
    assert progcache.key_of(("x",)) != before
    fresh_process()
    tl.grad(tl.load(src)["energy"], wrt="x")
    progcache.flush()
    assert len(list(root.glob("tl_prog_*.pickle"))) == n + 4
    assert diskcache.clear(str(root)) >= n + 4
    assert not list(root.glob("tl_prog_*"))


def test_a_certificate_warning_is_given_again_from_the_cache(cache, monkeypatch):
    import tensorlang.certificate as certificate
    root, fresh_process = cache
    monkeypatch.setattr(certificate, "FACTOR", 1)      # a bound this gradient misses
    src = root.parent / "energy.tl"
    src.write_text(SOURCE)
    for _ in range(2):
        fresh_process()
        with pytest.warns(tl.TLCostWarning, match="tl.grad"):
            tl.grad(tl.load(src)["energy"], wrt="x")


def test_off_under_verify_unless_asked(monkeypatch):
    monkeypatch.delenv(progcache.VARIABLE, raising=False)
    monkeypatch.setenv("TENSORLANG_VERIFY", "1")
    assert not progcache.enabled()
    monkeypatch.setenv(progcache.VARIABLE, "1")
    assert progcache.enabled()
    monkeypatch.setenv("TENSORLANG_VERIFY", "0")
    monkeypatch.setenv(progcache.VARIABLE, "0")
    assert not progcache.enabled()
    monkeypatch.delenv(progcache.VARIABLE)
    assert progcache.enabled()

"""The cache directory: parser tables and compiled kernels written once, reused, rebuilt when
damaged, built in memory when the directory cannot be written, cleared only of tensorlang's
own files, and kept within a size bound."""
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
# A unary plus is left to the Lark parser (syntax/descent.py), so this text needs its tables.
PARSE = ("import tensorlang as tl\n"
         "print(tl.parse('def f(x: f64[n]) -> f64:\\n    return +sum[i](x[i])\\n').names)\n")


def run(cache):
    env = dict(os.environ, TENSORLANG_CACHE_DIR=str(cache))
    out = subprocess.run([sys.executable, "-c", PARSE], capture_output=True, text=True,
                         env=env, cwd=ROOT, check=True)
    return out.stdout.strip(), out.stderr


def test_grammar_tables_are_cached_and_a_damaged_file_is_rebuilt(tmp_path):
    assert run(tmp_path) == ("['f']", "")
    (table,) = tmp_path.glob("tl_grammar_*.lark")
    assert not list(tmp_path.glob("*.tmp"))               # written whole, then renamed
    assert run(tmp_path) == ("['f']", "")
    table.write_bytes(b"not a parser table")
    assert run(tmp_path) == ("['f']", "")
    assert table.stat().st_size > 1000                     # rebuilt in place


def test_an_unwritable_cache_directory_still_parses(tmp_path):
    blocked = tmp_path / "file-not-dir"
    blocked.write_text("")
    assert run(blocked / "cache") == ("['f']", "")


# ---------------------------------------------------------------- compiled kernels
KERNEL = ("import sys, warnings\n"
          "import numpy as np\n"
          "import tensorlang as tl\n"
          "warnings.simplefilter('always')\n"
          "with warnings.catch_warnings(record=True) as seen:\n"
          "    for k in range(int(sys.argv[1]) if len(sys.argv) > 1 else 1):\n"
          "        src = (f'def f(x: f64[n]) -> f64[n]:\\n    y[i] = {k + 2}.0 * x[i]\\n'\n"
          "               '    return y\\n')\n"
          "        print(tl.parse(src).f.compile('numba')(np.arange(3.0)).tolist())\n"
          "for w in seen:\n"
          "    print('WARNING', w.category.__name__, w.message)\n")


def run_kernels(cache, programs=1, **env):
    env = dict(os.environ, TENSORLANG_CACHE_DIR=str(cache), **env)
    out = subprocess.run([sys.executable, "-c", KERNEL, str(programs)], capture_output=True,
                         text=True, env=env, cwd=ROOT, timeout=300)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    return ([ln for ln in lines if not ln.startswith("WARNING")],
            [ln for ln in lines if ln.startswith("WARNING")])


@pytest.fixture(scope="module")
def warm_cache(tmp_path_factory):
    """A cache directory holding one compiled kernel module and its Numba files."""
    cache = tmp_path_factory.mktemp("warm") / "cache"
    assert run_kernels(cache) == (["[0.0, 2.0, 4.0]"], [])
    pycache = cache / "__pycache__"
    assert list(pycache.glob("tl_*.nbi")) and list(pycache.glob("tl_*.nbc"))
    return cache


@pytest.mark.parametrize("damage", ["junk", "truncated", "empty"])
@pytest.mark.parametrize("ext", ["nbi", "nbc"])
def test_a_damaged_numba_cache_file_is_deleted_and_rebuilt(tmp_path, warm_cache, damage, ext):
    cache = tmp_path / "cache"
    shutil.copytree(warm_cache, cache)
    (victim,) = (cache / "__pycache__").glob(f"tl_*.{ext}")
    data = victim.read_bytes()
    victim.write_bytes({"junk": b"not a pickle at all", "truncated": data[: len(data) // 3],
                        "empty": b""}[damage])
    out, warned = run_kernels(cache)
    assert out == ["[0.0, 2.0, 4.0]"]
    assert len(warned) == 1 and "could not be read" in warned[0], warned
    assert run_kernels(cache) == (["[0.0, 2.0, 4.0]"], [])      # rebuilt: no warning again


@pytest.mark.parametrize("where", ["a-file", "below-a-file"])
def test_an_unwritable_cache_directory_builds_kernels_in_memory_with_one_warning(tmp_path, where):
    blocker = tmp_path / "blocker"
    blocker.write_text("a user's file")
    cache = blocker if where == "a-file" else blocker / "sub" / "cache"
    out, warned = run_kernels(cache, programs=2)
    assert out == ["[0.0, 2.0, 4.0]", "[0.0, 3.0, 6.0]"]
    assert len(warned) == 1 and "not caching compiled kernels" in warned[0], warned
    assert blocker.read_text() == "a user's file"


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0,
                    reason="permissions do not bind the superuser")
def test_a_read_only_cache_directory_builds_kernels_in_memory(tmp_path):
    cache = tmp_path / "ro"
    cache.mkdir()
    (cache / ".tensorlang-cache").write_text("")
    cache.chmod(0o555)
    try:
        out, warned = run_kernels(cache)
    finally:
        cache.chmod(0o755)
    assert out == ["[0.0, 2.0, 4.0]"] and len(warned) == 1


# ---------------------------------------------------------------- ownership and clearing
def fake_entry(root: pathlib.Path, key: str, size: int = 1000, used: float = 0.0):
    root.mkdir(exist_ok=True)
    (root / "__pycache__").mkdir(exist_ok=True)
    files = [root / f"tl_{key}.py", root / "__pycache__" / f"tl_{key}.k_y-45.py311.nbi",
             root / "__pycache__" / f"tl_{key}.k_y-45.py311.1.nbc"]
    for f in files:
        f.write_bytes(b"x" * size)
    if used:
        for f in files:
            os.utime(f, (used, used))
    return files


def test_clear_deletes_only_what_tensorlang_wrote(tmp_path, capsys):
    from tensorlang import diskcache
    from tensorlang.cli import main
    cache = tmp_path / "cache"
    own = fake_entry(cache, "0123456789abcdef0123")
    assert diskcache.claim(str(cache)) is None              # only tensorlang's files: adopted
    user = [cache / "tl_notes.txt", cache / "notes.pyc", cache / "__pycache__" / "mine.nbi",
            cache / "__pycache__" / "tl_notes.nbc"]
    for f in user:
        f.write_text("mine")
    os.environ["TENSORLANG_CACHE_DIR"], old = str(cache), os.environ["TENSORLANG_CACHE_DIR"]
    try:
        assert main(["cache", "clear"]) == 0
    finally:
        os.environ["TENSORLANG_CACHE_DIR"] = old
    assert "removed 3 files" in capsys.readouterr().out
    assert not any(f.exists() for f in own)
    assert all(f.read_text() == "mine" for f in user)
    assert (cache / ".tensorlang-cache").exists()


def test_clear_refuses_a_directory_tensorlang_does_not_own(tmp_path, capsys):
    from tensorlang.cli import main
    foreign = tmp_path / "mine"
    foreign.mkdir()
    (foreign / "tl_notes.txt").write_text("keep me")
    (foreign / "tl_0123456789abcdef0123.py").write_text("keep me too")
    os.environ["TENSORLANG_CACHE_DIR"], old = str(foreign), os.environ["TENSORLANG_CACHE_DIR"]
    try:
        assert main(["cache", "clear"]) == 1
        err = capsys.readouterr().err
        assert "is not a tensorlang cache directory" in err and "nothing was deleted" in err
        assert main(["cache", "info"]) == 0
        assert "not a tensorlang cache" in capsys.readouterr().out
    finally:
        os.environ["TENSORLANG_CACHE_DIR"] = old
    assert (foreign / "tl_notes.txt").read_text() == "keep me"
    assert (foreign / "tl_0123456789abcdef0123.py").exists()
    assert not (foreign / ".tensorlang-cache").exists()


# ---------------------------------------------------------------- the size bound
def test_prune_removes_least_recently_used_entries_beyond_the_bound(tmp_path):
    from tensorlang import diskcache
    cache = tmp_path / "cache"
    keys = [f"{k:020x}" for k in range(6)]
    for k, key in enumerate(keys):
        fake_entry(cache, key, size=1000, used=1_000_000 + k)     # keys[0] is the oldest
    assert diskcache.claim(str(cache)) is None
    os.utime(cache / f"tl_{keys[1]}.py", (2_000_000, 1_000_000))  # used recently
    gone = diskcache.prune(str(cache), keep={keys[0]}, limit=3 * 3000 + 500)
    assert gone == 3
    left = sorted(p.name[3:23] for p in cache.glob("tl_*.py"))
    assert left == sorted([keys[0], keys[1], keys[5]])
    assert sorted(p.name[3:23] for p in (cache / "__pycache__").iterdir()) == sorted(left * 2)


def test_the_cache_stays_within_its_bound(tmp_path):
    cache = tmp_path / "cache"
    out, warned = run_kernels(cache, programs=3, TENSORLANG_CACHE_LIMIT_MB="0.001")
    assert out == ["[0.0, 2.0, 4.0]", "[0.0, 3.0, 6.0]", "[0.0, 4.0, 8.0]"] and not warned
    assert len(list(cache.glob("tl_*.py"))) == 1           # the others were pruned


def test_cache_info_shows_directory_entries_bytes_and_bound(tmp_path, capsys):
    from tensorlang.cli import main
    cache = tmp_path / "cache"
    fake_entry(cache, "0123456789abcdef0123", size=500_000)
    os.environ["TENSORLANG_CACHE_DIR"], old = str(cache), os.environ["TENSORLANG_CACHE_DIR"]
    os.environ["TENSORLANG_CACHE_LIMIT_MB"] = "50"
    try:
        from tensorlang import diskcache
        assert diskcache.claim(str(cache)) is None
        assert main(["cache", "info"]) == 0
    finally:
        os.environ["TENSORLANG_CACHE_DIR"] = old
        del os.environ["TENSORLANG_CACHE_LIMIT_MB"]
    out = capsys.readouterr().out
    assert f"directory: {cache}" in out and "modules:   1 (3 files)" in out
    assert "size:      1.50 MB" in out and "limit:     50 MB" in out


def test_a_write_that_fails_moves_kernels_to_a_private_directory(tmp_path, monkeypatch):
    """What a read-only directory does (simulated: permissions do not bind the superuser)."""
    import warnings

    import tensorlang as tl
    from tensorlang import diskcache
    from tensorlang.backend import numba_backend
    cache = tmp_path / "cache"
    monkeypatch.setenv("TENSORLANG_CACHE_DIR", str(cache))
    monkeypatch.setattr(diskcache, "_private", {})
    monkeypatch.setattr(diskcache, "_warned", [])
    real = numba_backend.write_atomically

    def read_only(path, text):
        if str(path).startswith(str(cache)):
            raise PermissionError(13, "Permission denied", path)
        real(path, text)
    monkeypatch.setattr(numba_backend, "write_atomically", read_only)
    progs = [tl.parse(f"def f(x: f64[n]) -> f64[n]:\n    y[i] = {c} * x[i] + 0.5\n    return y\n")
             .f.optimized_program() for c in ("7.0", "9.0")]
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        modules = [numba_backend.load_module(p) for p in progs]
    assert [w for w in seen if "not caching compiled kernels" in str(w.message)] == seen
    assert len(seen) == 1 and "Permission denied" in str(seen[0].message)
    assert all(os.path.dirname(m.__file__) == diskcache._private["dir"] for m in modules)
    assert not list(cache.glob("tl_*.py"))


# The compiled-kernel cache is keyed by the generated module's text, so that text must be
# the same in every process: a row group's buffers were once named in the iteration order
# of a set of strings, which changes with the interpreter's hash seed.
SOURCE = ("import hashlib\n"
          "import tensorlang as tl\n"
          "from tensorlang.backend.numba_backend import module_source\n"
          "f = tl.load('benchmarks/workloads/w02_mlp.tl')['mlp_xent']\n"
          "g = tl.grad(f, wrt=('W1', 'c1', 'W2', 'c2'))\n"
          "text = module_source(g.program)\n"
          "print('_row' in text, hashlib.sha256(text.encode()).hexdigest())\n")


def test_generated_module_text_does_not_depend_on_the_hash_seed(tmp_path):
    outs = []
    for seed in ("1", "2", "3"):
        env = dict(os.environ, PYTHONHASHSEED=seed, TENSORLANG_CACHE_DIR=str(tmp_path))
        out = subprocess.run([sys.executable, "-c", SOURCE], capture_output=True, text=True,
                             env=env, cwd=ROOT, timeout=300)
        assert out.returncode == 0, out.stderr
        outs.append(out.stdout.split())
    assert outs[0][0] == "True"                    # the gradient has a row group
    assert outs[0] == outs[1] == outs[2]

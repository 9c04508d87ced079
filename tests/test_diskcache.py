"""The parser tables kept on disk: written once, reused, and rebuilt when damaged."""
import os
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
PARSE = ("import tensorlang as tl\n"
         "print(tl.parse('def f(x: f64[n]) -> f64:\\n    return sum[i](x[i])\\n').names)\n")


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

"""Every papers/<folder>/reproduce.py runs to completion with --quick.

Each script runs in a subprocess and writes into a temporary directory, so the committed results
stay as they are.  The subprocess inherits the suite's environment (the interpreter backend and
a fresh kernel cache, see conftest.py); JAX and PyTorch are used when installed.  One more run
hides both peers behind packages that fail to import, to check that a script then reports the
missing peer and still finishes.  The whole file takes about a minute.
"""
from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
PAPERS = ROOT / "papers"
SCRIPTS = sorted(p.parent.name for p in PAPERS.glob("*/reproduce.py"))


def run(folder: str, out: pathlib.Path, extra_path: str | None = None, timeout=120):
    env = dict(os.environ)
    if extra_path:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [extra_path, env.get("PYTHONPATH")]))
    return subprocess.run([sys.executable, str(PAPERS / folder / "reproduce.py"), "--quick",
                           "--out", str(out)], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=timeout)


def test_every_paper_folder_has_a_readme_and_a_script():
    folders = sorted(p.name for p in PAPERS.iterdir()
                     if p.is_dir() and not p.name.startswith(("_", ".")))
    assert set(SCRIPTS) == set(folders), (SCRIPTS, folders)
    assert {"bernstein2020", "innes2018", "vanmerrienboer2018", "wang2018"} <= set(folders)
    index = (PAPERS / "README.md").read_text()
    for folder in folders:
        assert (PAPERS / folder / "README.md").exists(), folder
        assert f"({folder}/)" in index, f"papers/README.md does not link {folder}/"


@pytest.mark.parametrize("folder", SCRIPTS)
def test_reproduce_quick_exits_cleanly(folder, tmp_path):
    proc = run(folder, tmp_path)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    written = sorted(p.name for p in tmp_path.iterdir())
    assert any(name.endswith(".md") for name in written), written


# bernstein2020 finds its peers through papers/common.py, wang2018 through examples/digits_mlp.py
@pytest.mark.parametrize("folder", ["bernstein2020", "wang2018"])
def test_a_missing_peer_is_skipped_with_a_message(folder, tmp_path):
    if folder == "wang2018":
        # its peers are timed on the digits model, which needs the data set
        pytest.importorskip("sklearn")
    hidden = tmp_path / "hide"
    for name in ("jax", "torch"):
        (hidden / name).mkdir(parents=True)
        (hidden / name / "__init__.py").write_text(
            f"raise ImportError('{name} hidden by tests/test_papers.py')\n")
    proc = run(folder, tmp_path / "out", extra_path=str(hidden))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "JAX is not installed" in proc.stdout
    assert "PyTorch is not installed" in proc.stdout

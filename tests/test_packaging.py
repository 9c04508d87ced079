"""The built wheel carries the grammar inside the package, where the parser looks for it."""
from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def test_wheel_ships_grammar(tmp_path):
    pytest.importorskip("hatchling")
    if not (ROOT / "grammar" / "tensorlang.lark").is_file():
        pytest.fail("grammar/tensorlang.lark is missing from the repository")
    # Offline on purpose: no index, no build isolation (hatchling comes from the test extra).
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
         "--no-index", "-q", "-w", str(tmp_path), str(ROOT)],
        capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    wheels = list(tmp_path.glob("tensorlang-0.1.0-*.whl"))
    assert len(wheels) == 1, [p.name for p in tmp_path.iterdir()]
    with zipfile.ZipFile(wheels[0]) as whl:
        names = set(whl.namelist())
        assert "tensorlang/grammar/tensorlang.lark" in names
        assert "tensorlang/__init__.py" in names
        shipped = whl.read("tensorlang/grammar/tensorlang.lark")
        entry_points = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
        scripts = whl.read(entry_points).decode()
    assert shipped == (ROOT / "grammar" / "tensorlang.lark").read_bytes()
    assert "tensorlang = tensorlang.cli:main" in scripts
    # nothing from the test suite, examples or the virtualenv leaks into the package
    assert not any(n.startswith(("tests/", "examples/", ".venv/")) for n in names)

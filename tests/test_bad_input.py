"""Wrong programs and API misuse as users write them from the docs alone.

Each mistake must end in a tl.TLError (or, for a Python-level type mistake, a
TypeError) that says what is wrong, located where the source is to blame; never
an internal exception, a hang, a silently wrong number, or a damaged file.
tests/test_errors.py and tests/test_hard_inputs.py hold the older cases; the
rows here are the ones they did not cover.
"""
from __future__ import annotations

import errno

import numpy as np
import pytest

import tensorlang as tl
from tensorlang import cli

VEC = "def vec(x: f64[n]) -> f64[n]:\n    y[i] = 2.0 * x[i]\n    return y\n"
PAIR = "def pair(x: f64[n]) -> (f64, f64):\n    return x[0], x[n - 1]\n"


@pytest.fixture
def tl_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)

    def write(text, name="prog.tl"):
        (tmp_path / name).write_text(text)
        return name
    return write


# ------------------------------------------------------------------ the command line
def test_a_failed_write_leaves_no_partial_file_and_keeps_the_old_one(tl_file, tmp_path,
                                                                    monkeypatch, capsys):
    """-o writes the whole result or nothing: a disk that fills up part way must not
    leave a truncated .npy, nor destroy the file it was going to replace."""
    src = tl_file(VEC)
    (tmp_path / "out.npy").write_bytes(b"earlier result")
    real_save = np.save

    def save_then_fill_the_disk(fh, value):
        real_save(fh, value[: len(value) // 2])
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(cli.np, "save", save_then_fill_the_disk)
    assert cli.main(["run", src, "--size", "n=64", "-o", "out.npy"]) == 1
    assert "No space left on device" in capsys.readouterr().err
    assert (tmp_path / "out.npy").read_bytes() == b"earlier result"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.npy", "prog.tl"]


def test_a_successful_write_replaces_the_old_file(tl_file, tmp_path, capsys):
    src = tl_file(VEC)
    (tmp_path / "out.npy").write_bytes(b"earlier result")
    assert cli.main(["run", src, "x=" + str(_npy(tmp_path, [1.0, 2.0])), "-o", "out.npy"]) == 0
    assert np.array_equal(np.load(tmp_path / "out.npy"), [2.0, 4.0])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.npy", "prog.tl", "x.npy"]


def test_output_of_a_tuple_is_refused_before_running(tl_file, monkeypatch, capsys):
    src = tl_file(PAIR)
    ran = []
    monkeypatch.setattr(cli, "random_inputs", lambda *a, **k: ran.append(1) or {})
    assert cli.main(["run", src, "-o", "out.npy"]) == 1
    assert "-o needs a function with one output; pair returns 2" in capsys.readouterr().err
    assert not ran


def _npy(folder, values):
    path = folder / "x.npy"
    np.save(path, np.asarray(values))
    return path.name

"""Where tensorlang keeps files between processes, and how it writes them.

Everything lives in ``TENSORLANG_CACHE_DIR`` (default ``$XDG_CACHE_HOME/tensorlang``
or ``~/.cache/tensorlang``): the parser tables of the grammar and the generated
kernel modules.  Files are written under a temporary name and renamed into
place, so a concurrent process sees either no file or a whole one.
"""
from __future__ import annotations

import os
import tempfile


def cache_dir() -> str:
    explicit = os.environ.get("TENSORLANG_CACHE_DIR")
    if explicit:
        return explicit
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "tensorlang")


def temporary_path(directory: str, suffix: str) -> str:
    """A fresh file name in `directory` (created), for writing before a rename."""
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=suffix, dir=directory)
    os.close(fd)
    return tmp


def write_atomically(path: str, text: str) -> None:
    tmp = temporary_path(os.path.dirname(path), os.path.splitext(path)[1])
    try:
        with open(tmp, "w") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise

"""Helpers for tests that compile small programs from their lines."""
import pytest

import tensorlang as tl


def program(*lines: str) -> str:
    """A source file from its lines (each ends with a newline)."""
    return "\n".join(lines) + "\n"


def compile_error(source: str, filename: str = "bad.tl") -> tl.TLError:
    """The error that compiling `source` raises (the test fails if it compiles)."""
    with pytest.raises(tl.TLError) as info:
        tl.parse(source, filename=filename)
    return info.value

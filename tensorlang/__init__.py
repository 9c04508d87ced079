"""tensorlang: a small tensor language with provably cheap derivatives.

Public API only; see docs/api.md.
"""
from .api import Function, Module, load, parse
from .errors import (TLBoundsError, TLCallError, TLError, TLInternalError, TLNameError,
                     TLShapeError, TLSyntaxError, TLTypeError)

__version__ = "0.1.0"

__all__ = [
    "Function", "Module", "load", "parse",
    "TLError", "TLSyntaxError", "TLNameError", "TLTypeError", "TLShapeError", "TLBoundsError",
    "TLCallError", "TLInternalError",
]

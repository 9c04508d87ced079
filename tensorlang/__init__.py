"""tensorlang: a small tensor language with provably cheap derivatives.

Public API only; see docs/api.md.
"""
from .api import (Function, Module, grad, hessian, hvp, jvp, load, parse, value_and_grad,
                  vjp)
from .errors import (TLBoundsError, TLCallError, TLError, TLInternalError, TLNameError,
                     TLShapeError, TLSyntaxError, TLTypeError)

__version__ = "0.1.0"

__all__ = [
    "Function", "Module", "load", "parse", "grad", "value_and_grad", "vjp", "jvp", "hvp",
    "hessian",
    "TLError", "TLSyntaxError", "TLNameError", "TLTypeError", "TLShapeError", "TLBoundsError",
    "TLCallError", "TLInternalError",
]

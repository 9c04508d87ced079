"""tensorlang: a small tensor language with provably cheap derivatives.

Public API only; see docs/api.md.
"""
# The submodule tensorlang.cost is imported first so that the name `cost`
# below ends up bound to the function tl.cost, not to the module.
from .cost import Cost  # noqa: I001
from .api import (Function, Module, cost, grad, hessian, hvp, jvp, load, parse, value_and_grad,
                  vjp)
from .errors import (TLBoundsError, TLCallError, TLError, TLInternalError, TLNameError,
                     TLShapeError, TLSyntaxError, TLTypeError)

__version__ = "0.1.0"

__all__ = [
    "Function", "Module", "load", "parse", "grad", "value_and_grad", "vjp", "jvp", "hvp",
    "hessian", "cost", "Cost",
    "TLError", "TLSyntaxError", "TLNameError", "TLTypeError", "TLShapeError", "TLBoundsError",
    "TLCallError", "TLInternalError",
]

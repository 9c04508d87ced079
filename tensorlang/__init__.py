"""tensorlang: a small tensor language with provably cheap derivatives.

Public API only; see docs/api.md.
"""
from .api import (Function, Module, cost, grad, hessian, hvp, jacobian, jvp, load, memory,
                  parse, to_jax, to_torch, value_and_grad, vjp)
from .costs import Cost
from .errors import (TLBoundsError, TLCallError, TLCostWarning, TLError, TLInternalError,
                     TLNameError, TLRecurrenceError, TLShapeError, TLSyntaxError, TLTypeError)
from .version import __version__

__all__ = [
    "__version__", "Function", "Module", "load", "parse", "grad", "value_and_grad", "vjp", "jvp", "hvp",
    "hessian", "jacobian", "cost", "memory", "Cost", "to_jax", "to_torch",
    "TLError", "TLSyntaxError", "TLNameError", "TLTypeError", "TLShapeError", "TLBoundsError",
    "TLRecurrenceError", "TLCallError", "TLInternalError", "TLCostWarning",
]

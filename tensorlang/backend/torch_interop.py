"""tensorlang functions inside PyTorch: ``tl.to_torch``.

``to_torch(f)`` is a function of torch tensors built on a
``torch.autograd.Function``: its forward runs ``f`` on the tensors' memory
(``Tensor.numpy()`` is a view of a CPU tensor, and ``torch.from_numpy`` a view
of the result, so float64 inputs and outputs are never copied) on f's own
backend, the compiled kernels by default.  Its backward is tensorlang's vjp
program for each parameter whose gradient is needed (``tl.vjp(f, p)``, derived
once), itself wrapped by ``to_torch``: autograd records it when a graph of the
derivative is asked for (``create_graph=True``), so a second backward runs
tensorlang's vjp of the vjp program (the Hessian-vector program) in turn.
Functions with several outputs have no backward (tensorlang's vjp takes one).
A call that autograd does not record (under ``torch.no_grad()``, or when no
input requires a gradient) runs ``f`` on the views without a Function node.
"""
from __future__ import annotations

from ..errors import TLError


def load_torch():
    try:
        import torch
    except ImportError as exc:
        raise TLError(f"tl.to_torch needs PyTorch, which is not installed ({exc})") from None
    return torch


def _numpy(t):
    """A view of a CPU tensor's memory as a NumPy array (a copy only for other devices)."""
    t = t.detach()
    return t.numpy() if t.device.type == "cpu" else t.cpu().numpy()


def to_torch(f):
    torch = load_torch()
    import numpy as np
    prog = f.program
    params = prog.params
    vjps: dict = {}

    def vjp_of(name):
        if name not in vjps:
            from ..api import vjp
            d = vjp(f, name)
            # on f's backend when one was chosen for it
            vjps[name] = to_torch(d if f.tiered else d.compile(f.backend))
        return vjps[name]

    plain: dict = {}

    def plain_vjp_of(name):
        """The vjp on the tensors' memory, no autograd record: a backward that builds
        no graph needs none (and no second autograd.Function around the call)."""
        if name not in plain:
            from ..api import vjp
            d = vjp(f, name)
            d = d if f.tiered else d.compile(f.backend)

            def run(*tensors):
                out = d(*[_numpy(t) for t in tensors])
                return torch.from_numpy(np.asarray(out, dtype=np.float64))
            plain[name] = run
        return plain[name]

    def run_on_views(tensors):
        """f on the tensors' memory, its outputs as tensors viewing theirs."""
        out = f(*[_numpy(t) for t in tensors])
        outs = out if isinstance(out, tuple) else (out,)
        return tuple(torch.from_numpy(np.asarray(o, dtype=np.float64)) for o in outs)

    class Call(torch.autograd.Function):
        @staticmethod
        def forward(ctx, *tensors):
            ctx.save_for_backward(*tensors)
            return run_on_views(tensors)

        @staticmethod
        def backward(ctx, *cotangents):
            tensors = ctx.saved_tensors
            if len(cotangents) != 1:
                raise TLError(f"{prog.name}: returns {len(cotangents)} values; tl.to_torch "
                              f"differentiates functions with one output")
            grads = []
            for p, t, needed in zip(params, tensors, ctx.needs_input_grad):
                if not needed or p.elem != "f64":
                    grads.append(None)
                    continue
                if torch.is_grad_enabled():
                    # a graph of the derivative is asked for (create_graph=True)
                    g = vjp_of(p.name)(*tensors, cotangents[0])
                else:
                    g = plain_vjp_of(p.name)(*tensors, cotangents[0])
                grads.append(g.reshape(t.shape))
            return tuple(grads)

    dtypes = [{"f64": torch.float64, "i64": torch.int64, "bool": torch.bool}[p.elem]
              for p in params]

    def call(*args, **kwargs):
        tensors = [torch.as_tensor(a, dtype=dt)
                   for a, dt in zip(f.ordered_args(args, kwargs), dtypes)]
        if torch.is_grad_enabled() and any(t.requires_grad for t in tensors):
            return f.shape_results(Call.apply(*tensors))
        # autograd records nothing: no Function node, nothing saved for a backward
        return f.shape_results(run_on_views(tensors))

    call.__name__ = prog.name
    call.__doc__ = f"{f.signature} on torch tensors (tensorlang.to_torch)"
    return call

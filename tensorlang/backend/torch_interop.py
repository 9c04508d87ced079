"""tensorlang functions inside PyTorch: ``tl.to_torch``.

``to_torch(f)`` is a function of torch tensors built on a
``torch.autograd.Function``: its forward runs ``f`` on the tensors' memory
(``Tensor.numpy()`` is a view of a CPU tensor, and ``torch.from_numpy`` a view
of the result, so float64 inputs and outputs are never copied) on f's own
backend, the compiled kernels by default.  The calls go through
``Function.call_arrays``: the binding and shape checks of a call run once per
tuple of argument shapes (a plan), not again at every call, nor once by the
wrapper and once by f.

The backward depends on f's output:

* A scalar output (a loss): the recorded forward runs ``tl.value_and_grad(f,
  wrt)`` instead of f, for the f64 parameters whose gradient autograd may ask
  for, one program and one call that computes the value and the gradients
  together (sharing the loops over the data) and keeps the gradients on the
  autograd node, one array the size of each such parameter, until the backward
  takes them (then the node holds nothing) or the graph is freed.  The backward
  scales them by the cotangent (in place, nothing recomputed; a cotangent of 1,
  ``loss.backward()``, leaves them as they are) and hands them to autograd.  The
  price: a recorded forward that is never differentiated did the gradient's
  work too (evaluate under ``torch.no_grad()``, which records nothing and runs f
  alone).  A second backward through a retained graph runs the vjp program.
* An array output: the backward is tensorlang's vjp program for each parameter
  whose gradient is needed (``tl.vjp(f, p)``, derived once), on the views of
  the saved inputs made by the forward.

When a graph of the derivative is asked for (``create_graph=True``) the
backward is the vjp program wrapped by ``to_torch`` itself, so autograd records
it and a second backward runs tensorlang's vjp of the vjp program (the
Hessian-vector program) in turn.  Functions with several outputs have no
backward (tensorlang's vjp takes one).  A call that autograd does not record
(under ``torch.no_grad()``, or when no input requires a gradient) runs ``f`` on
the views without a Function node.
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
    """A view of a CPU tensor's memory as a NumPy array (a copy only for other devices).
    ``force=True`` detaches (a view) and moves to the CPU (nothing for a CPU tensor)."""
    return t.numpy(force=True)


def _as_tensor(torch, f, value, p, dtype):
    """`value` as a tensor of `dtype`.  torch.as_tensor(value, dtype) alone would drop
    an imaginary part, truncate labels given as fractions (0.5 becomes label 0) and
    turn any non-zero float into True without a word.  Anything but a tensor is
    converted as a plain call converts it (the same checks, the same located TLError);
    a tensor of such a dtype is checked so before its cast, which autograd records."""
    if not isinstance(value, torch.Tensor):
        return torch.as_tensor(f._convert_arg(value, p))
    if value.is_complex() or (dtype is not torch.float64 and value.is_floating_point()):
        f._convert_arg(_numpy(value.resolve_conj()), p)
    return value.to(dtype)


def to_torch(f):
    torch = load_torch()
    import numpy as np
    from ..api import value_and_grad, vjp
    prog = f.program
    is_grad_enabled = torch.is_grad_enabled
    params = prog.params
    f64 = [p.elem == "f64" for p in params]
    # one output, returned as it is: the Function returns its tensor, not a tuple
    single = len(prog.outputs) == 1 and not prog.tuple_return and f.structure is None
    # one scalar output (a loss): its gradients can be computed with its value
    scalar = single and prog.returns_scalar()

    def backend_of(d):
        return d if f.tiered else d.compile(f.backend)   # f's backend when one was chosen

    vjps: dict = {}

    def vjp_of(name):
        """tl.vjp of one parameter, derived once per to_torch(f), on f's backend."""
        if name not in vjps:
            vjps[name] = backend_of(vjp(f, name))
        return vjps[name]

    graphs: dict = {}

    def graph_vjp_of(name):
        """The vjp wrapped by to_torch, for a backward that autograd records."""
        if name not in graphs:
            graphs[name] = to_torch(vjp_of(name))
        return graphs[name]

    losses: dict = {}

    def loss_for(needs):
        """For the parameters autograd may ask a gradient of (ctx.needs_input_grad): their
        positions and the value_and_grad program of the f64 ones, or None when there are
        none; derived once per tuple of needs."""
        if needs not in losses:
            at = tuple(i for i, (need, real) in enumerate(zip(needs, f64)) if need and real)
            losses[needs] = (at, backend_of(value_and_grad(f, tuple(params[i].name
                                                                   for i in at)))) if at else None
        return losses[needs]

    def tensor(o):
        """A tensor viewing a result (a float for a scalar becomes a 0-d tensor)."""
        if isinstance(o, float):
            return torch.from_numpy(np.array(o))
        return torch.from_numpy(np.asarray(o, dtype=np.float64))

    def outputs(outs):
        return tensor(outs[0]) if single else tuple(tensor(o) for o in outs)

    class Call(torch.autograd.Function):
        @staticmethod
        def forward(ctx, *tensors):
            ctx.save_for_backward(*tensors)
            views = [_numpy(t) for t in tensors]
            ctx.views = views
            ctx.grads = None
            if scalar:
                needs = ctx.needs_input_grad
                loss = loss_for(needs)
                if loss is not None:
                    at, d = loss
                    outs = d.call_arrays(views)
                    ctx.grads = (at, outs[1:])     # for the backward to take
                    return tensor(outs[0])
            return outputs(f.call_arrays(views))

        @staticmethod
        def backward(ctx, *cotangents):
            if len(cotangents) != 1:
                raise TLError(f"{prog.name}: returns {len(cotangents)} values; tl.to_torch "
                              f"differentiates functions with one output")
            cot = cotangents[0]
            grad_mode = is_grad_enabled()
            if ctx.grads is not None and not grad_mode:
                # the gradients at the forward's values, whatever happened to the inputs since
                return _take_gradients(ctx, cot)
            tensors = ctx.saved_tensors      # autograd's check that none was changed in place
            if grad_mode:
                # a graph of the derivative is asked for (create_graph=True)
                return tuple(graph_vjp_of(p.name)(*tensors, cot).reshape(t.shape)
                             if need and real else None
                             for p, t, need, real in zip(params, tensors,
                                                         ctx.needs_input_grad, f64))
            views = ctx.views + [_numpy(cot)]
            return tuple(tensor(vjp_of(p.name).call_arrays(views)[0]).reshape(t.shape)
                         if need and real else None
                         for p, t, need, real in zip(params, tensors, ctx.needs_input_grad, f64))

    nparams = len(params)

    def _take_gradients(ctx, cot):
        """The gradients the forward computed, times the cotangent; the node gives them up
        (a second backward through a retained graph runs the vjp program)."""
        (at, grads), ctx.grads = ctx.grads, None
        scale = float(cot)
        out = [None] * nparams
        taken = []
        for i, g in zip(at, grads):
            if isinstance(g, float):
                g = np.array(g)
            elif (g.base is not None or (taken and any(g is h for h in taken))) and any(
                    np.may_share_memory(g, a) for a in ctx.views + taken):
                # A result that is an input, or another result, as the program returned
                # it (an array that owns its memory, returned once, is neither: the views
                # of the inputs do not own theirs): autograd keeps a gradient as .grad
                # and adds to it in place, so this one gets memory of its own.
                g = g.copy()
            if scale != 1.0:
                np.multiply(g, scale, out=g)
            taken.append(g)
            out[i] = torch.from_numpy(g)
        return tuple(out)

    dtypes = [{"f64": torch.float64, "i64": torch.int64, "bool": torch.bool}[p.elem]
              for p in params]
    grouped = not single                       # results grouped by f.shape_results
    Tensor = torch.Tensor

    def call(*args, **kwargs):
        if kwargs or len(args) != nparams:
            args = f.ordered_args(args, kwargs)
        tensors = [a if type(a) is Tensor and a.dtype is dt else _as_tensor(torch, f, a, p, dt)
                   for a, p, dt in zip(args, params, dtypes)]
        if is_grad_enabled() and any(t.requires_grad for t in tensors):
            out = Call.apply(*tensors)
        else:
            # autograd records nothing: no Function node, nothing saved for a backward
            out = outputs(f.call_arrays([_numpy(t) for t in tensors]))
        return f.shape_results(out) if grouped else out

    call.__name__ = prog.name
    call.__doc__ = f"{f.signature} on torch tensors (tensorlang.to_torch)"
    return call

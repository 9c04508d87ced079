"""tensorlang functions inside JAX: ``tl.to_jax`` and ``compile(backend="jax")``.

``Traceable(prog)`` is a ``jax.custom_jvp`` function of the program's
parameters (positional jnp arrays, a tuple of outputs) whose primal is the
emitted program (jax_backend.py) and whose JVP rule is a tensorlang derivative,
emitted the same way:

* a program with one scalar output: its ``value_and_grad`` program with respect
  to every f64 parameter gives the value and the gradients g at once, and the
  tangent is ``sum(g * dx)``.  Reverse mode transposes that product, so
  ``jax.grad`` runs tensorlang's simplified gradient and nothing else;
* any other program: its ``jvp`` program (primal and tangent outputs in one
  pass), which JAX transposes for reverse mode (it is linear in the tangents).

The derivative programs are themselves ``Traceable``, derived lazily the first
time JAX asks, so a second derivative (``jax.hessian``, ``jax.jvp`` of
``jax.grad``) is tensorlang's forward mode over its simplified gradient: the
Hessian-vector program.  i64 and bool parameters have no tangent.
"""
from __future__ import annotations

from ..errors import TLShapeError
from ..ssa.ir import Program
from .jax_backend import load_jax, runner, sizes_of


class Traceable:
    def __init__(self, prog: Program):
        self.prog = prog
        self._derivatives: dict = {}
        jax, _ = load_jax()
        fn = jax.custom_jvp(self.primal)
        fn.defjvp(self.jvp_rule, symbolic_zeros=True)
        self.fn = fn

    @property
    def scalar(self) -> bool:
        prog = self.prog
        return len(prog.outputs) == 1 and not prog.shapes()[prog.outputs[0]][1]

    def primal(self, *args):
        prog = self.prog
        env = dict(zip((p.name for p in prog.params), args))
        outs, _ = runner(prog)(env, checked_sizes(prog, env))
        return tuple(outs)

    def derivative(self, wrt: tuple) -> "Traceable":
        """The derivative program with respect to the f64 parameters `wrt` (those
        whose tangent is not a symbolic zero), derived once."""
        d = self._derivatives.get(wrt)
        if d is None:
            from ..driver import derive
            kind = "value_and_grad" if self.scalar else "jvp"
            d = self._derivatives[wrt] = Traceable(derive(kind, self.prog, wrt))
        return d

    def jvp_rule(self, primals, tangents):
        jax, jnp = load_jax()
        from jax.custom_derivatives import SymbolicZero
        active = [(p.name, t) for p, t in zip(self.prog.params, tangents)
                  if p.elem == "f64" and not isinstance(t, SymbolicZero)]
        plain = [jnp.asarray(a) for a in primals]
        if not active:
            outs = self.fn(*plain)
            return outs, tuple(jnp.zeros_like(o) for o in outs)
        d = self.derivative(tuple(n for n, _ in active))
        diff = [t for _, t in active]
        if self.scalar:
            value, *grads = d.fn(*plain)
            tangent = sum(jnp.sum(g * t) for g, t in zip(grads, diff))
            return (value,), (jnp.asarray(tangent, dtype=jnp.float64),)
        outs = d.fn(*plain, *diff)
        k = len(self.prog.outputs)
        return tuple(outs[:k]), tuple(outs[k:])


def checked_sizes(prog: Program, env: dict) -> dict:
    """sizes_of, after checking every argument's rank and that sizes agree."""
    seen: dict = {}
    for p in prog.params:
        shape = tuple(env[p.name].shape)
        if len(shape) != len(p.dims):
            raise TLShapeError(f"{prog.name}: {p.name} has shape {shape} (rank {len(shape)}) "
                               f"but needs rank {len(p.dims)}")
        for k, (d, got) in enumerate(zip(p.dims, shape)):
            want = d if isinstance(d, int) else seen.setdefault(d, got)
            if want != got:
                raise TLShapeError(f"{prog.name}: {p.name} has shape {shape} but dim {k} "
                                   f"must be {d} = {want}")
    return sizes_of(prog, env)


_DTYPES = {"f64": "float64", "i64": "int64", "bool": "bool_"}


def to_jax(f):
    """f as a function of jnp arrays (positional or by name) that JAX can trace."""
    from ..api import _group
    jax, jnp = load_jax()
    prog = f.optimized_program()
    traced = Traceable(prog)

    def call(*args, **kwargs):
        bound = f.bind(args, kwargs)
        arrays = [jnp.asarray(bound[p.name], dtype=getattr(jnp, _DTYPES[p.elem]))
                  for p in prog.params]
        outs = traced.fn(*arrays)
        if f.structure is not None:
            return _group(f.structure, outs)
        return tuple(outs) if prog.tuple_return else outs[0]

    call.__name__ = prog.name
    call.__doc__ = f"{f.signature}, emitted as JAX code (tensorlang.to_jax)"
    call.traceable = traced
    return call


_JITTED: dict = {}


def run(prog: Program, arrays: dict, sizes: dict, source=None):
    """compile(backend="jax"): the emitted program under jax.jit (one trace per
    shape), NumPy arrays in and out.  When a gathered label is out of range somewhere,
    the call is answered by the interpreter, which raises the located TLBoundsError
    when a bracket does not exclude the label (and computes the same values when one
    does)."""
    import numpy as np
    jax, jnp = load_jax()
    fn = _JITTED.get(prog)
    if fn is None:
        emitted = runner(prog)
        fn = jax.jit(lambda env, sz: emitted(env, dict(sz)), static_argnums=1)
        _JITTED[prog] = fn
    outs, bad = fn({k: jnp.asarray(v) for k, v in arrays.items()}, tuple(sorted(sizes.items())))
    if bool(bad):
        from .numpy_ref import evaluate
        return evaluate(prog, arrays, sizes, source)
    return [np.asarray(o) for o in outs]

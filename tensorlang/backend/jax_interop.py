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

A jvp program's tangents batched by ``jax.vmap`` are, under ``jax.jacfwd`` and
``jax.hessian``, the standard basis of the differentiated parameters (one
direction per element).  Its primal is then a ``jax.custom_batching.custom_vmap``
function whose rule checks at run time (O(B^2) for B directions) that the batched
tangents are that basis and, when they are, answers with tensorlang's Jacobian
programs of the parent's outputs (``derive("jacobian")``, one per output and
parameter) instead of B Jacobian-vector products: ``jax.hessian`` of x^T A x
costs O(n^2), not n times the O(n^2) H v program.  Any other batch (arbitrary
tangents, batched primals) runs the batched jvp program.  Under ``jax.jit`` the
check is a traced value and both answers are compiled under one ``lax.cond``.
"""
from __future__ import annotations

import numpy as np

from .. import sizexpr
from ..errors import TLShapeError, TLTypeError
from ..ssa.ir import Program
from .jax_backend import load_jax, runner


class Traceable:
    def __init__(self, prog: Program, parent: "Traceable | None" = None, wrt: tuple = ()):
        self.prog = prog
        # a jvp program: the Traceable it is the forward mode of, and the parameters
        # whose tangents follow the parent's parameters
        self.parent, self.wrt = parent, wrt
        self._derivatives: dict = {}
        self._jacobians: dict = {}
        jax, _ = load_jax()
        primal = self.primal
        if parent is not None and basis_rule_usable():
            primal = jax.custom_batching.custom_vmap(self.primal)
            primal.def_vmap(self.vmap_rule)
        fn = jax.custom_jvp(primal)
        fn.defjvp(self.jvp_rule, symbolic_zeros=True)
        self.fn = fn

    @property
    def scalar(self) -> bool:
        return self.prog.returns_scalar()

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
            if self.scalar:
                d = Traceable(derive("value_and_grad", self.prog, wrt))
            else:
                d = Traceable(derive("jvp", self.prog, wrt), parent=self, wrt=wrt)
            self._derivatives[wrt] = d
        return d

    # ------------------------------------------------------------ batched tangents
    def jacobians(self) -> list | None:
        """For a jvp program: per output of the parent, per parameter of `wrt`, the
        Traceable of the parent's Jacobian program (output shape + parameter shape);
        None when tensorlang or the emission cannot build one (then the batched jvp
        program answers every batch)."""
        if "all" in self._jacobians:
            return self._jacobians["all"]
        from ..driver import derive
        from ..errors import TLError
        from ..opt.simplify import remove_dead_statements
        base = self.parent.prog
        table = None
        try:
            table = []
            for out in base.outputs:
                one = remove_dead_statements(Program(f"{base.name}_{out}", base.params,
                                                     base.stmts, (out,), False))
                row = []
                for name in self.wrt:
                    jac = Traceable(derive("jacobian", one, (name,)))
                    runner(jac.prog)           # emitted now, so an unsupported node shows here
                    row.append(jac)
                table.append(row)
        except TLError:
            table = None
        self._jacobians["all"] = table
        return table

    def vmap_rule(self, axis_size, in_batched, *args):
        """jax.vmap of a jvp program (see the module's docstring)."""
        jax, jnp = load_jax()
        from jax import lax
        k = len(self.parent.prog.params)
        plain, tangents = args[:k], args[k:]
        nout = len(self.parent.prog.outputs)

        def products():
            # outputs that read no batched parameter stay unbatched (as JAX's own
            # batching of the emitted code would leave them)
            moved = {p.name for p, b in zip(self.prog.params, in_batched) if b}
            deps = parameter_dependencies(self.prog)
            out_axes = tuple(0 if deps[o] & moved else None for o in self.prog.outputs)
            axes = [0 if b else None for b in in_batched]
            return tuple(jax.vmap(self.primal, in_axes=axes, out_axes=out_axes)(*args)), \
                tuple(a == 0 for a in out_axes)

        sizes = [int(np.prod(t.shape[1:])) for t in tangents]
        if any(in_batched[:k]) or not all(in_batched[k:]) or axis_size != sum(sizes) \
                or self.jacobians() is None:
            return products()
        table = self.jacobians()
        values = self.parent.primal(*plain)

        def from_jacobians():
            cols = []
            for value, row in zip(values, table):
                size = int(np.prod(value.shape))
                blocks = [jnp.reshape(j.primal(*plain)[0], (size, z))
                          for j, z in zip(row, sizes)]
                whole = blocks[0] if len(blocks) == 1 else jnp.concatenate(blocks, axis=1)
                cols.append(jnp.reshape(jnp.transpose(whole), (axis_size,) + value.shape))
            return tuple(cols)

        def from_products():
            outs, batched = products()
            return tuple(o if b else jnp.broadcast_to(o, (axis_size,) + o.shape)
                         for o, b in zip(outs[nout:], batched[nout:]))

        flat = [jnp.reshape(t, (axis_size, z)) for t, z in zip(tangents, sizes)]
        flat = flat[0] if len(flat) == 1 else jnp.concatenate(flat, axis=1)
        eye = lax.broadcasted_iota(jnp.int32, flat.shape, 0) == \
            lax.broadcasted_iota(jnp.int32, flat.shape, 1)
        basis = jnp.all(flat == eye)
        if isinstance(basis, jax.core.Tracer):
            cols = lax.cond(basis, from_jacobians, from_products)
        else:
            cols = from_jacobians() if bool(basis) else from_products()
        return tuple(values) + tuple(cols), (False,) * nout + (True,) * nout

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
        if d.parent is not None and basis_rule_usable():
            # the values from the program itself: JAX's partial evaluation (reverse
            # mode) cannot split a custom_vmap call into a known primal part and a
            # linear part, and needs the values known (under jit the copy is shared)
            return tuple(self.fn(*plain)), tuple(outs[k:])
        return tuple(outs[:k]), tuple(outs[k:])


def parameter_dependencies(prog: Program) -> dict:
    """statement name -> the parameters it reads, directly or through other
    statements (a recurrence's members read each other: to a fixed point)."""
    from ..ssa.ir import Access, Gather, Rel
    from ..ssa.traverse import iter_nodes
    params = {p.name for p in prog.params}
    reads = {st.name: {n.name for n in iter_nodes(st.body) if isinstance(n, (Access, Gather, Rel))}
             for st in prog.stmts}
    deps = {name: r & params for name, r in reads.items()}
    changed = True
    while changed:
        changed = False
        for name, r in reads.items():
            new = deps[name].union(*[deps.get(x, set()) for x in r])
            if new != deps[name]:
                deps[name], changed = new, True
    for p in params:
        deps.setdefault(p, {p})
    return deps


_BASIS_RULE: list = []


def basis_rule_usable() -> bool:
    """Whether jvp programs can carry the custom_vmap rule above.  JAX cannot
    transpose a custom_vmap call (reverse mode through a jvp program of a function
    with several output elements), so a transpose is registered once: the linear
    transpose (jax.linear_transpose) of the call it wraps as a function of its
    linear arguments, the others fixed.  When this JAX has no such hook the rule is
    not used (the batched jvp program answers every batch)."""
    if not _BASIS_RULE:
        ok = False
        try:
            from jax._src.custom_batching import custom_vmap_p
            from jax._src.interpreters import ad
            if custom_vmap_p not in ad.fancy_transposes \
                    and custom_vmap_p not in ad.primitive_transposes:
                ad.primitive_transposes[custom_vmap_p] = _transpose_call
            ok = True
        except (ImportError, AttributeError):
            ok = False
        _BASIS_RULE.append(ok)
    return _BASIS_RULE[0]


def _transpose_call(cts, *args, call, rule, in_tree, out_tree):
    """The transpose of a custom_vmap call with respect to its undefined (linear)
    arguments: jax.linear_transpose of the wrapped call with the others fixed, so
    JAX's partial evaluation first separates the part that reads only the fixed
    arguments (a scan carrying both is split, as in any linearisation)."""
    jax, _ = load_jax()
    from jax._src import core
    from jax._src.interpreters import ad
    linear = [ad.is_undefined_primal(a) for a in args]
    live = [type(c) is not ad.Zero for c in cts]
    if not any(live):
        return [None] * len(args)

    def along(*moving):
        it = iter(moving)
        full = [next(it) if lin else a for a, lin in zip(args, linear)]
        outs = core.jaxpr_as_fun(call)(*full)
        return [o for o, k in zip(outs, live) if k]

    avals = [jax.ShapeDtypeStruct(a.aval.shape, a.aval.dtype)
             for a, lin in zip(args, linear) if lin]
    back = jax.linear_transpose(along, *avals)([c for c, k in zip(cts, live) if k])
    it = iter(back)
    return [next(it) if lin else None for lin in linear]


def checked_sizes(prog: Program, env: dict, located=None) -> dict:
    """The sizes read off the arguments' shapes, derived ones included, after checking
    every argument's rank, that sizes agree and that derived sizes are whole, at least 1
    and the sizes of the dimensions declared with them.  An error names the program, or
    is `located(parameter, message)` when that is given."""
    def fail(pname: str, message: str):
        raise (located(pname, message) if located is not None
               else TLShapeError(f"{prog.name}: {message}"))

    seen: dict = {}
    setters: dict = {}                       # size symbol -> the parameter that set it
    derived = []                             # dimensions such as n - k + 1, checked last
    for p in prog.params:
        shape = tuple(env[p.name].shape)
        if len(shape) != len(p.dims):
            fail(p.name, f"{p.name} has shape {shape} (rank {len(shape)}) but needs rank "
                         f"{len(p.dims)}")
        for k, (d, got) in enumerate(zip(p.dims, shape)):
            if got == 0:
                fail(p.name, f"{p.name} has shape {shape}: dimension {k} is empty, but sizes "
                             f"must be at least 1")
            if isinstance(d, str) and sizexpr.is_derived(d):
                derived.append((p.name, shape, k, d))
                continue
            setters.setdefault(d, p.name)
            want = d if isinstance(d, int) else seen.setdefault(d, got)
            if want != got:
                fail(p.name, f"{p.name} has shape {shape} but dim {k} must be {d} = {want}")
    sizes = dict(seen)
    for z in list(prog.sizes()) + [d for *_, d in derived]:
        if z not in sizes and sizexpr.is_derived(z):
            try:
                sizes[z] = sizexpr.value(z, sizes)
            except ValueError as exc:
                # not whole or not positive (n / 2 at an odd n): the plain call's
                # error, at the parameter that set the first size it is made of
                fail(setters[sizexpr.base_symbols(z)[0]], str(exc))
    for pname, shape, k, d in derived:
        if shape[k] != sizes[d]:
            fail(pname, f"{pname} has shape {shape} but dim {k} must be {d} = {sizes[d]}")
    return sizes


_DTYPES = {"f64": "float64", "i64": "int64", "bool": "bool_"}


def to_jax(f):
    """f as a function of jnp arrays (positional or by name) that JAX can trace."""
    jax, jnp = load_jax()
    prog = f.optimized_program()
    traced = Traceable(prog)

    dtypes = [getattr(jnp, _DTYPES[p.elem]) for p in prog.params]
    names = [p.name for p in prog.params]

    def call(*args, **kwargs):
        arrays = [jnp.asarray(_checked_arg(f, a, p, jax), dtype=dt)
                  for a, p, dt in zip(f.ordered_args(args, kwargs), prog.params, dtypes)]
        # shapes are known when JAX traces: a mistake is the plain call's located error
        checked_sizes(prog, dict(zip(names, arrays)),
                      lambda pname, message: f._param_error(TLShapeError, pname, message))
        return f.shape_results(traced.fn(*arrays))

    call.__name__ = prog.name
    call.__doc__ = f"{f.signature}, emitted as JAX code (tensorlang.to_jax)"
    call.traceable = traced
    return call


# numpy dtype kinds that a plain call converts to each element type as they are
_EXACT_KINDS = {"f64": "fiub", "i64": "iub", "bool": "biu"}


def _checked_arg(f, value, p, jax):
    """One argument of a tl.to_jax function, refused where a plain call refuses it:
    jnp.asarray alone would drop an imaginary part and truncate labels given as
    fractions (0.5 becomes label 0) without a word.  An argument whose dtype converts
    exactly passes as it is; any other concrete one is converted and checked as a
    plain call does it (the same located TLError); a traced one has no values yet to
    check, so it is refused."""
    if isinstance(value, (jax.core.Tracer, jax.Array)):
        kind = np.dtype(value.dtype).kind
        if kind in _EXACT_KINDS[p.elem]:
            return value
        if isinstance(value, jax.core.Tracer):
            want = {"f64": "be real (f64)", "i64": "hold integers (i64)",
                    "bool": "be a boolean mask (bool)"}[p.elem]
            raise f._param_error(TLTypeError, p.name, f"{p.name} must {want}, got a traced "
                                 f"{value.dtype} array, whose values cannot be checked here")
    return f._convert_arg(value, p)


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

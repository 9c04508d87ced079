"""tensorlang via JAX rows: the tensorlang row's derivative (tl.grad, tl.hessian, tl.hvp,
tl.jacobian of benchmarks/workloads/*.tl) emitted as JAX code by tl.to_jax and run under
jax.jit; the forward likewise.  JAX_ENABLE_X64 is set by the driver before import."""
from __future__ import annotations

from . import sys_tl
from .spec import flat_numpy


def rows(key):
    row = next(r for r in sys_tl.ROWS[key] if r[0] == "main")
    return [("main", f"jax.jit(tl.to_jax(...)) of the tensorlang row ({row[4]})")]


def build(key: str, variant: str, size, inp: dict):
    import jax
    import jax.numpy as jnp

    import tensorlang as tl
    f, d, transform, wrt = sys_tl.programs(key, variant, size)
    fj, dj = jax.jit(tl.to_jax(f)), jax.jit(tl.to_jax(d))
    fargs = [jnp.asarray(inp[p]) for p in f.params]
    dargs = [jnp.asarray(inp["v"] if transform == "hvp" and p == "d_" + str(wrt) else inp[p])
             for p in d.params]
    return ((lambda: jax.block_until_ready(fj(*fargs))),
            (lambda: jax.block_until_ready(dj(*dargs))))


to_numpy = flat_numpy

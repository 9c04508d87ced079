"""tensorlang via JAX rows: the tensorlang row's derivative (tl.grad, tl.hessian, tl.hvp,
tl.jacobian of benchmarks/workloads/*.tl) emitted as JAX code by tl.to_jax and run under
jax.jit; the forward likewise.  JAX_ENABLE_X64 is set by the driver before import."""
from __future__ import annotations

import numpy as np

from . import sys_tl
from .spec import WRT


def rows(key):
    row = next(r for r in sys_tl.ROWS[key] if r[0] == "main")
    return [("main", f"jax.jit(tl.to_jax(...)) of the tensorlang row ({row[4]})")]


def build(key: str, variant: str, size, inp: dict):
    import jax
    import jax.numpy as jnp

    import tensorlang as tl
    row = next(r for r in sys_tl.ROWS[key] if r[0] == variant)
    _, file, fname, transform, _ = row[:5]
    mod = tl.load(sys_tl.WL / file)
    f = mod[fname.format(k=size)]
    wrt = WRT[key] if len(WRT[key]) > 1 else WRT[key][0]
    if transform == "direct":
        d, f = f, mod[row[5]]
    else:
        make = {"grad": tl.grad, "hessian": tl.hessian, "hvp": tl.hvp,
                "jacobian": tl.jacobian, "value_and_grad": tl.value_and_grad}[transform]
        d = make(f, wrt=wrt)
    fj, dj = jax.jit(tl.to_jax(f)), jax.jit(tl.to_jax(d))
    fargs = [jnp.asarray(inp[p]) for p in f.params]
    dargs = [jnp.asarray(inp["v"] if transform == "hvp" and p == "d_" + str(wrt) else inp[p])
             for p in d.params]
    return ((lambda: jax.block_until_ready(fj(*fargs))),
            (lambda: jax.block_until_ready(dj(*dargs))))


def to_numpy(out):
    parts = out if isinstance(out, tuple) else (out,)
    flat = []
    for p in parts:                  # value_and_grad: (value, (grad, ...))
        flat += list(p) if isinstance(p, tuple) else [p]
    return tuple(np.asarray(p) for p in flat)

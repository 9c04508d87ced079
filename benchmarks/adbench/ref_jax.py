"""JAX versions of the three objectives, written the way a JAX user would: per-item functions
mapped with jax.vmap, derivatives by jax.grad / jax.jacfwd, everything under jax.jit, the LSTM
as a lax.scan over time.  JAX_ENABLE_X64 must be on (the benchmark's worker sets it).

Each `build_*` returns (objective, derivative): functions of no arguments that run the jitted
computation on the loaded instance and wait for the result (block_until_ready).
"""
from __future__ import annotations

import numpy as np

from . import ref_numpy


# ---------------------------------------------------------------------------- GMM
def gmm_functions(d: int, gamma: float, m: int):
    import jax
    import jax.numpy as jnp
    from jax.scipy.special import logsumexp, multigammaln

    rows, cols = ref_numpy.lower_pairs(d)

    def objective(alphas, means, icf, x):
        n = x.shape[0]
        k = alphas.shape[0]
        q, l = icf[:, :d], icf[:, d:]
        qdiag = jnp.exp(q)
        L = jnp.zeros((k, d, d), x.dtype).at[:, rows, cols].set(l)
        sum_q = jnp.sum(q, axis=1)

        def point(xi):
            xc = xi[None, :] - means                              # (K, D)
            z = qdiag * xc + jnp.einsum("kij,kj->ki", L, xc)
            return logsumexp(alphas + sum_q - 0.5 * jnp.sum(z * z, axis=1))

        nprime = d + m + 1
        prior = jnp.sum(0.5 * gamma ** 2 * (jnp.sum(qdiag ** 2, axis=1) + jnp.sum(l ** 2, axis=1))
                        - m * sum_q)
        return (-n * d * 0.5 * np.log(2 * np.pi) + jnp.sum(jax.vmap(point)(x))
                - n * logsumexp(alphas) + prior
                - k * (nprime * d * np.log(gamma / np.sqrt(2.0)) - multigammaln(0.5 * nprime, d)))

    return jax.jit(objective), jax.jit(jax.grad(objective, argnums=(0, 1, 2)))


def build_gmm(inst):
    import jax
    import jax.numpy as jnp
    f, g = gmm_functions(inst.d, inst.gamma, inst.m)
    args = [jnp.asarray(a) for a in (inst.alphas, inst.means, inst.icf, inst.x)]
    return (lambda: jax.block_until_ready(f(*args))), (lambda: jax.block_until_ready(g(*args)))


# ---------------------------------------------------------------------------- BA
def ba_functions():
    import jax
    import jax.numpy as jnp

    def rodrigues(r, Y):
        t2 = r @ r
        nonzero = t2 != 0.0
        # the square root sees 1 where t2 is 0, so neither branch's derivative is NaN there
        t = jnp.sqrt(jnp.where(nonzero, t2, 1.0))
        u = r / t
        c, s = jnp.cos(t), jnp.sin(t)
        big = Y * c + jnp.cross(u, Y) * s + u * (u @ Y) * (1.0 - c)
        return jnp.where(nonzero, big, Y + jnp.cross(r, Y))

    def observation(cam, X, w, feat):
        Yr = rodrigues(cam[0:3], X - cam[3:6])
        q = Yr[0:2] / Yr[2]
        s = q @ q
        return w * (cam[6] * q * (1.0 + cam[9] * s + cam[10] * s * s) + cam[7:9] - feat)

    @jax.jit
    def residuals(cams, X, w, feats, obs):
        reproj = jax.vmap(observation)(cams[obs[:, 0]], X[obs[:, 1]], w, feats)
        return reproj, 1.0 - w * w

    @jax.jit
    def blocks(cams, X, w, feats, obs):
        jc, jx, jw = jax.vmap(jax.jacfwd(observation, argnums=(0, 1, 2)))(
            cams[obs[:, 0]], X[obs[:, 1]], w, feats)
        dw = jax.vmap(jax.grad(lambda v: 1.0 - v * v))(w)
        return jnp.concatenate([jc, jx, jw[:, :, None]], axis=2), dw

    return residuals, blocks


def build_ba(inst):
    import jax
    import jax.numpy as jnp
    residuals, blocks = ba_functions()
    args = [jnp.asarray(a) for a in (inst.cams, inst.X, inst.w, inst.feats, inst.obs)]

    def jacobian():
        J, dw = jax.block_until_ready(blocks(*args))
        return ref_numpy.ba_csr(np.asarray(J), np.asarray(dw), inst.obs, inst.n, inst.m)
    return (lambda: jax.block_until_ready(residuals(*args))), jacobian


# ---------------------------------------------------------------------------- LSTM
def lstm_functions(layers: int):
    import jax
    import jax.numpy as jnp

    def cell(W, B, h, s, v):
        b = h.shape[0]
        g = jnp.concatenate([v, h, v, h]) * W + B
        forget, ingate = jax.nn.sigmoid(g[:b]), jax.nn.sigmoid(g[b:2 * b])
        outgate, change = jax.nn.sigmoid(g[2 * b:3 * b]), jnp.tanh(g[3 * b:])
        s = s * forget + ingate * change
        return outgate * jnp.tanh(s), s

    def objective(main_params, extra_params, state, sequence):
        c, b = sequence.shape

        def step(carry, xs):
            h, s = carry
            v, target = xs
            x = v * extra_params[0]
            hs, ss = [], []
            for j in range(layers):
                hj, sj = cell(main_params[2 * j], main_params[2 * j + 1], h[j], s[j], x)
                hs.append(hj)
                ss.append(sj)
                x = hj
            y = x * extra_params[1] + extra_params[2]
            ynorm = y - jnp.log(2.0 + jnp.sum(jnp.exp(y)))
            return (jnp.stack(hs), jnp.stack(ss)), jnp.sum(target * ynorm)

        _, per_step = jax.lax.scan(step, (state[0::2], state[1::2]), (sequence[:-1], sequence[1:]))
        return -jnp.sum(per_step) / ((c - 1) * b)

    return jax.jit(objective), jax.jit(jax.grad(objective, argnums=(0, 1)))


def build_lstm(inst):
    import jax
    import jax.numpy as jnp
    f, g = lstm_functions(inst.layers)
    args = [jnp.asarray(a) for a in (inst.main_params, inst.extra_params, inst.state, inst.sequence)]
    return (lambda: jax.block_until_ready(f(*args))), (lambda: jax.block_until_ready(g(*args)))


BUILD = {"gmm": build_gmm, "ba": build_ba, "lstm": build_lstm}
VARIANTS = {"jit": "jax.jit"}

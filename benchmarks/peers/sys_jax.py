"""JAX rows: the idiomatic jax.numpy program, derivatives by jax.grad / jax.jacrev /
jax.hessian / jvp-of-grad, everything under jax.jit, results synchronised with
block_until_ready.  JAX_ENABLE_X64 is set by the driver before this module is imported."""
from __future__ import annotations

import numpy as np

from .spec import CASES, flat_numpy


def _programs(key: str, size, variant: str = "jit"):
    """(forward, derivative-of-forward factory description, argnums) for case `key`."""
    import jax
    import jax.numpy as jnp

    if key == "W1":
        def f(A, B, W):
            return jnp.sum(W * (A @ B))
        return f, "grad", (0,), "jax.grad"
    if key == "W2":
        def f(W1, c1, W2, c2, X, y):
            a = jax.nn.relu(X @ W1 + c1)
            z = a @ W2 + c2
            logp = jax.nn.log_softmax(z, axis=1)
            return -jnp.mean(jnp.take_along_axis(logp, y[:, None], axis=1))
        return f, "grad", (0, 1, 2, 3), "jax.grad; log_softmax + take_along_axis"
    if key == "W3":
        v = size

        def f(E, T, y):
            Y = jax.nn.one_hot(y, v, dtype=E.dtype) @ E
            return 0.5 * jnp.sum((Y - T) ** 2)
        return f, "grad", (0,), "jax.grad; one_hot(y, v) @ E"
    if key == "W4":
        def f(E, T, idx):
            return 0.5 * jnp.sum((E[idx] - T) ** 2)
        return f, "grad", (0,), "jax.grad; E[idx]"
    if key == "W5a":
        k = size

        def f(A):
            t = jnp.trace(A)
            s = t
            for _ in range(k - 1):
                s = s + t
            return s
        return f, "grad", (0,), "jax.grad; t = trace(A) added k times"
    if key == "W5b":
        def f(A, B):
            return jnp.trace(A @ B)
        return f, "grad", (0, 1), "jax.grad; trace(A @ B)"
    if key == "W6":
        def f(x):
            return x * jnp.sin(x) + jax.nn.sigmoid(x)
        return f, "jacrev", (0,), "jax.jacrev"
    if key == "W7a":
        def f(x, A):
            return x @ (A @ x)
        return f, "hessian", (0,), "jax.hessian"
    if key == "W7b":
        def f(x, A):
            return x @ (A @ x)
        return f, "hvp", (0,), "jax.jvp of jax.grad"
    if key == "W8":
        def f(U, V, R, M):
            P = U @ V.T
            return 0.5 * jnp.sum(M * (P - R) ** 2)
        return f, "hessian", (0,), "jax.hessian"
    if key == "W9":
        def f(X, D):
            diff = X[:, None, :] - X[None, :, :]
            q = jnp.sum(diff ** 2, axis=2)
            off = 1.0 - jnp.eye(X.shape[0], dtype=X.dtype)
            return 0.25 * jnp.sum(off * (q - D) ** 2)
        return f, "hessian", (0,), "jax.hessian"
    if key in ("W10a", "W10b") and variant == "conv":
        if key == "W10a":
            def f(x, w, T):
                K = w.shape[0]
                y = jax.lax.conv_general_dilated(x[None, None, :], w[None, None, :], (1,),
                                                 [(0, K - 1)])[0, 0]
                return 0.5 * jnp.sum((y - T) ** 2)
        else:
            def f(img, w, T):
                y = jax.lax.conv_general_dilated(img[None, None], w[None, None], (1, 1),
                                                 [(2, 2), (2, 2)])[0, 0]
                return 0.5 * jnp.sum((y - T) ** 2)
        return f, "grad", (0, 1), "jax.grad; lax.conv_general_dilated"
    if key == "W10a":
        def f(x, w, T):
            K, n = w.shape[0], x.shape[0]
            xp = jnp.pad(x, (0, K - 1))
            y = sum(w[t] * xp[t:t + n] for t in range(K))
            return 0.5 * jnp.sum((y - T) ** 2)
        return f, "grad", (0, 1), "jax.grad; sum of K shifted slices"
    if key == "W10b":
        def f(img, w, T):
            h, v = img.shape
            P = jnp.pad(img, 2)
            y = sum(w[p, q] * P[p:p + h, q:q + v] for p in range(5) for q in range(5))
            return 0.5 * jnp.sum((y - T) ** 2)
        return f, "grad", (0, 1), "jax.grad; sum of 25 shifted slices"
    if key == "W11":
        def f(ux, uy, theta, M):
            co, si = jnp.cos(theta), jnp.sin(theta)
            mr = M[:, :-1] * M[:, 1:]
            mv = M[:-1, :] * M[1:, :]
            e = jnp.sum(mr * ((ux[:, 1:] - ux[:, :-1] - co[:, :-1]) ** 2
                              + (uy[:, 1:] - uy[:, :-1] - si[:, :-1]) ** 2))
            e += jnp.sum(mr * ((ux[:, :-1] - ux[:, 1:] + co[:, 1:]) ** 2
                               + (uy[:, :-1] - uy[:, 1:] + si[:, 1:]) ** 2))
            e += jnp.sum(mv * ((ux[1:, :] - ux[:-1, :] + si[:-1, :]) ** 2
                               + (uy[1:, :] - uy[:-1, :] - co[:-1, :]) ** 2))
            e += jnp.sum(mv * ((ux[:-1, :] - ux[1:, :] - si[1:, :]) ** 2
                               + (uy[:-1, :] - uy[1:, :] + co[1:, :]) ** 2))
            return e
        return f, "grad", (0, 1), "jax.grad; shifted slices"
    if key == "W12":
        def f(w, X, t):
            z = X @ w
            return jnp.mean(jnp.logaddexp(0.0, z) - t * z)
        return f, "hessian", (0,), "jax.hessian"
    if key == "W13":
        def f(x, W, h0):
            def step(h, xt):
                h = jnp.tanh(xt + W @ h)
                return h, None
            h, _ = jax.lax.scan(step, h0, x)
            return jnp.sum(h ** 2)
        return f, "grad", (1,), "jax.grad of a jax.lax.scan over the steps"
    if key == "W14":
        big = 1e10          # stands for the infinite border (inf would give NaN gradients)

        def f(x, y, g):
            n, m = x.shape[0], y.shape[0]
            D = jnp.sum((x[:, None, :] - y[None, :, :]) ** 2, axis=2)
            # anti-diagonal s = i + j of the padded R (row 0 and column 0 the border), as
            # a vector over the row i = 0 .. n; D skewed to the same layout
            i = jnp.arange(n + 1)
            s = jnp.arange(2, n + m + 1)
            j = s[:, None] - i[None, :]
            ok = (i[None, :] >= 1) & (j >= 1) & (j <= m)
            Dskew = jnp.where(ok, D[jnp.clip(i - 1, 0, n - 1)[None, :],
                                    jnp.clip(j - 1, 0, m - 1)], big)

            def step(carry, d):
                r2, r1 = carry                    # diagonals s - 2 and s - 1
                up = jnp.concatenate([jnp.full((1,), big), r1[:-1]])      # R[i - 1, j]
                diag = jnp.concatenate([jnp.full((1,), big), r2[:-1]])    # R[i - 1, j - 1]
                v = jnp.stack([diag, up, r1])                             # r1: R[i, j - 1]
                r = d - g * jax.nn.logsumexp(-v / g, axis=0)
                r = jnp.where(d >= big, big, r)
                return (r1, r), None

            r0 = jnp.full((n + 1,), big).at[0].set(0.0)
            r1 = jnp.full((n + 1,), big)
            (_, last), _ = jax.lax.scan(step, (r0, r1), Dskew)
            return last[n]
        return f, "value_and_grad", (0, 1), ("jax.value_and_grad of a jax.lax.scan over the "
                                             "anti-diagonals")
    if key == "W15":
        def f(pi, A, E):
            def step(a, e):
                a = jax.nn.logsumexp(a[:, None] + A, axis=0) + e
                return a, None
            a, _ = jax.lax.scan(step, pi + E[0], E[1:])
            return jax.nn.logsumexp(a)
        return f, "grad", (2,), "jax.grad of a jax.lax.scan of logsumexp steps"
    raise KeyError(key)


def rows(key):
    out = [("jit", _describe(key, "jit"))]
    if key in ("W10a", "W10b"):
        out.append(("conv", _describe(key, "conv")))
    return out


def _describe(key, variant):
    # the formulation text does not depend on the size, so build it at a nominal size
    return _programs(key, CASES[key].full[0], variant)[3]


ARG_ORDER = {"W2": ("W1", "c1", "W2", "c2", "X", "y")}


def build(key: str, variant: str, size, inp: dict):
    import jax
    import jax.numpy as jnp

    f, kind, argnums, _ = _programs(key, size, variant)
    names = ARG_ORDER.get(key, tuple(n for n in inp if n != "v"))
    args = []
    for n in names:
        a = inp[n]
        if a.dtype == bool:
            a = a.astype(np.float64)       # masks enter the arithmetic as 0.0 / 1.0
        args.append(jnp.asarray(a))
    argnums = argnums if len(argnums) > 1 else argnums[0]
    if kind == "grad":
        d = jax.grad(f, argnums=argnums)
    elif kind == "value_and_grad":
        d = jax.value_and_grad(f, argnums=argnums)
    elif kind == "jacrev":
        d = jax.jacrev(f, argnums=argnums)
    elif kind == "hessian":
        d = jax.hessian(f, argnums=argnums)
    elif kind == "hvp":
        def d(x, A, v):
            return jax.jvp(lambda x_: jax.grad(f)(x_, A), (x,), (v,))[1]
    else:
        raise ValueError(kind)
    fj, dj = jax.jit(f), jax.jit(d)
    dargs = args + [jnp.asarray(inp["v"])] if kind == "hvp" else args
    return ((lambda: jax.block_until_ready(fj(*args))),
            (lambda: jax.block_until_ready(dj(*dargs))))


to_numpy = flat_numpy

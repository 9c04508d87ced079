"""PyTorch versions of the three objectives, two ways each:

eager  batched tensor code, derivatives by torch.autograd.grad (for BA: the residuals of all
       observations as a function of gathered per-observation parameters, one backward pass per
       residual component, since observation i's residual depends only on row i);
func   per-item functions mapped with torch.func.vmap, derivatives by torch.func.grad /
       torch.func.jacfwd (BA: vmap of jacfwd over observations, as the JAX version).

Each `build(kind, variant, inst)` returns (objective, derivative): functions of no arguments.
"""
from __future__ import annotations

import math

import numpy as np

from . import ref_numpy

VARIANTS = {"eager": "eager (torch.autograd)", "func": "torch.func"}


# ---------------------------------------------------------------------------- GMM
def _gmm_parts(d: int, gamma: float, m: int):
    import torch
    rows, cols = (torch.from_numpy(a) for a in ref_numpy.lower_pairs(d))
    nprime = d + m + 1
    const_prior = (nprime * d * math.log(gamma / math.sqrt(2.0))
                   - float(torch.special.multigammaln(torch.tensor(0.5 * nprime, dtype=torch.float64), d)))

    def unpack(icf):
        k = icf.shape[0]
        q, l = icf[:, :d], icf[:, d:]
        L = torch.zeros(k, d, d, dtype=icf.dtype)
        L[:, rows, cols] = l
        return q, l, L

    def rest(alphas, q, l, n):
        k = alphas.shape[0]
        prior = torch.sum(0.5 * gamma ** 2 * (torch.sum(torch.exp(2 * q), dim=1)
                                              + torch.sum(l * l, dim=1)) - m * torch.sum(q, dim=1))
        return (-n * d * 0.5 * math.log(2 * math.pi) - n * torch.logsumexp(alphas, 0) + prior
                - k * const_prior)

    return unpack, rest


def gmm_eager(d, gamma, m):
    import torch
    unpack, rest = _gmm_parts(d, gamma, m)

    def objective(alphas, means, icf, x):
        q, l, L = unpack(icf)
        xc = x[:, None, :] - means[None]                                 # (n, K, D)
        z = torch.exp(q)[None] * xc + torch.einsum("kij,nkj->nki", L, xc)
        beta = alphas + torch.sum(q, dim=1) - 0.5 * torch.sum(z * z, dim=2)
        return torch.sum(torch.logsumexp(beta, dim=1)) + rest(alphas, q, l, x.shape[0])
    return objective


def gmm_func(d, gamma, m):
    import torch
    from torch.func import vmap
    unpack, rest = _gmm_parts(d, gamma, m)

    def objective(alphas, means, icf, x):
        q, l, L = unpack(icf)
        qdiag, sum_q = torch.exp(q), torch.sum(q, dim=1)

        def point(xi):
            xc = xi[None, :] - means
            z = qdiag * xc + torch.einsum("kij,kj->ki", L, xc)
            return torch.logsumexp(alphas + sum_q - 0.5 * torch.sum(z * z, dim=1), 0)
        return torch.sum(vmap(point)(x)) + rest(alphas, q, l, x.shape[0])
    return objective


def build_gmm(variant, inst):
    import torch
    args = [torch.from_numpy(np.ascontiguousarray(a)) for a in
            (inst.alphas, inst.means, inst.icf, inst.x)]
    if variant == "eager":
        f = gmm_eager(inst.d, inst.gamma, inst.m)
        leaves = [a.clone().requires_grad_(True) for a in args[:3]]

        def grad():
            return torch.autograd.grad(f(*leaves, args[3]), leaves)
    else:
        f = gmm_func(inst.d, inst.gamma, inst.m)
        g = torch.func.grad(f, argnums=(0, 1, 2))

        def grad():
            return g(*args)

    def value():
        with torch.no_grad():
            return f(*args)
    return value, grad


# ---------------------------------------------------------------------------- BA
def _rodrigues(r, Y):
    """Batched over the leading axis (also used unbatched under vmap with 1-D r, Y)."""
    import torch
    t2 = torch.sum(r * r, dim=-1, keepdim=True)
    nonzero = t2 != 0.0
    t = torch.sqrt(torch.where(nonzero, t2, torch.ones_like(t2)))
    u = r / t
    c, s = torch.cos(t), torch.sin(t)
    big = (Y * c + torch.linalg.cross(u, Y, dim=-1) * s
           + u * torch.sum(u * Y, dim=-1, keepdim=True) * (1.0 - c))
    return torch.where(nonzero, big, Y + torch.linalg.cross(r, Y, dim=-1))


def _project(cam, X, w, feat):
    """Reprojection residuals of rows of (camera, point, weight, feature); works batched
    (leading axis) and on single rows."""
    Yr = _rodrigues(cam[..., 0:3], X - cam[..., 3:6])
    q = Yr[..., 0:2] / Yr[..., 2:3]
    s = (q * q).sum(-1, keepdim=True)
    dist = 1.0 + cam[..., 9:10] * s + cam[..., 10:11] * s * s
    return w[..., None] * (cam[..., 6:7] * q * dist + cam[..., 7:9] - feat)


def build_ba(variant, inst):
    import torch
    cams, X, w, feats = (torch.from_numpy(np.ascontiguousarray(a))
                         for a in (inst.cams, inst.X, inst.w, inst.feats))
    ci, pi = (torch.from_numpy(np.ascontiguousarray(inst.obs[:, j])) for j in (0, 1))

    def value():
        with torch.no_grad():
            return _project(cams[ci], X[pi], w, feats), 1.0 - w * w

    if variant == "eager":
        def blocks():
            cg = cams[ci].requires_grad_(True)
            xg = X[pi].requires_grad_(True)
            wg = w.clone().requires_grad_(True)
            res = _project(cg, xg, wg, feats)
            J = torch.empty(w.shape[0], 2, 15, dtype=torch.float64)
            for a in range(2):
                gc, gx, gw = torch.autograd.grad(res[:, a].sum(), (cg, xg, wg), retain_graph=a == 0)
                J[:, a, :11], J[:, a, 11:14], J[:, a, 14] = gc, gx, gw
            wg2 = w.clone().requires_grad_(True)
            (dw,) = torch.autograd.grad((1.0 - wg2 * wg2).sum(), (wg2,))
            return J, dw
    else:
        jac = torch.func.vmap(torch.func.jacfwd(_project, argnums=(0, 1, 2)))
        dwerr = torch.func.vmap(torch.func.grad(lambda v: 1.0 - v * v))

        def blocks():
            jc, jx, jw = jac(cams[ci], X[pi], w, feats)
            return torch.cat([jc, jx, jw[:, :, None]], dim=2), dwerr(w)

    def jacobian():
        J, dw = blocks()
        return ref_numpy.ba_csr(J.detach().numpy(), dw.detach().numpy(), inst.obs, inst.n, inst.m)
    return value, jacobian


# ---------------------------------------------------------------------------- LSTM
def lstm_objective(main_params, extra_params, state, sequence):
    import torch
    layers = main_params.shape[0] // 2
    c, b = sequence.shape
    h = [state[2 * j] for j in range(layers)]
    s = [state[2 * j + 1] for j in range(layers)]
    total = 0.0
    for t in range(c - 1):
        x = sequence[t] * extra_params[0]
        for j in range(layers):
            g = torch.cat([x, h[j], x, h[j]]) * main_params[2 * j] + main_params[2 * j + 1]
            forget, ingate = torch.sigmoid(g[:b]), torch.sigmoid(g[b:2 * b])
            outgate, change = torch.sigmoid(g[2 * b:3 * b]), torch.tanh(g[3 * b:])
            s[j] = s[j] * forget + ingate * change
            h[j] = outgate * torch.tanh(s[j])
            x = h[j]
        y = x * extra_params[1] + extra_params[2]
        total = total + torch.sum(sequence[t + 1] * (y - torch.log(2.0 + torch.sum(torch.exp(y)))))
    return -total / ((c - 1) * b)


def build_lstm(variant, inst):
    import torch
    args = [torch.from_numpy(np.ascontiguousarray(a)) for a in
            (inst.main_params, inst.extra_params, inst.state, inst.sequence)]
    if variant == "eager":
        leaves = [a.clone().requires_grad_(True) for a in args[:2]]

        def grad():
            return torch.autograd.grad(lstm_objective(*leaves, *args[2:]), leaves)
    else:
        g = torch.func.grad(lstm_objective, argnums=(0, 1))

        def grad():
            return g(*args)

    def value():
        with torch.no_grad():
            return lstm_objective(*args)
    return value, grad


BUILD = {"gmm": build_gmm, "ba": build_ba, "lstm": build_lstm}

"""PyTorch rows, three ways: eager autograd (torch.autograd.grad and
torch.autograd.functional for Jacobians, Hessians and HVPs), the torch.func transforms, and
torch.compile applied to the torch.func derivative (Inductor, CPU)."""
from __future__ import annotations

import importlib

import numpy as np

from .spec import CASES, WRT

VARIANTS = ("eager", "func", "compile")


def _program(key: str, size):
    """(f(*args), argument names in order, kind, formulation)."""
    import torch
    import torch.nn.functional as F

    if key == "W1":
        return (lambda A, B, W: torch.sum(W * (A @ B))), ("A", "B", "W"), "grad", ""
    if key == "W2":
        def f(W1, c1, W2, c2, X, y):
            z = torch.relu(X @ W1 + c1) @ W2 + c2
            return F.cross_entropy(z, y)
        return f, ("W1", "c1", "W2", "c2", "X", "y"), "grad", "F.cross_entropy"
    if key == "W3":
        v = size

        def f(E, T, y):
            Y = F.one_hot(y, v).to(E.dtype) @ E
            return 0.5 * torch.sum((Y - T) ** 2)
        return f, ("E", "T", "y"), "grad", "F.one_hot(y, v) @ E"
    if key == "W4":
        return ((lambda E, T, idx: 0.5 * torch.sum((E[idx] - T) ** 2)), ("E", "T", "idx"),
                "grad", "E[idx]")
    if key == "W5a":
        k = size

        def f(A):
            t = torch.trace(A)
            s = t
            for _ in range(k - 1):
                s = s + t
            return s
        return f, ("A",), "grad", "t = trace(A) added k times"
    if key == "W5b":
        return (lambda A, B: torch.trace(A @ B)), ("A", "B"), "grad", "trace(A @ B)"
    if key == "W6":
        return (lambda x: x * torch.sin(x) + torch.sigmoid(x)), ("x",), "jacobian", ""
    if key in ("W7a", "W7b"):
        return ((lambda x, A: x @ (A @ x)), ("x", "A"),
                "hessian" if key == "W7a" else "hvp", "")
    if key == "W8":
        def f(U, V, R, M):
            return 0.5 * torch.sum(M * (U @ V.T - R) ** 2)
        return f, ("U", "V", "R", "M"), "hessian", ""
    if key == "W9":
        def f(X, D):
            diff = X[:, None, :] - X[None, :, :]
            q = torch.sum(diff ** 2, dim=2)
            off = 1.0 - torch.eye(X.shape[0], dtype=X.dtype)
            return 0.25 * torch.sum(off * (q - D) ** 2)
        return f, ("X", "D"), "hessian", ""
    if key == "W10a":
        def f(x, w, T):
            K = w.shape[0]
            y = F.conv1d(F.pad(x[None, None], (0, K - 1)), w[None, None])[0, 0]
            return 0.5 * torch.sum((y - T) ** 2)
        return f, ("x", "w", "T"), "grad", "F.conv1d"
    if key == "W10b":
        def f(img, w, T):
            y = F.conv2d(img[None, None], w[None, None], padding=2)[0, 0]
            return 0.5 * torch.sum((y - T) ** 2)
        return f, ("img", "w", "T"), "grad", "F.conv2d"
    if key == "W11":
        def f(ux, uy, theta, M):
            co, si = torch.cos(theta), torch.sin(theta)
            mr = M[:, :-1] * M[:, 1:]
            mv = M[:-1, :] * M[1:, :]
            e = torch.sum(mr * ((ux[:, 1:] - ux[:, :-1] - co[:, :-1]) ** 2
                                + (uy[:, 1:] - uy[:, :-1] - si[:, :-1]) ** 2))
            e = e + torch.sum(mr * ((ux[:, :-1] - ux[:, 1:] + co[:, 1:]) ** 2
                                    + (uy[:, :-1] - uy[:, 1:] + si[:, 1:]) ** 2))
            e = e + torch.sum(mv * ((ux[1:, :] - ux[:-1, :] + si[:-1, :]) ** 2
                                    + (uy[1:, :] - uy[:-1, :] - co[:-1, :]) ** 2))
            e = e + torch.sum(mv * ((ux[:-1, :] - ux[1:, :] - si[1:, :]) ** 2
                                    + (uy[:-1, :] - uy[1:, :] + co[1:, :]) ** 2))
            return e
        return f, ("ux", "uy", "theta", "M"), "grad", "shifted slices"
    if key == "W12":
        def f(w, X, t):
            z = X @ w
            return torch.mean(F.softplus(z) - t * z)
        return f, ("w", "X", "t"), "hessian", "F.softplus"
    if key == "W13":
        def f(x, W, h0):
            h = h0
            for t in range(x.shape[0]):
                h = torch.tanh(x[t] + W @ h)
            return torch.sum(h ** 2)
        return f, ("x", "W", "h0"), "grad", "a Python loop over the steps"
    raise KeyError(key)


# Cases with their own rows: a loop of a thousand steps is not what torch.func or
# torch.compile (which would unroll it) are for; PyTorch's own layer is the idiomatic form.
OWN_ROWS = {
    "W13": [("eager", "torch.autograd.grad; a Python loop over the steps"),
            ("nn", "torch.nn.RNN(tanh, no bias; input weights fixed to the identity), "
                   "torch.autograd.grad in weight_hh")],
    "W14": [], "W15": [],
}


_HOW = {
    "eager": {"grad": "torch.autograd.grad", "jacobian": "torch.autograd.functional.jacobian",
              "hessian": "torch.autograd.functional.hessian",
              "hvp": "torch.autograd.functional.hvp"},
    "func": {"grad": "torch.func.grad", "jacobian": "torch.func.jacrev",
             "hessian": "torch.func.hessian", "hvp": "torch.func.jvp of torch.func.grad"},
}


def rows(key):
    importlib.import_module("torch")         # only to fail early when PyTorch is missing
    if key in OWN_ROWS:
        return OWN_ROWS[key]
    _, _, kind, form = _program(key, CASES[key].full[0])
    out = []
    for v in VARIANTS:
        how = _HOW["func" if v == "compile" else v][kind]
        if v == "compile":
            how = f"torch.compile({how})"
        out.append((v, how + (f"; {form}" if form else "")))
    return out


def build(key: str, variant: str, size, inp: dict):
    import torch
    import torch.func as tf

    if variant == "nn":
        return _rnn_layer(inp)
    f, names, kind, _ = _program(key, size)
    args = []
    for n in names:
        a = inp[n]
        if a.dtype == bool:
            a = a.astype(np.float64)
        args.append(torch.from_numpy(np.ascontiguousarray(a)))
    wrt = [names.index(w) for w in WRT[key]]
    v = torch.from_numpy(inp["v"]) if kind == "hvp" else None

    def closure(i):
        """f as a function of argument i only (the others fixed)."""
        def g(a):
            full = list(args)
            full[i] = a
            return f(*full)
        return g

    if variant == "eager":
        def fwd():
            with torch.no_grad():
                return f(*args)
        if kind == "grad":
            leaves = list(args)
            for i in wrt:
                leaves[i] = args[i].clone().requires_grad_(True)

            def d():
                loss = f(*leaves)
                return torch.autograd.grad(loss, [leaves[i] for i in wrt])
        elif kind == "jacobian":
            def d():
                return torch.autograd.functional.jacobian(closure(wrt[0]), args[wrt[0]])
        elif kind == "hessian":
            def d():
                return torch.autograd.functional.hessian(closure(wrt[0]), args[wrt[0]])
        elif kind == "hvp":
            def d():
                return torch.autograd.functional.hvp(closure(wrt[0]), args[wrt[0]], v)[1]
        return fwd, d

    argnums = tuple(wrt) if len(wrt) > 1 else wrt[0]
    if kind == "grad":
        dfn = tf.grad(f, argnums=argnums)
    elif kind == "jacobian":
        dfn = tf.jacrev(f, argnums=argnums)
    elif kind == "hessian":
        dfn = tf.hessian(f, argnums=argnums)
    elif kind == "hvp":
        def dfn(x, A, v_):
            return tf.jvp(lambda x_: tf.grad(f)(x_, A), (x,), (v_,))[1]
    ffn = f
    if variant == "compile":
        ffn, dfn = torch.compile(f), torch.compile(dfn)
    dargs = args + [v] if kind == "hvp" else args
    return (lambda: ffn(*args)), (lambda: dfn(*dargs))


def _rnn_layer(inp):
    """W13 with torch.nn.RNN: h_t = tanh(x_t I + h_{t-1} W^T), the input weights fixed."""
    import torch
    T, d = inp["x"].shape
    rnn = torch.nn.RNN(d, d, num_layers=1, nonlinearity="tanh", bias=False).double()
    with torch.no_grad():
        rnn.weight_ih_l0.copy_(torch.eye(d, dtype=torch.float64))
        rnn.weight_hh_l0.copy_(torch.from_numpy(inp["W"]))
    rnn.weight_ih_l0.requires_grad_(False)
    x = torch.from_numpy(np.ascontiguousarray(inp["x"]))[:, None, :]
    h0 = torch.from_numpy(inp["h0"])[None, None, :]

    def loss():
        out, _ = rnn(x, h0)
        return torch.sum(out[-1] ** 2)

    def fwd():
        with torch.no_grad():
            return loss()

    def d():
        return torch.autograd.grad(loss(), [rnn.weight_hh_l0])
    return fwd, d


def to_numpy(out):
    parts = out if isinstance(out, (tuple, list)) else (out,)
    return tuple(p.detach().numpy() for p in parts)

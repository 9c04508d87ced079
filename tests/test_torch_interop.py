"""tl.to_torch: a function of torch tensors whose backward is tensorlang's vjp
program, with double backward through the Hessian-vector program.  Skipped
when PyTorch is not installed."""
from __future__ import annotations

import pathlib

import numpy as np
import pytest

import tensorlang as tl
from derivcheck import inputs_for

torch = pytest.importorskip("torch")

ROOT = pathlib.Path(__file__).resolve().parent.parent
QFORM = tl.load(ROOT / "examples" / "qform.tl")["qform"]


def _inputs(n=6, seed=0):
    rng = np.random.default_rng(seed)
    return (torch.tensor(rng.standard_normal(n), requires_grad=True),
            torch.tensor(rng.standard_normal((n, n))))


def test_backward_and_double_backward():
    x, A = _inputs()
    T = tl.to_torch(QFORM)
    y = T(x, A)
    assert abs(y.item() - QFORM(x.detach().numpy(), A.numpy())) < 1e-12
    g, = torch.autograd.grad(y, x, create_graph=True)
    want = tl.grad(QFORM, "x")(x.detach().numpy(), A.numpy())
    np.testing.assert_allclose(g.detach().numpy(), want, rtol=1e-12, atol=1e-12)
    v = torch.tensor(np.random.default_rng(1).standard_normal(x.shape))
    hv, = torch.autograd.grad(g, x, grad_outputs=v)
    An = A.numpy()
    np.testing.assert_allclose(hv.numpy(), (An + An.T) @ v.numpy(), rtol=1e-12, atol=1e-12)


def test_vector_output_backward_is_the_vjp():
    mod = tl.load(ROOT / "examples" / "softmax.tl")
    fn = mod["softmax"]
    inputs = inputs_for(fn, seed=2)
    Z = torch.tensor(inputs["Z"], requires_grad=True)
    out = tl.to_torch(fn)(Z)
    cot = np.random.default_rng(3).standard_normal(tuple(out.shape))
    out.backward(torch.tensor(cot))
    np.testing.assert_allclose(Z.grad.numpy(), tl.vjp(fn, "Z")(inputs["Z"], cot),
                               rtol=1e-12, atol=1e-12)


def test_untracked_calls_record_nothing_and_bind_by_keyword():
    x, A = _inputs(seed=5)
    T = tl.to_torch(QFORM)
    want = QFORM(x.detach().numpy(), A.numpy())
    with torch.no_grad():
        y = T(x, A)
    assert y.grad_fn is None and not y.requires_grad
    assert abs(y.item() - want) < 1e-12
    y = T(x.detach(), A=A)                        # nothing requires a gradient
    assert y.grad_fn is None and abs(y.item() - want) < 1e-12
    y = T(A=A, x=x)                               # keyword call, tracked
    assert y.grad_fn is not None and abs(y.item() - want) < 1e-12
    with pytest.raises(tl.TLError, match="missing argument"):
        T(x)


def test_sgd_lowers_the_loss_and_inputs_are_not_copied():
    from tensorlang.backend.torch_interop import _numpy
    x, A = _inputs(seed=4)
    A = A @ A.T + torch.eye(A.shape[0])          # a convex bowl
    assert np.shares_memory(_numpy(x), x.detach().numpy())
    T = tl.to_torch(QFORM)
    opt = torch.optim.SGD([x], lr=1e-3)
    first = None
    for _ in range(20):
        opt.zero_grad()
        loss = T(x, A)
        loss.backward()
        opt.step()
        first = loss.item() if first is None else first
    assert loss.item() < first


def test_training_example_runs(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "examples"))
    import train_in_torch
    first, last = train_in_torch.main(steps=40)
    assert last < 0.5 * first

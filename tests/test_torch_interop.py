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


def _counting_runs(monkeypatch):
    """The names of the programs run, in order, as tensorlang runs them."""
    ran = []
    real = tl.Function.run

    def run(self, arrays, sizes):
        ran.append(self.name)
        return real(self, arrays, sizes)
    monkeypatch.setattr(tl.Function, "run", run)
    return ran


def test_a_scalar_backward_takes_the_gradients_of_its_forward(monkeypatch):
    x, A = _inputs(n=5, seed=6)
    T = tl.to_torch(QFORM)
    want = tl.grad(QFORM, "x")(x.detach().numpy(), A.numpy())
    ran = _counting_runs(monkeypatch)
    y = T(x, A)                                   # one program: value and gradient
    assert ran == ["qform_value_and_grad"]
    assert abs(y.item() - QFORM(x.detach().numpy(), A.numpy())) < 1e-12
    del ran[:]
    (2.5 * y).backward(retain_graph=True)         # nothing recomputed, scaled by 2.5
    assert ran == []
    np.testing.assert_allclose(x.grad.numpy(), 2.5 * want, rtol=1e-12, atol=1e-12)
    y.backward()                                  # the node gave its gradient up: the vjp
    assert ran == ["qform_vjp"]
    np.testing.assert_allclose(x.grad.numpy(), 3.5 * want, rtol=1e-12, atol=1e-12)


def test_a_gradient_never_shares_an_inputs_memory(monkeypatch):
    # a derived program that returned an input as the gradient (w for sum(x * w)):
    # autograd would keep it as x.grad and add the next gradient into w
    f = tl.parse("def f(x: f64[n], w: f64[n]) -> f64:\n"
                 "    return sum[i](x[i] * w[i])\n")["f"]
    real = tl.Function.call_arrays

    def returning_w(self, arrays):
        outs = real(self, arrays)
        return [outs[0], arrays[1]] if self.name == "f_value_and_grad" else outs
    monkeypatch.setattr(tl.Function, "call_arrays", returning_w)
    rng = np.random.default_rng(7)
    x = torch.tensor(rng.standard_normal(4), requires_grad=True)
    w = torch.tensor(rng.standard_normal(4))
    w0 = w.clone()
    T = tl.to_torch(f)
    T(x, w).backward()
    T(x, w).backward()                            # accumulates into x.grad in place
    assert not np.shares_memory(x.grad.numpy(), w.numpy())
    np.testing.assert_array_equal(w.numpy(), w0.numpy())
    np.testing.assert_allclose(x.grad.numpy(), 2 * w0.numpy(), rtol=1e-15)


def test_call_plans_are_per_shapes_and_still_check_what_varies():
    f = QFORM.compile("numpy")                    # a Function of its own: no plans yet
    T = tl.to_torch(f)
    rng = np.random.default_rng(8)
    for n in (4, 6, 4):
        x, A = rng.standard_normal(n), rng.standard_normal((n, n))
        got = T(torch.from_numpy(x), torch.from_numpy(A)).item()
        assert abs(got - QFORM(x, A)) < 1e-12    # a plan made at another n is not used
    assert set(f._plans) == {((4,), (4, 4)), ((6,), (6, 6))}
    with pytest.raises(tl.TLError, match="A has shape"):
        T(torch.zeros(4, dtype=torch.float64), torch.zeros((6, 6), dtype=torch.float64))
    At = torch.from_numpy(A).T                    # strided: converted, as a plain call does
    assert abs(T(torch.from_numpy(x), At).item() - QFORM(x, A.T.copy())) < 1e-12
    # i64 labels are checked at every call, plan or not
    mod = tl.load(ROOT / "examples" / "onehot_loss.tl")
    P = tl.to_torch(mod["picked"])
    probs = torch.from_numpy(rng.standard_normal((3, 5)))
    labels = torch.tensor([0, 4, 2])
    np.testing.assert_allclose(P(probs, labels).numpy(), probs.numpy()[[0, 1, 2], [0, 4, 2]])
    with pytest.raises(tl.TLBoundsError, match="out of range"):
        P(probs, torch.tensor([0, 2 ** 50, 2]))


def test_inputs_changed_in_place_before_the_backward():
    # a scalar's gradients are taken at the forward's values; an array output's backward
    # reads the saved inputs, and autograd refuses inputs changed since
    x, A = _inputs(n=4, seed=9)
    want = tl.grad(QFORM, "x")(x.detach().numpy(), A.numpy())
    y = tl.to_torch(QFORM)(x, A)
    with torch.no_grad():
        x.add_(1.0)
    y.backward()
    np.testing.assert_allclose(x.grad.numpy(), want, rtol=1e-12, atol=1e-12)
    fn = tl.load(ROOT / "examples" / "softmax.tl")["softmax"]
    Z = torch.tensor(inputs_for(fn, seed=10)["Z"], requires_grad=True)
    out = tl.to_torch(fn)(Z)
    with torch.no_grad():
        Z.mul_(2.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.backward(torch.ones_like(out))

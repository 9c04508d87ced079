"""A two-layer ReLU network trained with torch.optim, its loss a tensorlang function.

The loss is `mlp2_loss` of examples/mlp.tl; `tl.to_torch` makes it a function of
torch tensors whose forward runs tensorlang's compiled program on views of the
tensors and whose backward is tensorlang's derivative (the loss being a scalar,
the recorded forward runs its value-and-gradient program and the backward hands
the gradients on), so `loss.backward()` and `torch.optim.SGD` work as with any
torch function.

    python examples/train_in_torch.py [--steps 300]
"""
from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

import tensorlang as tl

HERE = Path(__file__).resolve().parent


def main(steps: int = 300, lr: float = 0.05) -> tuple[float, float]:
    import torch
    from train_in_jax import data
    loss = tl.to_torch(tl.load(HERE / "mlp.tl")["mlp2_loss"])
    rng = np.random.default_rng(0)
    X, y = data(rng)
    h, k = 16, int(y.max()) + 1
    X, y = torch.from_numpy(X), torch.from_numpy(y)
    W1 = torch.tensor(0.3 * rng.standard_normal((X.shape[1], h)), requires_grad=True)
    c1 = torch.zeros(h, dtype=torch.float64, requires_grad=True)
    W2 = torch.tensor(0.3 * rng.standard_normal((h, k)), requires_grad=True)
    opt = torch.optim.SGD([W1, c1, W2], lr=lr)
    first = last = None
    for t in range(steps):
        opt.zero_grad()
        value = loss(X, W1, c1, W2, y)
        value.backward()
        opt.step()
        first = value.item() if first is None else first
        last = value.item()
        if t % 100 == 0:
            print(f"step {t:4d}  loss {last:.5f}")
    print(f"loss {first:.5f} -> {last:.5f} after {steps} steps")
    return first, last


if __name__ == "__main__":
    import sys
    sys.path.insert(0, str(HERE))
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=300)
    main(ap.parse_args().steps)

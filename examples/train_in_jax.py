"""A two-layer ReLU network trained in JAX, its loss a tensorlang function.

The loss is `mlp2_loss` of examples/mlp.tl; `tl.to_jax` makes it a JAX function
whose gradient is tensorlang's simplified gradient program, emitted as JAX code,
and the training step around it is ordinary JAX: `jax.jit`, `jax.grad` and plain
SGD on a synthetic classification problem.

    python examples/train_in_jax.py [--steps 300]
"""
from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

import tensorlang as tl

HERE = Path(__file__).resolve().parent


def data(rng, b=256, d=8, k=4):
    """Rows labelled by the nearest of k random centres."""
    centres = rng.standard_normal((k, d)) * 2.0
    y = rng.integers(0, k, size=b)
    X = centres[y] + 0.5 * rng.standard_normal((b, d))
    return X, y.astype(np.int64)


def main(steps: int = 300, lr: float = 0.05) -> tuple[float, float]:
    import jax
    loss = tl.to_jax(tl.load(HERE / "mlp.tl")["mlp2_loss"])
    rng = np.random.default_rng(0)
    X, y = data(rng)
    h, k = 16, int(y.max()) + 1
    params = [0.3 * rng.standard_normal((X.shape[1], h)), np.zeros(h),
              0.3 * rng.standard_normal((h, k))]

    @jax.jit
    def step(W1, c1, W2):
        value, grads = jax.value_and_grad(lambda *p: loss(X, *p, y), argnums=(0, 1, 2))(W1, c1, W2)
        return value, [p - lr * g for p, g in zip((W1, c1, W2), grads)]

    first = last = None
    for t in range(steps):
        value, params = step(*params)
        first = float(value) if first is None else first
        last = float(value)
        if t % 100 == 0:
            print(f"step {t:4d}  loss {last:.5f}")
    print(f"loss {first:.5f} -> {last:.5f} after {steps} steps")
    return first, last


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=300)
    main(ap.parse_args().steps)

"""Fuzzer 6: realistic losses whose derivatives must keep the cost certificate.

Each program chains a few pieces of the kinds that make derivatives expensive
when the simplifier chooses badly: shifted stencils, correlations, strided
reads, band matrices, products of three factors, gathers and one-hot
brackets, pointwise builtins; then it sums squares into a scalar loss.  Every
index gets a name drawn at random for each statement, so a choice that depends
on names shows up as a program that fails for some names only.  The jvp, vjp
and gradient are built (a ``TLCostWarning`` of any of them is a finding, see
tensorlang/certificate.py) and run on the interpreter, where the dot-product
identity checks them against each other.  No Numba: this fuzzer is about the
derivative programs, and it must run thousands of them in a short budget.
"""
from __future__ import annotations

import random

import numpy as np

from .common import Case

NAME = "cheap"

# Index names: short and long, ordered and not, so that alphabetical order and
# the order of declaration disagree in every way across programs.
INDEX_NAMES = ["i", "j", "k", "l", "p", "q", "r", "s", "t", "u", "v", "a", "b", "c", "z",
               "ii", "jj", "row", "col", "tap", "m2", "q7", "zz", "aa"]


class Program:
    """The statements drawn so far, the tensor they end in and its size symbol."""

    def __init__(self, rng: random.Random):
        self.rng = rng
        self.lines: list[str] = []
        self.params: dict[str, str] = {}
        self.count = 0

    def idx(self, k: int) -> list[str]:
        return self.rng.sample(INDEX_NAMES, k)

    def param(self, name: str, typ: str) -> str:
        self.params[name] = typ
        return name

    def stmt(self, text: str) -> str:
        self.count += 1
        name = f"t{self.count}"
        self.lines.append(f"    {name}{text}")
        return name


# Each piece reads the current vector `cur` (over size `dim`) and returns the
# new vector and its size; None when it does not apply to a vector over `dim`.
def shift(p: Program, cur: str, dim: str):
    (i,) = p.idx(1)
    a, b = p.rng.randint(1, 2), p.rng.randint(1, 2)
    c = p.rng.choice(["2.0", "-1.5", "0.5"])
    return p.stmt(f"[{i}: {dim}] = [{i} >= {a}] * {cur}[{i} - {a}] + {c} * {cur}[{i}] + "
                  f"[{i} + {b} < {dim}] * {cur}[{i} + {b}]"), dim


def correlation(p: Program, cur: str, dim: str):
    i, j = p.idx(2)
    w = p.param("w", "f64[m]")
    return p.stmt(f"[{i}: {dim}] = sum[{j}]([{i} + {j} < {dim}] * {w}[{j}] * "
                  f"{cur}[{i} + {j}])"), dim


def stride(p: Program, cur: str, dim: str):
    if dim != "n":
        return None
    (i,) = p.idx(1)
    q = p.rng.choice([2, 3])
    g = p.param("g", "f64[h]")
    # reads every q-th entry against a target of its own size h
    return p.stmt(f"[{i}] = [{q} * {i} < n] * {cur}[{q} * {i}] - {g}[{i}]"), "h"


def band(p: Program, cur: str, dim: str):
    if dim != "n":
        return None
    i, j = p.idx(2)
    A = p.param("A", "f64[n, n]")
    b = p.rng.randint(1, 3)
    return p.stmt(f"[{i}: n] = sum[{j}]([{i} - {j} <= {b} and {j} - {i} <= {b}] * "
                  f"{A}[{i}, {j}] * {cur}[{j}])"), dim


def matvec(p: Program, cur: str, dim: str):
    if dim != "n":
        return None
    i, j = p.idx(2)
    A = p.param("A", "f64[n, n]")
    if p.rng.random() < 0.5:
        return p.stmt(f"[{i}] = sum[{j}]({A}[{i}, {j}] * {cur}[{j}])"), dim
    return p.stmt(f"[{i}] = sum[{j}]({A}[{j}, {i}] * {cur}[{j}])"), dim


def chain(p: Program, cur: str, dim: str):
    if dim != "n":
        return None
    i, j, l = p.idx(3)
    A = p.param("A", "f64[n, n]")
    B = p.param("B", "f64[n, n]")
    return p.stmt(f"[{i}] = sum[{j}, {l}]({A}[{i}, {j}] * {B}[{j}, {l}] * {cur}[{l}])"), dim


def gather(p: Program, cur: str, dim: str):
    if dim != "n":
        return None
    i, c = p.idx(2)
    E = p.param("E", "f64[m, n]")
    y = p.param("y", "i64[n]")
    if p.rng.random() < 0.5:
        return p.stmt(f"[{i}] = {cur}[{i}] * {E}[{y}[{i}], {i}]"), dim
    return p.stmt(f"[{i}] = {cur}[{i}] + sum[{c}]([{c} == {y}[{i}]] * {E}[{c}, {i}])"), dim


def pointwise(p: Program, cur: str, dim: str):
    (i,) = p.idx(1)
    f = p.rng.choice(["tanh({})", "sigmoid({})", "exp(0.25 * {})", "{} ** 2", "sin({})"])
    return p.stmt(f"[{i}] = " + f.format(f"{cur}[{i}]")), dim


PIECES = [shift, correlation, stride, band, matvec, chain, gather, pointwise]


def generate(seed: int) -> tuple[str, dict]:
    rng = random.Random(seed)
    p = Program(rng)
    cur, dim = p.param("x", "f64[n]"), "n"
    for _ in range(rng.randint(1, 3)):
        for _attempt in range(10):
            out = rng.choice(PIECES)(p, cur, dim)
            if out is not None:
                cur, dim = out
                break
    (i,) = p.idx(1)
    loss = rng.choice([f"sum[{i}]({cur}[{i}] ** 2)", f"sum[{i}]({cur}[{i}] * {cur}[{i}])"])
    params = ", ".join(f"{k}: {v}" for k, v in p.params.items())
    source = f"def f({params}) -> f64:\n" + "\n".join(p.lines) + f"\n    return {loss}\n"
    return source, p.params


def inputs_for(params: dict, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(3, 9))
    sizes = {"n": n, "m": int(rng.integers(1, 5)), "h": int(rng.integers(1, 4))}
    out = {}
    for name, typ in params.items():
        dims = [d.strip() for d in typ[typ.index("[") + 1:-1].split(",")]
        shape = tuple(sizes[d] for d in dims)
        if typ.startswith("i64"):
            out[name] = rng.integers(0, sizes["m"], size=shape).astype(np.int64)
        else:
            out[name] = 0.5 * rng.standard_normal(shape)
    return out


def make(seed: int) -> Case:
    source, params = generate(seed)
    return Case(NAME, seed, source, "f", inputs_for(params, seed), derivs=True, certify=True,
                backends=("numpy",))

"""Fuzzer 2: the well-typed programs of fuzzer 1 with adversarial names.

Every name of the program (functions, parameters, sizes, statements, indices)
may be replaced, injectively, by a Python keyword (`in`, `None`, `lambda`,
`class`), a builtin or module name (`np`, `numba`, `range`, `float`, `len`,
`self`), a name shaped like the ones the compiler generates (`s_n` for the
size `n`, `v_s` for the scalar `s`, `k_t`, `t_par`, `acc`, `b1`, `out`,
`tl_max`, `d_x` ...) or a long name (2000+ characters, the names of one
program differing only at the end).  The values must be those of the original
program, computed by the generator's evaluator.
"""
from __future__ import annotations

import keyword
import random
import re

from . import wellformed
from .common import Case

NAME = "names"

RESERVED = {"def", "return", "sum", "and", "or", "not",
            "exp", "log", "log1p", "sqrt", "sin", "cos", "tan", "tanh", "sigmoid", "abs",
            "max", "min", "pow", "logsumexp", "f64", "i64", "bool"}

PY_KEYWORDS = [k for k in keyword.kwlist + ["match", "case", "type", "_"] if k not in RESERVED]
BUILTINS = ["np", "numpy", "numba", "nb", "math", "range", "float", "int", "len", "print",
            "list", "dict", "tuple", "object", "self", "cls", "sys", "os", "prange", "njit",
            "jit", "__name__", "__builtins__", "__import__", "__class__", "globals", "locals",
            "Exception", "ValueError", "isinstance", "zip", "enumerate", "any", "all", "id",
            "input", "open", "exec", "eval", "str", "bytes", "set", "map", "slice", "super",
            "numba_backend", "GatherOutOfRange", "run", "env", "sizes", "module", "fallback",
            "kernel", "inf", "nan", "NaN", "out", "result"]
GENERATED = ["acc", "acc0", "acc1", "b0", "b1", "b2", "out", "out0", "out1", "tl_max", "tl_min",
             "tl_exp", "tmp", "tmp0", "t_par", "u_par", "k_t", "k_t_par", "v_x", "s_n", "s_m",
             "i0", "i1", "idx", "lo", "hi", "total", "res", "x_bar", "x_dot", "d_x", "d_y",
             "d_out", "d_s", "ybar", "one", "zero", "seed", "n_", "_n", "__", "_0"]

_TOKEN = re.compile(r"(?P<num>\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?)"
                    r"|(?P<name>[A-Za-z_][A-Za-z0-9_]*)")


def identifiers(text: str):
    """Every name of the text, by role: (functions, params, sizes, statements, others)."""
    funcs, params, sizes, stmts, seen = [], [], [], [], []
    for line in text.splitlines():
        m = re.match(r"def (\w+)\((.*)\)", line)
        if m:
            funcs.append(m.group(1))
            for pm in re.finditer(r"(\w+): \w+(?:\[([^\]]*)\])?", m.group(2)):
                params.append(pm.group(1))
                for d in (pm.group(2) or "").split(","):
                    d = d.strip()
                    if d and not d.isdigit():
                        sizes.append(d)
            continue
        m = re.match(r"\s+(\w+)\s*(\[|=)", line)
        if m and m.group(1) != "return":
            stmts.append(m.group(1))
    for tm in _TOKEN.finditer(text):
        if tm.group("name") and tm.group("name") not in RESERVED:
            seen.append(tm.group("name"))
    ordered = list(dict.fromkeys(seen))
    known = set(funcs) | set(params) | set(sizes) | set(stmts)
    others = [n for n in ordered if n not in known]
    uniq = lambda xs: list(dict.fromkeys(xs))  # noqa: E731
    return uniq(funcs), uniq(params), uniq(sizes), uniq(stmts), others


def rename_text(text: str, mapping: dict) -> str:
    def sub(m):
        name = m.group("name")
        if name is None:
            return m.group(0)
        return mapping.get(name, name)
    return _TOKEN.sub(sub, text)


def choose_names(rng: random.Random, text: str, scalars: set) -> dict:
    funcs, params, sizes, stmts, others = identifiers(text)
    every = funcs + params + sizes + stmts + others
    theme = rng.choice(["keywords", "builtins", "generated", "long", "mixed", "mixed"])
    long_base = "".join(rng.choice("abcdefghijklmnopqrstuvwxyz_") for _ in range(rng.randint(2000, 2600)))
    long_base = "L" + long_base
    counter = iter(range(10 ** 6))

    def long_name():
        return f"{long_base}{next(counter)}"

    mapping: dict[str, str] = {}
    taken = set(every)

    def pick(pool):
        free = [p for p in pool if p not in taken and p not in mapping.values()]
        return rng.choice(free) if free else None

    def assign(old, new):
        if new is None or new in RESERVED or new in mapping.values():
            return
        if new in taken and new not in mapping:
            # a name already used: only when it is itself renamed away first
            return
        mapping[old] = new
        taken.add(new)

    def patterned(old):
        """A name shaped like one the compiler generates from the names around it."""
        new_sizes = [mapping.get(s, s) for s in sizes]
        new_scalars = [mapping.get(s, s) for s in scalars]
        new_stmts = [mapping.get(s, s) for s in stmts]
        new_params = [mapping.get(p, p) for p in params]
        pool = list(GENERATED)
        pool += [f"s_{s}" for s in new_sizes] * 3
        pool += [f"v_{s}" for s in new_scalars + new_stmts] * 2
        pool += [f"k_{s}" for s in new_stmts] + [f"{s}_par" for s in new_stmts] * 2
        pool += [f"d_{p}" for p in new_params] + [f"{p}_bar" for p in new_params]
        return pick(pool)

    # sizes, scalars and statements first, so patterns can refer to their new names
    order = sizes + params + stmts + funcs + others
    for old in order:
        if rng.random() < (0.25 if theme == "mixed" else 0.15):
            continue
        kind = theme if theme != "mixed" else rng.choice(["keywords", "builtins", "generated",
                                                          "long", "generated"])
        if kind == "keywords":
            new = pick(PY_KEYWORDS)
        elif kind == "builtins":
            new = pick(BUILTINS)
        elif kind == "generated":
            new = patterned(old)
        else:
            new = long_name()
        assign(old, new)
    # rename the old names that a new name reused away from themselves
    return mapping


def make(seed: int) -> Case:
    funcs, sizes = wellformed.generate(seed)
    case, spec, dims = wellformed.case_from(funcs, sizes, seed, NAME)
    rng = random.Random(seed * 7 + 1)
    scalars = {p for p, e, d in spec.params if e == "f64" and not d}
    mapping = choose_names(rng, case.source, scalars)
    # A new name may equal an old name only if that old name is renamed too;
    # `assign` refused the other cases, so the mapping is a permutation-free
    # injection into fresh names.
    case.source = rename_text(case.source, mapping)
    case.inputs = {mapping.get(k, k): v for k, v in case.inputs.items()}
    case.fname = mapping.get(case.fname, case.fname)
    case.derivs = case.derivs and rng.random() < 0.35
    case.note = "renamed: " + ", ".join(f"{k}->{v if len(v) < 40 else v[:12] + '...' + v[-6:]}"
                                        for k, v in mapping.items())
    wellformed._scale_hint(case)                       # noqa: SLF001
    return case

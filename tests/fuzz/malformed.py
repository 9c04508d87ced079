"""Fuzzer 5: malformed text.

A valid program (from fuzzer 1's generator or one of examples/*.tl) is damaged
by one to three random mutations: a token deleted, duplicated, swapped or
inserted, an indentation changed (more, less, a tab, a lost newline), a stray
character (`$`, NUL, a BOM, non-ASCII letters), bytes that are not UTF-8, a
truncation, CRLF line ends.  Text with bad bytes is written to a file and read
with ``tl.load``.  The outcome must be a located TLError (usually
TLSyntaxError) or, when the damage leaves a valid program, a function that
runs: the mutants that still parse are called on random inputs on both
backends, which must agree.
"""
from __future__ import annotations

import glob
import os
import random
import re

from . import wellformed
from .common import Case

NAME = "malformed"

_EXAMPLES = sorted(glob.glob(os.path.join(os.path.dirname(__file__), "..", "..", "examples",
                                          "*.tl")))
_TOKEN = re.compile(r"\s+|[A-Za-z_]\w*|\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+|\*\*|->|[<>=!]=|.",
                    re.S)
INSERTS = ["(", ")", "[", "]", ",", ":", "=", "+", "-", "*", "**", "/", "%", "<", "==", "def",
           "return", "sum", "not", "and", "or", "->", "f64", "i64", "bool", "x", "i", "n", "0",
           "1e999", "1.5", "9" * 30, "sum[i]", "[i]", "()", "\n", "\n    ", "    ", "\t",
           "#", ".", "..", "@", "$", "?", "!", "~", "`", "\\", ";", "'", '"', "{", "}", "\x00",
           "\x0b", "\x0c", "\r", "\ufeff", "é", "∑", "𝑥", "\u200b", "\u2028", "λ"]
BAD_BYTES = [b"\xff", b"\xfe", b"\x80", b"\xc3", b"\xe2\x82", b"\xed\xa0\x80", b"\xc0\xaf",
             b"\xe9"]


def _base(rng: random.Random, seed: int) -> str:
    if _EXAMPLES and rng.random() < 0.3:
        with open(rng.choice(_EXAMPLES), encoding="utf-8") as fh:
            return fh.read()
    funcs, _ = wellformed.generate(seed)
    return "\n".join(f.source for f in funcs)


def mutate(rng: random.Random, text: str):
    """One mutation of text; returns str, or bytes for a non-UTF-8 result."""
    toks = _TOKEN.findall(text)
    words = [k for k, t in enumerate(toks) if not t.isspace()]
    kind = rng.choice(["delete", "delete", "duplicate", "swap", "insert", "insert", "indent",
                       "newline", "stray", "bytes", "truncate", "crlf", "replace_num",
                       "dup_line", "del_line"])
    if kind in ("delete", "duplicate", "swap", "insert", "replace_num") and not words:
        kind = "truncate"
    if kind == "delete":
        k = rng.choice(words)
        toks[k] = ""
    elif kind == "duplicate":
        k = rng.choice(words)
        toks[k] = toks[k] + " " + toks[k]
    elif kind == "swap":
        a = rng.randrange(len(words))
        b = min(a + 1, len(words) - 1)
        toks[words[a]], toks[words[b]] = toks[words[b]], toks[words[a]]
    elif kind == "insert":
        k = rng.choice(words)
        ins = rng.choice(INSERTS)
        toks[k] = (ins + toks[k]) if rng.random() < 0.5 else (toks[k] + ins)
    elif kind == "replace_num":
        nums = [k for k in words if toks[k][0].isdigit()]
        k = rng.choice(nums or words)
        toks[k] = rng.choice(["1e999", "9" * 400, "0", "-1", "2.", "1e", "0x10", "1_000",
                              "9223372036854775808", "00", "1.2.3"])
    elif kind in ("indent", "newline", "dup_line", "del_line"):
        lines = text.split("\n")
        k = rng.randrange(len(lines))
        if kind == "indent":
            lines[k] = rng.choice([" ", "  ", "\t", "        ", " \t"]) + lines[k] \
                if rng.random() < 0.6 else lines[k].lstrip()
        elif kind == "newline" and k + 1 < len(lines):
            lines[k] = lines[k] + " " + lines.pop(k + 1)
        elif kind == "dup_line":
            lines.insert(k, lines[k])
        elif len(lines) > 1:
            lines.pop(k)
        return "\n".join(lines)
    elif kind == "stray":
        pos = rng.randrange(len(text) + 1)
        return text[:pos] + rng.choice(INSERTS[30:]) + text[pos:]
    elif kind == "bytes":
        data = text.encode("utf-8")
        pos = rng.randrange(len(data) + 1)
        return data[:pos] + rng.choice(BAD_BYTES) + data[pos:]
    elif kind == "truncate":
        return text[:rng.randrange(len(text) + 1)]
    elif kind == "crlf":
        return text.replace("\n", rng.choice(["\r\n", "\r"]))
    return "".join(toks)


def make(seed: int) -> Case:
    rng = random.Random(seed)
    text = _base(rng, seed)
    out: object = text
    for _ in range(rng.choice([1, 1, 1, 2, 3])):
        if isinstance(out, bytes):
            break
        out = mutate(rng, out)
    case = Case(NAME, seed, out, "", {}, None, may_reject=True, may_raise=True)
    case.call = rng.random() < 0.25        # mutants that still parse: run some of them
    return case

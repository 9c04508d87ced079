"""Remembered results of pure functions of immutable IR values.

IR nodes are frozen and hash their contents once, so results of the pure
passes that the simplifier asks for again and again (proofs, statement costs,
statement keys, simplified programs) can be looked up by value.  A table that
grows past its limit is emptied rather than evicted entry by entry: the
entries are cheap to recompute, and the limit only bounds memory.
"""
from __future__ import annotations

from typing import Callable, Hashable

_MISSING = object()


class Memo:
    def __init__(self, limit: int):
        self.limit = limit
        self.table: dict = {}

    def get(self, key: Hashable, default=None):
        return self.table.get(key, default)

    def put(self, key: Hashable, value):
        if len(self.table) >= self.limit:
            self.table.clear()
        self.table[key] = value
        return value

    def compute(self, key: Hashable, fn: Callable[[], object]):
        """The remembered value for key, or fn() remembered."""
        hit = self.table.get(key, _MISSING)
        return self.put(key, fn()) if hit is _MISSING else hit

    def for_object(self, obj, key: Hashable, fn: Callable[[], object]):
        """The value remembered for `obj` itself (and the rest of `key`, which holds
        it), or fn() remembered: a value found by an equal but distinct object is not
        used.  For results keyed by an IR node that a rewrite keeps as it is (the
        terms a factoring trial leaves alone): a hit is then a lookup by identity, and
        equal nodes may differ in what equality ignores (source spans)."""
        hit = self.table.get(key)
        if hit is not None and hit[0] is obj:
            return hit[1]
        return self.put(key, (obj, fn()))[1]

    def clear(self) -> None:
        self.table.clear()

"""Explanations shown in peers.md: one sentence per case whose target is missed (written after
measuring, from the numbers and the generated programs), notes on single rows, and the cost
polynomials tensorlang computes for its own rows."""
from __future__ import annotations

from .spec import WRT

# case -> why the target is not met (shown only when the verdict is "not met")
WHY: dict[str, str] = {}

# (case, system, variant) -> a note in the row's last column
ROW_NOTES: dict[tuple, str] = {}


def auto_notes(key: str, results) -> list[str]:
    """The static cost of every tensorlang row (forward and timed derivative)."""
    try:
        import tensorlang as tl

        from . import sys_tl
    except Exception:  # noqa: BLE001 - notes are optional
        return []
    lines = []
    size = results[0].size if results else None
    for row in sys_tl.ROWS[key]:
        variant, file, fname, transform = row[:4]
        fname = fname.format(k=size)
        try:
            mod = tl.load(sys_tl.WL / file)
            f = mod[fname]
            wrt = WRT[key] if len(WRT[key]) > 1 else WRT[key][0]
            if transform == "direct":
                d, f = f, mod[row[5]]
            elif transform == "grad-naive":
                d = tl.grad(f, wrt=wrt, optimize=False)
            else:
                d = getattr(tl, transform)(f, wrt=wrt)
            lines.append(f"- `{file}:{fname}` ({variant}): forward cost `{tl.cost(f)}`, "
                         f"derivative cost `{tl.cost(d)}` (tl.cost, scalar operations)")
        except Exception as exc:  # noqa: BLE001
            lines.append(f"- `{file}:{fname}` ({variant}): cost not available ({exc})")
    return ["tensorlang's static cost polynomials for its rows:", ""] + lines

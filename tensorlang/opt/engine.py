"""The rule engine: named rewrite rules run to a fixed point, with a trace.

A rule is a pure Program -> Program pass that states the law it uses.  Rules
are either *exact* (an identity of the language's meaning, always applied) or
*cost-guarded* (applied only where ``cheaper`` says the rewritten program
costs less; one policy for all of them).  ``run_rules`` applies them in order,
round after round, until a round changes nothing (a *late* rule only in a round
where the others changed nothing); it records each application
as (rule, statement) for ``tensorlang explain`` and reports, rather than
silently hits, the round limit.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Callable

from .. import sizexpr
from ..ssa.ir import Program

MAX_ROUNDS = 20
# Rounds past MAX_ROUNDS that run only while every round leaves the program strictly
# cheaper than it found it (see run_rules).
PROGRESS_ROUNDS = 40

# Sizes at which cost polynomials are compared: a small one so that a rewrite
# never makes small problems slower, a large one so that the leading terms decide.
COST_SAMPLE_SIZES = (16, 1024)


@dataclass(frozen=True)
class Rule:
    name: str
    apply: Callable[[Program], Program]
    law: str
    cost_guarded: bool = False
    # A late rule runs only in a round where no other rule changed the program: its
    # trials (whole-program simplifications) are wasted on a program still changing.
    late: bool = False


class RoundLimit(UserWarning):
    """The simplifier stopped before reaching a fixed point."""


def costs_at(new: Program, old: Program, sizes=COST_SAMPLE_SIZES) -> list[tuple[float, float]]:
    """(cost of new, cost of old) with every size symbol set to each of `sizes`."""
    from ..costs import program_cost
    return values_at(program_cost(new), program_cost(old), sizes)


def values_at(a, b, sizes=COST_SAMPLE_SIZES) -> list[tuple[float, float]]:
    """(a, b) at each of `sizes`, two cost polynomials with every size symbol set to it."""
    plain, derived = sizexpr.split(set(a.symbols()) | set(b.symbols()))
    points = [sizexpr.complete({z: n for z in plain}, derived) for n in sizes]
    return [(a.evaluate(**p), b.evaluate(**p)) for p in points]


def cheaper(new: Program, old: Program, *, strictly: bool) -> bool:
    """The one cost-guard policy: is `new` no costlier (or strictly cheaper) than `old`
    at every sampled size?  Strictly cheaper means lower at some size too."""
    from ..costs import program_cost
    return cheaper_cost(program_cost(new), program_cost(old), strictly=strictly)


def cheaper_cost(new, old, *, strictly: bool) -> bool:
    """`cheaper` on the two programs' cost polynomials."""
    at = values_at(new, old)
    if not all(x <= y for x, y in at):
        return False
    return not strictly or any(x < y for x, y in at)


def changed_statements(old: Program, new: Program) -> list[str]:
    """Statements of `new` that are not in `old` as they are (new or rewritten), then
    the names of those `new` dropped."""
    before = {s.name: s for s in old.stmts}
    out = [s.name for s in new.stmts if before.get(s.name) != s]
    kept = {s.name for s in new.stmts}
    out += [n for n in before if n not in kept]
    return out


def keep_recurrences(new: Program, old: Program) -> Program:
    """A rule's result with its recurrence groups in step order (ssa/recur.py), or
    the program before the rule when the rewrite left a group that is not well
    founded: no rule may reorder the steps of a recurrence.  Rules only insert
    statements before their readers, so a program without groups keeps none."""
    from ..ssa.recur import order_statements, recurrences
    try:
        if not recurrences(old):
            return new
    except ValueError:
        return new
    try:
        return order_statements(new)
    except ValueError:
        return old


def run_rules(prog: Program, rules, trace: list | None = None,
              max_rounds: int = MAX_ROUNDS) -> Program:
    """Apply `rules` in order until a whole round changes nothing.

    At most `max_rounds` rounds, and past them, up to PROGRESS_ROUNDS more while each
    round leaves the program strictly cheaper (`cheaper`) than it found it: a
    cost-guarded rewrite can enable another (a factoring leaves a sum whose terms
    share factors in turn, a substitution makes two statements equal), so a large
    derivative can need more rounds than the limit, and a round that lowers the cost is progress by
    a measure that cannot cycle (no program comes back after a cheaper one), and so
    does a round in which only late rules changed it; any other round stops there,
    as rules that undo each other would.

    `trace` (a list) receives one (rule name, statement name) pair per
    statement a rule rewrote, added or removed."""
    last: list = []                 # what the round before the limit changed
    rounds = 0
    while True:
        rounds += 1
        start = prog
        last = []
        settled = True              # no rule but a late one changed this round
        for rule in rules:
            if rule.late and prog is not start and prog != start:
                continue
            after = rule.apply(prog)
            if after is not prog and after != prog:
                after = keep_recurrences(after, prog)
            if after is not prog and after != prog:
                changed = [(rule.name, s) for s in changed_statements(prog, after)]
                if trace is not None:
                    trace.extend(changed)
                last.append((changed, after))
                settled = settled and rule.late
                prog = after
        if prog is start or prog == start:
            return prog
        # Past the limit, a round that leaves the program cheaper is progress; so is
        # a round in which only late rules changed it (the others had reached their
        # fixed point, and a late rule's rewrite, no costlier, needs one more round
        # to settle).
        if rounds >= max_rounds and (rounds >= max_rounds + PROGRESS_ROUNDS
                                     or not (settled or cheaper(prog, start, strictly=True))):
            break
    if trace is not None:
        trace.append(("round limit", f"stopped after {rounds} rounds"))
    _warn_round_limit(prog, rounds, last)
    return prog


def _warn_round_limit(prog: Program, max_rounds: int, last: list) -> None:
    """The RoundLimit warning: which rules still changed which statements in the last
    round, located at the first of those statements that has a place in the source, else
    at the program's last statement that has one."""
    changes = [c for changed, _ in last for c in changed]
    shown = ", ".join(f"{rule} ({name})" for rule, name in changes[:4])
    if len(changes) > 4:
        shown += f" and {len(changes) - 4} more"
    span = None
    for changed, after in last:
        spans = {s.name: s.span for s in after.stmts}
        span = next((spans[n] for _, n in changed if spans.get(n) is not None), None)
        if span is not None:
            break
    if span is None:
        # statements a derivative made have no place in the source: the function's last
        # located statement stands for them (as certificate warnings do)
        span = next((s.span for s in reversed(prog.stmts) if s.span is not None), None)
    message = (f"simplifying {prog.name} stopped after {max_rounds} rounds without reaching a "
               f"fixed point; the program is correct but may not be fully simplified")
    if shown:
        message += f" (the last round still changed: {shown})"
    if span is not None:
        warnings.warn_explicit(f"{span}: {message}", RoundLimit, span.filename, span.line)
    else:
        warnings.warn(message, RoundLimit, stacklevel=3)

"""The driver: every stage the compiler runs, in order and by name.

Three pipelines make up the compiler, and this file is where each is written
down:

* the **front end** (``FRONT_END``): parse -> check and lower to Tensor SSA ->
  prove bounds -> verify;
* the **derivative recipes** (``recipe``): how ``grad``, ``value_and_grad``,
  ``vjp``, ``jvp``, ``hvp`` and ``hessian`` are built from a program, as a list
  of program -> program stages (prepare, transpose or take tangents, seed,
  simplify);
* the **backends** (``backend_stages``): what runs between the optimised
  program and the generated code.

The API and the command line call only these functions.  Each stage runs
through ``run_stage``, so an unexpected failure is a ``TLInternalError``
naming the stage, never a bare traceback; ``explain`` prints the program after
every stage from the record a run keeps.  With ``TENSORLANG_VERIFY=1`` (the
test suite sets it) every program a stage produces is checked by the strict
``verify``.
"""
from __future__ import annotations

import gc
import math
import os
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Callable

from .errors import ErrorSink, SourceText, TLError, TLInternalError
from .memo import Memo
from .ssa.ir import Program, Term
from .ssa.names import readable_binders, supply, unique_binders
from .ssa.traverse import iter_nodes
from .ssa.verify import verify
from .syntax import ast as A


# ------------------------------------------------------------ running a stage
def run_stage(name: str, fn, *args):
    """fn(*args), with any failure that is not a user error reported as an
    internal error of stage `name`, and Python's cycle collector paused."""
    try:
        with _collector_paused():
            return fn(*args)
    except TLError:
        raise
    except RecursionError:
        raise TLInternalError(f"stage '{name}' ran out of stack (the program is nested too deeply)")
    except Exception as exc:  # noqa: BLE001 -- turned into a named internal error
        raise TLInternalError(f"internal error in stage '{name}': {type(exc).__name__}: {exc}") \
            from exc


@contextmanager
def _collector_paused():
    """The cycle collector off while the compiler runs (back on after the outermost
    stage).  A derivation builds and drops millions of small immutable IR nodes, which
    reference counting frees (they form no cycles), but the collector walks every
    live object each time enough of them survive: on a program of thousands of
    statements that was a third of the time of a derivation."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def verifying() -> bool:
    return os.environ.get("TENSORLANG_VERIFY", "") not in ("", "0")


@dataclass(frozen=True)
class Stage:
    """One program -> program step of a recipe."""
    name: str
    run: Callable[[Program], Program]


@dataclass
class Run:
    """The programs a pipeline produced, stage by stage (for ``explain``)."""
    steps: list[tuple[str, Program]] = field(default_factory=list)
    rules: dict[str, list] = field(default_factory=dict)   # simplify stage -> rule trace
    # which program a derivative was taken of, and why (``derive``'s `start`)
    start: str | None = None


# Statements already found finite: every stage passes most statements on unchanged.
_FINITE = Memo(50_000)


def _check_finite(prog: Program, stage: str) -> None:
    """A rewrite multiplies constants (2 * 1.5e308 in a derivative): one that leaves
    float64 cannot be printed or compiled, so it is a user-facing error here."""
    for s in prog.stmts:
        if _FINITE.get(s):
            continue
        for node in iter_nodes(s.body):
            if node.__class__ is Term and not math.isfinite(node.coeff):
                raise TLError(f"{prog.name}: after {stage}, statement {s.name} has a constant "
                              f"beyond float64 ({node.coeff}); the program's constants are too "
                              f"large for its derivative (scale them down)")
        _FINITE.put(s, True)


def run_stages(prog: Program, stages, record: Run | None = None) -> Program:
    for st in stages:
        prog = run_stage(st.name, st.run, prog)
        _check_finite(prog, st.name)
        if verifying():
            run_stage(f"verify after {st.name}", verify, prog)
        if record is not None:
            record.steps.append((st.name, prog))
    return prog


# ------------------------------------------------------------ front end
@dataclass
class CompiledModule:
    source: SourceText
    ast: A.ModuleAST
    programs: list[Program]
    proofs: dict[str, list[str]] = field(default_factory=dict)


def _prove(programs, tree: A.ModuleAST, sink: ErrorSink) -> dict[str, list[str]]:
    """The bounds proofs of every program, its failures added to `sink`.  A program
    is answerable for the accesses its own `def` writes: those it inlined from a
    callee are the callee's, proven (or reported, in the callee's names) when the
    callee's own program is checked, so a caller does not report them again in its
    names."""
    from .check import BoundsChecker
    lines: dict[str, tuple[int, int]] = {}
    for fn in tree.functions:       # (a name defined twice: the first is the program)
        if fn.span is not None:
            lines.setdefault(fn.name, (fn.span.line, fn.span.end_line))
    proofs = {}
    for prog in programs:
        own = ErrorSink(sink.source)
        checker = BoundsChecker(prog, own)
        checker.run()
        proofs[prog.name] = checker.proven
        first, last = lines.get(prog.name, (None, None))
        sink.items.extend(item for item in own.items
                          if first is None or item[1].span is None
                          or first <= item[1].span.line <= last)
    return proofs


def _verify_all(programs):
    for p in programs:
        verify(p)


FRONT_END = ("parse", "check", "bounds", "verify")


# Front-end results by source text and file name: loading the same file again (a
# Hessian after a gradient, a notebook cell run twice, a fresh process: on disk,
# progcache.py) skips the parse and checks.
# A CompiledModule is never changed after it is built, so modules may share one.
_FRONT_ENDS = Memo(64)


def compile_source(text: str, filename: str = "<string>") -> CompiledModule:
    """The front end: parse -> check and lower -> prove bounds -> verify
    (remembered by text and file name; a source with errors is not remembered)."""
    from .progcache import remembered
    return _FRONT_ENDS.compute((text, filename), lambda: remembered(
        ("front end", text, filename), lambda: _compile_source(text, filename)))


def _compile_source(text: str, filename: str) -> CompiledModule:
    """Each stage checks every function the stages before it passed, and all their
    diagnostics are raised together in source order: an error in one function
    hides none in another (a call of a function with errors stays silent)."""
    from .ssa.lower import lower_module
    from .syntax.parse import parse_functions
    source = SourceText(text, filename)
    sink = ErrorSink(source)
    tree, syntax_errors, broken = run_stage("parse", parse_functions, text, filename)
    for err in syntax_errors:
        sink.take(err)
    programs, as_written = run_stage("check", lower_module, tree, source, sink, broken)
    proofs = run_stage("bounds", _prove, as_written, tree, sink)
    sink.raise_if_any()
    run_stage("verify", _verify_all, programs)
    return CompiledModule(source, tree, programs, proofs)


# ------------------------------------------------------------ optimisation
def simplify_stage(name: str = "simplify", record: Run | None = None,
                   before_derivative: bool = False, rules: tuple | None = None) -> Stage:
    """The simplifier as a stage; with a record, the rules that fired are kept.
    `before_derivative`: the program will be differentiated (again), so its terms
    stay multiplied out (see ``rules_for``); `rules`: other rules than those."""
    def run(prog: Program) -> Program:
        from .opt.simplify import simplify
        use = rules if rules is not None else rules_for(before_derivative)
        if record is None:
            return simplify(prog, use)
        trace: list = []
        out = simplify(prog, use, trace=trace)
        record.rules[name] = trace
        return out
    return Stage(name, run)


def rules_for(before_derivative: bool) -> tuple:
    """The simplifier's rules for a program that runs as it is, or one that will be
    differentiated: factoring common products into statements (opt/factor.py) is
    for running, and a derivative of the factored form (a tangent of each factor
    statement, a Hessian's one-hot seeds through them) can cost more than one of
    the terms multiplied out."""
    from .opt.simplify import RULES, RULES_BEFORE_DERIVATIVE
    return RULES_BEFORE_DERIVATIVE if before_derivative else RULES


def rules_for_derivative(kind: str, prog: Program, wrt: tuple[str, ...],
                         before_derivative: bool) -> tuple:
    """The rules that simplify derivative `kind` of `prog`: ``rules_for``'s, where
    factoring may add a monomial that the certificate allows the derivative (the
    monomial rule's right-hand side, certificate.reference_for, of the program the
    derivative is taken of, which is the one the certificate checks against).
    That program is the recipe's own first stage: simplified here from the same
    position of the name supply, the recipe then finds it remembered.  A gradient,
    vjp or jvp is given a budget besides (hoist.Budget): within the certificate's
    bound it holds no named intermediate larger than every tensor of that program
    that it can compute where it is read."""
    if before_derivative or not set(wrt) <= {p.name for p in prog.params}:
        return rules_for(before_derivative)       # (a wrong wrt is the stages' error)
    from .certificate import FACTOR, reference_for
    from .costs import Cost
    from .opt.hoist import Budget, held_dims
    from .opt.simplify import derivative_rules
    forward = run_recipe(prog, (simplify_stage("simplify input", before_derivative=True),))
    reference = reference_for(kind, forward, wrt)
    allowed = tuple(sorted(m for m, c in reference.terms.items() if c > 0))
    if kind not in ("grad", "value_and_grad", "vjp", "jvp"):
        # (a Hessian's or a Jacobian's result is larger than the function's tensors
        # itself, and an hvp's bound rests on the gradient's cost)
        return derivative_rules(allowed)
    # What a derivative may spend to hold no tensor larger than every one of the
    # function: the certificate's bound.
    bound = reference * Cost.const(FACTOR)
    return derivative_rules(allowed, Budget(tuple(sorted(bound.terms.items())),
                                            held_dims(forward)))


# Inside the recipes every binder has a name of the supply (ssa/names.py), so no
# rewrite can capture an index; programs leave with short, readable names.
UNIQUE_BINDERS = Stage("unique binders", unique_binders)
READABLE_BINDERS = Stage("readable binders", readable_binders)


def run_recipe(prog: Program, stages, record: Run | None = None) -> Program:
    """stages between giving every binder a unique name and making names readable."""
    with supply():
        return run_stages(prog, (UNIQUE_BINDERS,) + tuple(stages) + (READABLE_BINDERS,), record)


def _split_for_passes(prog: Program) -> Program:
    from .shared import split_terms_into_passes
    return split_terms_into_passes(prog)


# The last stage of a program that runs: terms that would share a weight with a pass
# become statements of their own (shared.py).  Not for a program that is
# differentiated further: its derivative would see the split as a statement more.
SPLIT_FOR_PASSES = Stage("split terms into shared passes", _split_for_passes)


def optimize(prog: Program, record: Run | None = None) -> Program:
    """The program as it runs: simplified (the stage every call goes through)."""
    return run_recipe(prog, (simplify_stage("simplify", record), SPLIT_FOR_PASSES), record)


# ------------------------------------------------------------ derivative recipes
KINDS = ("grad", "value_and_grad", "vjp", "jvp", "hvp", "hessian", "jacobian")


def _prepare(optimize: bool, record) -> tuple[Stage, ...]:
    """Derivatives are taken of the simplified program whose compound builtin
    arguments are named statements (see opt.hoist.name_nonlinear_arguments)."""
    if not optimize:
        return ()
    from .opt.hoist import name_nonlinear_arguments
    return (simplify_stage("simplify input", record, before_derivative=True),
            Stage("name builtin arguments", name_nonlinear_arguments))


def _select(keep, name: str):
    def run(prog: Program) -> Program:
        from .opt.simplify import remove_dead_statements
        outs = tuple(prog.outputs[k] for k in keep)
        return remove_dead_statements(Program(name, prog.params, prog.stmts, outs, len(outs) > 1))
    return run


def recipe(kind: str, prog: Program, wrt: tuple[str, ...], optimize: bool = True,
           record: Run | None = None, before_derivative: bool = False,
           runs: Program | None = None) -> tuple[Stage, ...]:
    """The stages that build derivative `kind` of `prog` with respect to `wrt`
    (`before_derivative`: the result is differentiated further, see ``rules_for``;
    `runs`: the program the function runs, whose cost the certificate's bound is
    taken from, `tl.cost(f)`; without it, the program differentiated)."""
    from .ad.forward import jvp_program
    from .ad.hessian import seed_one_hot
    base = prog.name
    if kind not in KINDS:
        raise TLError(f"unknown derivative {kind!r}; choose one of {', '.join(KINDS)}")
    rules = rules_for_derivative(kind, prog, wrt, before_derivative) if optimize else None
    finish = (simplify_stage("simplify derivative", record, before_derivative, rules),) \
        if optimize else ()
    if optimize and not before_derivative:
        finish += (SPLIT_FOR_PASSES,)
    if kind in ("grad", "value_and_grad", "vjp") or _scalar_jacobian(kind, prog, wrt):
        seed = "param" if kind == "vjp" else "one"
        name = f"{base}_{kind}"
        keep = kind == "value_and_grad"
        transpose = Stage("reverse mode", lambda p: transpose_by_cost(
            p, wrt, optimize, rules, seed=seed, name=name, keep_outputs=keep, runs=runs,
            in_groups=not before_derivative))
        return _prepare(optimize, record) + (transpose,) + finish
    if kind == "jvp":
        tangent = Stage("forward mode", lambda p: tangent_by_cost(
            p, wrt, optimize, rules, name=f"{base}_jvp"))
        return _prepare(optimize, record) + (tangent,) + finish
    if kind == "jacobian":
        # forward mode with one-hot tangents [k == l]: one column per seed index l,
        # all at once; bracket elimination then leaves only the structural non-zeros
        if len(wrt) != 1:
            raise TLError("jacobian: wrt must name one parameter")
        if len(prog.outputs) != 1:
            raise TLError(f"jacobian: {base} returns {len(prog.outputs)} values; take the "
                          f"Jacobian of a function with one output")
        name = f"{base}_jacobian"
        return _prepare(optimize, record) + (
            Stage("forward mode", lambda p: jvp_program(p, wrt)),
            Stage("select tangent", _select((1,), name)),
            Stage("jacobian seeds",
                  lambda p: seed_one_hot(p, p.params[-1].name, p.outputs[0], name)),
        ) + finish
    if kind in ("hvp", "hessian"):
        if len(wrt) != 1:
            raise TLError(f"{kind}: wrt must name one parameter")
        name = f"{base}_{kind}"
        gradient = recipe("grad", prog, wrt, optimize, record, before_derivative=True,
                          runs=runs)
        select = _select((1,), name)

        def seeds(p):
            return seed_one_hot(p, p.params[-1].name, p.outputs[0], name)

        # the forward-mode candidates are compared as the stages after it leave them
        if kind == "hessian":
            def then(p):
                return seeds(select(p))
        else:
            then = select
        stages = gradient + (Stage("forward mode", lambda p: tangent_by_cost(
                                 p, wrt, optimize, rules, then=then)),
                             Stage("select tangent", select))
        if kind == "hessian":
            stages += (Stage("hessian seeds", seeds),)
        return stages + finish


def _scalar_jacobian(kind: str, prog: Program, wrt) -> bool:
    """Is this the Jacobian of one scalar output with respect to one parameter?  It is
    the gradient, which reverse mode builds at the gradient's cost; forward mode with
    one-hot tangents pushes a column per element of the parameter through the
    program (the Jacobian of a graph layer's loss with respect to its node features
    cost n^2 f g where the gradient costs n f g)."""
    return kind == "jacobian" and len(wrt) == 1 and prog.returns_scalar()


def transpose_by_cost(prog: Program, wrt, optimize: bool, rules: tuple,
                      runs: Program | None = None, **how) -> Program:
    """Reverse mode, with the cotangents of compound factors stored or multiplied out,
    whichever simplifies to the cheaper derivative.

    Storing the cotangent of `(x[i + 1] - x[i]) ** 2` once and reading it at each
    use of x is what keeps a gradient from evaluating every other factor of the
    term once per monomial (ad/reverse.py, `Transposer.body`).  Multiplied out,
    the copies can instead merge with the adjoints of other terms (a symmetric
    energy's two halves) or leave a factor that contraction ordering moves out of
    a sum, and a stored cotangent has as many elements as the term has loop
    iterations.  So both programs are simplified and compared by their cost
    polynomials (`costs.rank_costs`); on a tie the cotangents stay multiplied out.
    Each trial starts from the same position of the name supply, and the supply is
    left there, so the simplify stage that follows (with the same `rules`) gives
    the very program the comparison saw (and finds it remembered)."""
    from .ad.reverse import vjp_candidates, vjp_program
    if not optimize:
        how.pop("in_groups", None)
        return vjp_program(prog, wrt, **how)
    return _cheapest(vjp_candidates(prog, wrt, **how), rules,
                     certified=_within_certificate(prog, wrt, runs))


def _within_certificate(forward: Program, wrt, runs: Program | None = None):
    """Does a simplified reverse-mode candidate meet the certificate of a gradient or
    vjp of `forward` (certificate.bounds_for), with the label checks it will be given
    (domain.label_checks: a scatter `[k == x[s]]` reads no label it misses, so its
    derivative may evaluate the function's gathers again)?  Candidates are ranked by
    cost first at equal sizes; one that meets the promise wins over a cheaper one
    that does not (a vjp that multiplies d_out into each of two scatter sums per
    iteration costs 10 b + n where the bound is 8 b + 4 n).  The bound is that of
    the program the function runs (`runs`, tl.cost(f)), as the check's is."""
    from .certificate import bounds_for, exceeded, unbounded_monomial
    from .costs import scheduled_cost
    from .domain import label_checks
    if not set(wrt) <= {p.name for p in forward.params}:
        return None
    bound, reference, _ = bounds_for("vjp", runs if runs is not None else forward, tuple(wrt))

    def holds(simplified: Program) -> bool:
        from .shared import split_terms_into_passes
        cost = scheduled_cost(label_checks(forward, split_terms_into_passes(simplified)))
        symbols = set(cost.symbols()) | set(bound.symbols())
        return (exceeded(cost, bound, symbols) is None
                and unbounded_monomial(cost, reference) is None)
    return holds


def tangent_by_cost(prog: Program, wrt, optimize: bool, rules: tuple, then=None,
                    **how) -> Program:
    """Forward mode, with tangents multiplied out, with compound factors' values and
    tangents stored, or with prefix and suffix products (ad/forward.jvp_candidates),
    whichever simplifies to the cheaper program (as in ``transpose_by_cost``);
    `then`: the stages that follow before simplification (selecting the tangent,
    a Hessian's seeds), applied to each candidate before it is compared."""
    from .ad.forward import jvp_candidates, jvp_program
    if not optimize:
        return jvp_program(prog, wrt, **how)
    return _cheapest(jvp_candidates(prog, wrt, **how), rules, then)


def _cheapest(candidates, rules: tuple, then=None, certified=None) -> Program:
    """The candidate whose simplified form (after `then`, when given) costs least
    (the first on a tie); the name supply is left where the candidates started.
    `certified(simplified) -> bool`, when given, puts the candidates that meet the
    derivative's certificate before those that do not."""
    from .costs import program_cost, rank_costs
    from .opt.simplify import simplify
    from .ssa.names import position, rewind_to
    if len(candidates) == 1:
        return candidates[0]
    start = position()
    costs, misses = [], []
    for candidate in candidates:
        rewind_to(start)
        simplified = simplify(candidate if then is None else then(candidate), rules)
        costs.append(program_cost(simplified))
        misses.append(certified is not None and not certified(simplified))
    rewind_to(start)
    keys = rank_costs(costs)
    # the first candidate (multiplied out) wins ties
    return candidates[min(range(len(candidates)), key=lambda k: (misses[k], keys[k], k))]


def derive(kind: str, prog: Program, wrt, optimize: bool = True,
           record: Run | None = None, runs: Program | None = None,
           start: str = "cheaper") -> Program:
    """Derivative `kind` of `prog` (see ``recipe``), each stage recorded when asked,
    with the label checks of `runs`, the program the function of `prog` runs (its
    optimised form unless given): a derivative rejects the labels its function
    rejects (domain.py).  The checks are a stage of their own, recorded only when
    the derivative needs one.  `start`: the derivative of the terms multiplied out
    ("written"), of `runs` ("runs"), or the cheaper of the two ("cheaper", see
    ``_derived_from_cheaper_form``)."""
    wrt = (wrt,) if isinstance(wrt, str) else tuple(wrt)
    runs = runs or _as_it_runs(prog)
    d = _derived_from_cheaper_form(kind, prog, wrt, optimize, record, runs, start)
    from .domain import drop_enforced_label_guards, guard_reads_the_function_skips, label_checks
    guarded = run_stage("label reads the function skips", guard_reads_the_function_skips, runs, d)
    checked = run_stage("label checks", label_checks, runs, guarded)
    if optimize:
        checked = run_stage("enforced label guards", drop_enforced_label_guards, checked)
    if checked is not d:
        d = checked
        if verifying():
            run_stage("verify after label checks", verify, d)
        if record is not None:
            record.steps.append(("label checks", d))
    return d


def _derived_from_cheaper_form(kind: str, prog: Program, wrt: tuple, optimize: bool,
                               record: Run | None, runs: Program, start: str) -> Program:
    """Derivative `kind` of `prog` as written (its terms multiplied out) or of `runs`,
    the program it runs, whichever simplifies to the cheaper derivative.

    A derivative is taken of the terms multiplied out, so that the simplifier can
    merge and factor the derivative's terms as a whole.  But a product the program
    runs factored can be cheaper to differentiate factored:
    `(1 - r) * sum[t](D[c, t] * (x[t] - y[t]))` multiplied out is four matrix-vector
    products, each with its own cotangent or tangent (a gradient of 17 N^2 against
    7 N^2 from the factored form).  And the other way: the factored statements of
    an iteration can hold what a derivative multiplied out shares.  So both are
    derived and compared by their cost polynomials (costs.rank_costs); on a tie the
    terms stay multiplied out.  When simplifying for running changes nothing, the
    two starts are one program and the derivative is built once."""
    if start not in ("cheaper", "written", "runs"):
        raise TLError(f"derive: start must be 'cheaper', 'written' or 'runs', not {start!r}")

    def build(begin: Program, into: Run | None) -> Program:
        return run_recipe(begin, recipe(kind, begin, wrt, optimize, into, runs=runs), into)

    if start == "runs" and optimize:
        return build(runs, record)
    if start == "written" or not optimize or _runs_as_simplified(prog, runs):
        return build(prog, record)
    from .costs import rank_costs, scheduled_cost
    written_record = Run() if record is not None else None
    written = build(prog, written_record)
    running_record = Run() if record is not None else None
    running = build(runs, running_record)
    costs = [scheduled_cost(written), scheduled_cost(running)]
    keys = rank_costs(costs)
    pick = 1 if keys[1] < keys[0] else 0
    if record is not None:
        chosen = (written_record, running_record)[pick]
        record.steps.extend(chosen.steps)
        record.rules.update(chosen.rules)
        record.start = (f"taken of the program as it runs: {costs[1]}, against {costs[0]} "
                        f"from its terms multiplied out" if pick else
                        f"taken of the terms multiplied out: {costs[0]}, against {costs[1]} "
                        f"from the program as it runs")
    return (written, running)[pick]


def _runs_as_simplified(prog: Program, runs: Program) -> bool:
    """Is `runs` the program `prog` simplified for differentiating (the first stage of
    every recipe, remembered by the simplifier), statement for statement?"""
    simplified = run_recipe(prog, (simplify_stage("simplify input", before_derivative=True),))
    return simplified.stmts == runs.stmts


def _as_it_runs(prog: Program) -> Program:
    """The program a function of `prog` runs (``optimize``, which `derive`'s flag hides)."""
    return optimize(prog)


# ------------------------------------------------------------ backends
def backend_stages() -> tuple[Stage, ...]:
    """The Numba backend's preparation of an optimised program, before its module
    text is written (backend/numba_module.PREPARATION)."""
    from .backend.numba_module import PREPARATION
    return tuple(Stage(name, step) for name, step in PREPARATION)


def compile_kernels(prog: Program):
    """The Numba backend: generate the module of kernels, cache it, import it.

    A program the generator cannot compile gives back the ``Unsupported``
    reason instead of a module (caught here, inside the stage, so it is not
    reported as an internal error); the caller then runs the interpreter."""
    from .backend import numba_backend
    from .backend.kernels import Unsupported
    try:
        return numba_backend.load_module(prog)
    except Unsupported as exc:
        return exc

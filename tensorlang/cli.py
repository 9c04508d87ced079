"""The `tensorlang` command line: run, check, explain.

Every user error, a bad option included, is printed as a diagnostic on stderr with
exit status 1; an unexpected failure prints one line naming it (exit status 2).  No traceback
reaches the user.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
import warnings

import numpy as np

from . import sizexpr
from .errors import TLCostWarning, TLError
from .inputs import DEFAULT_SIZE, random_inputs

SUMMARY_LIMIT = 20          # tensors with more entries are summarised


class CLIError(Exception):
    """A mistake on the command line itself (bad option, unreadable file)."""


def _parse_size(text: str) -> tuple[str, int]:
    name, sep, value = text.partition("=")
    if not sep or not name.isidentifier():
        raise CLIError(f"--size expects NAME=INT, got {text!r}")
    try:
        n = int(value)
    except ValueError:
        raise CLIError(f"--size {name}: {value!r} is not an integer") from None
    if n < 1:
        raise CLIError(f"--size {name}: sizes must be at least 1, got {n}")
    from .bounds import MAX_SIZE
    if n > MAX_SIZE:
        raise CLIError(f"--size {name}: sizes are at most 2^{MAX_SIZE.bit_length() - 1}, got {n}")
    return name, n


def _parse_value(text: str):
    name, sep, value = text.partition("=")
    if not sep or not name.isidentifier():
        raise CLIError(f"arguments are NAME=VALUE (a number or a .npy file), got {text!r}")
    try:
        return name, float(value)
    except ValueError:
        pass
    if not os.path.exists(value):
        raise CLIError(f"{name}={value}: no such file (values are numbers or .npy paths)")
    try:
        return name, np.load(value, allow_pickle=False)
    except Exception as exc:  # noqa: BLE001 -- any unreadable file is a user error
        raise CLIError(f"{name}={value}: cannot read as .npy: {exc}") from None


def _once(what: str, pairs: list) -> dict:
    """NAME=VALUE pairs as a dict; a name given twice is an error (which of the two
    values was meant is not for the command to guess)."""
    out = {}
    for name, value in pairs:
        if name in out:
            raise CLIError(f"{what}{name} is given twice; give each once")
        out[name] = value
    return out


def _pick(mod, name: str | None):
    if name is None:
        if not mod.names:
            raise CLIError(f"{mod.filename} defines no functions")
        return mod[mod.names[0]]
    if name not in mod:
        raise CLIError(f"{mod.filename} has no function {name!r}; it defines "
                       f"{', '.join(mod.names) or 'none'}")
    return mod[name]


def _size_hint(fn, values: list[str], name: str) -> str:
    """`--size N=5 J=6` gives J=6 as a value: argparse takes one NAME=INT per --size.
    When the name is a size of the function, say how to give it."""
    sizes = {d for p in fn.program.params for d in p.dims if isinstance(d, str)}
    if name not in sizes:
        return ""
    text = next(v for v in values if v.split("=", 1)[0] == name)
    return f" ({name} is a size of {fn.name}: give it as --size {text}, one --size per size)"


def _first_function_hint(mod, chosen: str | None, param: str) -> str:
    """When -f was left out, the function run is the file's first, which may not be the
    one the user meant: say so, and name the functions that do take `param`."""
    if chosen is not None or len(mod.names) < 2:
        return ""
    takers = [n for n in mod.names[1:] if param in mod[n].params]
    hint = f" (without -f, run takes the file's first function, {mod.names[0]}"
    if takers:
        return hint + f"; {param!r} is a parameter of {', '.join(takers)}: add -f {takers[0]})"
    return hint + f"; the file defines {', '.join(mod.names)})"


def _check_sizes(fn, sizes: dict, given: dict) -> None:
    """--size names a size of the function (a misspelt one would leave the default of 8
    in place without a word) and agrees with the arrays given for it."""
    plain = [d for p in fn.program.params for d in p.dims
             if isinstance(d, str) and not sizexpr.is_derived(d)]
    for name in sizes:
        if name not in plain:
            raise CLIError(f"--size {name}: {fn.name} has no size {name!r}; its sizes are "
                           f"{', '.join(dict.fromkeys(plain)) or 'none'}")
    for p in fn.program.params:
        value = given.get(p.name)
        for k, (d, got) in enumerate(zip(p.dims, np.shape(value) if value is not None else ())):
            if d in sizes and got != sizes[d] and len(np.shape(value)) == len(p.dims):
                raise CLIError(f"--size {d}={sizes[d]} disagrees with {p.name}, whose dimension "
                               f"{k} ({d}) is {got}")


def _show(value) -> str:
    if isinstance(value, float):
        return repr(value)
    arr = np.asarray(value)
    if arr.size <= SUMMARY_LIMIT:
        return np.array2string(arr, precision=6)
    return (f"array of shape {arr.shape}: min {arr.min():.6g}, max {arr.max():.6g}, "
            f"mean {arr.mean():.6g}, norm {np.linalg.norm(arr):.6g}")


def _output_path(path: str) -> str:
    """Where `-o PATH` writes: numpy adds .npy to a name without it.  The folder must
    exist; this is checked before running, so a long run is not wasted."""
    real = path if path.endswith(".npy") else path + ".npy"
    folder = os.path.dirname(os.path.abspath(real))
    if not os.path.isdir(folder):
        raise CLIError(f"-o {path}: the folder {os.path.dirname(real) or '.'} does not exist")
    if os.path.isdir(real):
        raise CLIError(f"-o {path}: {real} is a directory")
    return real


def cmd_run(args) -> int:
    from . import load
    if args.seed < 0:
        raise CLIError(f"--seed must be a non-negative integer, got {args.seed}")
    output = _output_path(args.output) if args.output else None
    mod = load(args.file)
    fn = _pick(mod, args.function)
    sizes = _once("--size ", [_parse_size(s) for s in args.size])
    given = _once("", [_parse_value(v) for v in args.values])
    unknown = [k for k in given if k not in fn.params]
    if unknown:
        raise CLIError(f"{fn.name} has no parameter {unknown[0]!r}; its parameters are "
                       f"{', '.join(fn.params)}" + _size_hint(fn, args.values, unknown[0])
                       + _first_function_hint(mod, args.function, unknown[0]))
    _check_sizes(fn, sizes, given)
    if output and len(fn.program.outputs) != 1:
        raise CLIError(f"-o needs a function with one output; {fn.name} returns "
                       f"{len(fn.program.outputs)}")
    inputs = random_inputs(fn, given, sizes, seed=args.seed)
    t0 = time.perf_counter()
    result = fn(**inputs)
    elapsed = time.perf_counter() - t0
    warm = None
    if fn.backend == "numba":
        # The first call may have been answered by the interpreter while the kernels
        # compile in the background (backend/tiers.py); the time shown as the numba
        # backend's must be the kernels', so the second call waits for them.
        from .backend.tiers import wait_for_builds
        wait_for_builds()
        t1 = time.perf_counter()
        fn(**inputs)
        warm = time.perf_counter() - t1
    results = result if isinstance(result, tuple) else (result,)
    for k, r in enumerate(results):
        label = f"{fn.name}" + (f"[{k}]" if len(results) > 1 else "")
        print(f"{label} = {_show(r)}")
    if warm is None:
        print(f"time: {elapsed * 1e3:.3f} ms ({fn.backend} backend)")
    else:
        print(f"time: {warm * 1e3:.3f} ms ({fn.backend} backend; the first call took "
              f"{elapsed * 1e3:.1f} ms including compilation or cache loading)")
    if output:
        try:
            _save_whole(output, np.asarray(results[0]))
        except OSError as exc:
            raise CLIError(f"-o {args.output}: cannot write {output}: "
                           f"{exc.strerror or exc}") from None
        print(f"wrote {output}")
    return 0


def _save_whole(path: str, value: np.ndarray) -> None:
    """np.save into a temporary file beside `path`, renamed over it only once it is
    complete: a write that fails part way (a full disk, a file size limit) leaves
    neither a truncated .npy nor a damaged earlier file of that name."""
    import secrets
    folder, name = os.path.split(os.path.abspath(path))
    # Opened like the file itself (mode "x", so the umask applies as it would to
    # `path`), under a name no one else uses.
    partial = os.path.join(folder, f".{name}.{secrets.token_hex(4)}.part")
    fh = open(partial, "xb")
    try:
        with fh:
            np.save(fh, value)
        os.replace(partial, path)
    except BaseException:
        try:
            os.unlink(partial)
        except OSError:
            pass
        raise


def cmd_check(args) -> int:
    from . import load
    mod = load(args.file)
    if not len(mod):
        print(f"{args.file}: ok (no functions)")
        return 0
    print(f"{args.file}: ok ({len(mod)} function{'s' if len(mod) != 1 else ''}: "
          f"{', '.join(mod.names)})")
    return 0


def cmd_explain(args) -> int:
    from . import load
    from .certificate import stored_elements
    from .costs import program_cost, scheduled_cost
    from .driver import Run, derive, run_stages, simplify_stage
    from .ssa.printer import fmt_type, print_program
    from .syntax.dump import dump_ast
    from .api import check_request
    mod = load(args.file)
    fn = _pick(mod, args.function)
    compiled = mod.compiled
    fdef = next(f for f in compiled.ast.functions if f.name == fn.name)
    prog = fn.program
    wrt = tuple(_wrt_list(args.wrt))
    scalar = prog.returns_scalar()
    kind = "grad" if scalar else "vjp"
    if wrt and len(prog.outputs) > 1:
        # (tl.vjp's own error would name a transform the user did not ask for)
        raise CLIError(f"explain --wrt shows the reverse-mode derivative of a function with one "
                       f"output, and {fn.name} returns {len(prog.outputs)} values; "
                       f"`tensorlang grad --mode forward` prints their jvp")
    if wrt:     # refused before the forward stages are printed, not after them
        check_request(kind, fn, wrt)

    def stage(title):
        print(f"== {title} " + "=" * max(4, 66 - len(title)))

    def rules(trace):
        """One line: each rule that fired, with the statements it rewrote."""
        touched: dict[str, list[str]] = {}
        for rule, stmt in trace:
            names = touched.setdefault(rule, [])
            if stmt not in names:
                names.append(stmt)
        shown = [f"{r} ({', '.join(ss)})" for r, ss in touched.items()]
        print(f"rules applied: {', '.join(shown) or '(none)'}")

    stage("parsed")
    print(dump_ast(fdef))
    print()
    stage("checked")
    print(f"signature: {fn.signature}")
    print(f"sizes: {', '.join(prog.sizes()) or '(none)'}")
    shapes = prog.shapes()
    for st in prog.stmts:
        ranges = ", ".join(f"{n}: {d}" for n, d in st.indices)
        print(f"  {st.name}: {fmt_type(*shapes[st.name])}" + (f"   indices {ranges}" if ranges else ""))
    proofs = compiled.proofs.get(fn.name, [])
    print(f"bounds: every access proven in range ({len(proofs)} needed a proof)")
    for line in proofs:
        print(f"  {line}")
    print()
    stage("Tensor SSA")
    print(fn.source, end="")
    print()
    record = Run()
    final = run_stages(prog, (simplify_stage("simplified", record),), record)
    stage("simplified")
    rules(record.rules["simplified"])
    print(print_program(final), end="")
    if wrt:
        # exactly the stages tl.grad (or tl.vjp) runs, each shown as it leaves them
        record = Run()
        final = derive(kind, prog, wrt, True, record)
        for name, step in record.steps:
            if name in ("simplify input", "simplify derivative", "unique binders",
                        "readable binders"):
                continue      # shown below, or a renaming that printing undoes
            print()
            stage(f"derivative: {name} (wrt {', '.join(wrt)})")
            print(print_program(step), end="")
        naive = derive(kind, prog, wrt, optimize=False)
        print()
        stage("simplified derivative")
        rules(record.rules["simplify derivative"])
        print(print_program(final), end="")
        print(f"cost: {program_cost(naive)}  (naive: no simplification at all)  ->  "
              f"{scheduled_cost(final)}")
        if record.start is not None:
            print(f"derivative {record.start}")
        print(f"stored elements: {stored_elements(final)}  (the function's: "
              f"{stored_elements(fn.optimized_program())})")
    if getattr(args, "backend", "numba") == "jax":
        # the JAX backend emits the optimised program as it is (no preparation)
        from .backend.jax_backend import module_text
        print()
        stage("JAX code")
        print(module_text(final), end="")
        return 0
    from .driver import backend_stages
    from .loops import format_program_plan
    record = Run()
    optimized = final
    prepared = run_stages(final, backend_stages(), record)
    for name, step in record.steps:
        if step != final:
            print()
            stage(f"backend: {name}")
            print(print_program(step), end="")
        final = step
    print()
    stage("loop nest")
    print(format_program_plan(prepared))
    from .backend.numba_module import sibling_eligible, sibling_groups
    for group in sibling_groups(prepared, sibling_eligible(prepared)):
        print(f"one loop nest (sibling group, backend/siblings.py): {', '.join(group.names)}")
    from .backend.expproduct import passes_as_run
    for p in passes_as_run(prepared):
        print(p.describe())
    print()
    stage("generated kernel")
    from .backend.numba_backend import module_source
    from .backend.blasinfo import explain_note
    # the module of the program as it runs (generating it prepares it: the stages
    # above, once)
    source = module_source(optimized)
    print(source, end="")
    note = explain_note(source)
    if note:
        print(note)
    return 0


def _wrt_list(values) -> list[str]:
    out = []
    for v in values:
        out += [w.strip() for w in v.split(",") if w.strip()]
    return out


def _derivative(fn, wrt, mode: str, optimize: bool):
    from . import api
    w = wrt[0] if len(wrt) == 1 else tuple(wrt)
    prog = fn.program
    scalar = prog.returns_scalar()
    if mode == "reverse":
        if len(prog.outputs) > 1:
            # (tl.vjp's own error would name a transform the user did not ask for)
            raise CLIError(f"--mode reverse differentiates a function with one output, and "
                           f"{fn.name} returns {len(prog.outputs)} values; --mode forward "
                           f"differentiates them all")
        return (api.grad if scalar else api.vjp)(fn, wrt=w, optimize=optimize)
    if mode == "forward":
        return api.jvp(fn, wrt=w, optimize=optimize)
    if mode == "hessian":
        if len(wrt) != 1:
            raise CLIError("--mode hessian needs exactly one --wrt parameter")
        return api.hessian(fn, wrt=wrt[0], optimize=optimize)
    if mode == "jacobian":
        if len(wrt) != 1:
            raise CLIError("--mode jacobian needs exactly one --wrt parameter")
        return api.jacobian(fn, wrt=wrt[0], optimize=optimize)
    raise CLIError(f"unknown mode {mode!r}")


def cmd_grad(args) -> int:
    from . import load
    mod = load(args.file)
    fn = _pick(mod, args.function)
    wrt = _wrt_list(args.wrt)
    if not wrt:
        raise CLIError("grad needs --wrt NAME")
    d = _derivative(fn, wrt, args.mode, optimize=not args.naive)
    print(d.source, end="")
    return 0


def _default_wrt(fn) -> list[str]:
    return [p.name for p in fn.program.params if p.elem == "f64"]


def _ratio_point(sizes, at: int) -> dict | None:
    """The sizes the cost table's ratios are evaluated at: every plain size `at` when
    each derived size (`n - 2 * k + 2`) is then at least 1, as in a call; else the
    first of the nearest such points (costs.admissible_near: the sizes a derived size
    is written in, each `at` times 1 to 4, the smallest sum); None when there is none.
    At an inadmissible point a polynomial in the plain sizes and one in the derived
    size disagree, and the ratio means nothing (it can be negative)."""
    from .costs import admissible_near
    plain, derived = sizexpr.split(sizes)
    point = {s: at for s in plain}
    if not sizexpr.admissible(point, derived):
        near = admissible_near(point, derived, most=6)
        if not near:
            return None
        point = near[0]
    return sizexpr.complete(point, derived)


def cmd_cost(args) -> int:
    from . import api, load
    if args.at < 1:
        raise CLIError(f"--at is the size the ratios are evaluated at and must be at least 1, "
                       f"got {args.at}")
    mod = load(args.file)
    fns = [_pick(mod, args.function)] if args.function else list(mod)
    asked = _wrt_list(args.wrt) if args.wrt else None
    if asked and not args.function:
        # the table of every function: one without all of these parameters gets no
        # derivative columns, as one with no f64 parameter does; none with them is a mistake
        fns_with = [fn for fn in fns if set(asked) <= set(fn.params)]
        if not fns_with:
            raise CLIError(f"no function of {args.file} has the parameter"
                           f"{'s' if len(asked) > 1 else ''} {', '.join(asked)}; its functions "
                           f"are {', '.join(fn.name for fn in fns)}")
    rows, exceeded, notes = [], [], []
    for fn in fns:
        wrt = asked if asked else _default_wrt(fn)
        if asked and not args.function and not set(asked) <= set(fn.params):
            wrt = []
        f_cost = api.cost(fn)
        if not wrt or len(fn.program.outputs) != 1:
            rows.append((fn.name, "-", str(f_cost), "-", "-", "-", "-", "-"))
            continue
        naive = api.cost(_derivative(fn, wrt, "reverse", optimize=False), optimize=False)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", TLCostWarning)
            opt = api.cost(_derivative(fn, wrt, "reverse", optimize=True))
        over = [str(w.message) for w in caught if issubclass(w.category, TLCostWarning)]
        exceeded.extend(over)
        at = _ratio_point(fn.program.sizes(), args.at)
        if at is None:
            ratios = ("-", "-")
            notes.append(f"{fn.name}: no sizes near {args.at} (each up to four times it) "
                         f"give every derived size of it a value of at least 1; ratios left out")
        else:
            base = f_cost.evaluate(**at) or 1
            ratios = (f"{naive.evaluate(**at) / base:.3g}", f"{opt.evaluate(**at) / base:.3g}")
            moved = {s: v for s, v in at.items() if v != args.at and sizexpr.parse(s) is None}
            if moved:
                shown = ", ".join(f"{s}={v}" for s, v in at.items() if sizexpr.parse(s) is None)
                notes.append(f"{fn.name}: ratios at {shown}, the first sizes near {args.at} "
                             f"where every derived size is at least 1")
        rows.append((fn.name, ",".join(wrt), str(f_cost), str(naive), str(opt), *ratios,
                     "EXCEEDED" if over else "ok"))
    head = ("function", "wrt", "forward cost", "naive derivative", "optimized derivative",
            f"naive/fwd @{args.at}", f"opt/fwd @{args.at}", "certificate")
    widths = [max(len(str(r[k])) for r in rows + [head]) for k in range(len(head))]
    for r in [head] + rows:
        print("  ".join(str(c).ljust(w) for c, w in zip(r, widths)).rstrip())
    for note in notes:
        print(note)
    for message in exceeded:
        print("\n" + message)
    return 0


def cmd_cache(args) -> int:
    from .backend import numba_backend
    if args.action == "clear":
        from .diskcache import cache_dir
        n = numba_backend.clear_cache()
        print(f"removed {n} file{'s' if n != 1 else ''} from {cache_dir()}")
    else:
        from .diskcache import LIMIT_VARIABLE, MARKER
        info = numba_backend.cache_info()
        print(f"directory: {info['directory']}")
        if not info["exists"]:
            print("status:    not created yet")
        elif not info["owned"]:
            print(f"status:    not a tensorlang cache (no {MARKER} marker); kernels are built "
                  f"in a temporary directory instead")
        print(f"modules:   {info['modules']} ({info['files']} files)")
        print(f"programs:  {info['programs']} (loaded sources and derivatives)")
        print(f"size:      {info['bytes'] / 1e6:.2f} MB")
        print(f"limit:     {info['limit'] / 1e6:.0f} MB (least recently used modules are "
              f"pruned beyond it; set {LIMIT_VARIABLE} to change it)")
    return 0


class _Parser(argparse.ArgumentParser):
    """argparse's parser, except that a usage error exits with status 1, as every
    other error of the command line does (argparse's own convention is 2)."""

    def error(self, message):
        self.print_usage(sys.stderr)
        self.exit(1, f"{self.prog}: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    ap = _Parser(prog="tensorlang",
                 description="Compile and run tensor programs written in index notation.")
    sub = ap.add_subparsers(dest="command", required=True, metavar="COMMAND")

    run = sub.add_parser("run", help="run a function on given or seeded random inputs")
    run.add_argument("file")
    run.add_argument("-f", "--function", help="function to run (default: the first in the file)")
    run.add_argument("values", nargs="*", default=[], metavar="name=VALUE",
                     help="an input: a number or a .npy file; missing inputs are random")
    run.add_argument("--size", action="append", default=[], metavar="n=INT",
                     help=f"a size symbol's value for random inputs (default {DEFAULT_SIZE})")
    run.add_argument("--seed", type=int, default=0, help="seed for random inputs (default 0)")
    run.add_argument("-o", "--output", help="save the result to this .npy file")
    run.set_defaults(handler=cmd_run)

    check = sub.add_parser("check", help="report diagnostics; exit status 1 on any error")
    check.add_argument("file")
    check.set_defaults(handler=cmd_check)

    explain = sub.add_parser("explain", help="print every compiler stage for one function")
    explain.add_argument("file")
    explain.add_argument("-f", "--function", help="function (default: the first in the file)")
    explain.add_argument("--wrt", action="append", default=[],
                         help="also show the derivative stages for these parameters")
    explain.add_argument("--backend", choices=("numba", "jax"), default="numba",
                         help="the backend whose code is shown last (default: numba)")
    explain.set_defaults(handler=cmd_explain)

    grad = sub.add_parser("grad", help="print a derivative program as .tl source")
    grad.add_argument("file")
    grad.add_argument("-f", "--function", help="function (default: the first in the file)")
    grad.add_argument("--wrt", action="append", default=[], metavar="NAME",
                      help="parameter(s) to differentiate (repeat, or separate with commas)")
    grad.add_argument("--mode", choices=("reverse", "forward", "hessian", "jacobian"),
                      default="reverse",
                      help="reverse: grad (vjp for tensor outputs); forward: jvp; hessian; "
                           "jacobian")
    grad.add_argument("--naive", action="store_true",
                      help="without the sparsity-aware simplification")
    grad.set_defaults(handler=cmd_grad)

    cost = sub.add_parser("cost", help="cost table: forward, naive and optimized derivatives")
    cost.add_argument("file")
    cost.add_argument("-f", "--function", help="one function (default: all)")
    cost.add_argument("--wrt", action="append", default=[], metavar="NAME",
                      help="parameters to differentiate (default: every f64 parameter)")
    cost.add_argument("--at", type=int, default=100, metavar="N",
                      help="size at which the ratios are evaluated (default 100)")
    cost.set_defaults(handler=cmd_cost)

    cache = sub.add_parser("cache", help="the compiled-kernel cache: info or clear")
    cache.add_argument("action", choices=("info", "clear"))
    cache.set_defaults(handler=cmd_cache)
    return ap


def main(argv=None) -> int:
    parser = build_parser()
    # `run FILE -f NAME x=1.0 --size n=9` puts values after options, which
    # argparse leaves over; they are taken back here.
    args, extra = parser.parse_known_args(argv)
    leftovers = [a for a in extra if a.startswith("-") or "=" not in a
                 or args.command != "run"]
    if leftovers:
        parser.error(f"unrecognized arguments: {' '.join(leftovers)}")
    if extra:
        args.values = list(args.values) + extra
    try:
        return args.handler(args)
    except TLError as exc:
        print(str(exc), file=sys.stderr)
        return 1
    except CLIError as exc:
        print(f"tensorlang {args.command}: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except Exception as exc:  # noqa: BLE001 -- the one place that turns bugs into a message
        print(f"tensorlang {args.command}: internal error: {type(exc).__name__}: {exc}",
              file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

"""The Python API: modules, callable functions, argument conversion and checks.

``tl.load`` / ``tl.parse`` give a :class:`Module`; each of its functions is a
:class:`Function` that takes arrays positionally or by keyword, converts them
to contiguous arrays of the declared dtype, checks ranks and size symbols
(naming the parameter and the symbol that disagree), and runs the program on
its backend.
"""
from __future__ import annotations

import codecs
import os

import numpy as np

from . import sizexpr
from .bounds import MAX_SIZE
from .errors import (Span, TLBoundsError, TLCallError, TLError, TLShapeError, TLSyntaxError,
                     TLTypeError, article)
from .driver import CompiledModule, Run, compile_source, derive, run_stage
from .ssa.ir import Program
from .ssa.printer import fmt_type, print_program
from .syntax import ast as A

BACKENDS = ("numba", "numpy", "jax")


def default_backend() -> str:
    """numba, unless TENSORLANG_BACKEND says otherwise (the test suite runs the
    interpreter by default and checks the compiled backend in its own tests;
    TENSORLANG_BACKEND=jax runs every function through the JAX emission)."""
    choice = os.environ.get("TENSORLANG_BACKEND", "numba")
    return choice if choice in BACKENDS else "numba"

_DTYPES = {"f64": np.float64, "i64": np.int64, "bool": np.bool_}


class Function:
    """A tensorlang function: call it with arrays."""

    def __init__(self, program: Program, module: CompiledModule | None = None,
                 backend: str | None = None):
        self.program = program
        self.module = module
        # The module whose text the program's spans point into: its own, or for a
        # derivative the function's it was derived from (a bad label shows that line).
        self._spans_from = module
        # The function of that module whose `def` declares the parameters: a call-time
        # error about an argument (a derivative's too) points at its declaration there.
        self._declared_by = program.name if module is not None else None
        # A derivative's own parameters (a tangent d_x, a cotangent d_out): what each
        # stands for, ("tangent", "x") or ("cotangent", None), for its call-time errors.
        self._roles: dict[str, tuple[str, str | None]] = {}
        self.backend = backend or default_backend()
        # Chosen by nobody: the first calls may run on the interpreter while the
        # kernels compile (backend/tiers.py).  An explicit choice is kept exactly.
        self.tiered = backend is None and "TENSORLANG_BACKEND" not in os.environ
        self._source_text = None
        # How the flat outputs are grouped for the caller: None means "as the
        # program returns them"; otherwise nested tuples of output positions.
        self.structure = None
        # Derived functions built with optimize=False run exactly as printed.
        self.optimize = True
        self._optimized = None
        self._kernels = None            # the loaded Numba module, once compiled
        self._build = None              # its background build, while the first tier runs
        # For a derivative: the function whose label errors it reports (see
        # _function_label_error).
        self._label_errors_of = None

    # ------------------------------------------------------------ identity
    @property
    def name(self) -> str:
        return self.program.name

    @property
    def params(self) -> list[str]:
        return [p.name for p in self.program.params]

    @property
    def source(self) -> str:
        """This function as `.tl` text (calls inlined), which parses back to the same program."""
        if self._source_text is None:
            self._source_text = print_program(self.program)
        return self._source_text

    @property
    def signature(self) -> str:
        ps = ", ".join(f"{p.name}: {fmt_type(p.elem, p.dims)}" for p in self.program.params)
        return f"{self.name}({ps})"

    def __repr__(self) -> str:
        return f"<tensorlang.Function {self.signature} backend={self.backend}>"

    def compile(self, backend: str = "numba") -> "Function":
        if backend not in BACKENDS:
            raise TLError(f"unknown backend {backend!r}; choose one of {', '.join(BACKENDS)}")
        fn = Function(self.program, self.module, backend)
        fn._spans_from = self._spans_from
        fn._declared_by = self._declared_by
        fn._roles = self._roles
        fn._label_errors_of = self._label_errors_of
        fn.structure = self.structure
        fn.optimize = self.optimize
        # the simplified program does not depend on the backend: a derivative's (the
        # recipe's last stage) or one already made is reused, not simplified again
        fn._optimized = getattr(self, "_optimized", None)
        return fn

    # ------------------------------------------------------------ calling
    def _declaration(self):
        """The `def` that declares the parameters (the function's own, or for a
        derivative the one of the function it was derived from), or None."""
        module = self._spans_from
        if module is None:
            return None
        return next((fn for fn in module.ast.functions if fn.name == self._declared_by), None)

    def _call_error(self, message: str, kind=TLCallError, hint: str | None = None) -> TLError:
        """A binding error located at the `def` line of the function, or for a derivative
        of the function it was derived from, when known."""
        fdef = self._declaration()
        if fdef is not None:
            return self._spans_from.source.error(kind, fdef.name_span, message, hint)
        return kind(message, hint=hint)

    def bind(self, args, kwargs) -> dict:
        params = self.program.params
        if len(args) > len(params):
            raise self._call_error(f"{self.name} takes {len(params)} argument(s) but "
                              f"{len(args)} were given")
        bound = {}
        for p, a in zip(params, args):
            bound[p.name] = a
        names = {p.name for p in params}
        for k, v in kwargs.items():
            if k not in names:
                raise self._call_error(f"{self.name} has no parameter named {k!r}; "
                                  f"its parameters are {', '.join(p.name for p in params)}")
            if k in bound:
                raise self._call_error(f"argument {k!r} of {self.name} given twice")
            bound[k] = v
        missing = [p.name for p in params if p.name not in bound]
        if missing:
            raise self._call_error(f"missing argument{'s' if len(missing) > 1 else ''} "
                              f"{', '.join(missing)} of {self.name}")
        return bound

    def ordered_args(self, args, kwargs) -> list:
        """The arguments of a call in parameter order (bound by name when given so)."""
        params = self.program.params
        if not kwargs and len(args) == len(params):
            return list(args)
        bound = self.bind(args, kwargs)
        return [bound[p.name] for p in params]

    def shape_results(self, outs):
        """A call's results as the function returns them: one value, a tuple, or the
        nested grouping of a derivative with several outputs."""
        if self.structure is not None:
            return _group(self.structure, outs)
        if self.program.tuple_return:
            return tuple(outs)
        return outs[0]

    def _param_error(self, kind, pname: str, message: str) -> TLError:
        """A call-time error located at the parameter's declaration, when known: in
        the function's `def`, or for a derivative in the `def` of the function it was
        derived from; a derivative's tangent at the declaration of the parameter it is
        the tangent of, its cotangent at the function's return type."""
        fdef = self._declaration()
        span = None if fdef is None else self._declared_at(fdef, pname)
        if span is None:
            return kind(message)
        return self._spans_from.source.error(kind, span, message)

    def _declared_at(self, fdef, pname: str):
        role, of = self._roles.get(pname, (None, pname))
        if role == "tangent" and of in self._roles:
            return self._declared_at(fdef, of)          # a tangent of a cotangent
        if role == "cotangent" and of is not None:
            return fdef.name_span       # of a derived function's output: none is written
        if role == "cotangent":
            if fdef.ret:
                first, last = fdef.ret[0].span, fdef.ret[-1].span
                if first is not None and last is not None:
                    return Span(first.filename, first.line, first.col, last.end_line,
                                last.end_col)
            ret = fdef.body[-1] if fdef.body else None
            return ret.exprs[0].span if isinstance(ret, A.Return) and ret.exprs else None
        return next((p.span for p in fdef.params if p.name == of), None)

    def _check_role(self, p, arr: np.ndarray, sizes: dict) -> None:
        """A tangent or cotangent argument has the shape of what it stands for (f's
        parameter, f's output): a TLShapeError naming the argument, what it stands
        for, the shape wanted in size symbols and numbers and the shape given."""
        role = self._roles.get(p.name)
        if role is None:
            return
        known = {s: v[0] for s, v in sizes.items()}
        want = []
        for d in p.dims:
            if isinstance(d, int):
                want.append(d)
            elif d in known:
                want.append(known[d])
            elif sizexpr.is_derived(d) and set(sizexpr.base_symbols(d)) <= known.keys():
                try:
                    want.append(sizexpr.value(d, known))
                except ValueError:
                    return          # no whole size here: the generic checks say why
            else:
                return              # a size not bound yet: the generic checks say why
        if tuple(arr.shape) == tuple(want):
            return
        kind, of = role
        source = self._declared_by or "the function"
        what = (f"the tangent of {of}" if kind == "tangent" else
                f"the cotangent of {of or source}'s output")
        whose = f"{of}'s" if kind == "tangent" else "the output's"
        symbols = [s for d in p.dims for s in sizexpr.base_symbols(d)]
        at = ", ".join(f"{s} = {known[s]}" for s in dict.fromkeys(symbols) if s in known)
        declared = fmt_type(p.elem, p.dims) + (f" with {at}" if at else "")
        raise self._param_error(TLShapeError, p.name,
                                f"{p.name}, {what}, has shape {tuple(arr.shape)} but must "
                                f"have {whose} shape {tuple(want)} ({declared})")

    def _convert_arg(self, value, p) -> np.ndarray:
        """One argument as a contiguous array of p's dtype; an error located at p."""
        try:
            return _convert(value, p)
        except (TLTypeError, TLShapeError, TLBoundsError) as exc:
            raise self._param_error(type(exc), p.name, exc.first.message) from None

    def prepare(self, args, kwargs) -> tuple[dict, dict]:
        """Bound, converted and checked inputs, and the values of the size symbols."""
        bound = self.bind(args, kwargs)
        arrays = {}
        sizes: dict[str, tuple[int, str, tuple]] = {}
        derived_dims: list = []
        for p in self.program.params:
            arr = self._convert_arg(bound[p.name], p)
            if self._roles:
                self._check_role(p, arr, sizes)
            def want(p=p):     # for the messages only: formatted when one is raised
                return fmt_type(p.elem, p.dims)
            if arr.ndim != len(p.dims):
                raise self._param_error(TLShapeError, p.name, f"{p.name} has shape {arr.shape} (rank {arr.ndim}) but "
                                   f"{want()} needs rank {len(p.dims)}")
            for k, (d, got) in enumerate(zip(p.dims, arr.shape)):
                if got == 0:
                    raise self._param_error(TLShapeError, p.name, f"{p.name} has shape {arr.shape}: dimension {k} is empty, "
                                       f"but sizes must be at least 1")
                if isinstance(d, int):
                    if got != d:
                        raise self._param_error(TLShapeError, p.name, f"{p.name} has shape {arr.shape} but {want()} needs "
                                           f"dim {k} == {d}")
                    continue
                if sizexpr.is_derived(d):
                    derived_dims.append((p, arr, k, d))
                    continue
                if got > MAX_SIZE:
                    raise self._param_error(TLShapeError, p.name,
                        f"{p.name} has shape {arr.shape}: dimension {k} ({d}) is larger than "
                        f"the largest size tensorlang handles, 2^{MAX_SIZE.bit_length() - 1}")
                if d in sizes:
                    val, who, pos = sizes[d]
                    if val != got:
                        if who == p.name:
                            raise self._param_error(TLShapeError, p.name,
                                f"{p.name} has shape {arr.shape} but {want()} needs dim {pos[0]} == "
                                f"dim {k} (both are {d})")
                        raise self._param_error(TLShapeError, p.name,
                            f"{p.name} has shape {arr.shape} but {want()} needs dim {k} == {d} = "
                            f"{val}, as set by {who} (dim {pos[0]})")
                else:
                    sizes[d] = (got, p.name, (k,))
            arrays[p.name] = arr
        return arrays, self._derived_sizes(sizes, derived_dims)

    def _derived_sizes(self, bound: dict, derived_dims: list) -> dict:
        """The sizes with every derived size (`n - k + 1`, `n / 2`) added: an odd n
        under n / 2, or a range that comes out empty, is a TLShapeError located at the
        parameter that set the size; so is a parameter whose dimension disagrees."""
        sizes = {k: v[0] for k, v in bound.items()}
        names = list(self.program.sizes())
        if any(sizexpr.is_derived(d) for d in names) or derived_dims:
            for name in names + [d for *_, d in derived_dims]:
                if name in sizes or not sizexpr.is_derived(name):
                    continue
                try:
                    sizes[name] = sizexpr.value(name, sizes)
                except ValueError as exc:
                    # located at the parameter that set a size deciding it (n, not
                    # k, in n / 4 - k + 1 not being whole)
                    deciding = sizexpr.undivided(name) or sizexpr.base_symbols(name)
                    setter = bound[deciding[0]][1]
                    raise self._param_error(TLShapeError, setter, str(exc)) from None
            for p, arr, k, d in derived_dims:
                if arr.shape[k] != sizes[d]:
                    raise self._param_error(TLShapeError, p.name,
                        f"{p.name} has shape {arr.shape} but {fmt_type(p.elem, p.dims)} needs "
                        f"dim {k} == {d} = {sizes[d]}")
        return sizes

    def __call__(self, /, *args, **kwargs):
        # positional-only `self`, so a parameter named `self` binds by keyword
        arrays, sizes = self.prepare(args, kwargs)
        largest = self._check_memory(self.optimized_program(), sizes)
        outs = self._run_checked(arrays, sizes, largest)
        return self.shape_results([float(o) if np.ndim(o) == 0 else np.asarray(o)
                                   for o in outs])

    def _run_checked(self, arrays: dict, sizes: dict, largest):
        try:
            return _unshared(self.run(arrays, sizes), arrays.values())
        except TLBoundsError as exc:
            raise self._function_label_error(arrays) or exc from None
        except MemoryError:
            nbytes, st, shape = largest
            raise self._memory_error(st, f"out of memory while running {self.name}: its largest "
                                     f"tensor, {st.name} of shape {shape}, needs "
                                     f"{_fmt_bytes(nbytes)}") from None

    def call_arrays(self, arrays) -> list:
        """The flat outputs of a call (arrays, or floats for scalars, as the backend
        returns them) on NumPy arrays given in parameter order: the call of a wrapper
        that holds its arguments as arrays already (tl.to_torch's views of tensors).
        The binding, conversion and shape checks of a call depend on the arguments'
        shapes only, once they are C-contiguous arrays of the declared dtypes; they run
        at the first call with a tuple of shapes, as in a plain call, and their outcome
        (the sizes, the largest tensor) is kept as that tuple's plan.  A later call with
        the same shapes and such arrays runs on the plan; any other call (new shapes,
        another dtype, a strided array) takes the checks and conversions of a plain call.
        i64 labels are range-checked at every call (values, not shapes)."""
        plans = self.__dict__.get("_plans")
        if plans is None:
            plans = self._plans = {}
            self._plan_dtypes = [np.dtype(_DTYPES[p.elem]) for p in self.program.params]
        key = tuple(a.shape for a in arrays)
        plan = plans.get(key)
        if plan is not None:
            params = self.program.params
            for p, a, dt in zip(params, arrays, self._plan_dtypes):
                if a.dtype != dt or not a.flags.c_contiguous:
                    plan = None
                    break
                if p.elem == "i64":
                    self._convert_arg(a, p)
        if plan is None:
            bound, sizes = self.prepare(arrays, {})
            plan = (sizes, self._check_memory(self.optimized_program(), sizes))
            if len(plans) >= 64:
                plans.clear()
            plans[key] = plan
        else:
            bound = {p.name: a for p, a in zip(self.program.params, arrays)}
        return self._run_checked(bound, *plan)

    def _error_source(self):
        """The source text a run's located errors quote (None without one)."""
        return self._spans_from.source if self._spans_from is not None else None

    def _function_label_error(self, arrays: dict) -> TLBoundsError | None:
        """For a derivative, the TLBoundsError its function raises on the same
        arguments (None for a function, or when it raises none).  A derivative checks
        the labels its function reads (domain.py), but in an order of its own: its
        check statements sum terms apart and its arithmetic reads labels where its
        statements do.  Where both fail, the function's error is the one to show, so
        every derivative reports the read the function reports; this runs only on
        the error's path, the function once on the interpreter."""
        of = self._label_errors_of
        if of is None:
            return None
        try:
            bound, sizes = of.prepare((), {p.name: arrays[p.name] for p in of.program.params})
            _interpret(of.optimized_program(), bound, sizes, of._error_source())
        except TLBoundsError as exc:
            return exc
        except Exception:       # any other failure: the derivative's own error stands
            return None
        return None

    def _check_memory(self, prog: Program, sizes: dict):
        """The largest tensor the program computes, as (bytes, statement, shape); a
        TLShapeError before anything is allocated when one tensor alone needs more
        than this machine's memory (or more than numpy can address)."""
        # remembered per program and sizes: a call at sizes seen before (a benchmark's
        # repeats, an optimiser's iterations) pays no walk over the statements
        key = (prog, tuple(sizes.items()))
        memo = self.__dict__.setdefault("_largest", {})
        largest = memo.get(key)
        if largest is None:
            largest = _largest(prog.stmts, sizes)
            if largest[0] > _memory_limit() and self.backend == "numba":
                # The Numba backend keeps to one row the intermediates of a row group
                # (backend/rows.py), which it runs fused at such sizes: what it stores
                # whole are the other statements of its prepared program.
                from .backend import numba_module, rows
                prepared = numba_module.prepare(prog)
                skip = rows.contracted_names(prepared)
                largest = _largest([st for st in prepared.stmts if st.name not in skip], sizes)
            if len(memo) >= 64:
                memo.clear()
            memo[key] = largest
        nbytes, st, shape = largest
        limit = _memory_limit()
        if st is not None and nbytes > limit:
            what = ("more than numpy can allocate" if nbytes >= 2 ** 63 else
                    f"more than this machine's {_fmt_bytes(limit)} of memory")
            raise self._memory_error(st, f"{st.name} of shape {shape} would need "
                                         f"{_fmt_bytes(nbytes)}, {what}")
        return largest

    def _memory_error(self, st, message: str) -> TLError:
        hint = "call it with smaller sizes"
        if self.module is not None and st is not None and st.span is not None:
            return self.module.source.error(TLShapeError, st.span, message, hint)
        return TLShapeError(message, hint=hint)

    def count_ops(self, /, *args, **kwargs) -> int:
        """Run the loop nests one scalar at a time and count the operations executed.

        The count follows the same rules as ``tl.cost`` and equals the static
        polynomial when no bracket filters inside a loop (a bound otherwise).
        Pure Python: use small inputs.
        """
        from .backend.loop_interp import count_ops
        arrays, sizes = self.prepare(args, kwargs)
        prog = self.optimized_program()
        try:
            ops, _ = count_ops(prog, arrays, sizes)
        except TLBoundsError:
            # a bad label: the interpreter raises it located, in the source's words
            _interpret(prog, arrays, sizes, self._error_source())
            raise
        return ops

    def optimized_program(self) -> Program:
        """The program as it runs: simplified once, then cached."""
        if getattr(self, "_optimized", None) is None:
            from .driver import optimize
            self._optimized = optimize(self.program) if self.optimize else self.program
        return self._optimized

    def run(self, arrays: dict, sizes: dict):
        source = self._error_source()
        prog = self.optimized_program()
        if self.backend == "jax":
            from .backend import jax_interop
            return run_stage("jax", jax_interop.run, prog, arrays, sizes, source)
        if self.backend == "numba":
            from .backend import numba_backend
            if self._kernels is None and self._build is None and self.tiered:
                from .backend import tiers
                if tiers.enabled():
                    if tiers.cheap_enough(prog, sizes):
                        # Answered first: the build's thread (importing Numba) would
                        # share the interpreter with this call and slow it down.
                        out = _interpret(prog, arrays, sizes, source)
                        self._build = tiers.KernelBuild(prog, arrays, sizes)
                        return out
                    self._build = tiers.KernelBuild(prog, arrays, sizes)
            if self._kernels is None and self._build is not None:
                from .backend.tiers import cheap_enough
                if not self._build.ready() and cheap_enough(prog, sizes):
                    return _interpret(prog, arrays, sizes, source)
                loaded, self._build = self._build.result(), None
                if loaded is not None:
                    self._kernels = self._accept(loaded)
            if self._kernels is None:
                from .driver import compile_kernels
                self._kernels = self._accept(run_stage("compile", compile_kernels, prog))
            if self._kernels is False:
                return _interpret(prog, arrays, sizes, source)
            return numba_backend.run(self._kernels, prog, arrays, sizes,
                                     lambda: _interpret(prog, arrays, sizes, source))
        return _interpret(prog, arrays, sizes, source)

    def _accept(self, loaded):
        """The compiled module, or False (after one warning) when Numba cannot take it."""
        from .backend.kernels import Unsupported
        if isinstance(loaded, Unsupported):
            # Correct but slower: say so once, then use the interpreter.
            import warnings
            warnings.warn(f"{self.name}: the Numba backend cannot compile this program "
                          f"({loaded}); running it on the NumPy interpreter", stacklevel=4)
            return False
        return loaded


def _interpret(prog: Program, arrays: dict, sizes: dict, source):
    """The NumPy interpreter's run (imported at its first use, not at every call)."""
    from .backend.numpy_ref import evaluate
    return evaluate(prog, arrays, sizes, source)


def _largest(stmts, sizes: dict):
    """(bytes, statement, shape) of the largest of `stmts` at `sizes`."""
    largest = (0, None, ())
    for st in stmts:
        shape = tuple(d if isinstance(d, int) else sizes[d] for d in st.dims)
        nbytes = 8
        for d in shape:
            nbytes *= d
        if nbytes > largest[0] or largest[1] is None:
            largest = (nbytes, st, shape)
    return largest


def _memory_limit() -> int:
    """Bytes one tensor may take: the machine's physical memory, when known."""
    try:
        return min(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"), 2 ** 63 - 1)
    except (AttributeError, ValueError, OSError):
        return 2 ** 63 - 1


def _unshared(outs, inputs) -> list:
    """The outputs of a call as arrays of their own: a function that returns a
    parameter as it is (`return x`), or one tensor twice, gets the backend's array
    for the argument, or one array for both results, and writing into a result
    would change the caller's input or the other result (as with NumPy's functions,
    a result is a new array)."""
    held = [a for a in inputs if isinstance(a, np.ndarray)]
    fresh = []
    for o in outs:
        if isinstance(o, np.ndarray):
            if any(np.may_share_memory(o, a) for a in held):
                o = o.copy()
            held.append(o)
        fresh.append(o)
    return fresh


def _fmt_bytes(n: int) -> str:
    for unit, size in (("EB", 10 ** 18), ("PB", 10 ** 15), ("TB", 10 ** 12), ("GB", 10 ** 9),
                       ("MB", 10 ** 6), ("kB", 10 ** 3)):
        if n >= size:
            return f"{n / size:.3g} {unit} ({n} bytes)"
    return f"{n} bytes"


def _group(structure, results):
    if isinstance(structure, int):
        return results[structure]
    return tuple(_group(s, results) for s in structure)


def _convert(value, p) -> np.ndarray:
    dtype = _DTYPES[p.elem]
    if p.elem == "i64" and isinstance(value, (int, list, tuple)):
        _check_python_ints(value, p.name)
    try:
        raw = np.asarray(value)
    except Exception as exc:  # noqa: BLE001
        raise TLTypeError(f"{p.name} cannot be converted to an array: {exc}") from None
    if raw.dtype == object or raw.dtype.kind in "USVMm":
        raise TLTypeError(f"{p.name} must be numeric ({p.elem}), got an array of "
                          f"{raw.dtype} values")
    if p.elem == "i64":
        if raw.dtype.kind == "f":
            if not np.all(np.isfinite(raw)) or not np.all(raw == np.round(raw)):
                raise TLTypeError(f"{p.name} must hold integers (i64), got non-integer values")
        elif raw.dtype.kind not in "iub":
            raise TLTypeError(f"{p.name} must hold integers (i64), got {raw.dtype}")
        _check_int64_range(raw, p.name)
    if p.elem == "bool" and raw.dtype.kind not in "biu":
        raise TLTypeError(f"{p.name} must be a boolean mask (bool), got {raw.dtype}")
    if p.elem == "f64" and raw.dtype.kind == "c":
        raise TLTypeError(f"{p.name} must be real (f64), got complex values")
    # np.require keeps 0-d inputs 0-d (ascontiguousarray would make them 1-d).
    try:
        arr = np.require(raw, dtype=dtype, requirements="C")
        if p.elem == "i64":
            _check_label_magnitude(arr, p.name)
        return arr
    except MemoryError:
        nbytes = raw.size * np.dtype(dtype).itemsize
        raise TLShapeError(f"{p.name} of shape {raw.shape} does not fit in memory as a contiguous "
                           f"{p.elem} array ({_fmt_bytes(nbytes)})") from None


_I64_MIN, _I64_LIMIT = -2 ** 63, 2 ** 63       # i64 holds [_I64_MIN, _I64_LIMIT)


def _check_int64_range(raw: np.ndarray, name: str) -> None:
    """Labels given as floats or unsigned integers must fit in int64 before the
    cast, which would otherwise wrap them silently; the error shows the value
    as given."""
    if raw.size == 0 or raw.dtype.kind in "bi":     # bool and signed ints fit already
        return
    if raw.dtype.kind == "u":
        bad = raw > np.uint64(_I64_LIMIT - 1)
    else:   # floats: compare as floats; 2^63 itself is exactly representable
        bad = (raw < float(_I64_MIN)) | (raw >= float(_I64_LIMIT))
    if np.any(bad):
        value, where = _first_bad(raw, bad)
        raise TLTypeError(f"{name} holds the label {value!r}{where}, which does not fit in i64 "
                          f"(labels lie in [-2**63, 2**63))")


def _first_bad(arr: np.ndarray, bad: np.ndarray) -> tuple:
    """The first flagged entry's value (as given) and its position, for a message."""
    if not arr.ndim:
        return arr[()].item(), ""
    pos = tuple(int(k) for k in np.argwhere(bad)[0])
    return arr[pos].item(), f" at {pos if len(pos) > 1 else pos[0]}"


def _check_label_magnitude(arr: np.ndarray, name: str) -> None:
    """Labels lie within +-MAX_SIZE, the range of every index: a larger one could
    never address an element, and bounding them is what keeps index arithmetic
    on labels (`[y[s] < k]`, `x[y[s] + 1]`) inside int64 in both backends."""
    if arr.size == 0:
        return
    bad = (arr < -MAX_SIZE) | (arr > MAX_SIZE)
    if np.any(bad):
        value, where = _first_bad(arr, bad)
        raise TLBoundsError(f"{name} holds the label {value}{where}, out of range: i64 labels "
                            f"lie within -2**48 .. 2**48, the range of any index")


def _check_python_ints(value, name: str) -> None:
    """Python integers given as labels, checked against int64 before numpy turns a
    list holding a big one into floats or objects."""
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, (list, tuple)):
            stack.extend(reversed(v))
        elif isinstance(v, int) and not isinstance(v, bool) and not _I64_MIN <= v < _I64_LIMIT:
            raise TLTypeError(f"{name} holds the label {v}, which does not fit in i64 "
                              f"(labels lie in [-2**63, 2**63))")


class Module:
    """The functions of one `.tl` file, in file order."""

    def __init__(self, compiled: CompiledModule):
        self.compiled = compiled
        self._functions = {p.name: Function(p, compiled) for p in compiled.programs}

    @property
    def names(self) -> list[str]:
        return list(self._functions)

    @property
    def filename(self) -> str:
        return self.compiled.source.filename

    def __getitem__(self, name: str) -> Function:
        try:
            return self._functions[name]
        except KeyError:
            raise KeyError(f"{self.filename} has no function {name!r}; it defines "
                           f"{', '.join(self.names) or 'none'}") from None

    def __getattr__(self, name: str) -> Function:
        if name.startswith("_") or name == "compiled":
            raise AttributeError(name)
        try:
            return self._functions[name]
        except KeyError:
            raise AttributeError(f"{self.filename} has no function {name!r}; it defines "
                                 f"{', '.join(self.names) or 'none'}") from None

    def __contains__(self, name) -> bool:
        return name in self._functions

    def __iter__(self):
        return iter(self._functions.values())

    def __len__(self) -> int:
        return len(self._functions)

    def __repr__(self) -> str:
        return f"<tensorlang.Module {self.filename}: {', '.join(self.names)}>"


def parse(source: str, filename: str = "<string>") -> Module:
    """The text of a .tl file as a Module.  It is read as tl.load reads a file: bytes
    are decoded as UTF-8, a leading byte-order mark is dropped (open(path).read()
    keeps one) and line ends are translated as text-mode reading does."""
    if isinstance(source, (bytes, bytearray)):
        source = decode_source(bytes(source), filename)
    elif not isinstance(source, str):
        raise TypeError(f"tl.parse takes the program's text as a str, got "
                        f"{type(source).__name__}; tl.load(path) reads a file")
    text = source.removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n")
    return Module(compile_source(text, filename))


def load(path) -> Module:
    path = os.fsdecode(path)
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError as exc:
        raise TLError(f"cannot read {path}: {exc.strerror}") from None
    return parse(data, path)


def decode_source(data: bytes, filename: str) -> str:
    """A file's bytes as text (a leading byte-order mark dropped); bytes that are not
    UTF-8 are a located syntax error at the first bad byte (its line, and its column
    counted in characters)."""
    bom = len(codecs.BOM_UTF8) if data.startswith(codecs.BOM_UTF8) else 0
    try:
        return data[bom:].decode("utf-8")
    except UnicodeDecodeError as exc:
        start = exc.start + bom
        line_start = max(data.rfind(b"\n", 0, start) + 1, bom)
        line_end = data.find(b"\n", start)
        line_end = len(data) if line_end < 0 else line_end
        line = data.count(b"\n", 0, start) + 1
        col = len(data[line_start:start].decode("utf-8", errors="replace")) + 1
        text = data[line_start:line_end].decode("utf-8", errors="replace")
        raise TLSyntaxError(f"the file is not valid UTF-8: byte 0x{data[start]:02x} at offset "
                            f"{start} cannot be decoded",
                            Span(filename, line, col, line, col + 1),
                            "save the file as UTF-8", text) from None


# ------------------------------------------------------------ transforms
def _program_of(f) -> Program:
    if isinstance(f, Function):
        return f.program
    raise TypeError(f"expected a tensorlang Function, got {type(f).__name__}")


def _derived(prog: Program, structure=None, optimize: bool = True, of=None,
             tangents_of: tuple = (), cotangent: bool = False) -> Function:
    """The Function of derivative program `prog` of function `of`, whose parameters
    after `of`'s are the tangents of `tangents_of` or (`cotangent`) the cotangent of
    its output."""
    fn = Function(prog)
    fn._spans_from = getattr(of, "_spans_from", None)
    fn._declared_by = getattr(of, "_declared_by", None)
    if of is not None:
        fn._label_errors_of = of._label_errors_of or of
    old = {p.name for p in of.program.params} if of is not None else set()
    new = [p.name for p in prog.params if p.name not in old]
    fn._roles = dict(getattr(of, "_roles", {}))
    fn._roles.update((t, ("tangent", w)) for t, w in zip(new, tangents_of))
    if cotangent and new:
        # f's output is written in f's `def`; a derived function's is not
        source = of.module is not None and any(p is of.program for p in of.module.programs)
        fn._roles[new[-1]] = ("cotangent", None if source else of.name)
    fn.structure = structure
    fn.optimize = optimize
    if optimize:
        # Every recipe ends by simplifying: the program is already the one that runs.
        fn._optimized = prog
    return fn


def cost(f, *, optimize: bool = True):
    """The symbolic cost of f as it runs (see tensorlang.costs)."""
    from .costs import scheduled_cost
    fn = f
    if not isinstance(fn, Function):
        raise TypeError(f"expected a tensorlang Function, got {type(fn).__name__}")
    prog = fn.optimized_program() if optimize else fn.program
    return scheduled_cost(prog)


def memory(f, *, optimize: bool = True):
    """The elements f's program holds with every statement stored whole: its
    parameters' and its statements' (see certificate.stored_elements)."""
    from .certificate import stored_elements
    if not isinstance(f, Function):
        raise TypeError(f"expected a tensorlang Function, got {type(f).__name__}")
    return stored_elements(f.optimized_program() if optimize else f.program)


def _wrt_tuple(wrt) -> tuple[str, ...]:
    return (wrt,) if isinstance(wrt, str) else tuple(wrt)


def _flat(wrt) -> tuple | None:
    """How several cotangents are returned: None for one, a tuple of positions for many."""
    return None if isinstance(wrt, str) else tuple(range(len(_wrt_tuple(wrt))))


class _DefaultWrt:
    """`wrt` left out (an explicit None stays the error it is): see _wrt_or_default."""

    def __repr__(self) -> str:
        return "<f's only f64 parameter, or x>"


DEFAULT_WRT = _DefaultWrt()


# derivatives defined for a scalar output only, and those taken with respect to one
# parameter only (jvp alone takes a function of several outputs)
_SCALAR_OUTPUT = ("grad", "value_and_grad", "hvp", "hessian")
_ONE_WRT = ("hvp", "hessian", "jacobian")


def check_request(kind: str, f, wrt) -> None:
    """Refuses a derivative that cannot be taken before any work is done, with an error
    that names the transform asked for (tl.hessian, not the gradient it starts from)
    and is located in f's `def`: at the parameter for one that has no derivative."""
    prog = _program_of(f)
    what = f"tl.{kind}"
    names = _wrt_names(wrt)
    if names is None:
        raise f._call_error(f"{what}: wrt must be a parameter name or a tuple of names, "
                            f"got {wrt!r}")
    if not names:
        raise f._call_error(f"{what}: wrt must name at least one parameter")
    params = {p.name: p for p in prog.params}
    for w in names:
        if w not in params:
            several = [v.strip() for v in w.split(",")]
            hint = (f"name several parameters as a tuple: wrt={tuple(several)!r}"
                    if len(several) > 1 and all(v in params for v in several) else None)
            raise f._call_error(f"{what}: {prog.name} has no parameter {w!r}; its parameters "
                                f"are {', '.join(params)}", hint=hint)
        if params[w].elem != "f64":
            raise f._param_error(TLTypeError, w, f"{what}: cannot differentiate with respect "
                                 f"to {w}, {article(params[w].elem)} tensor (only f64 parameters "
                                 f"have derivatives)")
    twice = next((w for k, w in enumerate(names) if w in names[:k]), None)
    if twice is not None:
        raise f._call_error(f"{what}: wrt names the parameter {twice!r} twice")
    if kind in _ONE_WRT and len(names) != 1:
        raise f._call_error(f"{what}: wrt must name one parameter, not {len(names)}",
                            hint=f"take one {kind} per parameter")
    if kind != "jvp" and len(prog.outputs) != 1:
        raise f._call_error(f"{what}: {prog.name} returns {len(prog.outputs)} values, but "
                            f"{what} needs a function with one output", TLShapeError)
    dims = prog.shapes()[prog.outputs[0]][1]
    if kind in _SCALAR_OUTPUT and dims:
        raise f._call_error(f"{what}: {prog.name} returns a tensor of shape "
                            f"[{', '.join(map(str, dims))}], but {what} needs a scalar output",
                            TLShapeError, hint="use tl.vjp, tl.jvp or tl.jacobian for a "
                                               "tensor output")


def _wrt_names(wrt) -> tuple[str, ...] | None:
    """wrt as a tuple of names, or None when it is neither a name nor a sequence of them."""
    if isinstance(wrt, str):
        return (wrt,)
    if isinstance(wrt, (tuple, list)) and all(isinstance(w, str) for w in wrt):
        return tuple(wrt)
    return None


def _derive(kind: str, f, wrt, optimize: bool) -> Program:
    """Derivative `kind` of f; an optimised one is checked against the certificate
    (tensorlang.certificate) and a violation is a TLCostWarning."""
    check_request(kind, f, wrt)
    d, violation = _cached_derivation(kind, f, wrt, optimize)
    if violation is not None:
        import warnings
        from .errors import TLCostWarning
        warnings.warn(TLCostWarning(violation), stacklevel=3)
    return d


def _cached_derivation(kind: str, f, wrt, optimize: bool) -> tuple[Program, str | None]:
    """(derivative, certificate violation text or None), kept on disk (progcache.py)
    for a function as loaded from source, whose text names the program exactly."""
    prog = _program_of(f)
    module = f.module
    if module is None or not any(p is prog for p in module.programs):
        return _derivation(kind, prog, wrt, optimize, f)
    from .progcache import remembered
    key = ("derivative", module.source.text, module.source.filename, prog.name, kind,
           _wrt_tuple(wrt), optimize)
    return remembered(key, lambda: _derivation(kind, prog, wrt, optimize, f))


def _derivation(kind: str, prog: Program, wrt, optimize: bool,
                f: Function) -> tuple[Program, str | None]:
    # the derivative keeps the label checks of the program f runs (driver.derive)
    runs = f.optimized_program()
    if not optimize:
        return derive(kind, prog, wrt, False, runs=runs), None
    record = Run()
    d = derive(kind, prog, wrt, True, record, runs)
    return d, _certify(kind, prog.name, wrt, record, d, runs)


def _certify(kind: str, name: str, wrt, record: Run, d: Program, runs: Program) -> str | None:
    from .certificate import violations_of
    from .domain import label_checks
    steps = record.steps
    forward = next(p for stage, p in steps if stage == "simplify input")
    gradient = None
    if kind in ("hvp", "hessian"):
        # the gradient as tl.grad gives it: with the label checks of the function
        gradient = label_checks(runs, next(p for stage, p in steps
                                           if stage == "simplify derivative"))
    # Readable names change no cost: the program before the renaming was costed
    # when the simplifier chose it.
    costed = steps[-2][1] if len(steps) > 1 and steps[-1][0] == "readable binders" else None
    v = violations_of(kind, name, runs, wrt, d, gradient, costed, located_by=forward)
    return None if v is None else v.render()


def grad(f, wrt=DEFAULT_WRT, *, optimize: bool = True) -> Function:
    """The gradient of a scalar function: a Function with f's parameters."""
    wrt = _wrt_or_default("grad", f, wrt)
    g = _derive("grad", f, wrt, optimize)
    return _derived(g, _flat(wrt), optimize, of=f)


def value_and_grad(f, wrt=DEFAULT_WRT, *, optimize: bool = True) -> Function:
    """(value, grad): grad is a tuple when wrt names several parameters."""
    wrt = _wrt_or_default("value_and_grad", f, wrt)
    g = _derive("value_and_grad", f, wrt, optimize)
    n = len(_wrt_tuple(wrt))
    structure = (0, 1) if isinstance(wrt, str) else (0, tuple(range(1, 1 + n)))
    return _derived(g, structure, optimize, of=f)


def vjp(f, wrt=DEFAULT_WRT, *, optimize: bool = True) -> Function:
    """f's parameters plus the cotangent d_out (last) -> cotangent(s) of wrt."""
    wrt = _wrt_or_default("vjp", f, wrt)
    g = _derive("vjp", f, wrt, optimize)
    return _derived(g, _flat(wrt), optimize, of=f, cotangent=True)


def jvp(f, wrt=DEFAULT_WRT, *, optimize: bool = True) -> Function:
    """f's parameters plus a tangent d_<name> per wrt -> (out, d_out)."""
    wrt = _wrt_or_default("jvp", f, wrt)
    prog = _program_of(f)
    j = _derive("jvp", f, wrt, optimize)
    k = len(prog.outputs)
    structure = (0, 1) if k == 1 else (tuple(range(k)), tuple(range(k, 2 * k)))
    return _derived(j, structure, optimize, of=f, tangents_of=_wrt_tuple(wrt))


def hvp(f, wrt=DEFAULT_WRT, *, optimize: bool = True) -> Function:
    """f's parameters plus d_<x> -> the Hessian-vector product (forward over reverse)."""
    wrt = _wrt_or_default("hvp", f, wrt)
    return _derived(_derive("hvp", f, _one(wrt), optimize), None, optimize, of=f,
                    tangents_of=(_one(wrt),))


def hessian(f, wrt=DEFAULT_WRT, *, optimize: bool = True) -> Function:
    """The dense Hessian, shape x.shape + x.shape, from one-hot seeds."""
    wrt = _wrt_or_default("hessian", f, wrt)
    return _derived(_derive("hessian", f, _one(wrt), optimize), None, optimize, of=f)


def jacobian(f, wrt=DEFAULT_WRT, *, optimize: bool = True) -> Function:
    """The dense Jacobian of f's output with respect to one parameter, shape
    out.shape + x.shape, from forward mode with one-hot tangents."""
    wrt = _wrt_or_default("jacobian", f, wrt)
    return _derived(_derive("jacobian", f, _one(wrt), optimize), None, optimize, of=f)


def to_jax(f):
    """f as a JAX-traceable function of jnp arrays whose JAX derivatives are
    tensorlang's (jax.custom_jvp); see backend/jax_interop.py.  Needs JAX."""
    from .backend.jax_interop import to_jax as make
    if not isinstance(f, Function):
        raise TypeError(f"expected a tensorlang Function, got {type(f).__name__}")
    return make(f)


def to_torch(f):
    """f as a function of torch tensors whose autograd backward is tensorlang's vjp
    program (torch.autograd.Function); see backend/torch_interop.py.  Needs PyTorch."""
    from .backend.torch_interop import to_torch as make
    if not isinstance(f, Function):
        raise TypeError(f"expected a tensorlang Function, got {type(f).__name__}")
    return make(f)


def _wrt_or_default(kind: str, f, wrt):
    """The parameters a transform called without `wrt` differentiates: f's only f64
    parameter; of several, the one called x (the contract's examples write
    wrt="x", which once was the default); otherwise a TLCallError in f's `def`
    listing the candidates."""
    if wrt is not DEFAULT_WRT:
        return wrt
    prog = _program_of(f)
    candidates = [p.name for p in prog.params if p.elem == "f64"]
    if len(candidates) == 1:
        return candidates[0]
    if "x" in candidates:
        return "x"
    what = f"tl.{kind}"
    if not candidates:
        raise f._call_error(f"{what}: {prog.name} has no f64 parameter to differentiate "
                            f"(only f64 parameters have derivatives)")
    hint = f'{what}({prog.name}, wrt="{candidates[0]}")'
    if kind not in _ONE_WRT:
        hint += f", or several at once: wrt={tuple(candidates)!r}"
    raise f._call_error(f"{what}: wrt is not given and {prog.name} has {len(candidates)} f64 "
                        f"parameters ({', '.join(candidates)}); say which to differentiate",
                        hint=hint)


def _one(wrt):
    """The one parameter of a Hessian or Jacobian, given as a name or a 1-tuple (what
    else wrt may be, check_request refuses)."""
    names = _wrt_names(wrt)
    return names[0] if names is not None and len(names) == 1 else wrt

"""What every fuzzer shares: a case, the checks run on it, and what counts as a finding.

A *case* is one program text with the inputs to call it with and, when the
fuzzer knows it, the expected outcome computed by an evaluator that does not
use the compiler.  ``check_case`` runs the case through the front end, the
NumPy interpreter and the Numba backend (and, when asked, derivatives) and
returns the list of findings:

* ``raw-exception``   an exception that is not a ``tl.TLError``;
* ``internal-error``  a ``tl.TLInternalError``;
* ``unlocated-error`` a ``tl.TLError`` whose message does not start with
  ``file:line:col: error:`` although the program text is the cause;
* ``rejected``        a program the fuzzer knows to be valid was refused;
* ``mismatch``        two of {evaluator, interpreter, Numba} disagree;
* ``missed-bounds``   a label out of range where it is used gave a value;
* ``wrong-error``     an error of the wrong class (e.g. not TLBoundsError).

Crashes and hangs cannot be seen from inside the process that suffers them;
the harness (``harness.py``) turns a dead or silent worker into a finding.
"""
from __future__ import annotations

import os
import re
import sys
import warnings
from dataclasses import dataclass
from typing import Callable

import numpy as np

_TESTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if _TESTS not in sys.path:
    sys.path.insert(0, _TESTS)

import tensorlang as tl  # noqa: E402

FILENAME = "fuzz.tl"
BACKENDS = ("numpy", "numba")


class Skip(Exception):
    """The case cannot be judged (e.g. the evaluator overflowed): not a finding."""


class BoundsExpected(Exception):
    """Raised by an evaluator: a label out of range is used, so the call must fail."""


@dataclass
class Case:
    fuzzer: str
    seed: int
    source: object                 # str, or bytes (then it is loaded from a file)
    fname: str                     # the function to call
    inputs: dict                   # keyword arguments
    expect: Callable | None = None  # () -> list of outputs; may raise BoundsExpected / Skip
    may_reject: bool = False       # a located TLError from the front end is an acceptable outcome
    may_raise: bool = False        # a located TLError at call time is an acceptable outcome
    derivs: bool = False           # also check jvp / vjp / grad
    call: bool = True              # call the function at all (after a successful parse)
    rtol: float = 1e-9
    scale: float = 1.0             # magnitude the absolute tolerance is relative to
    note: str = ""
    prune_inputs: bool = False     # drop inputs the function has no parameter for (reduction)
    certify: bool = False          # a TLCostWarning of a derivative is a finding
    backends: tuple | None = None  # run only these backends (default: the harness's)

    def text(self) -> str:
        if isinstance(self.source, bytes):
            return self.source.decode("utf-8", errors="backslashreplace")
        return self.source


@dataclass
class Finding:
    kind: str
    detail: str
    stage: str = ""
    backend: str = ""
    error_type: str = ""

    def signature(self) -> str:
        """A short key under which equivalent findings are grouped."""
        head = _normalise(self.detail.splitlines()[0] if self.detail else "")
        parts = [self.kind, self.stage, self.backend, self.error_type, head]
        return "|".join(p for p in parts if p)


_LOC = re.compile(r"^(.+):(\d+):(\d+): error: ")


def _normalise(text: str) -> str:
    """The first line of a message without what varies from case to case
    (locations, paths, quoted names, numbers, long names), cut short."""
    text = _LOC.sub("", text)
    text = re.sub(r"(/[^\s:/]+)+/?", "PATH", text)
    text = re.sub(r"'[^']*'|\"[^\"]*\"", "'_'", text)
    text = re.sub(r"[A-Za-z_][A-Za-z0-9_]{24,}", "NAME", text)
    text = re.sub(r"\b\w*\d\w*\b", "N", text)
    text = re.sub(r"\s+", " ", text)
    return text[:64]


def located(exc: BaseException, filename: str = FILENAME) -> bool:
    first = str(exc).split("\n", 1)[0]
    m = _LOC.match(first)
    return bool(m) and m.group(1) == filename


def judge_error(exc: BaseException, stage: str, backend: str = "",
                filename: str = FILENAME) -> Finding | None:
    """The finding an exception amounts to, or None for a located TLError."""
    etype = type(exc).__name__
    msg = str(exc) or etype
    if isinstance(exc, tl.TLInternalError):
        return Finding("internal-error", msg, stage, backend, etype)
    if not isinstance(exc, tl.TLError):
        return Finding("raw-exception", f"{etype}: {msg}", stage, backend, etype)
    if not located(exc, filename):
        return Finding("unlocated-error", msg, stage, backend, etype)
    return None


# ------------------------------------------------------------ numbers
def as_list(result) -> list:
    return list(result) if isinstance(result, tuple) else [result]


def flat(values) -> np.ndarray:
    parts = [np.atleast_1d(np.asarray(v, dtype=float)).ravel() for v in values]
    return np.concatenate(parts) if parts else np.zeros(0)


def close(got, want, rtol: float, scale: float) -> bool:
    g, w = flat(got), flat(want)
    if g.shape != w.shape:
        return False
    same_special = (np.isnan(g) & np.isnan(w)) | (np.isinf(g) & (g == w))
    finite = np.isfinite(g) & np.isfinite(w)
    ok = same_special | (finite & (np.abs(g - w) <= rtol * np.abs(w) + rtol * 1e-3 * scale))
    return bool(np.all(ok))


def shapes_of(values) -> list:
    return [np.shape(v) for v in values]


def describe(values, limit: int = 400) -> str:
    with np.printoptions(precision=17, threshold=40):
        return repr(values)[:limit]


# ------------------------------------------------------------ the checks
def _quiet_call(fn, *args, **kwargs):
    """fn(...), noting whether the Numba backend fell back to the interpreter."""
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        out = fn(*args, **kwargs)
    fell_back = any("cannot compile" in str(w.message) for w in seen)
    return out, fell_back


def parse_case(case: Case, stats: dict):
    """The module, or (None, findings)."""
    try:
        if isinstance(case.source, bytes):
            path = _scratch_file(case.source)
            mod = tl.load(path)
        else:
            mod = tl.parse(case.source, FILENAME)
        return mod, []
    except BaseException as exc:  # noqa: BLE001
        if isinstance(exc, (KeyboardInterrupt, SystemExit)):
            raise
        filename = _scratch_path() if isinstance(case.source, bytes) else FILENAME
        f = judge_error(exc, "parse", "", filename)
        if f is not None:
            return None, [f]
        stats["rejected"] = stats.get("rejected", 0) + 1
        if not case.may_reject:
            return None, [Finding("rejected", str(exc), "parse", "", type(exc).__name__)]
        return None, []


def _scratch_path() -> str:
    import tempfile
    return os.path.join(tempfile.gettempdir(), f"tl-fuzz-{os.getpid()}", FILENAME)


def _scratch_file(data: bytes) -> str:
    path = _scratch_path()
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as fh:
        fh.write(data)
    return path


def run_backend(fn, backend: str, args=(), kwargs=None, stage: str = "value",
                filename: str = FILENAME):
    """('ok', outputs, fell_back) or ('error', exc, finding-or-None)."""
    try:
        out, fell_back = _quiet_call(fn.compile(backend), *args, **(kwargs or {}))
        return "ok", as_list(out), fell_back
    except BaseException as exc:  # noqa: BLE001
        if isinstance(exc, (KeyboardInterrupt, SystemExit)):
            raise
        return "error", exc, judge_error(exc, stage, backend, filename)


def check_case(case: Case, backends=BACKENDS, stats: dict | None = None) -> list[Finding]:
    stats = {} if stats is None else stats
    if case.backends is not None:
        backends = [b for b in backends if b in case.backends] or list(case.backends)
    mod, findings = parse_case(case, stats)
    if mod is None or not case.call:
        return findings
    filename = _scratch_path() if isinstance(case.source, bytes) else FILENAME
    try:
        fn = mod[case.fname]
    except KeyError:
        fns = list(mod)
        if not fns:
            return findings
        fn = fns[-1]
    if case.prune_inputs:
        names = {p.name for p in fn.program.params}
        case.inputs = {k: v for k, v in case.inputs.items() if k in names}
    if not case.inputs and fn.program.params:
        case.inputs = random_inputs_for(fn, np.random.default_rng(case.seed))

    # the expected outcome, from the fuzzer's own evaluator
    want, want_bounds = None, False
    if case.expect is not None:
        try:
            want = case.expect()
        except BoundsExpected:
            want_bounds = True
        except Skip:
            stats["skipped"] = stats.get("skipped", 0) + 1
            want = None

    results = {}
    for b in backends:
        status, out, extra = run_backend(fn, b, (), case.inputs, "value", filename)
        if status == "ok":
            if extra:
                stats["fallback"] = stats.get("fallback", 0) + 1
            results[b] = out
            if want_bounds:
                findings.append(Finding("missed-bounds", "a label out of range is used but the "
                                        f"call returned values\n{describe(out)}", "value", b))
            continue
        exc, finding = out, extra
        if finding is not None:
            findings.append(finding)
            continue
        if want_bounds:
            if not isinstance(exc, tl.TLBoundsError):
                findings.append(Finding("wrong-error", f"expected TLBoundsError: {exc}", "value",
                                        b, type(exc).__name__))
            continue
        if not case.may_raise:
            findings.append(Finding("raised", str(exc), "value", b, type(exc).__name__))
    if findings:
        return findings
    if want is not None:
        for b, got in results.items():
            if not close(got, want, case.rtol, case.scale):
                findings.append(Finding("mismatch", f"{b} differs from the evaluator:\n"
                                        f"got  {describe(got)}\nwant {describe(want)}",
                                        "value", b))
    if len(results) == 2 and not findings:
        a, b = results["numpy"], results["numba"]
        scale = max([1.0] + [float(np.max(np.abs(v[np.isfinite(v)]), initial=0.0))
                             for v in [flat(a)]])
        if not close(b, a, 1e-9, scale):
            findings.append(Finding("mismatch", f"numba differs from numpy:\n"
                                    f"numba {describe(b)}\nnumpy {describe(a)}", "value", "numba"))
    if findings or not case.derivs or len(results) == 0:
        return findings
    outs = next(iter(results.values()))
    if len(outs) != 1 or not np.all(np.isfinite(flat(outs))) or \
            np.max(np.abs(flat(outs)), initial=0.0) > 1e6:
        return findings
    findings += check_derivatives(fn, case, outs[0], backends, stats)
    return findings


def check_derivatives(fn, case: Case, value, backends, stats) -> list[Finding]:
    """jvp, vjp and (for a scalar) grad on every backend: they agree with each
    other, and the dot-product identity holds on the interpreter."""
    params = fn.program.params
    wrt = tuple(p.name for p in params if p.elem == "f64")
    if not wrt:
        return []
    rng = np.random.default_rng(case.seed + 7)
    pos = []
    by_name = dict(case.inputs)
    for p in params:
        pos.append(by_name[p.name])
    dirs = [rng.standard_normal(np.shape(by_name[w])) for w in wrt]
    dirs = [float(d) if np.ndim(d) == 0 else d for d in dirs]
    d_out = rng.standard_normal(np.shape(value))
    d_out = float(d_out) if np.ndim(d_out) == 0 else d_out
    findings: list[Finding] = []
    derived = {}
    for kind, make, args in [
        ("jvp", lambda: tl.jvp(fn, wrt=wrt), pos + dirs),
        ("vjp", lambda: tl.vjp(fn, wrt=wrt), pos + [d_out]),
    ] + ([("grad", lambda: tl.grad(fn, wrt=wrt), pos)] if np.ndim(value) == 0 else []):
        try:
            with warnings.catch_warnings(record=True) as seen:
                warnings.simplefilter("always", tl.TLCostWarning)
                g = make()
        except BaseException as exc:  # noqa: BLE001
            if isinstance(exc, (KeyboardInterrupt, SystemExit)):
                raise
            f = judge_error(exc, kind)
            findings.append(f or Finding("raised", str(exc), kind, "", type(exc).__name__))
            continue
        if case.certify:
            stats["certified"] = stats.get("certified", 0) + 1
            for w in seen:
                if issubclass(w.category, tl.TLCostWarning):
                    findings.append(Finding("certificate", _certificate_detail(str(w.message)),
                                            kind))
        res = {}
        for b in backends:
            status, out, extra = run_backend(g, b, args, None, kind)
            if status == "ok":
                res[b] = out
            else:
                findings.append(extra or Finding("raised", str(out), kind, b, type(out).__name__))
        if len(res) == 2:
            a, c = res["numpy"], res["numba"]
            scale = max(1.0, float(np.max(np.abs(flat(a)), initial=0.0)))
            if not close(c, a, 1e-9, scale):
                findings.append(Finding("mismatch", f"{kind}: numba differs from numpy:\n"
                                        f"numba {describe(c)}\nnumpy {describe(a)}", kind, "numba"))
        if res:
            derived[kind] = next(iter(res.values()))
    stats["derivatives"] = stats.get("derivatives", 0) + len(derived)
    if "jvp" in derived and "vjp" in derived and not findings:
        tangent = derived["jvp"][1]
        bars = derived["vjp"]
        lhs = sum(float(np.sum(np.asarray(b) * np.asarray(d))) for b, d in zip(bars, dirs))
        rhs = float(np.sum(np.asarray(d_out) * np.asarray(tangent)))
        mag = 1.0 + sum(float(np.sum(np.abs(b))) for b in bars) * \
            max(float(np.max(np.abs(d), initial=0.0)) for d in dirs) + abs(rhs)
        if np.isfinite(lhs) and np.isfinite(rhs) and abs(lhs - rhs) > 1e-8 * mag:
            findings.append(Finding("mismatch", f"dot-product identity <vjp, dx> = {lhs!r} but "
                                    f"<d_out, jvp> = {rhs!r}", "jvp/vjp", "numpy"))
    return findings


def _certificate_detail(message: str) -> str:
    """The warning with its grouping key first: which monomial grows, or 'factor'."""
    m = re.search(r"its monomial (\S+) grows", message)
    head = f"monomial {m.group(1)}" if m else "constant factor"
    return f"{head}\n{message}"


# ------------------------------------------------------------ random draws
class RandomDraw:
    """Stands in for Hypothesis's `draw` so the generators of
    test_roundtrip_fuzz.py run from a plain seeded random source (much faster
    than Hypothesis' engine, and a seed reproduces a program exactly).  Only
    the two strategies that generator uses are understood."""

    def __init__(self, rng):
        self.rng = rng

    def __call__(self, strategy):
        elements = getattr(strategy, "elements", None)
        if elements is not None:
            return elements[self.rng.randrange(len(elements))]
        lazy = getattr(strategy, "function", None)
        if lazy is not None and lazy.__name__ == "integers":
            lo, hi = strategy._LazyStrategy__args          # noqa: SLF001
            return self.rng.randint(lo, hi)
        raise TypeError(f"RandomDraw cannot draw from {strategy!r}")


def composite_body(strategy_factory):
    """The plain function behind a ``@st.composite`` strategy."""
    return strategy_factory().wrapped_strategy.definition


def random_inputs_for(fn, rng, size_range=(1, 4)) -> dict:
    """Inputs for any function: random sizes, normal values, labels in range."""
    sizes = {}
    params = fn.program.params
    for p in params:
        for d in p.dims:
            if isinstance(d, str) and d not in sizes:
                sizes[d] = int(rng.integers(size_range[0], size_range[1] + 1))
    smallest = min([v for v in sizes.values()] + [d for p in params for d in p.dims
                                                   if isinstance(d, int)] + [4])
    out = {}
    for p in params:
        shape = tuple(sizes[d] if isinstance(d, str) else d for d in p.dims)
        if float(np.prod([float(v) for v in shape])) > 1e6:
            raise Skip(f"{p.name} would have shape {shape}")
        if p.elem == "f64":
            v = rng.standard_normal(shape)
            out[p.name] = float(v) if not shape else v
        elif p.elem == "i64":
            out[p.name] = rng.integers(0, max(smallest, 1), size=shape).astype(np.int64)
        else:
            out[p.name] = rng.random(shape) < 0.5
    return out

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
* ``wrong-error``     an error of the wrong class (e.g. not TLBoundsError);
* ``deriv-accepts``   a derivative gave values for a label its function refuses;
* ``deriv-rejects``   a derivative refused a label its function accepts;
* ``other-error``     a derivative refused a label with another message than its
  function's (the contract: the same located error).

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
    # ... only one whose monomial grows, and not a dense hessian's (see docs/fuzzing.md)
    certify_growth: bool = False
    backends: tuple | None = None  # run only these backends (default: the harness's)
    # what check_derivatives does besides jvp / vjp / grad wrt every f64 parameter at once
    wrts: tuple | None = None      # the wrt sets to differentiate, each a tuple of names
    first_order: tuple | None = None  # the kinds (default: jvp, vjp and for a scalar grad)
    fd: bool = False               # check them against central differences of the function
    second_order: bool = False     # a scalar function: hvp and hessian wrt each single name
    label_contract: bool = False   # where f refuses a label, every derivative must refuse it
    out_shape: tuple | None = None  # f's output shape: the cotangent's when f refuses
    # the kinds that run on Numba too, wrt the first wrt set only (None: all, wrt all)
    numba_kinds: tuple | None = None

    DERIV_OPTIONS = ("wrts", "first_order", "fd", "second_order", "label_contract", "out_shape", "certify",
                     "certify_growth",
                     "numba_kinds")

    def deriv_options(self) -> dict:
        """The derivative checks a text-only replay of the case must repeat."""
        return {k: getattr(self, k) for k in self.DERIV_OPTIONS}

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

    results, refused = {}, {}
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
        if isinstance(exc, tl.TLBoundsError):
            refused[b] = exc
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
    if findings or not case.derivs:
        return findings
    if results:
        outs = next(iter(results.values()))
        if len(outs) != 1 or not np.all(np.isfinite(flat(outs))) or \
                np.max(np.abs(flat(outs)), initial=0.0) > 1e6:
            return findings
        shape = np.shape(outs[0])
    elif refused and case.label_contract and case.out_shape is not None:
        shape = case.out_shape          # every backend refused a label: so must the derivatives
    else:
        return findings
    findings += check_derivatives(fn, case, shape, backends, stats,
                                  refused if case.label_contract else {})
    return findings


def check_derivatives(fn, case: Case, shape: tuple, backends, stats,
                      refused: dict | None = None) -> list[Finding]:
    """jvp, vjp and (for a scalar) grad (or the kinds of ``case.first_order``),
    wrt every f64 parameter at once or each set of ``case.wrts``, on every
    backend: they agree with each other and the dot-product identity holds on
    the interpreter.  With ``case.fd`` they also
    agree with central differences of the function, and with
    ``case.second_order`` a scalar function's hvp and hessian are checked too.
    ``refused`` maps a backend to the TLBoundsError the function raised there:
    every derivative must raise the same error on it.  Numba compiles every
    derivative, which is slow: a case may name the kinds that run there
    (``case.numba_kinds``, wrt the first wrt set)."""
    f64 = tuple(p.name for p in fn.program.params if p.elem == "f64")
    wrt_sets = [f64] if case.wrts is None else \
        [tuple(w for w in ws if w in f64) for ws in case.wrts]
    rng = np.random.default_rng(case.seed + 7)
    findings: list[Finding] = []
    for k, wrt in enumerate(ws for ws in wrt_sets if ws):
        on_numba = case.numba_kinds if case.numba_kinds is None or k == 0 else ()
        findings += _check_wrt(fn, case, wrt, shape, backends, on_numba, stats, refused or {},
                               rng)
    return findings


def _random(rng, shape):
    v = rng.standard_normal(shape)
    return float(v) if np.ndim(v) == 0 else v


def _check_wrt(fn, case: Case, wrt: tuple, shape: tuple, backends, on_numba, stats,
               refused: dict, rng) -> list[Finding]:
    by_name = dict(case.inputs)
    pos = [by_name[p.name] for p in fn.program.params]
    dirs = [_random(rng, np.shape(by_name[w])) for w in wrt]
    d_out = _random(rng, shape)
    args_of = {"jvp": pos + dirs, "vjp": pos + [d_out], "grad": pos, "hvp": pos + dirs,
               "hessian": pos}
    first = case.first_order or ("jvp", "vjp") + (("grad",) if shape == () else ())
    kinds = [(k, args_of[k]) for k in first if k != "grad" or shape == ()]
    if shape == () and case.second_order and len(wrt) == 1:
        kinds += [("hvp", args_of["hvp"]), ("hessian", args_of["hessian"])]
    findings: list[Finding] = []
    derived, built = {}, {}
    for kind, args in kinds:
        try:
            with warnings.catch_warnings(record=True) as seen:
                warnings.simplefilter("always", tl.TLCostWarning)
                g = getattr(tl, kind)(fn, wrt=wrt[0] if kind in ("hvp", "hessian") else wrt)
        except BaseException as exc:  # noqa: BLE001
            if isinstance(exc, (KeyboardInterrupt, SystemExit)):
                raise
            f = judge_error(exc, kind)
            findings.append(f or Finding("raised", str(exc), kind, "", type(exc).__name__))
            continue
        built[kind] = g
        if case.certify:
            findings += _certified(case, kind, seen, stats)
        res = {}
        for b in backends:
            if b == "numba" and on_numba is not None and kind not in on_numba:
                continue
            status, out, extra = run_backend(g, b, args, None, kind)
            if b in refused:
                stats["refusals"] = stats.get("refusals", 0) + 1
                f = _same_refusal(kind, b, status, out, extra, refused[b], stats)
                if f is not None:
                    findings.append(f)
            elif status == "ok":
                res[b] = out
            elif extra is None and case.label_contract and isinstance(out, tl.TLBoundsError):
                findings.append(Finding("deriv-rejects", f"{kind} refused a label its function "
                                        f"accepts:\n{out}", kind, b, type(out).__name__))
            else:
                findings.append(extra or Finding("raised", str(out), kind, b, type(out).__name__))
        if len(res) == 2:
            a, c = res["numpy"], res["numba"]
            scale = max(1.0, float(np.max(np.abs(flat(a)), initial=0.0)))
            if not close(c, a, 1e-9, scale):
                findings.append(Finding("mismatch", f"{kind}: numba differs from numpy:\n"
                                        f"numba {describe(c)}\nnumpy {describe(a)}", kind, "numba"))
        if res:
            derived[kind] = res.get("numpy", next(iter(res.values())))
    stats["derivatives"] = stats.get("derivatives", 0) + len(built)
    if findings or refused:
        return findings
    if "jvp" in derived and "vjp" in derived:
        findings += _dot_product_identity(derived["jvp"][1], derived["vjp"], dirs, d_out)
    elif "jvp" in derived and "grad" in derived:     # (the vjp of a scalar at d_out = 1)
        findings += _dot_product_identity(derived["jvp"][1], derived["grad"], dirs, 1.0)
    if case.fd and not findings:
        findings += _finite_differences(fn, wrt, by_name, dirs, derived, built)
    return findings


def _certified(case: Case, kind: str, seen, stats: dict) -> list[Finding]:
    """The certificate findings of derivative `kind` from the warnings `seen`
    while it was built."""
    if case.certify_growth and kind == "hessian":
        return []
    stats["certified"] = stats.get("certified", 0) + 1
    out = []
    for w in seen:
        if issubclass(w.category, tl.TLCostWarning):
            detail = _certificate_detail(str(w.message))
            if case.certify_growth and detail.startswith("constant factor"):
                stats["cost factor"] = stats.get("cost factor", 0) + 1
            else:
                out.append(Finding("certificate", detail, kind))
    return out


def _same_refusal(kind: str, backend: str, status: str, out, extra,
                  want: BaseException, stats: dict) -> Finding | None:
    """The finding of a derivative's call on a backend where its function raised
    `want` (a TLBoundsError), or None when the derivative raised the same error."""
    said = str(want).split("\n", 1)[0]
    if status == "ok":
        return Finding("deriv-accepts", f"{kind} gave values for a label its function refuses "
                       f"with\n{said}", kind, backend)
    if extra is not None:
        return extra
    if type(out) is not type(want):
        return Finding("wrong-error", f"{kind}: expected {type(want).__name__}, as the function "
                       f"raised, got {type(out).__name__}\n{out}\nthe function's: {said}", kind,
                       backend, type(out).__name__)
    got = str(out).split("\n", 1)[0]
    if got == said:
        return None
    if _bad_label(got) != _bad_label(said):
        return Finding("other-error", f"{kind} refused the labels with another error than its "
                       f"function\n{got}\nthe function's: {said}", kind, backend,
                       type(out).__name__)
    stats["other read"] = stats.get("other read", 0) + 1
    return None


_BAD_LABEL = re.compile(r"^(.+:\d+):\d+: error: gathered index (.+?) = (-?\d+) is out of range "
                        r"for dimension \d+ of .+?(?:; the label is (.+))?$")


def _bad_label(message: str) -> str:
    """The line, the value and the entry of the label array of a bad label's error:
    where a function reads one bad label twice (in two terms of a statement),
    which read raises first follows the order of the terms, which is the
    canonical order of the function's program for the function and of its check
    statement for a derivative, so the column, the read and the tensor may differ
    (docs/fuzzing.md); the label may not."""
    m = _BAD_LABEL.match(message)
    return f"{m.group(1)}: {m.group(3)}, {m.group(4) or m.group(2)}" if m else message


def _dot_product_identity(tangent, bars, dirs, d_out) -> list[Finding]:
    """<vjp(d_out), dx> = <d_out, jvp(dx)>."""
    lhs = sum(float(np.sum(np.asarray(b) * np.asarray(d))) for b, d in zip(bars, dirs))
    rhs = float(np.sum(np.asarray(d_out) * np.asarray(tangent)))
    mag = 1.0 + sum(float(np.sum(np.abs(b))) for b in bars) * \
        max(float(np.max(np.abs(d), initial=0.0)) for d in dirs) + abs(rhs)
    if np.isfinite(lhs) and np.isfinite(rhs) and abs(lhs - rhs) > 1e-8 * mag:
        return [Finding("mismatch", f"dot-product identity <vjp, dx> = {lhs!r} but "
                        f"<d_out, jvp> = {rhs!r}", "jvp/vjp", "numpy")]
    return []


def _finite_differences(fn, wrt: tuple, inputs: dict, dirs: list, derived: dict,
                        built: dict) -> list[Finding]:
    """The interpreter's derivatives against central differences of the function
    (tests/derivcheck.py): the jvp's tangent and <grad, dx> against the difference
    along dx, the hvp against the difference of the gradient along dx, and the
    hessian against the hvp (and its own transpose)."""
    from derivcheck import EPS, check_close, directional_fd, perturbed
    f = fn.compile("numpy")
    along = dict(zip(wrt, dirs))
    checks = []
    fd = directional_fd(f, inputs, along)
    if "jvp" in derived:
        checks.append(("jvp", "its primal against the function",
                       lambda: check_close(derived["jvp"][0], f(**inputs), "primal")))
        checks.append(("jvp", "against a central difference",
                       lambda: check_close(derived["jvp"][1], fd, "tangent")))
    if "grad" in derived:
        inner = sum(float(np.sum(np.asarray(g) * np.asarray(d)))
                    for g, d in zip(derived["grad"], dirs))
        checks.append(("grad", "<grad, dx> against a central difference",
                       lambda: check_close(inner, fd, "directional derivative")))
    if "hvp" in derived and "grad" in built:
        g = built["grad"].compile("numpy")
        w, d = wrt[0], dirs[0]

        def hvp_fd():
            diff = (np.asarray(g(**perturbed(inputs, w, d, EPS)))
                    - np.asarray(g(**perturbed(inputs, w, d, -EPS)))) / (2 * EPS)
            check_close(derived["hvp"][0], diff, "hvp", rtol=1e-4, atol=1e-5)
        checks.append(("hvp", "against a central difference of the gradient", hvp_fd))
    if "hessian" in derived and "hvp" in derived:
        size = int(np.size(dirs[0]))
        h = np.asarray(derived["hessian"][0], dtype=float).reshape(size, size)
        checks.append(("hessian", "times dx against the hvp", lambda: check_close(
            h @ np.ravel(dirs[0]), derived["hvp"][0], "H dx", rtol=1e-7, atol=1e-7)))
        checks.append(("hessian", "against its transpose",
                       lambda: check_close(h, h.T, "H", rtol=1e-7, atol=1e-7)))
    findings = []
    for kind, what, check in checks:
        try:
            check()
        except AssertionError as exc:
            findings.append(Finding("mismatch", f"{kind} {what} (wrt {', '.join(wrt)}): {exc}",
                                    f"{kind} vs fd", "numpy"))
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

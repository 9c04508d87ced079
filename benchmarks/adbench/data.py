"""Readers of ADBench's input files (GMM, BA, LSTM) and the search for the data directory.

Only NumPy is needed here, so every interpreter of the benchmark (tensorlang's, and the one
that runs JAX and PyTorch) reads the same arrays the same way.  The files are read where they
are; nothing is copied into the repository.

A file that does not have the shape its header promises (a missing or surplus line, a line with
the wrong number of values, a value that is not a number) raises `DataError` naming the file and
the line, never a traceback from deep inside NumPy and never a silently short array.
"""
from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
ENV_VAR = "ADBENCH_DATA"


class DataError(Exception):
    """A missing data directory or a malformed input file (the message says where)."""


# ---------------------------------------------------------------------------- the directory
def _main_checkout(root: Path) -> Path | None:
    """The main working tree of the repository `root` belongs to (differs for a worktree)."""
    try:
        common = subprocess.run(["git", "rev-parse", "--path-format=absolute", "--git-common-dir"],
                                cwd=root, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    if common.returncode != 0 or not common.stdout.strip():
        return None
    return Path(common.stdout.strip()).parent


def candidate_dirs(explicit: str | os.PathLike | None = None) -> list[tuple[Path, str]]:
    """Where the data is looked for, in order, each with how it was chosen."""
    if explicit is not None:
        return [(Path(explicit), "--data")]
    out = []
    if os.environ.get(ENV_VAR):
        out.append((Path(os.environ[ENV_VAR]), f"${ENV_VAR}"))
    out.append((ROOT.parent / "shared" / "adbench", "../shared/adbench beside the repository"))
    main = _main_checkout(ROOT)
    if main is not None and main.resolve() != ROOT.resolve():
        out.append((main.parent / "shared" / "adbench",
                    "../shared/adbench beside the repository's main checkout"))
    return out


def find_data_dir(explicit: str | os.PathLike | None = None) -> Path:
    """The ADBench data directory: `explicit` (the --data option) when given, else $ADBENCH_DATA,
    else ../shared/adbench relative to the repository root (or to the main checkout when this is a
    git worktree).  A directory counts when it holds gmm/, ba/ or lstm/."""
    tried = []
    for path, how in candidate_dirs(explicit):
        if path.is_dir() and any((path / sub).is_dir() for sub in ("gmm", "ba", "lstm")):
            return path.resolve()
        tried.append(f"  {path} ({how}): " + ("no gmm/, ba/ or lstm/ inside" if path.is_dir()
                                              else "does not exist"))
    raise DataError("ADBench data directory not found; looked in:\n" + "\n".join(tried)
                    + f"\nGive it with --data DIR or the environment variable {ENV_VAR}.")


# ---------------------------------------------------------------------------- tokens
class _Lines:
    """The non-blank lines of a file with their 1-based numbers, read one at a time."""

    def __init__(self, path: Path):
        self.path = Path(path)
        try:
            text = self.path.read_text()
        except OSError as exc:
            raise DataError(f"{self.path}: cannot read: {exc.strerror or exc}") from None
        except UnicodeDecodeError:
            raise DataError(f"{self.path}: not a text file") from None
        self.lines = [(k + 1, ln.split()) for k, ln in enumerate(text.splitlines()) if ln.strip()]
        self.pos = 0
        self.last_line = text.count("\n") + (0 if text.endswith("\n") or not text else 1)

    def where(self, lineno: int | None = None) -> str:
        return f"{self.path}:{lineno if lineno is not None else self.last_line}"

    def remaining(self) -> int:
        return len(self.lines) - self.pos

    def floats(self, count: int, what: str) -> np.ndarray:
        if self.pos >= len(self.lines):
            raise DataError(f"{self.where()}: the file ends early: expected {what} "
                            f"({count} values) after the last line")
        lineno, toks = self.lines[self.pos]
        self.pos += 1
        if len(toks) != count:
            raise DataError(f"{self.where(lineno)}: expected {what} ({count} values), "
                            f"found {len(toks)} value(s)")
        try:
            vals = np.array([float(t) for t in toks], dtype=np.float64)
        except ValueError:
            bad = next(t for t in toks if not _is_float(t))
            raise DataError(f"{self.where(lineno)}: {what}: {bad!r} is not a number") from None
        if not np.all(np.isfinite(vals)):
            raise DataError(f"{self.where(lineno)}: {what}: a value is not finite")
        return vals

    def block(self, rows: int, cols: int, what: str) -> np.ndarray:
        out = np.empty((rows, cols))
        for r in range(rows):
            out[r] = self.floats(cols, f"{what} {r + 1} of {rows}")
        return out

    def ints(self, count: int, what: str, minimum: int = 1) -> list[int]:
        lineno = self.lines[self.pos][0] if self.pos < len(self.lines) else None
        vals = self.floats(count, what)
        if not np.all(vals == np.round(vals)) or np.any(vals < minimum):
            raise DataError(f"{self.where(lineno)}: {what}: expected integers >= {minimum}, "
                            f"found {' '.join(self.lines[self.pos - 1][1])}")
        return [int(v) for v in vals]

    def end(self):
        if self.pos < len(self.lines):
            lineno, _ = self.lines[self.pos]
            raise DataError(f"{self.where(lineno)}: unexpected data after the end of the "
                            f"input ({len(self.lines) - self.pos} more line(s))")


def _is_float(tok: str) -> bool:
    try:
        float(tok)
        return True
    except ValueError:
        return False


# ---------------------------------------------------------------------------- GMM
@dataclass
class GMM:
    alphas: np.ndarray      # (K,)
    means: np.ndarray       # (K, D)
    icf: np.ndarray         # (K, D + D(D-1)/2): log-diagonal q, then the packed strict lower part l
    x: np.ndarray           # (n, D)
    gamma: float
    m: int
    replicated: bool        # the file held one point, repeated n times

    @property
    def d(self) -> int:
        return self.means.shape[1]

    @property
    def k(self) -> int:
        return self.means.shape[0]

    @property
    def n(self) -> int:
        return self.x.shape[0]


def load_gmm(path, replicate: bool | None = None) -> GMM:
    """Read a GMM instance.  `replicate` says whether the file holds one point to be repeated n
    times (ADBench's 2.5M files); None decides from the file: the points block is either n lines
    or, for n > 1, a single line."""
    f = _Lines(path)
    d, k, n = f.ints(3, "the header 'D K n'")
    alphas = f.block(k, 1, "alpha")[:, 0]
    means = f.block(k, d, "mean")
    icf = f.block(k, d + d * (d - 1) // 2, "icf row (q then l)")
    if replicate is None:
        replicate = n > 1 and f.remaining() == 2
    x = f.block(1 if replicate else n, d, "point")
    gamma_m = f.floats(2, "the Wishart prior 'gamma m'")
    if gamma_m[1] != round(gamma_m[1]):
        raise DataError(f"{f.where(f.lines[f.pos - 1][0])}: the Wishart prior 'gamma m': "
                        f"m must be an integer, found {gamma_m[1]}")
    f.end()
    if replicate:
        x = np.repeat(x, n, axis=0)
    return GMM(alphas, means, icf, x, float(gamma_m[0]), int(gamma_m[1]), bool(replicate))


# ---------------------------------------------------------------------------- BA
@dataclass
class BA:
    cams: np.ndarray        # (n, 11): rotation (3), centre (3), focal (1), x0 (2), kappa (2)
    X: np.ndarray           # (m, 3)
    w: np.ndarray           # (p,)
    feats: np.ndarray       # (p, 2)
    obs: np.ndarray         # (p, 2) int64: camera and point of each observation

    @property
    def n(self) -> int:
        return self.cams.shape[0]

    @property
    def m(self) -> int:
        return self.X.shape[0]

    @property
    def p(self) -> int:
        return self.w.shape[0]


def load_ba(path) -> BA:
    """Read a BA instance (ADBench's replicate mode: one camera, point, weight and feature, each
    repeated; observation i sees camera i mod n and point i mod m)."""
    f = _Lines(path)
    n, m, p = f.ints(3, "the header 'n m p'")
    cam = f.floats(11, "the camera")
    X = f.floats(3, "the point")
    w = f.floats(1, "the weight")
    feat = f.floats(2, "the feature")
    f.end()
    i = np.arange(p, dtype=np.int64)
    obs = np.stack([i % n, i % m], axis=1)
    return BA(np.tile(cam, (n, 1)), np.tile(X, (m, 1)), np.full(p, w[0]), np.tile(feat, (p, 1)),
              np.ascontiguousarray(obs))


# ---------------------------------------------------------------------------- LSTM
@dataclass
class LSTM:
    main_params: np.ndarray   # (2l, 4b): per layer a weight row, then a bias row
    extra_params: np.ndarray  # (3, b): input scale, output scale, output bias
    state: np.ndarray         # (2l, b): per layer the hidden state, then the cell state
    sequence: np.ndarray      # (c, b)

    @property
    def layers(self) -> int:
        return self.main_params.shape[0] // 2

    @property
    def b(self) -> int:
        return self.sequence.shape[1]

    @property
    def c(self) -> int:
        return self.sequence.shape[0]


def load_lstm(path) -> LSTM:
    f = _Lines(path)
    l, c, b = f.ints(3, "the header 'l c b'")
    main = f.block(2 * l, 4 * b, "main_params row")
    extra = f.block(3, b, "extra_params row")
    state = f.block(2 * l, b, "state row")
    seq = f.block(c, b, "sequence row")
    f.end()
    return LSTM(main, extra, state, seq)


# ---------------------------------------------------------------------------- instances
def gmm_files(data: Path, which: str) -> list[Path]:
    """The GMM files of gmm/<which> (1k or 2.5M), ordered by D, then K."""
    def key(p: Path):
        d, k = p.stem.split("_")[1:3]
        return int(d[1:]), int(k[1:])
    return sorted((data / "gmm" / which).glob("gmm_d*_K*.txt"), key=key)


def ba_files(data: Path) -> list[Path]:
    """ba{N}_n.._m.._p...txt ordered by N."""
    return sorted((data / "ba").glob("ba*_n*_m*_p*.txt"),
                  key=lambda p: int(p.stem.split("_")[0][2:]))


def lstm_files(data: Path) -> list[Path]:
    def key(p: Path):
        l, c = p.stem.split("_")[1:3]
        return int(l[1:]), int(c[1:])
    return sorted((data / "lstm").glob("lstm_l*_c*.txt"), key=key)


def load(kind: str, path, **kw):
    return {"gmm": load_gmm, "ba": load_ba, "lstm": load_lstm}[kind](path, **kw)

"""The harness: runs the fuzzers for a time budget in worker processes.

Usage (from the repository root)::

    python -m tests.fuzz --minutes 30 [--seed S] [--only NAME[,NAME]] [--backend numba|numpy|both]
                         [--findings DIR] [--jobs N] [--timeout SECONDS] [--no-minimize]
    python -m tests.fuzz --replay FUZZER:SEED      # one case, in this process, verbosely

The fuzzers share the budget equally (the next case goes to the fuzzer that has
used the least time).  Every case runs in a worker process, so a segfault or
a hang is caught: the worker is replaced and the case is a finding.  The run
ends with a table (programs, programs per minute, findings per fuzzer) and the
exit status is 1 when there is any finding.
"""
from __future__ import annotations

import argparse
import os
import pickle
import re
import select
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field

import numpy as np

from . import worker as W
from .common import Finding
from .registry import FUZZERS, WEIGHTS

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# seeds of fuzzer cases: SEED_STRIDE * --seed + case number
SEED_STRIDE = 10_000_000
STARTUP_GRACE = 40.0          # the first case of a worker also imports and warms up Numba
KEEP_PER_SIGNATURE = 3


# ------------------------------------------------------------ workers
class Worker:
    def __init__(self, log_path: str, env: dict):
        self.log_path = log_path
        self.log = open(log_path, "ab")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.fuzz.worker"], cwd=ROOT, env=env,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log)
        self.fresh = True
        self.job = None               # (request, started, limit)

    def start(self, request: dict, timeout: float) -> None:
        limit = timeout + (STARTUP_GRACE if self.fresh else 0.0)
        self.fresh = False
        request = dict(request, timeout=limit)
        self.job = (request, time.monotonic(), limit)
        W.send(self.proc.stdin, request)

    def log_tail(self, chars: int = 3000) -> str:
        self.log.flush()
        try:
            with open(self.log_path, "rb") as fh:
                data = fh.read().decode("utf-8", "replace")
        except OSError:
            return ""
        last = data.rfind("CASE ")
        return data[last:][-chars:] if last >= 0 else data[-chars:]

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self.log.close()

    def stop(self) -> None:
        if self.proc.poll() is None:
            try:
                W.send(self.proc.stdin, {"op": "quit"})
                self.proc.wait(timeout=5)
            except Exception:  # noqa: BLE001
                pass
        self.kill()


@dataclass
class Tally:
    programs: int = 0
    seconds: float = 0.0
    skipped: int = 0
    rejected: int = 0
    fallback: int = 0
    derivatives: int = 0
    refusals: int = 0             # derivative calls that had to refuse a label
    notes: Counter = field(default_factory=Counter)   # counted, not findings (common.py)
    harness_errors: int = 0
    findings: int = 0
    signatures: Counter = field(default_factory=Counter)


class Harness:
    def __init__(self, args):
        self.args = args
        self.names = [n for n in FUZZERS] if not args.only else args.only.split(",")
        for n in self.names:
            if n not in FUZZERS:
                raise SystemExit(f"unknown fuzzer {n!r}; choose from {', '.join(FUZZERS)}")
        self.backends = ["numpy", "numba"] if args.backend == "both" else [args.backend]
        self.tally = {n: Tally() for n in self.names}
        self.next_case = {n: 0 for n in self.names}
        self.findings_dir = args.findings or tempfile.mkdtemp(prefix="tl-fuzz-findings-")
        os.makedirs(self.findings_dir, exist_ok=True)
        self.cache_dir = tempfile.mkdtemp(prefix="tl-fuzz-cache-")
        self.env = dict(os.environ)
        self.env["PYTHONPATH"] = os.pathsep.join(
            [ROOT, os.path.join(ROOT, "tests")] + [p for p in [os.environ.get("PYTHONPATH")] if p])
        self.env["TENSORLANG_CACHE_DIR"] = self.cache_dir
        self.env["PYTHONHASHSEED"] = "0"
        if args.verify:
            self.env["TENSORLANG_VERIFY"] = "1"
        self.workers: list[Worker] = []
        self.saved = defaultdict(int)
        self.examples: dict[str, str] = {}
        self.minimize_left = args.minimize_seconds_total
        self.all_findings: list[tuple[str, int, Finding]] = []
        self.quota: dict[str, int] = {}          # per-fuzzer case counts (the smoke test)
        self.worker_count = 0

    # -------------------------------------------------------- bookkeeping
    def new_worker(self) -> Worker:
        self.worker_count += 1
        return Worker(os.path.join(self.findings_dir, f"worker-{self.worker_count}.log"), self.env)

    def open_fuzzers(self) -> list[str]:
        """The fuzzers that have not yet run their quota of cases."""
        out = []
        for n in self.names:
            quota = self.quota.get(n, self.args.cases) if self.quota else self.args.cases
            if quota is None or self.tally[n].programs < quota:
                out.append(n)
        return out

    def pick_fuzzer(self) -> str:
        return min(self.open_fuzzers(),
                   key=lambda n: (self.tally[n].seconds / WEIGHTS.get(n, 1.0),
                                  self.tally[n].programs))

    def request_for(self, name: str) -> dict:
        k = self.next_case[name]
        self.next_case[name] += 1
        return {"op": "case", "fuzzer": name, "seed": self.args.seed * SEED_STRIDE + k,
                "backends": self.backends}

    # -------------------------------------------------------- the main loop
    def run(self) -> int:
        start = time.monotonic()
        deadline = start + self.args.minutes * 60.0
        for _ in range(self.args.jobs):
            self.workers.append(self.new_worker())
        try:
            while True:
                now = time.monotonic()
                for w in self.workers:
                    if w.job is None and now < deadline and self.open_fuzzers():
                        name = self.pick_fuzzer()
                        self.tally[name].programs += 1
                        w.start(self.request_for(name), self.args.timeout)
                busy = [w for w in self.workers if w.job is not None]
                if not busy:
                    break
                wait = min(w.job[1] + w.job[2] for w in busy) - time.monotonic()
                ready, _, _ = select.select([w.proc.stdout for w in busy], [], [],
                                            max(0.0, min(wait, 1.0)))
                for w in busy:
                    request, started, limit = w.job
                    elapsed = time.monotonic() - started
                    if w.proc.stdout in ready:
                        try:
                            reply = W.receive(w.proc.stdout)
                        except (EOFError, OSError):
                            self.on_dead(w, request, elapsed)
                            continue
                        w.job = None
                        self.on_reply(request, reply, elapsed)
                    elif elapsed > limit:
                        self.on_hang(w, request, elapsed)
        except KeyboardInterrupt:
            print("interrupted", file=sys.stderr)
        finally:
            for w in self.workers:
                w.stop()
            shutil.rmtree(self.cache_dir, ignore_errors=True)
        wall = time.monotonic() - start
        self.report(wall)
        return 1 if any(t.findings for t in self.tally.values()) else 0

    def total_programs(self) -> int:
        return sum(t.programs for t in self.tally.values())

    def replace(self, w: Worker) -> None:
        w.kill()
        i = self.workers.index(w)
        self.workers[i] = self.new_worker()

    def on_reply(self, request, reply, elapsed) -> None:
        name = request["fuzzer"]
        t = self.tally[name]
        t.seconds += elapsed
        stats = reply.get("stats", {})
        t.rejected += stats.get("rejected", 0)
        t.fallback += stats.get("fallback", 0)
        t.derivatives += stats.get("derivatives", 0)
        t.refusals += stats.get("refusals", 0)
        t.notes.update({k: stats[k] for k in ("other read", "cost factor") if k in stats})
        t.skipped += stats.get("skipped", 0)
        if "skip" in reply:
            t.skipped += 1
            return
        if "harness_error" in reply:
            t.harness_errors += 1
            if t.harness_errors <= 3:
                print(f"[fuzz] harness error in {name} seed {request['seed']}:\n"
                      f"{reply['harness_error']}", file=sys.stderr)
            return
        for f in reply["findings"]:
            self.record(name, request["seed"], f)

    def on_dead(self, w: Worker, request, elapsed) -> None:
        code = w.proc.wait()
        tail = w.log_tail()
        self.replace(w)
        self.tally[request["fuzzer"]].seconds += elapsed
        what = f"signal {-code}" if code < 0 else f"exit status {code}"
        stage = _crash_stage(tail)
        self.record(request["fuzzer"], request["seed"],
                    Finding("crash", f"the worker died ({what}) {stage}\n{tail}", stage))

    def on_hang(self, w: Worker, request, elapsed) -> None:
        tail = w.log_tail()
        self.replace(w)
        self.tally[request["fuzzer"]].seconds += elapsed
        self.record(request["fuzzer"], request["seed"],
                    Finding("hang", f"no answer after {elapsed:.0f} s {_crash_stage(tail)}\n{tail}",
                            _crash_stage(tail)))

    # -------------------------------------------------------- findings
    def record(self, name: str, seed: int, finding: Finding) -> None:
        t = self.tally[name]
        t.findings += 1
        self.all_findings.append((name, seed, finding))
        sig = f"{name}|{finding.signature()}"
        t.signatures[sig] += 1
        first = t.signatures[sig] == 1
        if not first and self.saved[sig] >= KEEP_PER_SIGNATURE:
            return
        self.saved[sig] += 1
        try:
            case = FUZZERS[name].make(seed)
        except Exception:  # noqa: BLE001 -- reported by the worker already
            return
        parent = os.path.join(self.findings_dir, name)
        number = len(os.listdir(parent)) if os.path.isdir(parent) else 0
        folder = os.path.join(parent, f"{number:03d}-{_slug(finding)}")
        os.makedirs(folder, exist_ok=True)
        self.examples.setdefault(sig, folder)
        if isinstance(case.source, bytes):
            with open(os.path.join(folder, "program.tl"), "wb") as fh:
                fh.write(case.source)
        else:
            with open(os.path.join(folder, "program.tl"), "w") as fh:
                fh.write(case.source)
        if case.inputs:
            with open(os.path.join(folder, "inputs.pkl"), "wb") as fh:
                pickle.dump(case.inputs, fh)     # {parameter name: array or float}
            with open(os.path.join(folder, "inputs.txt"), "w") as fh:
                for k, v in case.inputs.items():
                    fh.write(f"{k if len(k) < 60 else k[:20] + '...' + k[-10:]} = "
                             f"{np.array2string(np.asarray(v), precision=17, threshold=50)}\n")
        with open(os.path.join(folder, "finding.txt"), "w") as fh:
            fh.write(f"fuzzer: {name}\nseed: {seed}\nkind: {finding.kind}\n"
                     f"stage: {finding.stage}\nbackend: {finding.backend}\n"
                     f"signature: {sig}\nnote: {case.note}\n"
                     f"replay: python -m tests.fuzz --replay {name}:{seed}\n\n{finding.detail}\n")
        print(f"[fuzz] finding ({finding.kind}) in {name} seed {seed}: "
              f"{finding.signature()[:150]}\n       saved in {folder}", file=sys.stderr)
        if first and self.args.minimize and self.minimize_left > 0:
            began = time.monotonic()
            try:
                small = self.minimize(case, finding)
            finally:
                self.minimize_left -= time.monotonic() - began
            if small is not None and small != case.source:
                path = os.path.join(folder, "minimal.tl")
                with open(path, "wb" if isinstance(small, bytes) else "w") as fh:
                    fh.write(small)
                print(f"       minimised to {len(small)} characters: {path}", file=sys.stderr)

    # -------------------------------------------------------- minimisation
    def reproduces(self, case, source, finding: Finding) -> bool:
        """Does `source` (with the case's inputs) give a finding of the same signature?"""
        w = self.new_worker() if not hasattr(self, "_min_worker") else self._min_worker
        self._min_worker = w
        req = {"op": "text", "fuzzer": case.fuzzer, "seed": case.seed, "source": source,
               "fname": case.fname, "inputs": case.inputs, "may_reject": case.may_reject,
               "may_raise": case.may_raise, "derivs": case.derivs, "call": case.call,
               "deriv_options": case.deriv_options(), "backends": self.backends}
        limit = self.args.timeout + (STARTUP_GRACE if w.fresh else 0.0)
        w.fresh = False
        req["timeout"] = limit
        W.send(w.proc.stdin, req)
        ready, _, _ = select.select([w.proc.stdout], [], [], limit)
        if not ready:
            w.kill()
            del self._min_worker
            return finding.kind == "hang"
        try:
            reply = W.receive(w.proc.stdout)
        except (EOFError, OSError):
            w.kill()
            del self._min_worker
            return finding.kind == "crash"
        want = _target(finding).signature()
        return any(f.signature() == want for f in reply.get("findings", []))

    def minimize(self, case, finding: Finding):
        """Delete statements, then terms of sums, while the finding stays; None
        when the finding does not reproduce from the text alone."""
        if finding.kind in ("missed-bounds",) or \
                "evaluator" in _target(finding).detail.split("\n")[0]:
            return None
        if isinstance(case.source, bytes):
            return None
        budget_end = time.monotonic() + min(self.args.minimize_seconds, self.minimize_left)
        try:
            if not self.reproduces(case, case.source, finding):
                return None
            current = case.source
            changed = True
            while changed and time.monotonic() < budget_end:
                changed = False
                for candidate in _smaller(current):
                    if time.monotonic() > budget_end:
                        break
                    if self.reproduces(case, candidate, finding):
                        current = candidate
                        changed = True
                        break
            return current
        finally:
            if hasattr(self, "_min_worker"):
                self._min_worker.stop()
                del self._min_worker

    # -------------------------------------------------------- the report
    def report(self, wall: float) -> None:
        out = sys.stdout
        print(f"\ntensorlang fuzz: seed {self.args.seed}, backends {'+'.join(self.backends)}, "
              f"{wall / 60:.1f} min wall, {self.args.jobs} worker(s)", file=out)
        print(f"{'fuzzer':<12}{'programs':>9}{'per min':>9}{'rejected':>9}{'skipped':>8}"
              f"{'derivs':>8}{'refused':>8}{'fallback':>9}{'findings':>9}{'distinct':>9}",
              file=out)
        total = 0
        for n in self.names:
            t = self.tally[n]
            rate = t.programs / (t.seconds / 60.0) if t.seconds > 0 else 0.0
            total += t.programs
            print(f"{n:<12}{t.programs:>9}{rate:>9.0f}{t.rejected:>9}{t.skipped:>8}"
                  f"{t.derivatives:>8}{t.refusals:>8}{t.fallback:>9}{t.findings:>9}"
                  f"{len(t.signatures):>9}",
                  file=out)
        for n in self.names:
            if self.tally[n].notes:
                print(f"{n:<12}counted, not findings: " + ", ".join(
                    f"{k} {v}" for k, v in sorted(self.tally[n].notes.items())), file=out)
        print(f"{'total':<12}{total:>9}{total / (wall / 60.0) if wall > 0 else 0:>9.0f}"
              f"  (programs per minute of wall time)", file=out)
        sigs = [(s, c) for t in self.tally.values() for s, c in t.signatures.items()]
        if sigs:
            print(f"\nfindings ({sum(c for _, c in sigs)}, {len(sigs)} distinct), saved in "
                  f"{self.findings_dir}:", file=out)
            for s, c in sorted(sigs, key=lambda p: -p[1]):
                print(f"  {c:>5} x {s[:160]}\n          e.g. {self.examples.get(s, '-')}",
                      file=out)
        else:
            print("\nno findings", file=out)


def _target(finding: Finding) -> Finding:
    """What reproducing `finding` from the text alone means: a Numba result that
    differs from the evaluator is looked for as a difference from the interpreter."""
    if finding.kind == "mismatch" and finding.backend == "numba" and \
            finding.detail.startswith("numba differs from the evaluator"):
        return Finding("mismatch", "numba differs from numpy:", finding.stage, "numba")
    return finding


def _crash_stage(tail: str) -> str:
    m = re.findall(r'File "([^"]+)", line (\d+) in (\w+)', tail)
    for path, _, func in m:
        if "tensorlang" in path and "tests/fuzz" not in path:
            return f"in {os.path.basename(path)}:{func}"
    if "tl_" in tail:
        return "in a generated kernel"
    return ""


def _slug(f: Finding) -> str:
    text = f"{f.kind}-{f.stage}-{f.backend}-{f.error_type}"
    return re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-")[:60]


def _smaller(source: str):
    """Candidate reductions of a program, largest cuts first: a whole earlier
    function, a statement, a parameter of the last function, terms of a sum."""
    lines = source.split("\n")
    starts = [k for k, ln in enumerate(lines) if ln.startswith("def ")]
    for a, b in zip(starts, starts[1:]):            # a function other than the last
        yield "\n".join(lines[:a] + lines[b:])
    if starts:
        k = starts[-1]
        m = re.match(r"(def \w+\()(.*)(\).*)$", lines[k])
        if m:
            params = re.findall(r"\w+: \w+(?:\[[^\]]*\])?", m.group(2))
            for drop in range(len(params)):
                kept = params[:drop] + params[drop + 1:]
                head = m.group(1) + ", ".join(kept) + m.group(3)
                yield "\n".join(lines[:k] + [head] + lines[k + 1:])
    body = [k for k, ln in enumerate(lines)
            if ln.startswith("    ") and not ln.strip().startswith("return")]
    for k in body:                                  # a whole statement
        yield "\n".join(lines[:k] + lines[k + 1:])
    for k in body + [k for k, ln in enumerate(lines) if ln.strip().startswith("return")]:
        head, sep, rhs = lines[k].partition(" = ") if " = " in lines[k] else ("", "", "")
        if not sep:
            continue
        terms = _top_level_terms(rhs)
        if len(terms) < 2:
            continue
        step = max(1, len(terms) // 2)
        while step >= 1:
            for i in range(0, len(terms), step):
                kept = terms[:i] + terms[i + step:]
                if kept:
                    text = "".join(kept).lstrip(" +")
                    yield "\n".join(lines[:k] + [f"{head} = {text}"] + lines[k + 1:])
            step //= 2


def _top_level_terms(rhs: str) -> list[str]:
    """rhs split before each top-level ` + ` / ` - ` (the sign stays with its term)."""
    terms, depth, start = [], 0, 0
    i = 0
    while i < len(rhs):
        ch = rhs[i]
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        elif depth == 0 and rhs.startswith((" + ", " - "), i) and i > 0:
            terms.append(rhs[start:i])
            start = i
            i += 3
            continue
        i += 1
    terms.append(rhs[start:])
    return terms


# ------------------------------------------------------------ replay
def replay(spec: str, backends) -> int:
    from .common import check_case
    name, _, seed = spec.partition(":")
    case = FUZZERS[name].make(int(seed))
    print(f"# fuzzer {name}, seed {seed}: {case.note}")
    print(case.text())
    for k, v in case.inputs.items():
        print(f"# {k[:40]} = {np.array2string(np.asarray(v), precision=17, threshold=50)}")
    stats: dict = {}
    findings = check_case(case, backends, stats)
    print(f"# stats: {stats}")
    for f in findings:
        print(f"--- {f.kind} [{f.signature()[:120]}]\n{f.detail}")
    if not findings:
        print("--- no finding")
    return 1 if findings else 0


def parse_args(argv=None):
    p = argparse.ArgumentParser(prog="python -m tests.fuzz",
                                description="Run tensorlang's fuzzers for a time budget.")
    p.add_argument("--minutes", type=float, default=5.0, help="time budget (default 5)")
    p.add_argument("--seed", type=int, default=0, help="base seed (default 0)")
    p.add_argument("--only", default="", help=f"comma-separated fuzzers: {', '.join(FUZZERS)}")
    p.add_argument("--backend", choices=["numba", "numpy", "both"], default="both")
    p.add_argument("--findings", default=None, help="directory for findings (default: a new "
                                                    "temporary directory)")
    p.add_argument("--jobs", type=int, default=1, help="worker processes (default 1)")
    p.add_argument("--timeout", type=float, default=20.0, help="seconds per case (default 20)")
    p.add_argument("--cases", type=int, default=None,
                   help="stop each fuzzer after this many programs (with --seed: a fixed set)")
    p.add_argument("--no-minimize", dest="minimize", action="store_false",
                   help="save findings as generated, without reducing them")
    p.add_argument("--minimize-seconds", type=float, default=30.0,
                   help="time to reduce one finding (default 30)")
    p.add_argument("--minimize-seconds-total", type=float, default=None,
                   help="time for all reductions (default: a tenth of the budget)")
    p.add_argument("--verify", action="store_true",
                   help="run the strict IR verifier after every compiler stage")
    p.add_argument("--replay", default=None, metavar="FUZZER:SEED",
                   help="run one case in this process and print it")
    args = p.parse_args(argv)
    if args.minimize_seconds_total is None:
        args.minimize_seconds_total = args.minutes * 6.0
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.replay:
        backends = ["numpy", "numba"] if args.backend == "both" else [args.backend]
        return replay(args.replay, backends)
    return Harness(args).run()

"""The worker process: runs cases sent by the harness, one at a time.

Requests and replies are pickled dicts, each preceded by its length (4 bytes,
big endian), on the worker's stdin and its original stdout; everything the
compiler or Numba prints goes to stderr (a log file the harness reads after a
crash).  ``faulthandler`` writes the Python stack of a fatal signal to that
log, so a segfault still says where it happened.
"""
from __future__ import annotations

import faulthandler
import os
import pickle
import struct
import sys
import time
import traceback


def _read_exact(stream, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = stream.read(n - len(data))
        if not chunk:
            raise EOFError
        data += chunk
    return data


def send(stream, obj) -> None:
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(struct.pack(">I", len(data)) + data)
    stream.flush()


def receive(stream):
    (size,) = struct.unpack(">I", _read_exact(stream, 4))
    return pickle.loads(_read_exact(stream, size))


def handle(request: dict) -> dict:
    from .common import Case, Skip, check_case
    from .registry import FUZZERS
    stats: dict = {}
    started = time.perf_counter()
    if request["op"] == "case":
        make = FUZZERS[request["fuzzer"]].make
        try:
            case = make(request["seed"])
        except Skip as exc:
            return {"skip": str(exc), "stats": stats}
        except Exception:  # noqa: BLE001 -- a bug of the fuzzer, reported as such
            return {"harness_error": traceback.format_exc(), "stats": stats}
    else:
        case = Case(request["fuzzer"], request["seed"], request["source"], request["fname"],
                    request["inputs"], None, request["may_reject"], request["may_raise"],
                    request["derivs"], request["call"], prune_inputs=True,
                    **request.get("deriv_options", {}))
    print(f"CASE {request['op']} {request['fuzzer']} {request['seed']}", file=sys.stderr,
          flush=True)
    # a stack dump in the log, should the harness have to kill us for a hang
    faulthandler.dump_traceback_later(max(1.0, request.get("timeout", 20.0) - 1.0), exit=False,
                                      file=sys.stderr)
    try:
        findings = check_case(case, request["backends"], stats)
    except Skip as exc:
        return {"skip": str(exc), "stats": stats}
    except Exception:  # noqa: BLE001 -- a bug of the fuzzer, reported as such
        return {"harness_error": traceback.format_exc(), "stats": stats}
    finally:
        faulthandler.cancel_dump_traceback_later()
    return {"findings": findings, "stats": stats, "elapsed": time.perf_counter() - started}


def main() -> None:
    proto_out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)                      # stray prints go to the log, not the protocol
    sys.stdout = sys.stderr
    faulthandler.enable(file=sys.stderr, all_threads=False)
    proto_in = sys.stdin.buffer
    import warnings
    warnings.simplefilter("ignore")
    while True:
        try:
            request = receive(proto_in)
        except EOFError:
            return
        if request.get("op") == "quit":
            return
        send(proto_out, handle(request))


if __name__ == "__main__":
    main()

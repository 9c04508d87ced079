"""The driver: the list of stages is the architecture.

``compile_source`` runs parse -> check & lower -> prove bounds -> verify and
keeps each stage's output, which feeds ``tensorlang explain`` and the golden
tests.  An unexpected exception inside a stage becomes a
:class:`TLInternalError` naming that stage, never a bare traceback.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from .check import BoundsChecker
from .errors import ErrorSink, SourceText, TLError, TLInternalError
from .ssa.ir import Program, verify
from .ssa.lower import lower_module
from .syntax import ast as A
from .syntax.parse import parse_text


@dataclass
class CompiledModule:
    source: SourceText
    ast: A.ModuleAST
    programs: list[Program]
    proofs: dict[str, list[str]] = field(default_factory=dict)


def run_stage(name: str, fn, *args):
    try:
        return fn(*args)
    except TLError:
        raise
    except RecursionError:
        raise TLInternalError(f"stage '{name}' ran out of stack (the program is nested too deeply)")
    except Exception as exc:  # noqa: BLE001 -- turned into a named internal error
        raise TLInternalError(f"internal error in stage '{name}': {type(exc).__name__}: {exc}") \
            from exc


def _prove(programs, source):
    sink = ErrorSink(source)
    proofs = {}
    for prog in programs:
        checker = BoundsChecker(prog, sink)
        checker.run()
        proofs[prog.name] = checker.proven
    sink.raise_if_any()
    return proofs


def _verify_all(programs):
    for p in programs:
        verify(p)


def compile_source(text: str, filename: str = "<string>") -> CompiledModule:
    source = SourceText(text, filename)
    tree = run_stage("parse", parse_text, text, filename)
    programs = run_stage("check", lower_module, tree, source)
    proofs = run_stage("bounds", _prove, programs, source)
    run_stage("verify", _verify_all, programs)
    return CompiledModule(source, tree, programs, proofs)


# ------------------------------------------------------------ AST dump for `explain`
def dump_ast(node, indent: int = 0) -> str:
    """An indented, span-free rendering of an AST node."""
    pad = "  " * indent
    if isinstance(node, tuple):
        return "\n".join(dump_ast(n, indent) for n in node)
    if not dataclasses.is_dataclass(node):
        return pad + repr(node)
    fields = [f for f in dataclasses.fields(node) if f.compare]
    simple = []
    nested = []
    for f in fields:
        v = getattr(node, f.name)
        if dataclasses.is_dataclass(v) or (isinstance(v, tuple) and v and
                                           any(dataclasses.is_dataclass(x) for x in v)):
            nested.append((f.name, v))
        else:
            simple.append(f"{f.name}={v!r}")
    head = f"{pad}{type(node).__name__}" + (f"({', '.join(simple)})" if simple else "")
    lines = [head]
    for name, v in nested:
        lines.append(f"{pad}  {name}:")
        lines.append(dump_ast(v, indent + 2))
    return "\n".join(lines)

"""The error family users see, and how a diagnostic is rendered.

Every user-facing error is a :class:`TLError` carrying one or more
:class:`Diagnostic` records.  ``str(err)`` renders them the way a compiler does::

    qform.tl:3:22: error: index 0 of x may be out of range
        y[i] = x[i + 1]
               ^^^^^^^^
    hint: guard it with [i + 1 < n]

Diagnostics are data (a span, a message, a hint), so a checker can collect all
of them before raising, and tests can assert on fields instead of text.
"""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Span:
    """A region of a source file: 1-based line and column, end exclusive."""

    filename: str
    line: int
    col: int
    end_line: int
    end_col: int

    def __str__(self) -> str:
        return f"{self.filename}:{self.line}:{self.col}"


@dataclass(frozen=True)
class Diagnostic:
    span: Span | None
    message: str
    hint: str | None = None
    source_line: str | None = field(default=None, compare=False)

    def render(self) -> str:
        where = f"{self.span}: " if self.span is not None else ""
        out = [f"{where}error: {self.message}"]
        if self.span is not None and self.source_line is not None:
            text = self.source_line.rstrip("\n")
            out.append("    " + text)
            start = max(self.span.col - 1, 0)
            if self.span.end_line == self.span.line:
                width = max(self.span.end_col - self.span.col, 1)
            else:
                width = max(len(text) - start, 1)
            out.append("    " + " " * start + "^" * width)
        if self.hint:
            out.append(f"hint: {self.hint}")
        return "\n".join(out)


class TLError(Exception):
    """Base of every error tensorlang raises on purpose."""

    def __init__(self, message_or_diagnostics, span: Span | None = None,
                 hint: str | None = None, source_line: str | None = None):
        if isinstance(message_or_diagnostics, (list, tuple)):
            diags = list(message_or_diagnostics)
        else:
            diags = [Diagnostic(span, str(message_or_diagnostics), hint, source_line)]
        self.diagnostics: list[Diagnostic] = diags
        super().__init__(self.render())

    @property
    def first(self) -> Diagnostic:
        return self.diagnostics[0]

    @property
    def span(self) -> Span | None:
        return self.first.span

    @property
    def line(self) -> int | None:
        return self.first.span.line if self.first.span else None

    @property
    def col(self) -> int | None:
        return self.first.span.col if self.first.span else None

    def render(self) -> str:
        return "\n".join(d.render() for d in self.diagnostics)

    def __str__(self) -> str:
        return self.render()


class TLSyntaxError(TLError):
    """The text is not a program: a bad token, a bad indent, a misplaced construct."""


class TLNameError(TLError):
    """A name that is unknown, reused, or bound twice."""


class TLTypeError(TLError):
    """A value used where its kind (f64, bool relation, i64 index) does not fit."""


class TLShapeError(TLError):
    """Ranks or sizes that disagree, at compile time or at call time."""


class TLBoundsError(TLError):
    """An access that cannot be proven inside its tensor, or a gather out of range."""


class TLRecurrenceError(TLError):
    """Statements that read each other in a cycle that does not step strictly along
    shared leading indices (LANGUAGE.md section 10): the message names the cycle."""


class TLCallError(TLError):
    """A call with missing, unknown or surplus arguments."""


class TLInternalError(TLError):
    """A bug in tensorlang itself; the message names the stage that failed."""


class ErrorSink:
    """Collects diagnostics of one kind or another, then raises them together.

    The first diagnostic's class decides the exception class, so a test that
    provokes one error sees exactly that class.
    """

    def __init__(self, source: "SourceText | None" = None):
        self.source = source
        self.items: list[tuple[type[TLError], Diagnostic]] = []

    def add(self, kind: type[TLError], span: Span | None, message: str,
            hint: str | None = None) -> None:
        line = self.source.line_text(span.line) if (self.source and span) else None
        self.items.append((kind, Diagnostic(span, message, hint, line)))

    def take(self, err: "TLError") -> None:
        """Keep the diagnostics of an error a stage raised, with its class."""
        self.items.extend((type(err), d) for d in err.diagnostics)

    def __bool__(self) -> bool:
        return bool(self.items)

    def raise_if_any(self) -> None:
        if not self.items:
            return
        # Report in source order; ties keep discovery order.
        ordered = sorted(
            enumerate(self.items),
            key=lambda p: ((p[1][1].span.line, p[1][1].span.col) if p[1][1].span else (0, 0), p[0]),
        )
        kind = ordered[0][1][0]
        # A callee's statements are checked once on their own and again inside
        # every caller they are inlined into: the same finding is shown once.
        shown = list(dict.fromkeys(d for _, (_, d) in ordered))
        raise kind(shown)


class TLCostWarning(UserWarning):
    """A derivative costs more than the cheap-derivative certificate allows
    (tensorlang.certificate); the message names the statement and term responsible."""


class SourceText:
    """A file's text with its name, for rendering carets under spans."""

    def __init__(self, text: str, filename: str = "<string>"):
        self.text = text
        self.filename = filename
        self.lines = text.splitlines()

    def line_text(self, line: int) -> str | None:
        if 1 <= line <= len(self.lines):
            return self.lines[line - 1]
        return None

    def text_of(self, span: Span | None) -> str | None:
        """The text under `span` (None when the span is not in this file)."""
        if span is None or span.filename != self.filename:
            return None
        first, last = self.line_text(span.line), self.line_text(span.end_line)
        if first is None or last is None:
            return None
        if span.line == span.end_line:
            return first[span.col - 1:span.end_col - 1]
        middle = self.lines[span.line:span.end_line - 1]
        return "\n".join([first[span.col - 1:], *middle, last[:span.end_col - 1]])

    def indices_as_written(self, span: Span | None) -> tuple[str, list[str]] | None:
        """The tensor and the index expressions of the access `name[e1, ...]` under
        `span`, as the file writes them, or None when the span is not such an access."""
        text = "".join(line.split("#", 1)[0] for line in
                       (self.text_of(span) or "").splitlines(keepends=True)).strip()
        head = text.split("[", 1)
        if len(head) != 2 or not head[0].strip().isidentifier() or not text.endswith("]"):
            return None
        parts, depth, start, inner = [], 0, 0, head[1][:-1]
        for k, ch in enumerate(inner):
            depth += (ch in "([") - (ch in ")]")
            if depth < 0:
                return None
            if ch == "," and depth == 0:
                parts.append(inner[start:k])
                start = k + 1
        parts.append(inner[start:])
        if depth != 0:
            return None
        return head[0].strip(), [" ".join(p.split()) for p in parts]

    def error(self, kind: type[TLError], span: Span | None, message: str,
              hint: str | None = None) -> TLError:
        line = self.line_text(span.line) if span else None
        return kind(message, span, hint, line)


def article(elem: str) -> str:
    """An element type's name after its indefinite article, as read aloud: "an i64",
    "an f64", "a bool"."""
    return ("an " if elem[:1] in "aeiof" else "a ") + elem

"""Text -> AST.  Lark LALR parser with a Python-style indenter.

Input: source text and a file name.  Output: a :class:`ModuleAST` whose every
node carries a :class:`Span`.  Every failure is a :class:`TLSyntaxError` that
points at the offending character; no Lark exception escapes.
"""
from __future__ import annotations

import functools
import hashlib
import os
import re
import uuid
from importlib import resources

import lark
from lark import Lark, Token, Transformer_NonRecursive, v_args
from lark.exceptions import (UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken,
                             VisitError)
from lark.indenter import Indenter

from .. import sizexpr
from ..diskcache import cache_dir, claim
from ..errors import SourceText, Span, TLSyntaxError
from . import ast as A
from . import descent

KEYWORDS = frozenset({"def", "return", "sum", "logsumexp", "and", "or", "not"})

# How deeply expressions may nest (docs/language.md, lexical rules).  A left-leaning chain
# of one precedence level (`a + b - c ...`, `a * b / c ...`, `p or q and r ...`)
# counts as one level however long it is; every parenthesis, bracket, call
# argument, index, sum body, unary operator and `**` operand adds one.
MAX_NESTING = 64
_FLAT_OPS = frozenset({"+", "-", "*", "/", "%", "and", "or"})
INT64_LIMIT = 2 ** 63


def _grammar_text() -> str:
    """The grammar ships inside the wheel; in a source checkout it lives at grammar/."""
    try:
        shipped = resources.files("tensorlang").joinpath("grammar/tensorlang.lark")
        if shipped.is_file():
            return shipped.read_text()
    except (FileNotFoundError, ModuleNotFoundError):  # pragma: no cover
        pass
    here = os.path.dirname(os.path.abspath(__file__))
    path = os.path.join(here, "..", "..", "grammar", "tensorlang.lark")
    with open(path) as fh:
        return fh.read()


_SIZE_HINT = ("a dimension is a size, an integer, or an affine expression of sizes with at "
              "most one exact division by an integer, e.g. n - k + 1 or (n - k) / 2 + 1")


def short_literal(text: str) -> str:
    """A number literal as a message shows it: a long digit string is abbreviated."""
    if len(text) <= 30:
        return text
    return f"{text[:12]}...{text[-6:]} ({len(text)} characters)"


class _BadDedent(Exception):
    """A dedent to a column no enclosing block uses (converted in parse_text)."""

    def __init__(self, line: int, col: int):
        super().__init__(line, col)
        self.line, self.col = line, col


class _KeywordAsName(Exception):
    """A keyword where a name is expected (converted in parse_text)."""

    def __init__(self, tok: Token):
        super().__init__(str(tok))
        self.tok = tok


def _reject_keyword(tok: Token) -> Token:
    # The contextual lexer turns `and` into a NAME wherever a keyword cannot
    # stand; a name may never be a keyword, so say so instead of misparsing.
    if str(tok) in KEYWORDS:
        raise _KeywordAsName(tok)
    return tok


class _TLIndenter(Indenter):
    NL_type = "_NL"
    OPEN_PAREN_types = ["LPAR", "LSQB"]
    CLOSE_PAREN_types = ["RPAR", "RSQB"]
    INDENT_type = "_INDENT"
    DEDENT_type = "_DEDENT"
    tab_len = 8

    def handle_NL(self, token: Token):
        # Same as Lark's, but a bad dedent becomes our error with a location.
        if self.paren_level > 0:
            return
        yield token
        indent_str = token.rsplit("\n", 1)[1]
        indent = indent_str.count(" ") + indent_str.count("\t") * self.tab_len
        if indent > self.indent_level[-1]:
            self.indent_level.append(indent)
            yield Token.new_borrow_pos(self.INDENT_type, indent_str, token)
        else:
            while indent < self.indent_level[-1]:
                self.indent_level.pop()
                yield Token.new_borrow_pos(self.DEDENT_type, indent_str, token)
            if indent != self.indent_level[-1]:
                line = (token.end_line or token.line)
                raise _BadDedent(line, indent + 1)


@functools.lru_cache(maxsize=1)
def _grammar() -> str:
    return _grammar_text()


_PRETTY = {
    "NAME": "a name", "NUMBER": "a number", "INT": "a number", "_NL": "end of line",
    "_INDENT": "an indented block", "_DEDENT": "end of the indented block",
    "$END": "end of file", "CMP": "a comparison", "ARROW": "'->'",
}


def _describe_token(tok: Token) -> str:
    if tok.type == "$END":
        return "end of file"
    if tok.type == "_NL":
        return "end of line"
    if tok.type == "_INDENT":
        return "indent"
    if tok.type == "_DEDENT":
        return "end of the indented block"
    return repr(str(tok))


class _Builder(Transformer_NonRecursive):
    """Lark tree -> AST nodes, attaching spans (without recursion: long chains are flat)."""

    def __init__(self, source: SourceText):
        super().__init__()
        self.src = source

    # --- helpers
    def _span(self, meta) -> Span | None:
        if getattr(meta, "empty", True):
            return None
        return Span(self.src.filename, meta.line, meta.column, meta.end_line, meta.end_column)

    def _tspan(self, tok: Token) -> Span:
        return Span(self.src.filename, tok.line, tok.column, tok.end_line, tok.end_column)

    # --- module
    @v_args(meta=True)
    def start(self, meta, items):
        return A.ModuleAST(tuple(items), self.src.filename)

    @v_args(meta=True)
    def funcdef(self, meta, items):
        name, params, _arrow, rettype, *stmts = items
        params = tuple(params or ())
        if rettype is None:
            ret, is_tuple = None, False
        else:
            ret, is_tuple = rettype
        return A.FuncDef(str(name), params, ret, is_tuple, tuple(stmts), self._span(meta),
                         self._tspan(name))

    def params(self, items):
        return [p for p in items if p is not None]

    @v_args(meta=True)
    def param(self, meta, items):
        name, typ = items
        return A.Param(str(name), typ, self._span(meta))

    def rettype(self, items):
        return (items[0],), False

    def rettuple(self, items):
        return tuple(t for t in items if t is not None), True

    @v_args(meta=True)
    def scalar_type(self, meta, items):
        return A.TypeNode(str(items[0]), (), self._span(meta))

    @v_args(meta=True)
    def tensor_type(self, meta, items):
        name, *dims = items
        return A.TypeNode(str(name), tuple(d for d in dims if d is not None), self._span(meta))

    def dim(self, items):
        e = items[0]
        if isinstance(e, A.Num) and e.is_int:
            digits = e.text.lstrip("0")
            if len(digits) > len(str(INT64_LIMIT)) or (digits and int(digits) >= INT64_LIMIT):
                raise self.src.error(TLSyntaxError, e.span,
                                     f"the dimension {short_literal(e.text)} does not fit "
                                     "in int64",
                                     "dimensions must be below 2**63")
            return A.Dim(int(digits or "0"), e.span)
        if isinstance(e, A.Name):
            return A.Dim(e.id, e.span)
        return A.Dim(size_dim(e, self.src), e.span)

    # --- statements
    @v_args(meta=True)
    def assign(self, meta, items):
        (name, binders, name_span), expr = items
        return A.Assign(name, binders, expr, self._span(meta), name_span)

    @v_args(meta=True)
    def destructure(self, meta, items):
        *names, expr = items
        return A.Destructure(tuple(str(n) for n in names), expr, self._span(meta),
                             tuple(self._tspan(n) for n in names))

    @v_args(meta=True)
    def ret(self, meta, items):
        return A.Return(tuple(items), self._span(meta))

    def plain_target(self, items):
        return str(items[0]), None, self._tspan(items[0])

    def indexed_target(self, items):
        name, *binders = items
        return str(name), tuple(b for b in binders if b is not None), self._tspan(name)

    @v_args(meta=True)
    def binder(self, meta, items):
        name, dim = items
        return A.Binder(str(name), dim, self._span(meta))

    # --- predicates
    @v_args(meta=True)
    def or_(self, meta, items):
        return A.BoolOp("or", items[0], items[1], self._span(meta))

    @v_args(meta=True)
    def and_(self, meta, items):
        return A.BoolOp("and", items[0], items[1], self._span(meta))

    @v_args(meta=True)
    def not_(self, meta, items):
        return A.Not(items[0], self._span(meta))

    @v_args(meta=True)
    def chain(self, meta, items):
        operands = tuple(items[0::2])
        ops = tuple(str(t) for t in items[1::2])
        return A.Compare(operands, ops, self._span(meta))

    # --- arithmetic
    def _bin(op):  # noqa: N805 -- a tiny factory for the five binary rules
        @v_args(meta=True)
        def rule(self, meta, items):
            return A.BinOp(op, items[0], items[1], self._span(meta))
        return rule

    add = _bin("+")
    sub = _bin("-")
    mul = _bin("*")
    div = _bin("/")
    mod = _bin("%")
    pow = _bin("**")

    @v_args(meta=True)
    def neg(self, meta, items):
        return A.Neg(items[0], self._span(meta))

    def pos(self, items):
        return items[0]

    # --- atoms
    def number(self, items):
        tok = items[0]
        return A.Num(float(tok), str(tok), self._tspan(tok))

    def name(self, items):
        tok = items[0]
        return A.Name(str(tok), self._tspan(tok))

    @v_args(meta=True)
    def access(self, meta, items):
        name, *idx = items
        return A.Access(str(name), tuple(i for i in idx if i is not None), self._span(meta),
                        self._tspan(name))

    @v_args(meta=True)
    def sum_(self, meta, items):
        binders, where, body = _reduction_items(items)
        return A.Sum(binders, body, self._span(meta), where)

    @v_args(meta=True)
    def reduce_(self, meta, items):
        op, *rest = items
        binders, where, body = _reduction_items(rest)
        return A.Reduce(str(op), binders, body, where, self._span(meta))

    def reducer(self, items):
        return items[0]

    @v_args(meta=True)
    def bracket(self, meta, items):
        return A.Bracket(items[0], self._span(meta))

    @v_args(meta=True)
    def call(self, meta, items):
        name, *args = items     # a NAME, or the max / min / logsumexp keyword
        return A.Call(str(name), tuple(a for a in args if a is not None), self._span(meta),
                      self._tspan(name))

    @v_args(meta=True)
    def paren(self, meta, items):
        return A.Paren(items[0], self._span(meta))


def _reduction_items(items):
    """(binders, filter or None, body) of `sum[...]` or a reduction: the binders,
    then the optional `| p` (None when absent), then the parenthesised body."""
    *head, body = items
    binders = tuple(b for b in head if isinstance(b, A.Binder))
    rest = [x for x in head if x is not None and not isinstance(x, A.Binder)]
    return binders, (rest[0] if rest else None), body


def size_dim(e, src):
    """Arithmetic of sizes (a dimension, or `n / 2` in an index) -> its canonical Dim:
    an int, a plain size, or a derived size (LANGUAGE.md section 13)."""
    terms, const, den = _size_form(e, src)
    try:
        return sizexpr.canonical(terms, const, den)
    except sizexpr.NotASize as exc:
        raise src.error(TLSyntaxError, e.span, str(exc), _SIZE_HINT) from None

def _size_form(e, src) -> tuple[dict, int, int]:
    """``(terms + const) / den``: an affine form of sizes with at most one exact
    division by a positive integer; ``(n - k) / 3 + 1`` is ``(n - k + 3) / 3``
    (both need n - k to be a multiple of 3), but two divisions, or a multiple of
    a division, would change which sizes are allowed, so they are rejected."""
    if isinstance(e, A.Paren):
        return _size_form(e.inner, src)
    if isinstance(e, A.Num) and e.is_int:
        return {}, int(e.text), 1
    if isinstance(e, A.Name):
        return {e.id: 1}, 0, 1
    if isinstance(e, A.Neg):
        terms, const, den = _size_form(e.operand, src)
        return {s: -c for s, c in terms.items()}, -const, den
    if isinstance(e, A.BinOp) and e.op in ("+", "-"):
        lt, lc, ld = _size_form(e.left, src)
        rt, rc, rd = _size_form(e.right, src)
        if ld > 1 and rd > 1:
            raise src.error(TLSyntaxError, e.span,
                                 "a dimension may divide only once", _SIZE_HINT)
        den = max(ld, rd)
        sign = 1 if e.op == "+" else -1
        out = {s: c * (den // ld) for s, c in lt.items()}
        for s, c in rt.items():
            out[s] = out.get(s, 0) + sign * c * (den // rd)
        return out, lc * (den // ld) + sign * rc * (den // rd), den
    if isinstance(e, A.BinOp) and e.op == "*":
        lt, lc, ld = _size_form(e.left, src)
        rt, rc, rd = _size_form(e.right, src)
        if lt and rt:
            raise src.error(TLSyntaxError, e.span,
                                 "a product of two sizes cannot be a dimension", _SIZE_HINT)
        if ld > 1 or rd > 1:
            raise src.error(TLSyntaxError, e.span,
                                 "a dimension may not multiply a division",
                                 "multiply first: (2 * n) / 3, not 2 * (n / 3)")
        k, terms, const = (lc, rt, rc) if not lt else (rc, lt, lc)
        return {s: k * c for s, c in terms.items()}, k * const, 1
    if isinstance(e, A.BinOp) and e.op == "/":
        lt, lc, ld = _size_form(e.left, src)
        right = e.right
        while isinstance(right, A.Paren):
            right = right.inner
        if not (isinstance(right, A.Num) and right.is_int and int(right.text) >= 1):
            raise src.error(TLSyntaxError, e.right.span,
                                 "a size can only be divided by a positive integer",
                                 _SIZE_HINT)
        # A division of a division is one division by the product: (n / 2) / 2 is
        # n / 4, exact exactly when both are (what a call through two halving functions
        # gives too).
        return lt, lc, ld * int(right.text)
    raise src.error(TLSyntaxError, e.span, "this expression cannot be a dimension",
                         _SIZE_HINT)


def _check_tabs(src: SourceText) -> None:
    for lineno, line in enumerate(src.lines, start=1):
        stripped = line.lstrip(" \t")
        lead = line[: len(line) - len(stripped)]
        if "\t" in lead and stripped and not stripped.startswith("#"):
            col = lead.index("\t") + 1
            raise src.error(TLSyntaxError, Span(src.filename, lineno, col, lineno, col + 1),
                            "tab in indentation", "indent with spaces only")


@functools.lru_cache(maxsize=1)
def _parser() -> Lark:
    """The LALR parser, built once per process.

    Building its tables takes about 0.1 s, most of the cost of loading a small
    file, so the tables are kept in the cache directory (see ``diskcache``)
    under a hash of the grammar and Lark's version.  A cache that cannot be
    read or written is skipped: the parser is then simply built."""
    grammar = _grammar()
    options = dict(parser="lalr", postlex=_TLIndenter(), propagate_positions=True,
                   maybe_placeholders=True, lexer_callbacks={"NAME": _reject_keyword})
    key = hashlib.sha256((grammar + lark.__version__).encode()).hexdigest()[:16]
    root = cache_dir()
    path = os.path.join(root, f"tl_grammar_{key}.lark")
    if os.path.exists(path):
        try:
            return Lark(grammar, cache=path, **options)
        except Exception:                       # unreadable: build it again below
            pass
    if claim(root) is not None:                 # not tensorlang's directory: write nothing
        return Lark(grammar, **options)
    tmp = f"{path}.{os.getpid()}-{uuid.uuid4().hex[:8]}.tmp"   # renamed into place when whole
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        parser = Lark(grammar, cache=tmp, **options)
        os.replace(tmp, path)
        return parser
    except OSError:
        return Lark(grammar, **options)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


@functools.lru_cache(maxsize=1)
def _terminal_patterns() -> dict[str, str]:
    lark = _parser()
    out = {}
    for t in lark.terminals:
        if t.pattern.type == "str":
            out[t.name] = repr(t.pattern.value)
    return out


def _expected_text(expected) -> str:
    pats = _terminal_patterns()
    names = sorted({_PRETTY.get(e) or pats.get(e) or e for e in expected})
    if len(names) > 6:
        names = names[:6] + ["..."]
    return ", ".join(names)


def _unclosed_bracket(text: str, tok: Token):
    """(line, col, char) of a bracket still open where the parse failed, if any.

    Only consulted when the parser stops at a token that cannot continue an
    expression (end of file, a dedent, a new statement), which is how an
    unclosed bracket shows itself.
    """
    if tok.type not in ("$END", "_DEDENT", "_NL") and str(tok) not in ("def", "return"):
        return None
    stop = len(text) if tok.type == "$END" or tok.start_pos is None else tok.start_pos
    stack = []
    line, col = 1, 1
    k = 0
    while k < stop:
        ch = text[k]
        if ch == "#":
            while k < stop and text[k] != "\n":
                k += 1
            continue
        if ch in "([":
            stack.append((line, col, ch))
        elif ch in ")]" and stack:
            stack.pop()
        if ch == "\n":
            line, col = line + 1, 1
        else:
            col += 1
        k += 1
    return stack[-1] if stack else None


def _after_block_header(src: SourceText, tok: Token) -> bool:
    """Is tok the first token after a line ending in ':' at the same indentation?"""
    line = getattr(tok, "line", None)
    if not line or line < 2 or tok.type in ("$END", "_INDENT", "_DEDENT", "_NL"):
        return False
    prev = line - 1
    while prev >= 1 and not (src.line_text(prev) or "").split("#")[0].strip():
        prev -= 1
    if prev < 1:
        return False
    header = (src.line_text(prev) or "").split("#")[0].rstrip()
    indent = len(header) - len(header.lstrip())
    return (header.endswith(":") and header.lstrip().startswith("def ")
            and tok.column <= indent + 1)


def parse_text(text: str, filename: str = "<string>") -> A.ModuleAST:
    src = SourceText(text, filename)
    _check_tabs(src)
    if not text.endswith("\n"):
        text += "\n"
    try:
        module = descent.parse_module(text, src)
    except descent.Bail:                # not certainly well formed: Lark decides and reports
        module = lark_module(text, src)
    _check_nesting(module, src)
    return module


# A line that starts a function: a `def` at the left margin (the grammar has no
# nesting, so in a well-formed file every such line begins a function of its own).
_DEF_AT_MARGIN = re.compile(r"def\s+([A-Za-z_][A-Za-z0-9_]*)?")


def parse_functions(text: str, filename: str = "<string>") -> tuple[A.ModuleAST, list, frozenset]:
    """The functions of `text` that parse, the syntax errors of those that do not,
    and the names of the latter: (module, errors, broken names).

    A syntax error in one function says nothing about the next one, so a file whose
    whole text does not parse is cut before every `def` at the left margin and each
    piece is parsed on its own (the other lines blanked, so lines and columns stay
    those of the file).  A piece that ends before the file does and fails only at
    its end was cut there: the whole text went on (`def f(...):` then `def g`), and
    its first error says what is wrong.  Any other error of a piece is reported;
    so is the whole text's first error, unless a piece fails before it (`sum[i](x[i]
    +` left open reads on into the next function, where the whole text fails).
    Later stages check the functions that parsed and stay silent about calls of a
    broken one."""
    try:
        return parse_text(text, filename), [], frozenset()
    except TLSyntaxError as whole:
        first = whole
    lines = text.split("\n")
    starts = [k for k, line in enumerate(lines) if k and _DEF_AT_MARGIN.match(line)]
    if not starts:
        raise first
    functions, errors, broken = [], [], set()
    for a, b in zip([0] + starts, starts + [len(lines)]):
        try:
            functions.extend(parse_text("\n" * a + "\n".join(lines[a:b]), filename).functions)
            continue
        except TLSyntaxError as err:
            cut_short = b < len(lines) and err.first.message == "unexpected end of file"
            if not cut_short:
                errors.append(err)
        header = next(filter(None, map(_DEF_AT_MARGIN.match, lines[a:b])), None)
        if header is not None and header.group(1):
            broken.add(header.group(1))
    if not any((err.line or 0, err.col or 0) < (first.line or 0, first.col or 0)
               for err in errors):
        errors.insert(0, first)
    return A.ModuleAST(tuple(functions), filename), errors, frozenset(broken)


# Characters that look like an operator of the language, as editors and documents
# produce them, with what to type instead.
_LOOKALIKES = {"\u2212": "-", "\u2013": "-", "\u00d7": "*", "\u00b7": "*", "\u2264": "<=",
               "\u2265": ">=", "\u2260": "!=", "\uff08": "(", "\uff09": ")", "\u00a0": "a space"}


def _habit_hint(src: SourceText, line: int, col: int, found: str) -> str | None:
    """A hint for a syntax error that a habit from Python, NumPy or typesetting
    explains (`x ^ 2`, `A[i][j]`, `s += x`, a loop), or None.  `found` is the
    unexpected character or token at line:col (1-based)."""
    text = src.line_text(line) or ""
    before = text[:col - 1].rstrip()
    after = text[col - 1 + len(found):]
    stmt = text.lstrip()
    if found == "^":
        return "a power is written ** (x ** 2); ^ is not an operator here"
    if re.search(r"(?<![A-Za-z0-9_])(max|min)$", before):
        # `max` and `min` read as a name only where the grammar has no other use
        # for them, so a parameter or statement named so fails where it is read
        word = before[-3:]
        return (f"{word} is the builtin {word}(a, b) and the reduction {word}[i](...); "
                f"it cannot name a tensor, scalar or size: choose another name")
    if found in _LOOKALIKES:
        return f"this is not ASCII: type {_LOOKALIKES[found]}"
    if found in ("&", "&&"):
        return "combine predicates with and, or, not: [0 <= i and i < n]"
    if found == ";":
        return "write one statement per line"
    if found == "." and before[-1:].isalpha():
        return ("there are no methods or modules: sums are sum[i](x[i]), builtins are "
                "called by name, e.g. exp(x[i])")
    if found == "[" and before.endswith("]"):
        return "index all dimensions in one bracket: A[i, j], not A[i][j]"
    if found == "[" and before.endswith(")"):
        return "only a named tensor can be indexed: name the value first (r = f(x)), then read r[i]"
    if found in ("+", "-", "*", "/") and after.startswith("="):
        return (f"there is no {found}=: each name is assigned once, so define a new one "
                f"(s2 = s + ...) or write the whole sum at once")
    target = re.match(r"\s*[A-Za-z_]\w*\[([^\]=]*)\]\s*=(?!=)", text)
    if target is not None and target.start(1) < col <= target.end(1):
        # an expression where the statement binds its indices (`y[2 * i] = x[i]`)
        return ("the left side binds index names, each with an optional range "
                "(y[i, j: n] = ...); for entries at computed positions such as y[2 * i], "
                "give each position its own index and each case a bracket: "
                "y[i, e: 2] = [e == 0] * ... + [e == 1] * ...")
    first = stmt.split(" ", 1)[0]
    if first in ("for", "while", "if", "elif", "else:", "else") and col - 1 > len(text) - len(stmt):
        return ("there are no loops or if statements: define a tensor element by element "
                "(y[i] = ...), sum with sum[i](...), and select with a bracket [p]")
    return None


def lark_module(text: str, src: SourceText) -> A.ModuleAST:
    """The AST by the Lark parser (the reference grammar), or its located error.
    `text` ends in a newline."""
    filename = src.filename
    parser = _parser()
    try:
        tree = parser.parse(text)
    except _KeywordAsName as e:
        tok = e.tok
        raise src.error(TLSyntaxError, Span(filename, tok.line, tok.column, tok.end_line,
                                            tok.end_column),
                        f"{str(tok)!r} is a keyword and cannot be used as a name") from None
    except _BadDedent as e:
        raise src.error(TLSyntaxError, Span(filename, e.line, e.col, e.line, e.col + 1),
                        "unindent does not match any outer indentation level") from None
    except UnexpectedCharacters as e:
        span = Span(filename, e.line, e.column, e.line, e.column + 1)
        ch = text[e.pos_in_stream] if e.pos_in_stream < len(text) else "?"
        raise src.error(TLSyntaxError, span, f"unexpected character {ch!r}",
                        _habit_hint(src, e.line, e.column, ch)) from None
    except UnexpectedToken as e:
        tok = e.token
        opener = _unclosed_bracket(text, tok)
        if opener is not None:
            line, col, ch = opener
            raise src.error(TLSyntaxError, Span(filename, line, col, line, col + 1),
                            f"{ch!r} was never closed") from None
        if _after_block_header(src, tok):
            line = tok.line
            raise src.error(TLSyntaxError, Span(filename, line, tok.column, line, tok.column + 1),
                            "expected an indented block",
                            "a function body is indented under its `def` line") from None
        if tok.type == "$END":
            last = len(src.lines) or 1
            span = Span(filename, last, len(src.line_text(last) or "") + 1, last,
                        len(src.line_text(last) or "") + 2)
        else:
            line = tok.line
            col = tok.column
            if tok.type in ("_NL", "_DEDENT", "_INDENT"):
                if tok.type == "_INDENT":
                    line, col = tok.end_line, tok.end_column
                else:
                    # Point just past the last character of the unfinished line.
                    line = tok.line
                    col = len((src.line_text(line) or "").split("#")[0].rstrip()) + 1
            width = max((tok.end_column or col + 1) - col, 1) if tok.type not in (
                "_NL", "_DEDENT", "_INDENT") else 1
            span = Span(filename, line, col, line, col + width)
        msg = f"unexpected {_describe_token(tok)}"
        hint = None
        if tok.type == "NAME" and str(tok) in KEYWORDS:
            msg = f"unexpected keyword {str(tok)!r}"
        if tok.type == "_INDENT":
            msg = "unexpected indent"
        expected = _expected_text(e.expected) if e.expected else ""
        if expected:
            hint = f"expected {expected}"
        habit = _habit_hint(src, line, col, str(tok)) if tok.type != "$END" else None
        if habit is not None:
            hint = habit
        if tok.type == "_INDENT" and (src.line_text(line) or "").lstrip()[:1] in tuple("+-*/"):
            # an operator opening an indented line: the writer meant to go on with the
            # expression above, which only a bracket that is still open allows
            hint = ("a line continues the one above only inside an open ( or [: "
                    "wrap the expression in ( ... )")
        raise src.error(TLSyntaxError, span, msg, hint) from None
    except UnexpectedEOF:  # pragma: no cover - LALR reports $END as a token
        last = len(src.lines) or 1
        raise src.error(TLSyntaxError, Span(filename, last, 1, last, 2),
                        "unexpected end of file") from None
    except UnexpectedInput as e:  # pragma: no cover
        raise src.error(TLSyntaxError, Span(filename, e.line, e.column, e.line, e.column + 1),
                        "syntax error") from None
    try:
        module = _Builder(src).transform(tree)
    except VisitError as e:
        if isinstance(e.orig_exc, TLSyntaxError):
            raise e.orig_exc from None
        raise
    return module


def _check_nesting(module: A.ModuleAST, src: SourceText) -> None:
    """Reject the first expression (in source order) nested deeper than MAX_NESTING.

    Later stages walk expressions recursively; this bound keeps them well inside
    Python's stack, so a deep program is a located error, never a crash."""
    for fn in module.functions:
        for st in fn.body:
            roots = st.exprs if isinstance(st, A.Return) else (st.expr,)
            stack = [(e, 1) for e in reversed(roots)]
            while stack:
                e, level = stack.pop()
                if level > MAX_NESTING:
                    raise src.error(TLSyntaxError, e.span,
                                    f"expression nested too deeply (more than {MAX_NESTING} "
                                    "levels)",
                                    "name an inner part with an assignment of its own")
                kids = A.children(e)
                flat = isinstance(e, (A.BinOp, A.BoolOp)) and e.op in _FLAT_OPS
                for k in range(len(kids) - 1, -1, -1):
                    stack.append((kids[k], level if (flat and k == 0) else level + 1))

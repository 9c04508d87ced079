"""Text -> AST directly, for well-formed text: a tokenizer and recursive descent.

``parse.parse_text`` tries this first.  It follows grammar/tensorlang.lark rule
for rule and builds the same AST, spans included, as the Lark parser followed
by ``parse._Builder`` (tests/test_descent.py compares the two on every example,
workload and test source), without building a parse tree and then walking it:
about four times faster, which matters because every load parses its file.

It accepts only what it is sure of.  Any text it does not accept, and any
construct whose meaning it does not reproduce itself (a keyword used as a name,
a backslash continuation, an indentation it does not expect, an error found
while building a node), raises ``Bail``; the caller then parses with Lark,
which stays the reference for the grammar and for every diagnostic.

Spans follow Lark's position propagation: a rule's node spans from the start of
its first token (punctuation and keywords included) to the end of its last, and
a statement's last token is its end of line (which runs to the indentation of
the next line, as the end of the function's indented block does).
"""
from __future__ import annotations

import re

from ..errors import SourceText, Span, TLSyntaxError
from . import ast as A

# Words the grammar uses as keywords.  Lark's contextual lexer lets `max` and `min`
# be names where the keyword cannot stand; this parser never does (it bails), so
# wherever it accepts a keyword, Lark reads the same keyword.
_WORDS = frozenset({"def", "return", "sum", "logsumexp", "and", "or", "not", "max", "min"})

# The terminals of grammar/tensorlang.lark in the order Lark's lexer tries them
# (longer patterns first: `->` before `-`, `**` before `*`, `==` before `=`,
# NUMBER before INT).  Spaces, tabs and form feeds between tokens are skipped.
_TOKEN = re.compile(r"""
    (?P<NL>(?:\r?\n[ \t]*|\#[^\n]*)+)
  | (?P<WS>[ \t\f]+)
  | (?P<NUMBER>(?:[0-9]+\.[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|[0-9]+[eE][+-]?[0-9]+)
  | (?P<INT>[0-9]+)
  | (?P<NAME>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<OP>->|\*\*|==|!=|<=|>=|[<>+\-*/%()\[\],:=|])
""", re.VERBOSE)

_CMP = frozenset({"==", "!=", "<=", ">=", "<", ">"})
_OPEN, _CLOSE = frozenset("(["), frozenset(")]")


class Bail(Exception):
    """This text is for the Lark parser (see the module docstring)."""


# A token: (kind, text, line, column, end line, end column), 1-based, end exclusive.
# kind is NL, INDENT, DEDENT, NUMBER, INT, NAME, a keyword, an operator's text, or END.
def tokenize(text: str) -> list[tuple]:
    """Tokens with the indenter's INDENT and DEDENT, as Lark's postlexer makes them."""
    if "\\" in text:
        raise Bail                          # line continuations: leave them to Lark
    out = []
    append = out.append
    line, line_start, depth = 1, 0, 0
    levels = [0]
    pos, n = 0, len(text)
    match = _TOKEN.match
    while pos < n:
        m = match(text, pos)
        if m is None:
            raise Bail
        kind = m.lastgroup
        value = m.group()
        end = m.end()
        col = pos - line_start + 1
        if kind == "NL":
            breaks = value.count("\n")
            last = value.rfind("\n")
            end_line = line + breaks
            end_col = (len(value) - last) if last >= 0 else col + len(value)
            if depth == 0:
                tok = ("NL", value, line, col, end_line, end_col)
                append(tok)
                if last < 0:
                    raise Bail                  # a comment without an end of line
                indent_str = value[last + 1:]
                indent = indent_str.count(" ") + indent_str.count("\t") * 8
                if indent > levels[-1]:
                    levels.append(indent)
                    append(("INDENT",) + tok[1:])
                else:
                    while indent < levels[-1]:
                        levels.pop()
                        append(("DEDENT",) + tok[1:])
                    if indent != levels[-1]:
                        raise Bail
            if breaks:
                line = end_line
                line_start = pos + last + 1
        elif kind == "WS":
            pass
        else:
            if kind == "NAME":
                if value in _WORDS:
                    kind = value
            elif kind == "OP":
                kind = "CMP" if value in _CMP else value
                if value in _OPEN:
                    depth += 1
                elif value in _CLOSE:
                    depth = max(depth - 1, 0)
            append((kind, value, line, col, line, col + len(value)))
        pos = end
    if len(levels) > 1:
        raise Bail                              # a block closed only by the end of the file
    append(("END", "", line, pos - line_start + 1, line, pos - line_start + 1))
    return out


class _Parser:
    def __init__(self, tokens: list[tuple], src: SourceText):
        self.toks = tokens
        self.i = 0
        self.src = src
        self.file = src.filename

    # --- tokens
    def peek(self) -> str:
        return self.toks[self.i][0]

    def take(self, kind: str) -> tuple:
        tok = self.toks[self.i]
        if tok[0] != kind:
            raise Bail
        self.i += 1
        return tok

    def accept(self, kind: str) -> tuple | None:
        tok = self.toks[self.i]
        if tok[0] != kind:
            return None
        self.i += 1
        return tok

    def span(self, first: tuple, last: tuple) -> Span:
        """From the start of `first` to the end of `last` (tokens, or spans)."""
        if first.__class__ is Span:
            line, col = first.line, first.col
        else:
            line, col = first[2], first[3]
        if last.__class__ is Span:
            return Span(self.file, line, col, last.end_line, last.end_col)
        return Span(self.file, line, col, last[4], last[5])

    def tspan(self, tok: tuple) -> Span:
        return Span(self.file, tok[2], tok[3], tok[4], tok[5])

    # --- module
    def module(self) -> A.ModuleAST:
        self.accept("NL")
        funcs = []
        while self.peek() == "def":
            funcs.append(self.funcdef())
            self.accept("NL")
        self.take("END")
        return A.ModuleAST(tuple(funcs), self.file)

    def funcdef(self) -> A.FuncDef:
        first = self.take("def")
        name = self.take("NAME")
        self.take("(")
        params = []
        if self.peek() == "NAME":
            params.append(self.param())
            while self.accept(","):
                if self.peek() != "NAME":
                    break
                params.append(self.param())
        self.take(")")
        ret, is_tuple = None, False
        if self.accept("->"):
            if self.accept("("):
                types = [self.type_()]
                while self.accept(","):
                    if self.peek() != "NAME":
                        break
                    types.append(self.type_())
                self.take(")")
                ret, is_tuple = tuple(types), True
            else:
                ret = (self.type_(),)
        self.take(":")
        self.take("NL")
        self.take("INDENT")
        stmts = [self.stmt()]
        while self.peek() != "DEDENT":
            stmts.append(self.stmt())
        last = self.take("DEDENT")
        return A.FuncDef(name[1], tuple(params), ret, is_tuple, tuple(stmts),
                         self.span(first, last), self.tspan(name))

    def param(self) -> A.Param:
        name = self.take("NAME")
        self.take(":")
        typ = self.type_()
        return A.Param(name[1], typ, self.span(name, typ.span))

    def type_(self) -> A.TypeNode:
        name = self.take("NAME")
        if not self.accept("["):
            return A.TypeNode(name[1], (), self.tspan(name))
        dims = [self.dim()]
        while self.accept(","):
            if self.peek() == "]":
                break
            dims.append(self.dim())
        close = self.take("]")
        return A.TypeNode(name[1], tuple(dims), self.span(name, close))

    def dim(self) -> A.Dim:
        # parse._Builder.dim, without its errors: a dimension it would reject goes to Lark.
        e = self.expr()
        if e.__class__ is A.Num and e.is_int:
            digits = e.text.lstrip("0")
            if len(digits) > 19 or (digits and int(digits) >= 2 ** 63):
                raise Bail
            return A.Dim(int(digits or "0"), e.span)
        if e.__class__ is A.Name:
            return A.Dim(e.id, e.span)
        from .parse import size_dim
        try:
            return A.Dim(size_dim(e, self.src), e.span)
        except TLSyntaxError:
            raise Bail from None

    # --- statements
    def stmt(self):
        kind = self.peek()
        if kind == "return":
            first = self.take("return")
            exprs = [self.pred()]
            while self.accept(","):
                exprs.append(self.pred())
            end = self.take("NL")
            return A.Return(tuple(exprs), self.span(first, end))
        name = self.take("NAME")
        nxt = self.peek()
        if nxt == ",":
            names = [name]
            while self.accept(","):
                names.append(self.take("NAME"))
            self.take("=")
            expr = self.pred()
            end = self.take("NL")
            return A.Destructure(tuple(t[1] for t in names), expr, self.span(name, end),
                                 tuple(self.tspan(t) for t in names))
        binders = None
        if self.accept("["):
            binders = [self.binder()]
            while self.accept(","):
                if self.peek() == "]":
                    break
                binders.append(self.binder())
            self.take("]")
            binders = tuple(binders)
        self.take("=")
        expr = self.pred()
        end = self.take("NL")
        return A.Assign(name[1], binders, expr, self.span(name, end), self.tspan(name))

    def binder(self) -> A.Binder:
        name = self.take("NAME")
        if self.accept(":"):
            d = self.dim()
            return A.Binder(name[1], d, self.span(name, d.span))
        return A.Binder(name[1], None, self.tspan(name))

    # --- predicates
    def pred(self):
        left = self.pand()
        while self.accept("or"):
            right = self.pand()
            left = A.BoolOp("or", left, right, self.span(left.span, right.span))
        return left

    def pand(self):
        left = self.pnot()
        while self.accept("and"):
            right = self.pnot()
            left = A.BoolOp("and", left, right, self.span(left.span, right.span))
        return left

    def pnot(self):
        tok = self.accept("not")
        if tok is None:
            return self.compare()
        operand = self.pnot()
        return A.Not(operand, self.span(tok, operand.span))

    def compare(self):
        first = self.expr()
        if self.peek() != "CMP":
            return first
        operands, ops = [first], []
        while self.peek() == "CMP":
            ops.append(self.take("CMP")[1])
            operands.append(self.expr())
        return A.Compare(tuple(operands), tuple(ops), self.span(first.span, operands[-1].span))

    # --- arithmetic
    def expr(self):
        left = self.term()
        while True:
            op = self.peek()
            if op != "+" and op != "-":
                return left
            self.i += 1
            right = self.term()
            left = A.BinOp(op, left, right, self.span(left.span, right.span))

    def term(self):
        left = self.unary()
        while True:
            op = self.peek()
            if op != "*" and op != "/" and op != "%":
                return left
            self.i += 1
            right = self.unary()
            left = A.BinOp(op, left, right, self.span(left.span, right.span))

    def unary(self):
        kind = self.peek()
        if kind == "-":
            tok = self.take("-")
            operand = self.unary()
            return A.Neg(operand, self.span(tok, operand.span))
        if kind == "+":
            # Lark's `pos` node is dropped after its span has widened the parent's
            # span to the `+`; rare enough to leave to Lark.
            raise Bail
        base = self.atom()
        if self.accept("**"):
            exp = self.unary()
            return A.BinOp("**", base, exp, self.span(base.span, exp.span))
        return base

    def _preds_until(self, close: str) -> list:
        """pred ("," pred)* [","] close, the closing token consumed and returned last."""
        items = [self.pred()]
        while self.accept(","):
            if self.peek() == close:
                break
            items.append(self.pred())
        items.append(self.take(close))
        return items

    def _reduction(self, first: tuple):
        """The `[binders | p](body)` of `sum` or a reduction keyword -> (binders, where, body, end)."""
        self.take("[")
        binders = [self.binder()]
        while self.accept(","):
            if self.peek() != "NAME":
                break
            binders.append(self.binder())
        where = self.pred() if self.accept("|") else None
        self.take("]")
        self.take("(")
        body = self.pred()
        end = self.take(")")
        return tuple(binders), where, body, end

    def atom(self):
        tok = self.toks[self.i]
        kind = tok[0]
        self.i += 1
        if kind == "NAME":
            nxt = self.peek()
            if nxt == "[":
                self.i += 1
                *idx, close = self._preds_until("]")
                return A.Access(tok[1], tuple(idx), self.span(tok, close), self.tspan(tok))
            if nxt == "(":
                return self._call(tok)
            return A.Name(tok[1], self.tspan(tok))
        if kind == "NUMBER" or kind == "INT":
            return A.Num(float(tok[1]), tok[1], self.tspan(tok))
        if kind == "(":
            inner = self.pred()
            close = self.take(")")
            return A.Paren(inner, self.span(tok, close))
        if kind == "[":
            inner = self.pred()
            close = self.take("]")
            return A.Bracket(inner, self.span(tok, close))
        if kind == "sum":
            binders, where, body, end = self._reduction(tok)
            return A.Sum(binders, body, self.span(tok, end), where)
        if kind == "max" or kind == "min" or kind == "logsumexp":
            if self.peek() == "(":
                return self._call(tok)
            binders, where, body, end = self._reduction(tok)
            return A.Reduce(kind, binders, body, where, self.span(tok, end))
        raise Bail

    def _call(self, name: tuple):
        self.take("(")
        if self.peek() == ")":
            close = self.take(")")
            args = []
        else:
            *args, close = self._preds_until(")")
        return A.Call(name[1], tuple(args), self.span(name, close), self.tspan(name))


def parse_module(text: str, src: SourceText) -> A.ModuleAST:
    """The AST of `text` (ending in a newline), or Bail."""
    try:
        return _Parser(tokenize(text), src).module()
    except RecursionError:
        raise Bail from None

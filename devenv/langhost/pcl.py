"""A reader for the PCL that `pulumi import` sends to GenerateProgram.

PCL is HCL2 syntax. The importer writes a small part of it: `package` blocks,
`resource` and `component` blocks with attributes and an `options` block, and
expressions made of literals, quoted strings, objects, tuples, function calls
(`secret`, assets and archives) and references to other resources (`a.id`).
This reads that part (plus comments and `${...}` interpolation) into a tree;
anything else is a PclError naming the line and column.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

# ---- the tree ---------------------------------------------------------------


@dataclass(frozen=True)
class Literal:
    value: str | int | float | bool | None


@dataclass(frozen=True)
class Template:
    """A quoted string; parts are text or interpolated expressions."""

    parts: tuple[str | Expr, ...]

    def text(self) -> str | None:
        """The string, if it interpolates nothing."""
        return "".join(p for p in self.parts if isinstance(p, str)) if all(
            isinstance(p, str) for p in self.parts) else None


@dataclass(frozen=True)
class Traversal:
    """`root.attr["key"][0]`: steps are attribute names (str) or index expressions."""

    root: str
    steps: tuple[str | Expr, ...] = ()


@dataclass(frozen=True)
class Call:
    name: str
    args: tuple[Expr, ...]


@dataclass(frozen=True)
class TupleCons:
    items: tuple[Expr, ...]


@dataclass(frozen=True)
class ObjectKey:
    """A key of an object: `name` (quoted False: a property of a schema type, the
    importer's way) or `"name"` (quoted True: a key of a map)."""

    name: str
    quoted: bool


@dataclass(frozen=True)
class ObjectCons:
    items: tuple[tuple[ObjectKey, Expr], ...]


@dataclass(frozen=True)
class Negate:
    operand: Expr


Expr = Literal | Template | Traversal | Call | TupleCons | ObjectCons | Negate


@dataclass(frozen=True)
class Attribute:
    name: str
    value: Expr
    line: int


@dataclass
class Block:
    type: str
    labels: list[str]
    body: Body
    line: int


@dataclass
class Body:
    items: list[Attribute | Block] = field(default_factory=list)

    def attributes(self) -> list[Attribute]:
        return [i for i in self.items if isinstance(i, Attribute)]

    def blocks(self, type_: str | None = None) -> list[Block]:
        return [i for i in self.items if isinstance(i, Block) and (type_ is None or i.type == type_)]


class PclError(Exception):
    pass


# ---- tokens -----------------------------------------------------------------

@dataclass(frozen=True)
class Token:
    kind: str  # ident, number, string, punct, newline, eof
    value: str | tuple[str | list[Token], ...]
    line: int
    col: int


_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")
_NUMBER = re.compile(r"[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_PUNCT = "{}[](),=.:-"
_ESCAPES = {"n": "\n", "r": "\r", "t": "\t", '"': '"', "\\": "\\"}


class _Lexer:
    def __init__(self, text: str, filename: str) -> None:
        self.text, self.filename = text, filename
        self.pos, self.line, self.col = 0, 1, 1

    def error(self, message: str, line: int | None = None, col: int | None = None) -> PclError:
        return PclError(f"{self.filename}:{line or self.line}:{col or self.col}: {message}")

    def _advance(self, n: int) -> str:
        chunk = self.text[self.pos:self.pos + n]
        for ch in chunk:
            if ch == "\n":
                self.line, self.col = self.line + 1, 1
            else:
                self.col += 1
        self.pos += n
        return chunk

    def tokens(self, until_brace: bool = False) -> list[Token]:
        """Tokens up to the end, or (inside `${...}`) up to the closing brace."""
        out: list[Token] = []
        depth = 0
        while self.pos < len(self.text):
            ch, rest = self.text[self.pos], self.text[self.pos:]
            line, col = self.line, self.col
            if ch in " \t\r":
                self._advance(1)
            elif ch == "\n":
                out.append(Token("newline", "\n", line, col))
                self._advance(1)
            elif ch == "#" or rest.startswith("//"):
                end = self.text.find("\n", self.pos)
                self._advance((end if end >= 0 else len(self.text)) - self.pos)
            elif rest.startswith("/*"):
                end = self.text.find("*/", self.pos + 2)
                if end < 0:
                    raise self.error("unterminated comment")
                self._advance(end + 2 - self.pos)
            elif ch == '"':
                self._advance(1)
                out.append(Token("string", tuple(self._string()), line, col))
            elif rest.startswith("<<"):
                raise self.error("heredoc strings are not supported")
            elif match := _NUMBER.match(rest):
                out.append(Token("number", self._advance(match.end()), line, col))
            elif match := _IDENT.match(rest):
                out.append(Token("ident", self._advance(match.end()), line, col))
            elif ch in _PUNCT:
                if until_brace and ch == "}" and depth == 0:
                    self._advance(1)
                    out.append(Token("eof", "", line, col))
                    return out
                depth += {"{": 1, "}": -1}.get(ch, 0)
                out.append(Token("punct", self._advance(1), line, col))
            else:
                raise self.error(f"unexpected character {ch!r}")
        if until_brace:
            raise self.error("unterminated ${ interpolation")
        out.append(Token("eof", "", self.line, self.col))
        return out

    def _string(self) -> list[str | list[Token]]:
        """A quoted string after its opening quote: text and interpolations."""
        parts: list[str | list[Token]] = []
        text: list[str] = []
        while True:
            if self.pos >= len(self.text) or self.text[self.pos] == "\n":
                raise self.error("unterminated string")
            rest = self.text[self.pos:]
            if rest[0] == '"':
                self._advance(1)
                break
            if rest.startswith("$${") or rest.startswith("%%{"):
                text.append(self._advance(3)[1:])
            elif rest.startswith("${"):
                self._advance(2)
                if text:
                    parts.append("".join(text))
                    text = []
                parts.append(self.tokens(until_brace=True))
            elif rest.startswith("%{"):
                raise self.error("template directives (%{...}) are not supported")
            elif rest[0] == "\\":
                text.append(self._escape())
            else:
                text.append(self._advance(1))
        if text or not parts:
            parts.append("".join(text))
        return parts

    def _escape(self) -> str:
        seq = self.text[self.pos + 1:self.pos + 2]
        if seq in _ESCAPES:
            self._advance(2)
            return _ESCAPES[seq]
        for letter, width in (("u", 4), ("U", 8)):
            if seq == letter:
                digits = self.text[self.pos + 2:self.pos + 2 + width]
                if not re.fullmatch(f"[0-9A-Fa-f]{{{width}}}", digits):
                    raise self.error(f"bad \\{letter} escape")
                self._advance(2 + width)
                return chr(int(digits, 16))
        raise self.error(f"unknown escape \\{seq}")


# ---- parser -----------------------------------------------------------------

class _Parser:
    def __init__(self, tokens: list[Token], lexer: _Lexer) -> None:
        self.toks, self.i, self.lexer = tokens, 0, lexer

    def peek(self) -> Token:
        return self.toks[self.i]

    def next(self) -> Token:
        tok = self.toks[self.i]
        self.i += 1
        return tok

    def error(self, tok: Token, message: str) -> PclError:
        return self.lexer.error(message, tok.line, tok.col)

    def skip_newlines(self) -> None:
        while self.peek().kind == "newline":
            self.i += 1

    def expect(self, kind: str, value: str | None = None) -> Token:
        tok = self.next()
        if tok.kind != kind or (value is not None and tok.value != value):
            raise self.error(tok, f"expected {value or kind}, found {_describe(tok)}")
        return tok

    def at(self, kind: str, value: str | None = None) -> bool:
        tok = self.peek()
        return tok.kind == kind and (value is None or tok.value == value)

    # body := { attribute | block } ; items end at a newline
    def body(self, closing: bool) -> Body:
        body = Body()
        while True:
            self.skip_newlines()
            if closing and self.at("punct", "}"):
                self.next()
                return body
            if self.at("eof"):
                if closing:
                    raise self.error(self.peek(), "expected }, found the end of the file")
                return body
            name = self.expect("ident")
            if self.at("punct", "="):
                self.next()
                body.items.append(Attribute(str(name.value), self.expr(), name.line))
            else:
                labels: list[str] = []
                while not self.at("punct", "{"):
                    tok = self.next()
                    if tok.kind == "ident":
                        labels.append(str(tok.value))
                    elif tok.kind == "string" and all(isinstance(p, str) for p in tok.value):
                        labels.append("".join(str(p) for p in tok.value))
                    else:
                        raise self.error(tok, f"expected = or a block, found {_describe(tok)}")
                self.next()
                body.items.append(Block(str(name.value), labels, self.body(closing=True), name.line))
            if not (self.at("newline") or self.at("eof") or (closing and self.at("punct", "}"))):
                raise self.error(self.peek(), f"expected a new line, found {_describe(self.peek())}")

    def expr(self) -> Expr:
        tok = self.next()
        if tok.kind == "number":
            text = str(tok.value)
            return Literal(float(text) if any(c in text for c in ".eE") else int(text))
        if tok.kind == "string":
            return self.postfix(self.template(tok))
        if tok.kind == "punct" and tok.value == "-":
            return Negate(self.expr())
        if tok.kind == "punct" and tok.value == "(":
            self.skip_newlines()
            inner = self.expr()
            self.skip_newlines()
            self.expect("punct", ")")
            return self.postfix(inner)
        if tok.kind == "punct" and tok.value == "[":
            return self.postfix(TupleCons(tuple(self.sequence("]"))))
        if tok.kind == "punct" and tok.value == "{":
            return self.postfix(self.object())
        if tok.kind == "ident":
            name = str(tok.value)
            if name in ("true", "false"):
                return Literal(name == "true")
            if name == "null":
                return Literal(None)
            if self.at("punct", "("):
                self.next()
                return self.postfix(Call(name, tuple(self.sequence(")"))))
            return self.postfix(Traversal(name))
        raise self.error(tok, f"expected an expression, found {_describe(tok)}")

    def postfix(self, expr: Expr) -> Expr:
        steps: list[str | Expr] = []
        while self.at("punct", ".") or self.at("punct", "["):
            if self.next().value == ".":
                tok = self.next()
                if tok.kind not in ("ident", "number"):
                    raise self.error(tok, f"expected an attribute name, found {_describe(tok)}")
                steps.append(str(tok.value) if tok.kind == "ident" else Literal(int(str(tok.value))))
            else:
                self.skip_newlines()
                steps.append(self.expr())
                self.skip_newlines()
                self.expect("punct", "]")
        if not steps:
            return expr
        if isinstance(expr, Traversal):
            return Traversal(expr.root, expr.steps + tuple(steps))
        raise self.error(self.peek(), "attribute access is supported on resource references only")

    def sequence(self, closing: str) -> list[Expr]:
        items: list[Expr] = []
        while True:
            self.skip_newlines()
            if self.at("punct", closing):
                self.next()
                return items
            items.append(self.expr())
            self.skip_newlines()
            if self.at("punct", ","):
                self.next()
            elif not self.at("punct", closing):
                raise self.error(self.peek(), f"expected , or {closing}, found {_describe(self.peek())}")

    def object(self) -> ObjectCons:
        items: list[tuple[ObjectKey, Expr]] = []
        while True:
            self.skip_newlines()
            if self.at("punct", "}"):
                self.next()
                return ObjectCons(tuple(items))
            tok = self.next()
            if tok.kind == "ident":
                key = ObjectKey(str(tok.value), quoted=False)
            elif tok.kind == "string":
                text = self.template(tok).text()
                if text is None:
                    raise self.error(tok, "object keys with interpolation are not supported")
                key = ObjectKey(text, quoted=True)
            else:
                raise self.error(tok, f"expected an object key, found {_describe(tok)}")
            if not (self.at("punct", "=") or self.at("punct", ":")):
                raise self.error(self.peek(), f"expected = after the key, found {_describe(self.peek())}")
            self.next()
            items.append((key, self.expr()))
            if self.at("punct", ","):
                self.next()
            elif not (self.at("newline") or self.at("punct", "}")):
                raise self.error(self.peek(), f"expected a new line, found {_describe(self.peek())}")

    def template(self, tok: Token) -> Template:
        parts: list[str | Expr] = []
        for part in tok.value:
            if isinstance(part, str):
                parts.append(part)
            else:
                inner = _Parser(part, self.lexer)
                inner.skip_newlines()
                parts.append(inner.expr())
                inner.skip_newlines()
                inner.expect("eof")
        return Template(tuple(parts))


def _describe(tok: Token) -> str:
    if tok.kind == "eof":
        return "the end of the input"
    if tok.kind == "newline":
        return "a new line"
    if tok.kind == "string":
        return "a string"
    return repr(tok.value)


def parse(text: str, filename: str = "program.pp") -> Body:
    """The body of one PCL file; PclError if it is outside what the importer writes."""
    lexer = _Lexer(text, filename)
    return _Parser(lexer.tokens(), lexer).body(closing=False)

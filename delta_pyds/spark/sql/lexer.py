"""Splits one SQL statement into tokens that keep their positions in the text.

Guarantees: string literals ('...', "..." with backslash escapes and doubled quotes),
backquoted identifiers (doubled backquotes), ``--`` and ``/* */`` comments are single tokens,
so a word inside them is never taken for a keyword; joining every token's text gives the
input back unchanged. An unterminated literal, identifier or comment is a
:class:`~delta_pyds.errors.SqlParseError` naming its position. No pyspark here."""

from __future__ import annotations

import re
from dataclasses import dataclass

from delta_pyds.errors import SqlParseError

# kinds: "ws" (whitespace and comments), "word", "ident" (backquoted), "string", "number", "punct"
_PATTERNS = [
    ("ws", r"\s+|--[^\n]*|/\*.*?\*/"),
    ("ident", r"`(?:[^`]|``)*`"),
    ("string", r"[rR]?'(?:[^'\\]|\\.|'')*'|[rR]?\"(?:[^\"\\]|\\.|\"\")*\""),
    ("number", r"\d+(?:\.\d*)?(?:[eE][+-]?\d+)?[a-zA-Z]*|\.\d+(?:[eE][+-]?\d+)?[a-zA-Z]*"),
    ("word", r"[A-Za-z_][A-Za-z_0-9]*"),
    ("punct", r"<=>|==|<=|>=|<>|!=|\|\||::|->|\S"),
]
_TOKEN = re.compile("|".join(f"(?P<{k}>{p})" for k, p in _PATTERNS), re.S)


@dataclass(frozen=True)
class Token:
    kind: str
    text: str
    start: int

    @property
    def end(self) -> int:
        return self.start + len(self.text)

    @property
    def upper(self) -> str:
        return self.text.upper() if self.kind == "word" else ""

    def value(self) -> str:
        """The unquoted value of an identifier or a string literal; the text otherwise."""
        if self.kind == "ident":
            return self.text[1:-1].replace("``", "`")
        if self.kind == "string":
            body = self.text[1:] if self.text[0] in "rR" else self.text
            q = body[0]
            inner = body[1:-1]
            if self.text[0] in "rR":
                return inner
            inner = inner.replace(q + q, q)
            return re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "\t"}.get(m.group(1), m.group(1)), inner)
        return self.text


def tokenize(text: str) -> list[Token]:
    """Every token of ``text`` (whitespace and comments included, as ``ws`` tokens)."""
    tokens = []
    pos = 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        assert m is not None  # \S and \s+ cover every character
        kind = m.lastgroup or "punct"
        tok = m.group()
        if kind == "punct" and tok in ("'", '"', "`") or (kind == "punct" and text.startswith("/*", pos)):
            raise SqlParseError(f"unterminated {_what(tok)} at position {pos}: {text[pos : pos + 30]!r}")
        tokens.append(Token(kind, tok, pos))
        pos = m.end()
    return tokens


def _what(tok: str) -> str:
    return {"'": "string literal", '"': "string literal", "`": "backquoted identifier"}.get(tok, "comment")

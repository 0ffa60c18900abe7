"""A small Spark SQL expression language: the tokenizer and parser, for what a writer
must evaluate without Spark: CHECK constraints, column invariants, generation
expressions and ``replaceWhere`` predicates.

Supported: column references (case-insensitive, backticks, nested ``a.b``), literals
(numbers, strings, ``TRUE``/``FALSE``/``NULL``, ``DATE '...'``, ``TIMESTAMP '...'``,
``TIMESTAMP_NTZ '...'``), ``AND OR NOT``, comparisons ``= == <=> != <> < <= > >=``,
``IS [NOT] NULL``, ``[NOT] IN (...)``, ``[NOT] BETWEEN``, ``[NOT] LIKE``, ``+ - * / %
||``, ``CAST(x AS type)``, ``CASE WHEN``, and the functions listed in
:data:`~delta_pyds.expressions.functions.FUNCTIONS` (string, date/time part, null
handling, ``current_date()`` / ``current_timestamp()`` for column defaults). Dates and
times are evaluated in UTC.

Guarantees: :func:`parse` returns a tree of :mod:`delta_pyds.expressions.ast` nodes and
raises :class:`~delta_pyds.expressions.ast.ExpressionError` for anything outside that
subset (naming it), so callers can refuse a write up front instead of guessing.
"""

from __future__ import annotations

import datetime as dt
import decimal
import re
from dataclasses import dataclass
from typing import Any, cast

import pyarrow as pa

from delta_pyds.errors import ExpressionError
from delta_pyds.expressions.ast import Call, Case, Cast, Col, Lit, Node
from delta_pyds.expressions.coercion import string_to_timestamp
from delta_pyds.expressions.functions import FUNCTIONS

# ------------------------------------------------------------------------ tokenizer
_TOKEN = re.compile(
    r"""
    (?P<ws>\s+)
  | (?P<num>(?:\d+\.\d*|\.\d+|\d+)(?:[eE][+-]?\d+)?[lLdDfFsSyY]?(?:BD|bd)?)
  | (?P<str>'(?:[^'\\]|\\.|'')*'|"(?:[^"\\]|\\.|"")*")
  | (?P<bq>`(?:[^`]|``)*`)
  | (?P<op><=>|<>|!=|<=|>=|==|\|\||[=<>+\-*/%(),.])
  | (?P<id>[A-Za-z_][A-Za-z_0-9]*)
""",
    re.VERBOSE,
)

_KEYWORDS = {
    "AND",
    "OR",
    "NOT",
    "IS",
    "NULL",
    "IN",
    "BETWEEN",
    "LIKE",
    "TRUE",
    "FALSE",
    "CAST",
    "AS",
    "CASE",
    "WHEN",
    "THEN",
    "ELSE",
    "END",
    "DATE",
    "TIMESTAMP",
    "TIMESTAMP_NTZ",
    "DIV",
    "ILIKE",
}


@dataclass(frozen=True)
class _Tok:
    kind: str  # num str id kw op end
    text: str
    value: Any = None


def _tokenize(text: str) -> list[_Tok]:
    pos, out = 0, []
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m:
            raise ExpressionError(f"cannot parse {text!r}: unexpected {text[pos : pos + 10]!r}")
        pos = m.end()
        kind = cast(str, m.lastgroup)  # every alternative of _TOKEN is a named group
        tok = m.group(kind)
        if kind == "ws":
            continue
        if kind == "str":
            out.append(_Tok("str", tok, _unquote(tok)))
        elif kind == "bq":
            out.append(_Tok("id", tok, tok[1:-1].replace("``", "`")))
        elif kind == "id":
            up = tok.upper()
            out.append(_Tok("kw", up) if up in _KEYWORDS else _Tok("id", tok, tok))
        else:
            out.append(_Tok(kind, tok))
    out.append(_Tok("end", ""))
    return out


_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "0": "\0", "\\": "\\", "'": "'", '"': '"', "%": "\\%", "_": "\\_"}


def _unquote(tok: str) -> str:
    q = tok[0]
    body = tok[1:-1].replace(q + q, q)
    return re.sub(r"\\(.)", lambda m: _ESCAPES.get(m.group(1), m.group(1)), body)


# ---------------------------------------------------------------------------- parser
class _Parser:
    def __init__(self, text: str):
        self.text = text
        self.toks = _tokenize(text)
        self.i = 0

    def peek(self, k: int = 0) -> _Tok:
        return self.toks[min(self.i + k, len(self.toks) - 1)]

    def next(self) -> _Tok:
        t = self.toks[self.i]
        self.i += 1
        return t

    def accept(self, kind: str, text: str | None = None) -> bool:
        t = self.peek()
        if t.kind == kind and (text is None or t.text == text):
            self.i += 1
            return True
        return False

    def expect(self, kind: str, text: str | None = None) -> _Tok:
        t = self.next()
        if t.kind != kind or (text is not None and t.text != text):
            raise ExpressionError(f"cannot parse {self.text!r}: expected {text or kind}, got {t.text or 'the end'!r}")
        return t

    def parse(self) -> Node:
        node = self.or_()
        if self.peek().kind != "end":
            raise ExpressionError(f"cannot parse {self.text!r}: unexpected {self.peek().text!r}")
        return node

    def or_(self) -> Node:
        node = self.and_()
        while self.accept("kw", "OR"):
            node = Call("or", (node, self.and_()))
        return node

    def and_(self) -> Node:
        node = self.not_()
        while self.accept("kw", "AND"):
            node = Call("and", (node, self.not_()))
        return node

    def not_(self) -> Node:
        if self.accept("kw", "NOT"):
            return Call("not", (self.not_(),))
        return self.predicate()

    def predicate(self) -> Node:
        left = self.additive()
        t = self.peek()
        if t.kind == "op" and t.text in ("=", "==", "<=>", "!=", "<>", "<", "<=", ">", ">="):
            self.next()
            op = {"==": "=", "<>": "!="}.get(t.text, t.text)
            return Call(op, (left, self.additive()))
        if self.accept("kw", "IS"):
            negated = self.accept("kw", "NOT")
            if self.accept("kw", "NULL"):
                return Call("isnotnull" if negated else "isnull", (left,))
            for word, value in (("TRUE", True), ("FALSE", False)):
                if self.accept("kw", word):
                    node = Call("<=>", (left, Lit(value, pa.bool_())))
                    return Call("not", (node,)) if negated else node
            raise ExpressionError(f"cannot parse {self.text!r}: expected NULL, TRUE or FALSE after IS")
        negated = False
        if (
            t.kind == "kw"
            and t.text == "NOT"
            and self.peek(1).kind == "kw"
            and self.peek(1).text in ("IN", "BETWEEN", "LIKE", "ILIKE")
        ):
            self.next()
            negated = True
        if self.accept("kw", "IN"):
            self.expect("op", "(")
            items = [self.additive()]
            while self.accept("op", ","):
                items.append(self.additive())
            self.expect("op", ")")
            node = Call("in", (left,) + tuple(items))
        elif self.accept("kw", "BETWEEN"):
            lo = self.additive()
            self.expect("kw", "AND")
            hi = self.additive()
            node = Call("and", (Call(">=", (left, lo)), Call("<=", (left, hi))))
        elif self.accept("kw", "LIKE"):
            node = Call("like", (left, self.additive()))
        elif self.accept("kw", "ILIKE"):
            node = Call("ilike", (left, self.additive()))
        else:
            return left
        return Call("not", (node,)) if negated else node

    def additive(self) -> Node:
        node = self.multiplicative()
        while True:
            t = self.peek()
            if t.kind == "op" and t.text in ("+", "-", "||"):
                self.next()
                node = Call(t.text, (node, self.multiplicative()))
            else:
                return node

    def multiplicative(self) -> Node:
        node = self.unary()
        while True:
            t = self.peek()
            if t.kind == "op" and t.text in ("*", "/", "%"):
                self.next()
                node = Call(t.text, (node, self.unary()))
            elif t.kind == "kw" and t.text == "DIV":
                self.next()
                node = Call("div", (node, self.unary()))
            else:
                return node

    def unary(self) -> Node:
        if self.accept("op", "-"):
            operand = self.unary()
            if isinstance(operand, Lit) and isinstance(operand.value, (int, float, decimal.Decimal)):
                return (
                    _number(-operand.value)
                    if not isinstance(operand.value, float)
                    else Lit(-operand.value, pa.float64())
                )
            return Call("negate", (operand,))
        if self.accept("op", "+"):
            return self.unary()
        return self.primary()

    def primary(self) -> Node:
        t = self.next()
        if t.kind == "num":
            return _parse_number(t.text)
        if t.kind == "str":
            return Lit(t.value, pa.string())
        if t.kind == "op" and t.text == "(":
            node = self.or_()
            self.expect("op", ")")
            return node
        if t.kind == "kw":
            if t.text == "NULL":
                return Lit(None, pa.null())
            if t.text in ("TRUE", "FALSE"):
                return Lit(t.text == "TRUE", pa.bool_())
            if t.text in ("DATE", "TIMESTAMP", "TIMESTAMP_NTZ") and self.peek().kind == "str":
                text = self.next().value
                return _typed_literal(t.text, text)
            if t.text == "CAST":
                self.expect("op", "(")
                expr = self.or_()
                self.expect("kw", "AS")
                target = self.type_name()
                self.expect("op", ")")
                return Cast(expr, target)
            if t.text == "CASE":
                return self.case()
            if t.text in ("DATE", "TIMESTAMP") and self.peek().kind == "op" and self.peek().text == "(":
                return self.call(t.text.lower())
            raise ExpressionError(f"cannot parse {self.text!r}: unexpected {t.text}")
        if t.kind == "id":
            if self.peek().kind == "op" and self.peek().text == "(":
                return self.call(t.value.lower())
            path = [t.value]
            while self.accept("op", "."):
                nxt = self.next()
                if nxt.kind not in ("id", "kw"):
                    raise ExpressionError(f"cannot parse {self.text!r}: expected a field name after '.'")
                path.append(nxt.value if nxt.kind == "id" else nxt.text)
            return Col(tuple(path))
        raise ExpressionError(f"cannot parse {self.text!r}: unexpected {t.text or 'end of expression'!r}")

    def call(self, name: str) -> Node:
        self.expect("op", "(")
        args = []
        if not self.accept("op", ")"):
            args.append(self.or_())
            while self.accept("op", ","):
                args.append(self.or_())
            self.expect("op", ")")
        if name not in FUNCTIONS:
            raise ExpressionError(
                f"function {name}() is not supported by delta_pyds's expression "
                f"evaluator (supported: {', '.join(sorted(FUNCTIONS))})"
            )
        return Call(name, tuple(args))

    def case(self) -> Node:
        subject = None
        if not (self.peek().kind == "kw" and self.peek().text == "WHEN"):
            subject = self.or_()
        whens = []
        while self.accept("kw", "WHEN"):
            cond = self.or_()
            if subject is not None:
                cond = Call("=", (subject, cond))
            self.expect("kw", "THEN")
            whens.append((cond, self.or_()))
        default = self.or_() if self.accept("kw", "ELSE") else None
        self.expect("kw", "END")
        if not whens:
            raise ExpressionError(f"cannot parse {self.text!r}: CASE without WHEN")
        return Case(tuple(whens), default)

    def type_name(self) -> pa.DataType:
        t = self.next()
        name = (t.value if t.kind == "id" else t.text).lower()
        if name in ("decimal", "dec", "numeric"):
            p, s = 10, 0
            if self.accept("op", "("):
                p = int(self.expect("num").text)
                if self.accept("op", ","):
                    s = int(self.expect("num").text)
                self.expect("op", ")")
            return pa.decimal128(p, s)
        if name in ("varchar", "char") and self.accept("op", "("):
            self.expect("num")
            self.expect("op", ")")
            return pa.string()
        if name in _TYPE_NAMES:
            return _TYPE_NAMES[name]
        raise ExpressionError(f"CAST to {name} is not supported by delta_pyds's expression evaluator")


_TYPE_NAMES = {
    "tinyint": pa.int8(),
    "byte": pa.int8(),
    "smallint": pa.int16(),
    "short": pa.int16(),
    "int": pa.int32(),
    "integer": pa.int32(),
    "bigint": pa.int64(),
    "long": pa.int64(),
    "float": pa.float32(),
    "real": pa.float32(),
    "double": pa.float64(),
    "string": pa.string(),
    "varchar": pa.string(),
    "char": pa.string(),
    "boolean": pa.bool_(),
    "binary": pa.binary(),
    "date": pa.date32(),
    "timestamp": pa.timestamp("us", tz="UTC"),
    "timestamp_ltz": pa.timestamp("us", tz="UTC"),
    "timestamp_ntz": pa.timestamp("us"),
}


def _number(value: int | decimal.Decimal | float) -> Lit:
    if isinstance(value, int):
        if -(1 << 31) <= value < (1 << 31):
            return Lit(value, pa.int32())
        return Lit(value, pa.int64())
    if isinstance(value, decimal.Decimal):
        digits, exponent = value.as_tuple().digits, value.as_tuple().exponent
        if not isinstance(exponent, int) or abs(exponent) > 38:  # NaN/Infinity: not from digits
            return Lit(float(value), pa.float64())
        return Lit(value, pa.decimal128(max(len(digits), -exponent, 1), max(-exponent, 0)))
    return Lit(float(value), pa.float64())


def _parse_number(text: str) -> Lit:
    suffix = text[-1].lower() if text[-1].isalpha() else ""
    if text.lower().endswith("bd"):
        return _number(decimal.Decimal(text[:-2]))
    body = text[:-1] if suffix else text
    if suffix == "l":
        return Lit(int(body), pa.int64())
    if suffix in ("d", "f"):
        return Lit(float(body), pa.float64() if suffix == "d" else pa.float32())
    if suffix == "s":
        return Lit(int(body), pa.int16())
    if suffix == "y":
        return Lit(int(body), pa.int8())
    if "e" in body.lower():
        return Lit(float(body), pa.float64())
    if "." in body:
        return _number(decimal.Decimal(body))
    return _number(int(body))


def _typed_literal(kind: str, text: str) -> Lit:
    try:
        if kind == "DATE":
            return Lit(dt.date.fromisoformat(text.strip()[:10]), pa.date32())
        value = (
            pa.scalar(text.strip().replace("T", " ")).cast(pa.timestamp("us")).as_py()
            if kind == "TIMESTAMP_NTZ"
            else _parse_instant(text)
        )
        return Lit(value, pa.timestamp("us") if kind == "TIMESTAMP_NTZ" else pa.timestamp("us", tz="UTC"))
    except (ValueError, pa.ArrowInvalid):
        raise ExpressionError(f"invalid {kind} literal {text!r}") from None


def _parse_instant(text: str) -> dt.datetime:
    arr = pa.array([text.strip()])
    out = string_to_timestamp(arr, pa.timestamp("us", tz="UTC"))
    return out[0].as_py()


def parse(text: str) -> Node:
    """Parses a SQL expression into an AST (raises ExpressionError)."""
    if not isinstance(text, str) or not text.strip():
        raise ExpressionError("an empty expression")
    return _Parser(text).parse()

"""A small Spark SQL expression language: the parser (of :mod:`delta_pyds.expressions.lexer`'s
tokens), for what a writer must evaluate without Spark: CHECK constraints, column
invariants, generation expressions and ``replaceWhere`` predicates.

Supported: column references (case-insensitive, backticks, nested ``a.b``), literals
(numbers, strings, ``TRUE``/``FALSE``/``NULL``, ``DATE '...'``, ``TIMESTAMP '...'``,
``TIMESTAMP_NTZ '...'``), ``AND OR NOT``, comparisons ``= == <=> != <> < <= > >=``,
``IS [NOT] NULL``, ``[NOT] IN (...)``, ``[NOT] BETWEEN``, ``[NOT] LIKE``, ``+ - * / %
||``, ``CAST(x AS type)``, ``CASE WHEN``, and the functions listed in
:data:`~delta_pyds.expressions.functions.FUNCTIONS` (string, date/time part, null
handling, ``current_date()`` / ``current_timestamp()`` for column defaults). Dates and
times are evaluated in UTC.

Guarantees: :func:`parse_expression` returns a tree of :mod:`delta_pyds.expressions.ast` nodes and
raises :class:`~delta_pyds.errors.ExpressionError` for anything outside that
subset (naming it), so callers can refuse a write up front instead of guessing.
"""

from __future__ import annotations

import datetime as dt
import decimal
import math
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from delta_pyds.errors import ExpressionError, SqlParseError
from delta_pyds.expressions.ast import Call, Case, Cast, Col, Lit, Node
from delta_pyds.expressions.coercion import string_to_timestamp
from delta_pyds.expressions.functions import FUNCTIONS
from delta_pyds.expressions.lexer import DEFAULT_DIALECT, Dialect, Token, tokenize

# ------------------------------------------------------------------------ tokens
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


def _tokens(text: str, dialect: Dialect) -> list[_Tok]:
    """The parser's view of Spark's tokens (:mod:`delta_pyds.expressions.lexer`): comments
    and whitespace dropped, adjacent string literals joined into one (Spark's ``stringLit+``)."""
    try:
        lexed = [t for t in tokenize(text) if not t.blank]
    except SqlParseError as e:
        raise ExpressionError(f"cannot parse {text!r}: {e}") from None
    out: list[_Tok] = []
    for t in lexed:
        if t.is_identifier(dialect) and t.kind != "word":
            out.append(_Tok("id", t.text, t.value(dialect)))
        elif t.kind == "string":
            value = t.value(dialect)
            if any("\ud800" <= c <= "\udfff" for c in value):
                # Java keeps an unpaired UTF-16 surrogate in the literal and writes it to UTF-8
                # its own way: a value this package cannot hold exactly, so no reading of it
                raise ExpressionError(f"cannot parse {text!r}: a string literal with an unpaired surrogate")
            if out and out[-1].kind == "str":
                prev = out.pop()
                out.append(_Tok("str", prev.text + " " + t.text, prev.value + value))
            else:
                out.append(_Tok("str", t.text, value))
        elif t.kind == "word":
            up = t.upper
            out.append(_Tok("kw", up) if up in _KEYWORDS else _Tok("id", t.text, t.text))
        elif t.kind == "number":
            out.append(_Tok("num", t.text, t))
        else:
            out.append(_Tok("op", t.text))
    out.append(_Tok("end", ""))
    return out


# ---------------------------------------------------------------------------- parser
class _Parser:
    def __init__(self, text: str, dialect: Dialect):
        self.text = text
        self.toks = _tokens(text, dialect)
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
            return _parse_number(t.value)
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
        if -(1 << 63) <= value < (1 << 63):
            return Lit(value, pa.int64())
        return _number(decimal.Decimal(value))
    if isinstance(value, decimal.Decimal):
        digits, exponent = value.as_tuple().digits, value.as_tuple().exponent
        if not isinstance(exponent, int) or abs(exponent) > 38:  # NaN/Infinity: not from digits
            return Lit(float(value), pa.float64())
        return Lit(value, pa.decimal128(max(len(digits), -exponent, 1), max(-exponent, 0)))
    return Lit(float(value), pa.float64())


_INT_TYPES = {"bigint": (pa.int64(), 63), "smallint": (pa.int16(), 15), "tinyint": (pa.int8(), 7)}


def _parse_number(tok: Token) -> Lit:
    """A numeric literal typed as Spark types it (``1`` int, or bigint / decimal when it does
    not fit; ``1.5`` decimal; ``1e5`` / ``1D`` double; ``1F`` float; ``1L`` / ``1S`` / ``1Y``;
    ``1BD`` decimal); a suffixed integer out of its type's range is refused, as Spark refuses it."""
    kind, body = tok.number_type, tok.number_body
    if kind in _INT_TYPES:
        arrow_type, bits = _INT_TYPES[kind]
        value = int(body)
        if value >= 1 << bits:
            raise ExpressionError(f"numeric literal {tok.text} is out of range for {kind}")
        return Lit(value, arrow_type)
    if kind in ("double", "float"):
        value_f = float(body)
        if math.isinf(value_f):
            raise ExpressionError(f"numeric literal {tok.text} is out of range for {kind}")
        return Lit(value_f, pa.float64() if kind == "double" else pa.float32())
    if kind == "int":
        return _number(int(body))
    return _number(decimal.Decimal(body))


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


def parse_expression(text: str, dialect: Dialect = DEFAULT_DIALECT) -> Node:
    """Parses a SQL expression into an AST as Spark reads the same text under ``dialect``
    (raises ExpressionError for anything outside the subset)."""
    if not isinstance(text, str) or not text.strip():
        raise ExpressionError("an empty expression")
    return _Parser(text, dialect).parse()

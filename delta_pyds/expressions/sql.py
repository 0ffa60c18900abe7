"""A small Spark SQL expression language over Arrow, for what a writer must evaluate
without Spark: CHECK constraints, column invariants, generation expressions and
``replaceWhere`` predicates.

Supported: column references (case-insensitive, backticks, nested ``a.b``), literals
(numbers, strings, ``TRUE``/``FALSE``/``NULL``, ``DATE '...'``, ``TIMESTAMP '...'``,
``TIMESTAMP_NTZ '...'``), ``AND OR NOT``, comparisons ``= == <=> != <> < <= > >=``,
``IS [NOT] NULL``, ``[NOT] IN (...)``, ``[NOT] BETWEEN``, ``[NOT] LIKE``, ``+ - * / %
||``, ``CAST(x AS type)``, ``CASE WHEN``, and the functions listed in ``FUNCTIONS``
(string, date/time part, null handling,
``current_date()`` / ``current_timestamp()`` for column defaults). Dates and times are evaluated in UTC.

Guarantees: :func:`parse` raises :class:`ExpressionError` for anything outside that
subset (naming it), so callers can refuse a write up front instead of guessing;
:func:`evaluate` follows SQL null semantics (three-valued ``AND``/``OR``, nulls
propagate through comparisons and arithmetic) and raises :class:`ExpressionError` on
arithmetic overflow instead of wrapping around.
"""

from __future__ import annotations

import datetime as dt
import decimal
import re
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from delta_pyds.errors import DeltaError


class ExpressionError(DeltaError, ValueError):
    """An expression cannot be parsed or evaluated by delta_pyds."""


# ---------------------------------------------------------------------------- AST
@dataclass(frozen=True)
class Col:
    path: tuple[str, ...]


@dataclass(frozen=True)
class Lit:
    value: Any
    type: pa.DataType


@dataclass(frozen=True)
class Call:
    name: str
    args: tuple


@dataclass(frozen=True)
class Cast:
    expr: Any
    type: pa.DataType


@dataclass(frozen=True)
class Case:
    whens: tuple  # ((cond, value), ...)
    default: Any


def columns_of(node) -> set[tuple[str, ...]]:
    """Column paths an expression references."""
    if isinstance(node, Col):
        return {node.path}
    out: set = set()
    if isinstance(node, Call):
        for a in node.args:
            out |= columns_of(a)
    elif isinstance(node, Cast):
        out |= columns_of(node.expr)
    elif isinstance(node, Case):
        for c, v in node.whens:
            out |= columns_of(c) | columns_of(v)
        if node.default is not None:
            out |= columns_of(node.default)
    return out


# ------------------------------------------------------------------------ tokenizer
_TOKEN = re.compile(r"""
    (?P<ws>\s+)
  | (?P<num>(?:\d+\.\d*|\.\d+|\d+)(?:[eE][+-]?\d+)?[lLdDfFsSyY]?(?:BD|bd)?)
  | (?P<str>'(?:[^'\\]|\\.|'')*'|"(?:[^"\\]|\\.|"")*")
  | (?P<bq>`(?:[^`]|``)*`)
  | (?P<op><=>|<>|!=|<=|>=|==|\|\||[=<>+\-*/%(),.])
  | (?P<id>[A-Za-z_][A-Za-z_0-9]*)
""", re.VERBOSE)

_KEYWORDS = {"AND", "OR", "NOT", "IS", "NULL", "IN", "BETWEEN", "LIKE", "TRUE", "FALSE", "CAST", "AS",
             "CASE", "WHEN", "THEN", "ELSE", "END", "DATE", "TIMESTAMP", "TIMESTAMP_NTZ", "DIV", "ILIKE"}


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
            raise ExpressionError(f"cannot parse {text!r}: unexpected {text[pos:pos + 10]!r}")
        pos = m.end()
        kind = m.lastgroup
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

    def parse(self):
        node = self.or_()
        if self.peek().kind != "end":
            raise ExpressionError(f"cannot parse {self.text!r}: unexpected {self.peek().text!r}")
        return node

    def or_(self):
        node = self.and_()
        while self.accept("kw", "OR"):
            node = Call("or", (node, self.and_()))
        return node

    def and_(self):
        node = self.not_()
        while self.accept("kw", "AND"):
            node = Call("and", (node, self.not_()))
        return node

    def not_(self):
        if self.accept("kw", "NOT"):
            return Call("not", (self.not_(),))
        return self.predicate()

    def predicate(self):
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
        if t.kind == "kw" and t.text == "NOT" and self.peek(1).kind == "kw" and \
                self.peek(1).text in ("IN", "BETWEEN", "LIKE", "ILIKE"):
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

    def additive(self):
        node = self.multiplicative()
        while True:
            t = self.peek()
            if t.kind == "op" and t.text in ("+", "-", "||"):
                self.next()
                node = Call(t.text, (node, self.multiplicative()))
            else:
                return node

    def multiplicative(self):
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

    def unary(self):
        if self.accept("op", "-"):
            operand = self.unary()
            if isinstance(operand, Lit) and isinstance(operand.value, (int, float, decimal.Decimal)):
                return _number(-operand.value) if not isinstance(operand.value, float) else Lit(-operand.value, pa.float64())
            return Call("negate", (operand,))
        if self.accept("op", "+"):
            return self.unary()
        return self.primary()

    def primary(self):
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

    def call(self, name: str):
        self.expect("op", "(")
        args = []
        if not self.accept("op", ")"):
            args.append(self.or_())
            while self.accept("op", ","):
                args.append(self.or_())
            self.expect("op", ")")
        if name not in FUNCTIONS:
            raise ExpressionError(f"function {name}() is not supported by delta_pyds's expression "
                                  f"evaluator (supported: {', '.join(sorted(FUNCTIONS))})")
        return Call(name, tuple(args))

    def case(self):
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
    "tinyint": pa.int8(), "byte": pa.int8(), "smallint": pa.int16(), "short": pa.int16(),
    "int": pa.int32(), "integer": pa.int32(), "bigint": pa.int64(), "long": pa.int64(),
    "float": pa.float32(), "real": pa.float32(), "double": pa.float64(), "string": pa.string(),
    "varchar": pa.string(), "char": pa.string(), "boolean": pa.bool_(), "binary": pa.binary(),
    "date": pa.date32(), "timestamp": pa.timestamp("us", tz="UTC"), "timestamp_ltz": pa.timestamp("us", tz="UTC"),
    "timestamp_ntz": pa.timestamp("us"),
}


def _number(value) -> Lit:
    if isinstance(value, int):
        if -(1 << 31) <= value < (1 << 31):
            return Lit(value, pa.int32())
        return Lit(value, pa.int64())
    if isinstance(value, decimal.Decimal):
        return Lit(float(value), pa.float64()) if abs(value.as_tuple().exponent) > 38 else \
            Lit(value, pa.decimal128(max(len(value.as_tuple().digits), -value.as_tuple().exponent, 1),
                                     max(-value.as_tuple().exponent, 0)))
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
        value = pa.scalar(text.strip().replace("T", " ")).cast(pa.timestamp("us")).as_py() \
            if kind == "TIMESTAMP_NTZ" else _parse_instant(text)
        return Lit(value, pa.timestamp("us") if kind == "TIMESTAMP_NTZ" else pa.timestamp("us", tz="UTC"))
    except (ValueError, pa.ArrowInvalid):
        raise ExpressionError(f"invalid {kind} literal {text!r}") from None


def _parse_instant(text: str) -> dt.datetime:
    arr = pa.array([text.strip()])
    out = _string_to_timestamp(arr, pa.timestamp("us", tz="UTC"))
    return out[0].as_py()


def parse(text: str):
    """Parses a SQL expression into an AST (raises ExpressionError)."""
    if not isinstance(text, str) or not text.strip():
        raise ExpressionError("an empty expression")
    return _Parser(text).parse()


# ------------------------------------------------------------------------ evaluation
def _type_of(v) -> pa.DataType:
    return v.type


def _is_str(t):
    return pa.types.is_string(t) or pa.types.is_large_string(t)


def _is_num(t):
    return pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t)


def _string_to_timestamp(v, target):
    if isinstance(v, pa.Scalar):
        return _string_to_timestamp(pa.array([v.as_py()], v.type), target)[0]
    v = pc.replace_substring(v, "T", " ")
    if target.tz is not None:
        v = pc.replace_substring_regex(v, r"[Zz]$", "+00:00")
        has_off = pc.match_substring_regex(v, r"[+-]\d\d:?\d\d$")
        v = pc.if_else(has_off, v, pc.binary_join_element_wise(v, "+00:00", ""))
        v = pc.if_else(pc.match_substring_regex(v, r"^\d{4}-\d\d-\d\d\+"),
                       pc.replace_substring_regex(v, r"\+", " 00:00:00+", max_replacements=1), v)
    else:
        v = pc.if_else(pc.match_substring_regex(v, r"^\d{4}-\d\d-\d\d$"),
                       pc.binary_join_element_wise(v, " 00:00:00", ""), v)
    try:
        return v.cast(target)
    except pa.ArrowInvalid:
        return v.cast(pa.timestamp("ns", tz=target.tz)).cast(target, safe=False)


def cast(v, target: pa.DataType):
    """Spark-like cast of an Arrow array/scalar."""
    src = v.type
    if src == target:
        return v
    if pa.types.is_null(src):
        return pa.scalar(None, target) if isinstance(v, pa.Scalar) else pa.nulls(len(v), target)
    try:
        if _is_str(src) and pa.types.is_timestamp(target):
            return _string_to_timestamp(v, target)
        if _is_str(src) and pa.types.is_date(target):
            if isinstance(v, pa.Scalar):
                return pa.scalar(dt.date.fromisoformat(v.as_py().strip()[:10]) if v.is_valid else None, target)
            return pc.utf8_slice_codeunits(pc.utf8_trim_whitespace(v), 0, 10).cast(target)
        if _is_str(src) and pa.types.is_boolean(target):
            low = pc.utf8_lower(pc.utf8_trim_whitespace(v))
            return pc.if_else(pc.is_in(low, pa.array(["true", "t", "yes", "y", "1"])), True,
                              pc.if_else(pc.is_in(low, pa.array(["false", "f", "no", "n", "0"])), False,
                                         pa.scalar(None, pa.bool_())))
        if pa.types.is_timestamp(src) and pa.types.is_timestamp(target) and (src.tz is None) != (target.tz is None):
            return v.cast(pa.timestamp(src.unit, tz=target.tz)).cast(target)
        if pa.types.is_timestamp(src) and _is_str(target):
            return pc.strftime(v, "%Y-%m-%d %H:%M:%S")
        if pa.types.is_floating(src) and pa.types.is_integer(target):
            return pc.trunc(v).cast(target)
        if pa.types.is_boolean(src) and _is_str(target):
            return pc.if_else(v, "true", "false")
        return v.cast(target)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, ValueError) as exc:
        raise ExpressionError(f"cannot cast {src} to {target}: {exc}") from None


def _unify(a, b):
    """Brings two operands of a comparison or arithmetic to comparable types."""
    ta, tb = a.type, b.type
    if ta == tb or pa.types.is_null(ta) or pa.types.is_null(tb):
        if pa.types.is_null(ta) and not pa.types.is_null(tb):
            a = cast(a, tb)
        elif pa.types.is_null(tb) and not pa.types.is_null(ta):
            b = cast(b, ta)
        return a, b
    for x, y, flip in ((a, b, False), (b, a, True)):
        tx, ty = x.type, y.type
        if (pa.types.is_date(tx) or pa.types.is_timestamp(tx)) and _is_str(ty):
            y = cast(y, tx)
            return (y, x) if flip else (x, y)
        if pa.types.is_timestamp(tx) and pa.types.is_date(ty):
            y = cast(y, tx)
            return (y, x) if flip else (x, y)
        if _is_num(tx) and _is_str(ty):
            y = cast(y, pa.float64() if pa.types.is_floating(tx) else tx)
            return (y, x) if flip else (x, y)
        if pa.types.is_decimal(tx) and pa.types.is_floating(ty):
            x = cast(x, pa.float64())
            return (y, x) if flip else (x, y)
    if pa.types.is_timestamp(ta) and pa.types.is_timestamp(tb):
        return a, cast(b, ta)
    if _is_str(ta) and _is_str(tb):
        return cast(a, pa.string()), cast(b, pa.string())
    return a, b


def _call(fn: str, *args):
    try:
        return getattr(pc, fn)(*args)
    except pa.ArrowInvalid as exc:
        if "overflow" in str(exc).lower():
            raise ExpressionError(f"arithmetic overflow: {exc}") from None
        raise ExpressionError(str(exc)) from None
    except pa.ArrowNotImplementedError:
        if fn in ("equal", "not_equal", "less", "less_equal", "greater", "greater_equal",
                  "add_checked", "subtract_checked", "multiply_checked") and all(
                _is_num(a.type) for a in args):
            return getattr(pc, fn)(*[cast(a, pa.float64()) for a in args])
        raise ExpressionError(f"cannot apply {fn} to {', '.join(str(a.type) for a in args)}") from None


_CMP = {"=": "equal", "!=": "not_equal", "<": "less", "<=": "less_equal", ">": "greater", ">=": "greater_equal"}
_ARITH = {"+": "add_checked", "-": "subtract_checked", "*": "multiply_checked"}


def evaluate(node, batch: pa.RecordBatch | pa.Table):
    """Evaluates an expression over a batch whose columns have the logical names."""
    if isinstance(node, Lit):
        return pa.scalar(node.value, node.type)
    if isinstance(node, Col):
        return resolve_column(batch, node.path)
    if isinstance(node, Cast):
        return cast(evaluate(node.expr, batch), node.type)
    if isinstance(node, Case):
        conds = [_truthy(evaluate(c, batch), batch) for c, _ in node.whens]
        values = [evaluate(v, batch) for _, v in node.whens]
        default = evaluate(node.default, batch) if node.default is not None else pa.scalar(None, pa.null())
        target = next((v.type for v in values + [default] if not pa.types.is_null(v.type)), pa.null())
        values = [_broadcast(cast(v, target), batch) for v in values]
        default = _broadcast(cast(default, target), batch)
        cond_struct = pa.StructArray.from_arrays([_broadcast(c, batch) for c in conds],
                                                 names=[f"c{i}" for i in range(len(conds))])
        return pc.case_when(cond_struct, *values, default)
    name, args = node.name, node.args
    if name in ("and", "or"):
        a, b = (_as_bool(evaluate(x, batch)) for x in args)
        return (pc.and_kleene if name == "and" else pc.or_kleene)(a, b)
    if name == "not":
        return pc.invert(_as_bool(evaluate(args[0], batch)))
    if name in _CMP:
        a, b = _unify(evaluate(args[0], batch), evaluate(args[1], batch))
        return _call(_CMP[name], a, b)
    if name == "<=>":
        a, b = _unify(evaluate(args[0], batch), evaluate(args[1], batch))
        eq = pc.fill_null(_call("equal", a, b), False)
        both = pc.and_(pc.is_null(a), pc.is_null(b))
        return pc.or_(_broadcast(eq, batch), _broadcast(both, batch))
    if name in _ARITH:
        a, b = _unify(evaluate(args[0], batch), evaluate(args[1], batch))
        if name in ("+", "-") and pa.types.is_date(a.type) and pa.types.is_integer(b.type):
            days = pc.add_checked(a.cast(pa.int32()), b.cast(pa.int32())) if name == "+" else \
                pc.subtract_checked(a.cast(pa.int32()), b.cast(pa.int32()))
            return days.cast(pa.date32())
        return _call(_ARITH[name], a, b)
    if name == "/":
        a, b = evaluate(args[0], batch), evaluate(args[1], batch)
        if not (pa.types.is_decimal(a.type) and pa.types.is_decimal(b.type)):
            a, b = cast(a, pa.float64()), cast(b, pa.float64())
        b = pc.if_else(pc.equal(b, 0), pa.scalar(None, b.type), b)
        return _call("divide", a, b)
    if name == "div":
        a, b = evaluate(args[0], batch), evaluate(args[1], batch)
        a, b = cast(a, pa.int64()), cast(b, pa.int64())
        b = pc.if_else(pc.equal(b, 0), pa.scalar(None, pa.int64()), b)
        return _call("divide", a, b)
    if name == "%":
        return _mod(*(evaluate(x, batch) for x in args), batch)
    if name == "negate":
        return _call("negate_checked", evaluate(args[0], batch))
    if name == "||":
        return FUNCTIONS["concat"](batch, *[evaluate(x, batch) for x in args])
    if name == "isnull":
        return pc.is_null(_broadcast(evaluate(args[0], batch), batch))
    if name == "isnotnull":
        return pc.is_valid(_broadcast(evaluate(args[0], batch), batch))
    if name == "in":
        x = evaluate(args[0], batch)
        items = [evaluate(a, batch) for a in args[1:]]
        result = None
        for item in items:
            a, b = _unify(x, item)
            eq = _call("equal", a, b)
            result = eq if result is None else pc.or_kleene(result, eq)
        return result
    if name in ("like", "ilike"):
        x = evaluate(args[0], batch)
        pattern = args[1]
        if not (isinstance(pattern, Lit) and isinstance(pattern.value, str)):
            raise ExpressionError("LIKE needs a string literal pattern")
        return pc.match_like(cast(_broadcast(x, batch), pa.string()), pattern.value,
                             ignore_case=name == "ilike")
    fn = FUNCTIONS.get(name)
    if fn is None:
        raise ExpressionError(f"function {name}() is not supported")
    return fn(batch, *[evaluate(a, batch) for a in args])


def resolve_column(batch, path: tuple[str, ...]):
    names = batch.schema.names
    idx = batch.schema.get_field_index(path[0])
    if idx < 0:
        lowered = [i for i, n in enumerate(names) if n.lower() == path[0].lower()]
        if len(lowered) != 1:
            raise ExpressionError(f"column {path[0]!r} does not exist (columns: {', '.join(names)})")
        idx = lowered[0]
    arr = batch.column(idx)
    for name in path[1:]:
        if not pa.types.is_struct(arr.type):
            raise ExpressionError(f"{'.'.join(path)}: {name!r} is not a field of a struct")
        j = arr.type.get_field_index(name)
        if j < 0:
            matches = [k for k in range(arr.type.num_fields) if arr.type.field(k).name.lower() == name.lower()]
            if len(matches) != 1:
                raise ExpressionError(f"field {'.'.join(path)} does not exist")
            j = matches[0]
        arr = pc.struct_field(arr, [j])
    return arr


def _broadcast(v, batch):
    if isinstance(v, pa.Scalar):
        return pa.array([v.as_py()] * batch.num_rows, v.type) if not pa.types.is_null(v.type) \
            else pa.nulls(batch.num_rows)
    return v


def _as_bool(v):
    if pa.types.is_boolean(v.type):
        return v
    if pa.types.is_null(v.type):
        return cast(v, pa.bool_())
    raise ExpressionError(f"expected a boolean expression, got {v.type}")


def _truthy(v, batch):
    return pc.fill_null(_broadcast(_as_bool(v), batch), False)


def _mod(a, b, batch):
    a, b = _unify(a, b)
    a, b = _broadcast(a, batch), _broadcast(b, batch)
    if pa.types.is_decimal(a.type) or pa.types.is_decimal(b.type):
        a, b = cast(a, pa.float64()), cast(b, pa.float64())
    na = a.to_numpy(zero_copy_only=False)
    nb = b.to_numpy(zero_copy_only=False)
    valid = pc.and_(pc.is_valid(a), pc.and_(pc.is_valid(b), pc.not_equal(pc.fill_null(b, 0), 0)))
    mask = valid.to_numpy(zero_copy_only=False)
    out_type = a.type if pa.types.is_integer(a.type) else pa.float64()
    res = np.zeros(len(na), dtype=np.float64 if pa.types.is_floating(out_type) else np.int64)
    if mask.any():
        x = na[mask].astype(res.dtype)
        y = nb[mask].astype(res.dtype)
        res[mask] = np.fmod(x, y)
    return pa.array(res, mask=~mask).cast(out_type)


# --------------------------------------------------------------------- functions
def _f_coalesce(batch, *args):
    target = next((a.type for a in args if not pa.types.is_null(a.type)), pa.null())
    return pc.coalesce(*[cast(a, target) for a in args])


def _f_concat(batch, *args):
    strs = [cast(a, pa.string()) for a in args]
    return pc.binary_join_element_wise(*strs, "")


def _f_substring(batch, s, pos, length=None):
    s = cast(s, pa.string())
    if not isinstance(pos, pa.Scalar) or (length is not None and not isinstance(length, pa.Scalar)):
        raise ExpressionError("substring() needs literal positions")
    p = pos.as_py()
    n = length.as_py() if length is not None else None
    if p is None or (length is not None and n is None):
        return pa.nulls(batch.num_rows, pa.string())
    if p > 0:
        start = p - 1
    elif p == 0:
        start = 0
    else:
        start = p
    if n is None:
        return pc.utf8_slice_codeunits(s, start)
    if n <= 0:
        return pc.if_else(pc.is_valid(s), "", pa.scalar(None, pa.string()))
    if start < 0:
        stop = start + n
        return pc.utf8_slice_codeunits(s, start, stop) if stop < 0 else pc.utf8_slice_codeunits(s, start)
    return pc.utf8_slice_codeunits(s, start, start + n)


def _as_time(v):
    if _is_str(v.type):
        return cast(v, pa.timestamp("us", tz="UTC"))
    return v


def _part(fn):
    def run(batch, v):
        return getattr(pc, fn)(_as_time(v)).cast(pa.int32())
    return run


_JAVA_FORMAT = [("yyyy", "%Y"), ("yy", "%y"), ("MM", "%m"), ("dd", "%d"), ("HH", "%H"), ("mm", "%M"),
                ("ss", "%S"), ("SSSSSS", "%f"), ("EEE", "%a"), ("MMM", "%b")]


def _f_date_format(batch, v, fmt):
    if not isinstance(fmt, pa.Scalar):
        raise ExpressionError("date_format() needs a literal format")
    text, out, i = fmt.as_py(), "", 0
    while i < len(text):
        for java, c in _JAVA_FORMAT:
            if text.startswith(java, i):
                out += c
                i += len(java)
                break
        else:
            ch = text[i]
            if ch.isalpha():
                raise ExpressionError(f"date_format pattern letter {ch!r} is not supported")
            if ch == "'":
                j = text.index("'", i + 1)
                out += text[i + 1:j].replace("%", "%%")
                i = j + 1
                continue
            out += "%%" if ch == "%" else ch
            i += 1
    v = _as_time(v)
    if pa.types.is_date(v.type):
        v = v.cast(pa.timestamp("s"))
    return pc.strftime(v, out)


def _f_to_date(batch, v, fmt=None):
    if fmt is not None:
        raise ExpressionError("to_date() with a format is not supported")
    if pa.types.is_timestamp(v.type):
        return v.cast(pa.date32())
    return cast(v, pa.date32())


def _f_if(batch, cond, a, b):
    target = a.type if not pa.types.is_null(a.type) else b.type
    return pc.if_else(pc.fill_null(_as_bool(cond), False), cast(a, target), cast(b, target))


def _f_nullif(batch, a, b):
    x, y = _unify(a, b)
    return pc.if_else(pc.fill_null(pc.equal(x, y), False), pa.scalar(None, a.type), a)


def _f_date_add(batch, d, n):
    d = cast(d, pa.date32()) if not pa.types.is_date(d.type) else d
    return pc.add_checked(d.cast(pa.int32()), cast(n, pa.int32())).cast(pa.date32())


def _f_date_sub(batch, d, n):
    d = cast(d, pa.date32()) if not pa.types.is_date(d.type) else d
    return pc.subtract_checked(d.cast(pa.int32()), cast(n, pa.int32())).cast(pa.date32())


def _f_datediff(batch, a, b):
    a = cast(a, pa.date32()) if not pa.types.is_date(a.type) else a
    b = cast(b, pa.date32()) if not pa.types.is_date(b.type) else b
    return pc.subtract(a.cast(pa.int32()), b.cast(pa.int32()))


def _f_length(batch, v):
    if pa.types.is_binary(v.type):
        return pc.binary_length(v).cast(pa.int32())
    return pc.utf8_length(cast(v, pa.string())).cast(pa.int32())


def _f_round(batch, v, digits=None):
    nd = digits.as_py() if digits is not None else 0
    if pa.types.is_integer(v.type) and nd >= 0:
        return v
    return pc.round(v, ndigits=nd, round_mode="half_up")


def _now(batch):
    return pa.scalar(dt.datetime.now(dt.timezone.utc), pa.timestamp("us", tz="UTC"))


def _today(batch):
    return pa.scalar(dt.datetime.now(dt.timezone.utc).date(), pa.date32())


FUNCTIONS = {
    "current_timestamp": _now, "now": _now, "current_date": _today, "curdate": _today,
    "abs": lambda b, v: _call("abs_checked", v),
    "coalesce": _f_coalesce, "nvl": _f_coalesce, "ifnull": _f_coalesce,
    "lower": lambda b, v: pc.utf8_lower(cast(v, pa.string())),
    "lcase": lambda b, v: pc.utf8_lower(cast(v, pa.string())),
    "upper": lambda b, v: pc.utf8_upper(cast(v, pa.string())),
    "ucase": lambda b, v: pc.utf8_upper(cast(v, pa.string())),
    "length": _f_length, "char_length": _f_length, "character_length": _f_length,
    "trim": lambda b, v: pc.utf8_trim(cast(v, pa.string()), " "),
    "ltrim": lambda b, v: pc.utf8_ltrim(cast(v, pa.string()), " "),
    "rtrim": lambda b, v: pc.utf8_rtrim(cast(v, pa.string()), " "),
    "substring": _f_substring, "substr": _f_substring,
    "concat": _f_concat,
    "year": _part("year"), "month": _part("month"), "day": _part("day"), "dayofmonth": _part("day"),
    "hour": _part("hour"), "minute": _part("minute"), "second": _part("second"),
    "quarter": _part("quarter"), "dayofyear": _part("day_of_year"),
    "date_format": _f_date_format, "to_date": _f_to_date,
    "date": lambda b, v: _f_to_date(b, v),
    "timestamp": lambda b, v: cast(v, pa.timestamp("us", tz="UTC")),
    "date_add": _f_date_add, "date_sub": _f_date_sub, "datediff": _f_datediff,
    "isnull": lambda b, v: pc.is_null(_broadcast(v, b)),
    "isnotnull": lambda b, v: pc.is_valid(_broadcast(v, b)),
    "if": _f_if, "iff": _f_if, "nullif": _f_nullif,
    "greatest": lambda b, *vs: pc.max_element_wise(*vs, skip_nulls=True),
    "least": lambda b, *vs: pc.min_element_wise(*vs, skip_nulls=True),
    "round": _f_round,
    "startswith": lambda b, s, p: pc.starts_with(cast(s, pa.string()), p.as_py()),
    "endswith": lambda b, s, p: pc.ends_with(cast(s, pa.string()), p.as_py()),
    "contains": lambda b, s, p: pc.match_substring(cast(s, pa.string()), p.as_py()),
}


def evaluate_predicate(node, batch) -> pa.Array:
    """A boolean array (nulls kept) with one value per row of ``batch``."""
    result = evaluate(node, batch)
    result = _broadcast(_as_bool(result), batch)
    if isinstance(result, pa.ChunkedArray):
        result = result.combine_chunks()
    return result


def evaluate_value(node, batch, target: pa.DataType) -> pa.Array:
    """An expression's values for every row, cast to ``target``."""
    result = _broadcast(evaluate(node, batch), batch)
    if isinstance(result, pa.ChunkedArray):
        result = result.combine_chunks()
    return cast(result, target)

"""Parameters of :func:`delta_pyds.sql` bound into the text of a Delta statement.

Spark binds ``args`` itself where it evaluates the whole statement; a Delta statement is
split and its conditions and values reach ``DeltaTable`` as SQL text, so the markers are bound
here first. Guarantees: a marker is a token (``:name`` outside ``STRUCT<a: t>`` types, or
``?``), never text inside a string literal, a comment or a backquoted name; named markers
take ``args`` given as a dict, ``?`` markers a list, in order, as ``spark.sql`` does; each is
replaced by a literal of the type ``spark.sql(args=)`` gives the value (``lit``: an ``int``
is an INT or BIGINT by its range, ``float`` DOUBLE, ``Decimal`` DECIMAL, ``str`` STRING, ``bytes``
BINARY, ``date`` DATE, ``datetime`` TIMESTAMP (a naive one in the Python process's zone, as
pyspark converts it), ``timedelta`` INTERVAL DAY TO SECOND, ``bool``, ``None``, numpy scalars by
their dtype, lists and tuples as ARRAY), parenthesized where a sign could join a ``-`` before
it into a comment. A marker without a value, or a value of another type, raises
:class:`~delta_pyds.errors.SqlParameterError` naming it. No pyspark here."""

from __future__ import annotations

import datetime as dt
import math
import string
from collections.abc import Callable, Mapping
from decimal import Decimal
from typing import Any

from delta_pyds.errors import SqlParameterError
from delta_pyds.expressions.lexer import Token, tokenize

_COMPLEX_TYPES = frozenset({"ARRAY", "MAP", "STRUCT"})
_INT32 = 2**31
_INT64 = 2**63


def bind(text: str, args: Mapping[str, Any] | list[Any] | tuple[Any, ...]) -> str:
    """``text`` with every parameter marker replaced by its value's literal."""
    tokens = tokenize(text)
    named = {str(k): v for k, v in args.items()} if isinstance(args, Mapping) else None
    positional = list(args) if named is None else []
    out: list[str] = []
    used = 0
    skip_to = -1
    level = 0  # inside ARRAY< MAP< STRUCT< types, where "a: INT" is a field, not a marker
    for k, t in enumerate(tokens):
        if k < skip_to:
            continue
        if t.upper in _COMPLEX_TYPES and _next(tokens, k)[1] == "<":
            level += 1
        elif t.text == ">" and level:
            level -= 1
        if t.kind == "punct" and t.text == ":" and named is not None and not level:
            j, _ = _next(tokens, k)
            if j < len(tokens) and tokens[j].kind in ("word", "ident"):
                name = tokens[j].value()
                if name not in named:
                    raise SqlParameterError(
                        f"[UNBOUND_SQL_PARAMETER] the statement's parameter :{name} has no value in args"
                        f" (given: {', '.join(sorted(named)) or 'none'})"
                    )
                out.append(literal(named[name], name))
                skip_to = j + 1
                continue
        if t.kind == "punct" and t.text == "?" and named is None:
            if used >= len(positional):
                raise SqlParameterError(
                    f"[UNBOUND_SQL_PARAMETER] the statement has more ? markers than the {len(positional)} args given"
                )
            out.append(literal(positional[used], f"?{used + 1}"))
            used += 1
            continue
        out.append(t.text)
    return "".join(out)


def _next(tokens: list[Token], k: int) -> tuple[int, str]:
    j = k + 1
    while j < len(tokens) and tokens[j].blank:
        j += 1
    return j, tokens[j].text if j < len(tokens) else ""


def literal(value: Any, name: str) -> str:
    """The SQL literal of a parameter value (see the module docstring)."""
    numpy_text = _numpy_literal(value, name)
    if numpy_text is not None:
        return numpy_text
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int):
        if -_INT32 <= value < _INT32:
            return _signed(str(value))
        if -_INT64 <= value < _INT64:
            return _signed(f"{value}L")
        raise SqlParameterError(f"parameter {name}: {value} is out of the range of BIGINT")
    if isinstance(value, float):
        return _double(value, "D")
    if isinstance(value, Decimal):
        if not value.is_finite():
            raise SqlParameterError(f"parameter {name}: {value} is not a finite decimal")
        return _signed(format(value, "f") + "BD")
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return "X'" + bytes(value).hex().upper() + "'"
    return _temporal_or_array(value, name)


def _temporal_or_array(value: Any, name: str) -> str:
    if isinstance(value, dt.datetime):
        aware = value if value.tzinfo is not None else value.astimezone()  # naive: the process's zone
        utc = aware.astimezone(dt.timezone.utc)
        return f"TIMESTAMP '{utc.strftime('%Y-%m-%d %H:%M:%S.%f')}+00:00'"
    if isinstance(value, dt.date):
        return f"DATE '{value.isoformat()}'"
    if isinstance(value, dt.timedelta):
        micros = (value.days * 86400 + value.seconds) * 1_000_000 + value.microseconds
        sign = "-" if micros < 0 else ""
        days, rest = divmod(abs(micros), 86_400_000_000)
        secs, us = divmod(rest, 1_000_000)
        h, m, s = secs // 3600, secs // 60 % 60, secs % 60
        return f"INTERVAL '{sign}{days} {h:02d}:{m:02d}:{s:02d}.{us:06d}' DAY TO SECOND"
    if isinstance(value, (list, tuple)):
        return "ARRAY(" + ", ".join(literal(v, f"{name}[{i}]") for i, v in enumerate(value)) + ")"
    raise SqlParameterError(
        f"parameter {name}: a {type(value).__name__} cannot be bound in a Delta statement; give None, bool, int,"
        " float, Decimal, str, bytes, date, datetime, timedelta, a numpy scalar, or a list or tuple of them"
    )


def _signed(text: str) -> str:
    return f"({text})" if text.startswith("-") else text


def _double(value: float, suffix: str) -> str:
    kind = "DOUBLE" if suffix == "D" else "FLOAT"
    if math.isnan(value):
        return f"CAST('NaN' AS {kind})"
    if math.isinf(value):
        return f"CAST('{'-' if value < 0 else ''}Infinity' AS {kind})"
    return _signed(repr(float(value)) + suffix)


def _string(value: str) -> str:
    if "'" not in value and "\\" not in value:
        return f"'{value}'"
    # the same value under either spark.sql.parser.escapedStringLiterals setting
    return f"CAST(X'{value.encode('utf-8').hex().upper()}' AS STRING)"


def _numpy_literal(value: Any, name: str) -> str | None:
    kind = getattr(getattr(value, "dtype", None), "kind", None)
    if kind is None or not hasattr(value, "item") or getattr(value, "ndim", 0) != 0:
        return None
    item = value.item()
    size = value.dtype.itemsize
    if kind == "b":
        return "TRUE" if item else "FALSE"
    if kind in "iu":
        suffix = {1: "Y", 2: "S", 4: ""}.get(size, "L")
        return _signed(f"{item}{suffix}")
    if kind == "f":
        return _double(float(item), "F" if size == 4 else "D")
    return literal(item, name)


def format_text(text: str, kwargs: Mapping[str, Any], make_view: Callable[[Any], str]) -> str:
    """``text`` formatted as pyspark's ``spark.sql(text, **kwargs)`` formats it: a DataFrame
    becomes the name of a temporary view (``make_view``), a ``str`` a quoted string literal,
    anything else its ``str``; a Column (pyspark takes plain column references) is refused."""

    class _Formatter(string.Formatter):
        def get_field(self, field_name: str, args: Any, kw: Any) -> Any:
            obj, first = super().get_field(field_name, args, kw)
            return _format_value(obj, field_name, make_view), first

    return _Formatter().format(text, **kwargs)


def _format_value(value: Any, field: str, make_view: Callable[[Any], str]) -> Any:
    if hasattr(value, "createOrReplaceTempView"):
        return make_view(value)
    if type(value).__name__ == "Column":
        raise SqlParameterError(
            f"format argument {{{field}}}: a Column cannot be formatted into a Delta statement; give its name as text"
        )
    if isinstance(value, str):
        return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
    return value

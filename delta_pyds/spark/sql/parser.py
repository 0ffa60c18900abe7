"""A cursor over the tokens of one statement, and the table references Delta statements take.

Guarantees: a table reference is ``delta.`<path>``` (delta-spark's path syntax, ``@v<n>`` at
the end of the path is time travel to version n), a quoted path where delta-spark takes one
(``VACUUM '/p'``), or a name (``t``, ``db.t``, ``spark_catalog.db.t``). A Delta statement's
table (:meth:`Parser.table`, a :class:`Table`) is read with no resolution: a name is resolved
when the statement runs. In a query, a name is a table reference only where the resolver
(:data:`Resolver`: Spark's catalog and temporary views, see
:func:`delta_pyds.spark.sql.table_refs.resolver`) gives it a Delta table path, never a CTE in
scope (:meth:`Parser.table_ref`). Name parts are kept apart (```a.b``` is one part);
``CASE ... END`` nests like parentheses when a clause is cut at a keyword; ``VERSION AS OF n``
/ ``TIMESTAMP AS OF '...'`` (with or without ``FOR``, and the ``SYSTEM_VERSION`` /
``SYSTEM_TIME`` spellings) after a reference are taken with it. Every error is a
:class:`~delta_pyds.errors.SqlParseError` that names the statement, the position and the
supported form. No pyspark here."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import NoReturn

from delta_pyds.errors import SqlParseError
from delta_pyds.expressions.lexer import DEFAULT_DIALECT, Dialect, Token, tokenize


def split_at_version(path: str) -> tuple[str, int | None]:
    """delta-spark's ``<path>@v<n>`` time travel: (path, n), or (path, None) without it."""
    head, at, tail = path.rpartition("@")
    if at and len(tail) > 1 and tail[0] in "vV" and tail[1:].isascii() and tail[1:].isdigit():
        return head, int(tail[1:])
    return path, None


def quote_part(part: str) -> str:
    """One name part as Spark's ``quoteIfNeeded`` writes it (backquoted unless it is ASCII
    letters, digits and ``_``, not all digits)."""
    if part and part.isascii() and all(c.isalnum() or c == "_" for c in part) and not part.isdigit():
        return part
    return "`" + part.replace("`", "``") + "`"


def name_text(parts: Sequence[str]) -> str:
    """A multipart name as SQL text (``db.`my table```)."""
    return ".".join(quote_part(p) for p in parts)


def _plain_identifier(word: str) -> bool:
    return word.isascii() and all(c.isalnum() or c == "_" for c in word) and not word[0].isdigit()


@dataclass(frozen=True)
class NamedTable:
    """What a resolver gives a name: the Delta table's path and ``kind`` (``"table"``: a
    catalog table; ``"view"``: a temporary view over a whole ``pydelta`` table)."""

    path: str
    kind: str


NOT_A_TABLE = (
    "expected a Delta table: delta.`/path`, a Delta table of Spark's catalog (t, db.t,"
    " spark_catalog.db.t) or a temporary view over a pydelta table"
)

# name parts, and whether temporary views count (the targets of Delta statements) -> the table or None
Resolver = Callable[[tuple[str, ...], bool], "NamedTable | None"]


@dataclass(frozen=True)
class TableRef:
    """A Delta table named in a statement: its path, time travel, and where it is in the text."""

    path: str
    version: int | None
    timestamp: str | None
    start: int
    end: int
    name: str | None = None  # the session name it was given by, if any
    # the alias a substituted name needs so that columns qualified by it still resolve
    # (``SELECT events.id FROM events``): its last part, when the text gives no alias
    qualifier: str | None = None

    def read_options(self) -> dict[str, str]:
        if self.version is not None:
            return {"versionAsOf": str(self.version)}
        if self.timestamp is not None:
            return {"timestampAsOf": self.timestamp}
        return {}


@dataclass(frozen=True)
class Table:
    """A table a statement names: ``path`` (``delta.`p```, ``delta.`p@v3```, ``'p'``) or
    ``name`` (its parts: ``("db", "t")``), with time travel where the statement takes it;
    ``position`` is where it starts in the text (for errors; not compared)."""

    path: str | None = None
    name: tuple[str, ...] | None = None
    version: int | None = None
    timestamp: str | None = None
    position: int = field(default=0, compare=False)

    @property
    def text(self) -> str:
        """How the statement spells it (for messages)."""
        return name_text(self.name) if self.name is not None else f"delta.`{self.path}`"


class Parser:
    """Non-whitespace tokens of one statement with a cursor; ``form`` is the supported form
    named in errors. ``resolve`` turns a name at a table-reference position of a query into a
    Delta table (:func:`delta_pyds.spark.sql.table_refs.resolver`); without it only
    ``delta.`path``` references are tables there. ``dialect``: how string literals read
    (the session's, :func:`delta_pyds.spark.session.dialect.session_dialect`)."""

    def __init__(self, text: str, resolve: Resolver | None = None, dialect: Dialect = DEFAULT_DIALECT):
        self.text = text
        self.dialect = dialect
        self.resolve = resolve  # a name's Delta table, or None
        self.resolved: dict[tuple[tuple[str, ...], bool], NamedTable | None] = {}
        self.tokens = [t for t in tokenize(text) if not t.blank]
        while self.tokens and self.tokens[-1].text == ";":
            self.tokens.pop()
        self.i = 0
        self.statement = ""
        self.form = ""

    # --------------------------------------------------------------- cursor
    def peek(self, k: int = 0) -> Token | None:
        j = self.i + k
        return self.tokens[j] if 0 <= j < len(self.tokens) else None

    def at(self, *words: str) -> bool:
        for k, w in enumerate(words):
            t = self.peek(k)
            if t is None or (t.upper if w.isalpha() or "_" in w else t.text) != w:
                return False
        return True

    def accept(self, *words: str) -> bool:
        if self.at(*words):
            self.i += len(words)
            return True
        return False

    def expect(self, *words: str) -> None:
        if not self.accept(*words):
            self.fail(f"expected {' '.join(words)}")

    def done(self) -> bool:
        return self.i >= len(self.tokens)

    def end(self) -> None:
        if not self.done():
            self.fail("unexpected text")

    def position(self) -> int:
        t = self.peek()
        return t.start if t is not None else len(self.text.rstrip().rstrip(";"))

    def fail(self, what: str) -> NoReturn:
        pos = self.position()
        near = self.text[pos : pos + 40].strip() or "end of statement"
        raise SqlParseError(f"{self.statement}: {what} at position {pos} (near {near!r}); supported form: {self.form}")

    def word(self) -> str:
        t = self.peek()
        if t is None or t.kind not in ("word", "ident"):
            self.fail("expected a name")
        self.i += 1
        return t.value()

    def integer(self) -> int:
        t = self.peek()
        if t is None or t.kind != "number" or not t.text.isdigit():
            self.fail("expected a non-negative integer")
        self.i += 1
        return int(t.text)

    def number(self, clause: str = "") -> float:
        """A finite number (``clause`` names what it is for in errors)."""
        t = self.peek()
        if t is None or t.kind != "number":
            self.fail("expected a number")
        value = float(t.number_body)
        if not math.isfinite(value):
            self.fail(f"{clause or 'the number'} {t.text} is out of range (expected a finite number)")
        self.i += 1
        return value

    def string(self) -> str:
        t = self.peek()
        if t is None or t.kind != "string":
            self.fail("expected a quoted string")
        self.i += 1
        return t.value(self.dialect)

    def rest(self) -> str:
        """The text from the cursor to the end of the statement (without a final ``;``)."""
        if self.done():
            return ""
        start = self.tokens[self.i].start
        end = self.tokens[-1].end
        self.i = len(self.tokens)
        return self.text[start:end]

    def until(self, *stops: str, allow_end: bool = True) -> str:
        """The text from the cursor up to the first top-level (outside parentheses and
        ``CASE ... END``) word in ``stops`` (or the end); the cursor moves there."""
        depth = 0
        cases = 0
        start = self.i
        while not self.done():
            t = self.tokens[self.i]
            if t.text == "(":
                depth += 1
            elif t.text == ")":
                if depth == 0:
                    break
                depth -= 1
            elif depth == 0 and t.upper == "CASE" and not self._qualified(self.i):
                cases += 1
            elif depth == 0 and cases and t.upper == "END" and not self._qualified(self.i):
                cases -= 1
            elif depth == 0 and not cases and (t.upper or t.text) in stops:
                break
            self.i += 1
        if self.i == start:
            self.fail("expected an expression")
        if self.done() and not allow_end:
            self.fail(f"expected {' or '.join(stops)}")
        return self.text[self.tokens[start].start : self.tokens[self.i - 1].end]

    def _qualified(self, k: int) -> bool:
        """Token ``k`` follows or precedes a ``.`` (a name part such as ``t.case``, not a keyword)."""
        before = k > 0 and self.tokens[k - 1].text == "."
        return before or (k + 1 < len(self.tokens) and self.tokens[k + 1].text == ".")

    def split_top(self, text_stop: tuple[str, ...]) -> list[str]:
        """Comma-separated items up to a top-level word in ``text_stop`` (or the end)."""
        items = [self.until(*text_stop, ",")]
        while self.accept(","):
            items.append(self.until(*text_stop, ","))
        return items

    def parenthesized(self) -> str:
        """The text inside a pair of parentheses at the cursor."""
        if not self.accept("("):
            self.fail("expected (")
        inner = self.until(allow_end=False) if not self.at(")") else ""
        self.expect(")")
        return inner

    def type_text(self, *stops: str) -> str:
        """The text of a Spark SQL type at the cursor (``decimal(10, 2)``, ``struct<a: int,
        b: array<string>>``): up to a top-level ``,`` or ``)`` or one of the words ``stops``
        (``<...>`` and ``(...)`` nest)."""
        start = self.i
        depth = 0
        while not self.done():
            t = self.tokens[self.i]
            if t.text in ("(", "<"):
                depth += 1
            elif t.text in (")", ">"):
                if depth == 0:
                    break
                depth -= 1
            elif depth == 0 and (t.text == "," or t.upper in stops):
                break
            self.i += 1
        if self.i == start:
            self.fail("expected a column type")
        return self.text[self.tokens[start].start : self.tokens[self.i - 1].end]

    def properties(self) -> dict[str, str]:
        """``( key [=] value, ... )``: keys as dotted names or strings, values as strings,
        numbers or words (TBLPROPERTIES)."""
        self.expect("(")
        props: dict[str, str] = {}
        while True:
            t = self.peek()
            key = self.string() if t is not None and t.kind == "string" else self.dotted()
            self.accept("=")
            t = self.peek()
            if t is None or t.kind not in ("string", "number", "word"):
                self.fail("expected a property value")
            props[key] = t.value(self.dialect)
            self.i += 1
            if not self.accept(","):
                break
        self.expect(")")
        return props

    def name_list(self) -> list[str]:
        """``(a, b.c, ...)`` or ``a, b`` as names."""
        paren = self.accept("(")
        names = [self.dotted()]
        while self.accept(","):
            names.append(self.dotted())
        if paren:
            self.expect(")")
        return names

    def dotted(self) -> str:
        """A multipart name joined with ``.`` (for keys and names where a part never holds a
        dot: property keys, partition and Z-order columns)."""
        return ".".join(self.parts())

    def parts(self) -> tuple[str, ...]:
        """A multipart name (``a.`b.c```) as its parts (``("a", "b.c")``)."""
        parts = [self.word()]
        while self.at(".") and self.peek(1) is not None and self.peek(1).kind in ("word", "ident"):  # type: ignore[union-attr]
            self.i += 1
            parts.append(self.word())
        return tuple(parts)

    def lookup(self, parts: tuple[str, ...], views: bool) -> NamedTable | None:
        """The resolver's answer for a name (asked once per statement)."""
        if self.resolve is None:
            return None
        key = (parts, views)
        if key not in self.resolved:
            self.resolved[key] = self.resolve(parts, views)
        return self.resolved[key]

    # ------------------------------------------------------------- tables
    def table_ref(
        self,
        *,
        allow_string: bool = False,
        time_travel: bool = False,
        views: bool = False,
        ctes: frozenset[str] = frozenset(),
    ) -> TableRef | None:
        """The Delta table reference at the cursor (and its time travel), or None if the cursor
        is not at one (the cursor does not move then). Call it only where Spark's grammar has
        a table reference. ``views``: the position is a Delta statement's target, where a
        temporary view over a whole ``pydelta`` table counts too; ``ctes``: the CTE names in
        scope (lower-cased), which shadow every other table of one-part name."""
        t = self.peek()
        if t is None:
            return None
        start = t.start
        path: str | None = None
        name = None
        if t.upper == "DELTA" and self.at("DELTA", ".") and (n := self.peek(2)) is not None and n.kind == "ident":
            path = n.value()
            self.i += 3
        elif allow_string and t.kind == "string":
            path = t.value(self.dialect)
            self.i += 1
        elif t.kind in ("word", "ident"):
            save = self.i
            parts = self.parts()
            # Spark refuses an unquoted name part that is not ASCII letters, digits and _
            # (INVALID_IDENTIFIER): such a name is left for Spark to refuse
            words = [tok.text for tok in self.tokens[save : self.i] if tok.kind == "word"]
            shadowed = any(not _plain_identifier(w) for w in words)
            shadowed = shadowed or (len(parts) == 1 and parts[0].lower() in ctes)
            found = None if shadowed or self.resolve is None else self.lookup(parts, views)
            if found is None:
                self.i = save
                return None
            path, name = found.path, name_text(parts)
        else:
            return None
        version = None
        if name is None:
            path, version = split_at_version(path)
        end = self.tokens[self.i - 1].end
        timestamp = None
        if time_travel:
            version, timestamp, end = self._time_travel(version, end)
        if not path:
            self.fail("empty table path")
        return TableRef(path, version, timestamp, start, end, name)

    def _time_travel(self, version: int | None, end: int) -> tuple[int | None, str | None, int]:
        """An optional ``[FOR] VERSION AS OF n | TIMESTAMP AS OF 'ts'`` at the cursor."""
        save = self.i
        self.accept("FOR")
        timestamp = None
        if self.accept("VERSION", "AS", "OF") or self.accept("SYSTEM_VERSION", "AS", "OF"):
            if version is not None:
                self.fail("two versions given")
            version = self.version_number("VERSION AS OF")
            end = self.tokens[self.i - 1].end
        elif self.accept("TIMESTAMP", "AS", "OF") or self.accept("SYSTEM_TIME", "AS", "OF"):
            if version is not None:
                self.fail("a version and a timestamp given")
            timestamp = self.string()
            end = self.tokens[self.i - 1].end
        else:
            self.i = save
        return version, timestamp, end

    def version_number(self, clause: str) -> int:
        """A table version: a non-negative integer, or a string holding one (as Spark takes
        ``VERSION AS OF '3'``)."""
        t = self.peek()
        if t is not None and t.kind == "string":
            text = t.value(self.dialect).strip()
            if not (text.isascii() and text.isdigit()):
                self.fail(f"expected a non-negative integer version after {clause}, got {t.text}")
            self.i += 1
            return int(text)
        if t is None or t.kind != "number" or not t.text.isdigit():
            self.fail(f"expected a non-negative integer version after {clause}")
        self.i += 1
        return int(t.text)

    def table(self, *, allow_string: bool = False, time_travel: bool = False) -> Table | None:
        """The table a statement names at the cursor, or None (the cursor does not move then):
        ``delta.`path``` (``@v<n>`` at its end is version n), a quoted path when
        ``allow_string``, or a name of plain identifiers (resolved when the statement runs;
        a name with an unquoted part Spark refuses is None); with ``time_travel``, an
        optional ``[FOR] VERSION AS OF n | TIMESTAMP AS OF 'ts'`` after it. No resolution here."""
        t = self.peek()
        if t is None:
            return None
        path: str | None = None
        name: tuple[str, ...] | None = None
        version = None
        if t.upper == "DELTA" and self.at("DELTA", ".") and (n := self.peek(2)) is not None and n.kind == "ident":
            path, version = split_at_version(n.value())
            self.i += 3
        elif allow_string and t.kind == "string":
            path, version = split_at_version(t.value(self.dialect))
            self.i += 1
        elif t.kind in ("word", "ident"):
            save = self.i
            name = self.parts()
            if any(not _plain_identifier(w.text) for w in self.tokens[save : self.i] if w.kind == "word"):
                self.i = save
                return None
        else:
            return None
        timestamp = None
        if time_travel:
            version, timestamp, _ = self._time_travel(version, 0)
        if path is not None and not path:
            self.fail("empty table path")
        return Table(path, name, version, timestamp, t.start)

    def require_table(self, *, allow_string: bool = False) -> Table:
        """The table a Delta statement names at the cursor (see :meth:`table`)."""
        ref = self.table(allow_string=allow_string)
        if ref is None:
            self.fail(NOT_A_TABLE)
        assert ref is not None
        return ref

    def alias(self, *stops: str) -> str | None:
        """An optional ``[AS] alias`` (a word not in ``stops``)."""
        if self.accept("AS"):
            return self.word()
        t = self.peek()
        if t is not None and t.kind in ("word", "ident") and t.upper not in stops:
            return self.word()
        return None

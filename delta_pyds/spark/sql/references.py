"""Where Spark's grammar has a table reference in a statement that is not a Delta statement,
and which CTE names are in scope there.

Guarantees: :func:`query_refs` returns the Delta tables named at table-reference positions
only: a relation of a ``FROM`` list or a ``JOIN`` (``LATERAL`` skipped, parenthesized
relations and subqueries walked), ``TABLE t`` as a query, ``TABLE t`` / ``TABLE(t)`` as a
table argument of a function; never a column, an alias, a function name or argument, a
lambda variable, a struct field, or text in a literal or comment. A one-part name that a CTE
in scope defines (``WITH [RECURSIVE] x AS (...)``: in later CTEs, the query and its
subqueries; in its own definition only with ``RECURSIVE``) is the CTE, never a table. It reads
queries (``SELECT``, ``WITH``, ``FROM``-first, ``VALUES``, ``TABLE``, parenthesized, set
operations), ``EXPLAIN <statement>``, ``DESCRIBE QUERY <query>``, ``DESCRIBE [TABLE] <t>``,
the query of ``INSERT INTO | OVERWRITE`` (not the target: a Delta target is a Delta
statement), and of ``CREATE ... AS <query>`` / ``CACHE [LAZY] TABLE t [AS] <query>``. Any
other statement, a ``WITH`` before something that is not a query, and the rest of a ``FROM``
list after an inline ``VALUES`` table are not classified: nothing there is substituted
(:attr:`Walk.classified` says so, for the caller's error). No pyspark here."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from delta_pyds.expressions.lexer import Token
from delta_pyds.spark.sql.parser import Parser, TableRef, quote_part

_QUERY_START = frozenset({"SELECT", "WITH", "FROM", "VALUES", "TABLE", "MAP", "REDUCE"})
_CLAUSE_ENDS_FROM = frozenset(
    {
        "SELECT", "WHERE", "GROUP", "HAVING", "WINDOW", "QUALIFY", "ORDER", "SORT", "CLUSTER", "DISTRIBUTE",
        "LIMIT", "OFFSET", "UNION", "EXCEPT", "INTERSECT", "MINUS", "LATERAL", "PIVOT", "UNPIVOT", "INSERT",
    }
)  # fmt: skip
_SET_OPERATORS = frozenset({"UNION", "EXCEPT", "INTERSECT", "MINUS", "ALL", "DISTINCT"})
_NOT_ALIASES = _CLAUSE_ENDS_FROM | {
    "JOIN", "CROSS", "INNER", "LEFT", "RIGHT", "FULL", "NATURAL", "SEMI", "ANTI", "ON", "USING", "TABLESAMPLE",
    "WITH", "FOR", "VERSION", "TIMESTAMP", "SYSTEM_VERSION", "SYSTEM_TIME",
}  # fmt: skip
_EXPLAIN_MODES = frozenset({"LOGICAL", "FORMATTED", "EXTENDED", "CODEGEN", "COST"})


@dataclass
class Walk:
    """The table-reference positions found: (token index, CTE names in scope, whether an
    alias may follow: a relation of FROM / JOIN, not ``TABLE t`` or ``DESCRIBE t``)."""

    tokens: list[Token]
    found: list[tuple[int, frozenset[str], bool]] = field(default_factory=list)
    classified: bool = True

    def key(self, i: int) -> str:
        """The keyword or punctuation of token ``i`` (``""`` past the end)."""
        if i >= len(self.tokens):
            return ""
        t = self.tokens[i]
        return t.upper or (t.text if t.kind == "punct" else "")

    def name_token(self, i: int) -> bool:
        return i < len(self.tokens) and self.tokens[i].kind in ("word", "ident")

    def starts_query(self, i: int) -> bool:
        return self.key(i) in _QUERY_START and not (self.key(i) == "WITH" and self.key(i + 1) == "(")

    # ------------------------------------------------------------ statements
    def statement(self) -> None:
        i = 0
        while self.key(i) == "EXPLAIN":
            i += 1
            while self.key(i) in _EXPLAIN_MODES:
                i += 1
        head = self.key(i)
        if self.starts_query(i) or head == "(":
            self.after_query(self.query(i, frozenset()))
        elif head == "INSERT":
            self.insert(i + 1)
        elif head in ("DESCRIBE", "DESC"):
            self.describe(i + 1)
        elif head in ("CREATE", "CACHE", "REPLACE"):
            self.as_query(i + 1)
        else:
            self.classified = False

    def after_query(self, i: int) -> None:
        if i < len(self.tokens):  # a stray ')' or text after the query: not a form we read
            self.classified = False

    def insert(self, i: int) -> None:
        """``INSERT INTO|OVERWRITE [TABLE] target ... <query>``: the query's references."""
        n = len(self.tokens)
        if self.key(i) in ("INTO", "OVERWRITE"):
            i += 1
        if self.key(i) == "TABLE":
            i += 1
        while self.name_token(i) and self.key(i) not in _QUERY_START:
            i += 2 if self.key(i + 1) == "." else 1
        while i < n:
            if self.key(i) == "(":
                if self.starts_query(i + 1):
                    break
                i = self.expression(i + 1, frozenset()) + 1
            elif self.starts_query(i):
                break
            else:
                i += 1
        if i >= n:
            self.classified = False
            return
        self.after_query(self.query(i, frozenset()))

    def describe(self, i: int) -> None:
        if self.key(i) == "QUERY":
            self.after_query(self.query(i + 1, frozenset()))
            return
        if self.key(i) == "TABLE":
            i += 1
        if self.key(i) in ("EXTENDED", "FORMATTED"):
            i += 1
        if self.name_token(i) and self.key(i) not in ("HISTORY", "DETAIL", "FUNCTION", "DATABASE", "SCHEMA"):
            self.found.append((i, frozenset(), False))
        else:
            self.classified = False

    def as_query(self, i: int) -> None:
        """``CREATE ... AS <query>``, ``CACHE [LAZY] TABLE t [OPTIONS (...)] [AS] <query>``."""
        n = len(self.tokens)
        cache = self.key(i - 1) == "CACHE"
        while i < n:
            k = self.key(i)
            if k == "(":
                i = self.expression(i + 1, frozenset()) + 1
                continue
            if k == "AS" and (self.starts_query(i + 1) or self.key(i + 1) == "("):
                self.after_query(self.query(i + 1, frozenset()))
                return
            if cache and i > 0 and self.starts_query(i) and k != "TABLE":
                self.after_query(self.query(i, frozenset()))
                return
            i += 1
        self.classified = False

    # --------------------------------------------------------------- queries
    def query(self, i: int, scope: frozenset[str]) -> int:
        """A query at ``i``; returns the index of the ``)`` closing it (or the end)."""
        if self.key(i) == "WITH":
            i, scope = self.ctes(i + 1, scope)
            if not (self.starts_query(i) or self.key(i) == "("):
                self.classified = False  # WITH before DML or another statement: not read here
                return len(self.tokens)
        return self.body(i, scope)

    def ctes(self, i: int, scope: frozenset[str]) -> tuple[int, frozenset[str]]:
        """``[RECURSIVE] name [(cols)] [AS] (query), ...``: the index after them, the scope."""
        recursive = self.key(i) == "RECURSIVE"
        i += recursive
        defined = set(scope)
        while self.name_token(i):
            name = self.tokens[i].value().lower()
            i += 1
            if self.key(i) == "(" and not self.starts_query(i + 1):
                i = self.expression(i + 1, frozenset()) + 1
            if self.key(i) == "AS":
                i += 1
            if self.key(i) != "(":
                self.classified = False
                return len(self.tokens), frozenset(defined)
            own = frozenset(defined | {name}) if recursive else frozenset(defined)
            i = self.query(i + 1, own) + 1
            defined.add(name)
            if self.key(i) != ",":
                break
            i += 1
        return i, frozenset(defined)

    def body(self, i: int, scope: frozenset[str], in_from: bool = False) -> int:
        """Clauses of one query level (or the relations of a parenthesized relation when
        ``in_from``); returns the index of the ``)`` ending the level (or the end)."""
        n = len(self.tokens)
        expect_relation = in_from
        alias_ok = True
        prev = ""
        while i < n:
            k = self.key(i)
            if k == ")":
                return i
            if expect_relation:
                i, values = self.relation(i, scope, alias_ok)
                expect_relation, alias_ok, prev = False, True, ""
                in_from = in_from and not values
                continue
            if k == "(":
                i = (self.query(i + 1, scope) if self.starts_query(i + 1) else self.expression(i + 1, scope)) + 1
                prev = ")"
                continue
            if k == "TABLE" and prev in _SET_OPERATORS | {""} and self.name_token(i + 1):
                expect_relation, alias_ok = True, False
            elif k == "FROM" and prev != "DISTINCT":
                in_from = expect_relation = True
            elif k in _CLAUSE_ENDS_FROM:
                in_from = False
            elif in_from and k in ("JOIN", ","):
                expect_relation = True
            prev = k or "word"
            i += 1
        return i

    def relation(self, i: int, scope: frozenset[str], alias_ok: bool = True) -> tuple[int, bool]:
        """One relation primary at ``i``: (the index after it, whether it was an inline
        ``VALUES`` table, after which the FROM list is not read)."""
        if self.key(i) == "LATERAL":
            i += 1
        k = self.key(i)
        if k == "(":
            if self.starts_query(i + 1):
                return self.query(i + 1, scope) + 1, False
            return self.body(i + 1, scope, in_from=True) + 1, False
        if k == "VALUES":
            return i, True
        if k == "{":  # a pyspark format argument ({df})
            while i < len(self.tokens) and self.key(i) != "}":
                i += 1
            return i + 1, False
        if not self.name_token(i):
            return i, False
        start = i
        while self.key(i + 1) == "." and self.name_token(i + 2):
            i += 2
        if self.key(i + 1) == "(":  # a table-valued function (IDENTIFIER(...) too)
            return self.expression(i + 2, scope) + 1, False
        self.found.append((start, scope, alias_ok))
        return i + 1, False

    def expression(self, i: int, scope: frozenset[str]) -> int:
        """Inside parentheses that hold no query: subqueries and ``TABLE t`` arguments only;
        returns the index of the closing ``)``."""
        n = len(self.tokens)
        while i < n:
            k = self.key(i)
            if k == ")":
                return i
            if k == "(":
                i = (self.query(i + 1, scope) if self.starts_query(i + 1) else self.expression(i + 1, scope)) + 1
                continue
            if k == "TABLE" and self.key(i - 1) in ("(", ",") and (self.name_token(i + 1) or self.key(i + 1) == "("):
                i, _ = self.relation(i + 1, scope, alias_ok=False)
                continue
            i += 1
        return i


def walk(parser: Parser) -> Walk:
    """The table-reference positions of the statement ``parser`` holds."""
    w = Walk(parser.tokens)
    w.statement()
    return w


def query_refs(parser: Parser) -> list[TableRef]:
    """Every Delta table at a table-reference position (see the module docstring), with its
    time travel, in text order."""
    refs = []
    for i, scope, alias_ok in walk(parser).found:
        parser.i = i
        ref = parser.table_ref(time_travel=True, ctes=scope)
        if ref is not None:
            if ref.name is not None and alias_ok and not _aliased(parser.peek()):
                last = i
                while last + 2 < len(parser.tokens) and parser.tokens[last + 1].text == ".":
                    last += 2
                ref = replace(ref, qualifier=quote_part(parser.tokens[last].value()))
            refs.append(ref)
    parser.i = 0
    return refs


def _aliased(t: Token | None) -> bool:
    """Whether the token after a relation starts its alias (``AS a``, ``a``)."""
    if t is None:
        return False
    return t.kind == "ident" or (t.kind == "word" and t.upper not in _NOT_ALIASES)


def stray_paths(parser: Parser, refs: list[TableRef]) -> list[str]:
    """The ``delta.`path``` texts of the statement outside ``refs`` (positions this module
    does not read as tables), for the error when Spark then cannot run the statement."""
    taken = {r.start for r in refs}
    out = []
    toks = parser.tokens
    for k, t in enumerate(toks[:-2]):
        if t.upper == "DELTA" and toks[k + 1].text == "." and toks[k + 2].kind == "ident" and t.start not in taken:
            if k == 0 or toks[k - 1].text != ".":
                out.append(parser.text[t.start : toks[k + 2].end])
    return out

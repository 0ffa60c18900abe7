"""Spark SQL's lexical rules, the one reader of SQL text in this package.

Every piece of SQL text this package looks at (statements of :func:`delta_pyds.sql`, the
conditions behind file skipping and partition pruning, MERGE's target pruning, table-name
substitution) is split into tokens here, by the rules of Spark's own lexer
(``SqlBaseLexer.g4``, Spark 4.x, checked differentially against pyspark 4.3 in the tests):

* the longest match wins, ties go to the rule Spark lists first; keywords, exponents, numeric
  suffixes (``L S Y D F BD``) and the ``r`` of raw strings are case-insensitive;
* whitespace is exactly Spark's set (space, ``\\t \\n \\f \\r \\v``, NBSP and the Unicode
  spaces Spark lists; not ``\\u2029`` or ``\\x85``);
* ``--`` comments run to the end of the line, and a backslash right before the newline
  continues them; ``/* */`` comments nest; ``/*+`` opens a hint (tokens, not a comment);
* ``'...'`` and ``"..."`` strings take backslash escapes and doubled quotes; ``r'...'`` /
  ``r"..."`` are raw; :meth:`Token.value` unescapes as Spark's ``unescapeSQLString`` does
  (``\\u00e9``, ``\\U0001F600``, octal ``\\101``, ``\\b \\0 \\Z``, ``\\%`` and ``\\_`` kept with
  their backslash), or only strips the quotes under ``spark.sql.parser.escapedStringLiterals``;
* numbers follow Spark's rules, including its check that a decimal is not followed by a
  letter, digit or ``_`` (``1.5e`` is ``1``, ``.``, ``5e``); identifiers are Unicode letters,
  digits and ``_`` (``12abc`` is one identifier), or a URI such as ``s3://b/p``;
* ``>>`` is a shift only outside ``ARRAY<``/``MAP<``/``STRUCT<`` types, as in Spark.

Guarantees: joining the texts of the tokens gives the input back unchanged; an unterminated
string, backquoted identifier or bracketed comment raises
:class:`~delta_pyds.errors.SqlParseError` naming its position. No pyspark here."""

from __future__ import annotations

from dataclasses import dataclass

from delta_pyds.errors import SqlParseError

# Spark's WS rule
WHITESPACE = frozenset(" \t\n\f\r\v\u00a0\u1680\u2028\u202f\u205f\u3000" + "".join(map(chr, range(0x2000, 0x200B))))
_URI_CHARS = frozenset("_/-.?=&#%")
# longest first; ">>" and ">>>" only outside complex types (see tokenize)
_OPERATORS = (
    "<=>", ">>>", "/*+",
    "==", "<>", "!=", "<=", "!>", ">=", "!<", "<<", ">>", "||", "::", "->", "=>", "*/",
    ";", "(", ")", ",", ".", "[", "]", "!", "=", "<", ">", "+", "-", "*", "/", "%", "~", "&", "|", "^", ":", "?",
)  # fmt: skip
_COMPLEX_TYPES = frozenset({"ARRAY", "MAP", "STRUCT"})
_SIMPLE_ESCAPES = {"0": "\0", "b": "\b", "n": "\n", "r": "\r", "t": "\t", "Z": "\x1a", "%": "\\%", "_": "\\_"}
_HEX = frozenset("0123456789abcdefABCDEF")


def _is_digit(c: str) -> bool:
    return "0" <= c <= "9"


def _is_letter(c: str) -> bool:
    return c.isalpha()


def _is_word_char(c: str) -> bool:
    return c.isalpha() or "0" <= c <= "9" or c == "_"


@dataclass(frozen=True)
class Dialect:
    """The session settings that change how Spark reads SQL text:
    ``spark.sql.parser.escapedStringLiterals`` (string literals taken as written, without
    unescaping) and ``spark.sql.ansi.doubleQuotedIdentifiers`` with ``spark.sql.ansi.enabled``
    (``"..."`` is an identifier, not a string)."""

    escaped_string_literals: bool = False
    double_quoted_identifiers: bool = False


DEFAULT_DIALECT = Dialect()


@dataclass(frozen=True)
class Token:
    """One token: ``kind`` is ``ws`` (whitespace), ``comment``, ``word`` (keyword or
    identifier), ``ident`` (backquoted identifier), ``string``, ``number`` or ``punct``
    (operators and anything Spark's lexer does not recognize)."""

    kind: str
    text: str
    start: int

    @property
    def end(self) -> int:
        return self.start + len(self.text)

    @property
    def upper(self) -> str:
        """The upper-cased text of a word, else ``""``."""
        return self.text.upper() if self.kind == "word" else ""

    @property
    def blank(self) -> bool:
        """Whitespace or a comment: no meaning to the parser."""
        return self.kind in ("ws", "comment")

    @property
    def raw(self) -> bool:
        """A raw string literal (``r'...'``)."""
        return self.kind == "string" and self.text[0] in "rR"

    @property
    def double_quoted(self) -> bool:
        return self.kind == "string" and self.text[-1] == '"'

    def value(self, dialect: Dialect = DEFAULT_DIALECT) -> str:
        """The unquoted value of an identifier or a string literal (Spark's unescaping, or
        under ``escaped_string_literals`` the text between the quotes); the text otherwise."""
        if self.kind == "ident":
            return self.text[1:-1].replace("``", "`")
        if self.kind == "string":
            if self.double_quoted and not self.raw and dialect.double_quoted_identifiers:
                return self.text[1:-1].replace('""', '"')
            if dialect.escaped_string_literals:
                return self.text[1:-1]  # as Spark: the first and last character go, r'x' gives 'x
            if self.raw:
                return self.text[2:-1]
            return unescape(self.text)
        return self.text

    def is_identifier(self, dialect: Dialect = DEFAULT_DIALECT) -> bool:
        """A word, a backquoted identifier, or a double-quoted one under
        ``double_quoted_identifiers``."""
        return self.kind in ("word", "ident") or (
            self.double_quoted and not self.raw and dialect.double_quoted_identifiers
        )

    @property
    def number_type(self) -> str:
        """For a number: ``int`` (no suffix, no point), ``decimal`` (a point, no exponent),
        ``double`` (an exponent or ``D``), ``float`` (``F``), ``bigint`` (``L``),
        ``smallint`` (``S``), ``tinyint`` (``Y``) or ``bigdecimal`` (``BD``)."""
        up = self.text.upper()
        if up.endswith("BD"):
            return "bigdecimal"
        suffix = {"L": "bigint", "S": "smallint", "Y": "tinyint", "D": "double", "F": "float"}.get(up[-1])
        if suffix:
            return suffix
        if "E" in up:
            return "double"
        return "decimal" if "." in up else "int"

    @property
    def number_body(self) -> str:
        """A number's digits without its type suffix."""
        up = self.text.upper()
        if up.endswith("BD"):
            return self.text[:-2]
        return self.text[:-1] if up[-1] in "LSYDF" else self.text


def unescape(text: str) -> str:
    """The value of a quoted (not raw) string literal as Spark's ``unescapeSQLString``
    reads it: doubled quotes, backslash escapes, ``\\uXXXX``, ``\\UXXXXXXXX`` and
    three-digit octal ``\\[01][0-7][0-7]``; any other escaped character stands for itself
    (``\\%`` and ``\\_`` keep their backslash)."""
    quote = text[0]
    body = text[1:-1]
    out: list[str] = []
    i, n = 0, len(body)
    while i < n:
        c = body[i]
        if c == quote and i + 1 < n and body[i + 1] == quote:
            out.append(quote)
            i += 2
        elif c != "\\" or i + 1 == n:
            out.append(c)
            i += 1
        else:
            i += 1
            e = body[i]
            if e == "u" and i + 5 <= n and all(h in _HEX for h in body[i + 1 : i + 5]):
                out.append(chr(int(body[i + 1 : i + 5], 16)))
                i += 5
            elif e == "U" and i + 9 <= n and all(h in _HEX for h in body[i + 1 : i + 9]):
                out.append(_code_point(int(body[i + 1 : i + 9], 16)))
                i += 9
            elif i + 3 <= n and body[i] in "01" and body[i + 1] in "01234567" and body[i + 2] in "01234567":
                out.append(chr(int(body[i : i + 3], 8)))
                i += 3
            else:
                out.append(_SIMPLE_ESCAPES.get(e, e))
                i += 1
    return "".join(out)


def _code_point(cp: int) -> str:
    # Java appends the UTF-16 units of the value: one char below 0x10000, else a surrogate pair
    if cp <= 0x10FFFF:
        return chr(cp)
    high = (cp - 0x10000) // 0x400 + 0xD800
    low = (cp - 0x10000) % 0x400 + 0xDC00
    return chr(high & 0xFFFF) + chr(low)


def tokenize(text: str) -> list[Token]:
    """Every token of ``text``, whitespace and comments included (see the module docstring)."""
    tokens: list[Token] = []
    pos, n = 0, len(text)
    complex_level = 0  # Spark's complex_type_level_counter
    while pos < n:
        kind, end = _next_token(text, pos, complex_level)
        tok = Token(kind, text[pos:end], pos)
        if kind == "word" and tok.upper in _COMPLEX_TYPES:
            complex_level += 1
        elif tok.text == ">" and complex_level > 0:
            complex_level -= 1
        tokens.append(tok)
        pos = end
    return tokens


def _next_token(text: str, pos: int, complex_level: int) -> tuple[str, int]:
    c = text[pos]
    if c in WHITESPACE:
        end = pos + 1
        while end < len(text) and text[end] in WHITESPACE:
            end += 1
        return "ws", end
    if text.startswith("--", pos):
        return "comment", _line_comment_end(text, pos)
    if text.startswith("/*", pos) and not text.startswith("/*+", pos):
        return "comment", _block_comment_end(text, pos)
    if c == "`":
        return "ident", _quoted_end(text, pos, pos + 1, "`", "backquoted identifier", escapes=False)
    if c in "'\"":
        return "string", _quoted_end(text, pos, pos + 1, c, "string literal", escapes=True)
    if c in "rR" and pos + 1 < len(text) and text[pos + 1] in "'\"":
        close = text.find(text[pos + 1], pos + 2)
        if close < 0:
            raise SqlParseError(f"unterminated string literal at position {pos}: {text[pos : pos + 30]!r}")
        return "string", close + 1
    if _is_word_char(c) or c == ".":
        found = _number_or_word(text, pos)
        if found is not None:
            return found
    for op in _OPERATORS:
        if text.startswith(op, pos):
            if op in (">>", ">>>") and complex_level > 0:
                continue
            return "punct", pos + len(op)
    return "punct", pos + 1


def _line_comment_end(text: str, pos: int) -> int:
    i, n = pos + 2, len(text)
    while i < n:
        if text[i] == "\\" and i + 1 < n and text[i + 1] == "\n":
            i += 2
        elif text[i] in "\r\n":
            break
        else:
            i += 1
    if i < n and text[i] == "\r":
        i += 1
    if i < n and text[i] == "\n":
        i += 1
    return i


def _block_comment_end(text: str, pos: int) -> int:
    depth, i, n = 1, pos + 2, len(text)
    while i < n:
        if text.startswith("*/", i):
            depth -= 1
            i += 2
            if depth == 0:
                return i
        elif text.startswith("/*", i) and not text.startswith("/*+", i):
            depth += 1
            i += 2
        else:
            i += 1
    raise SqlParseError(f"unclosed comment at position {pos}: {text[pos : pos + 30]!r}")


def _quoted_end(text: str, pos: int, i: int, quote: str, what: str, *, escapes: bool) -> int:
    n = len(text)
    while i < n:
        c = text[i]
        if escapes and c == "\\":
            i += 2
            continue
        if c == quote:
            if i + 1 < n and text[i + 1] == quote:
                i += 2
                continue
            return i + 1
        i += 1
    raise SqlParseError(f"unterminated {what} at position {pos}: {text[pos : pos + 30]!r}")


def _digits(text: str, i: int) -> int:
    while i < len(text) and _is_digit(text[i]):
        i += 1
    return i


def _exponent(text: str, i: int) -> int | None:
    """The end of an exponent (``E[+-]digits``) starting at ``i``, or None."""
    if i < len(text) and text[i] in "eE":
        j = i + 1
        if j < len(text) and text[j] in "+-":
            j += 1
        k = _digits(text, j)
        if k > j:
            return k
    return None


def _valid_decimal(text: str, end: int) -> bool:
    # Spark's isValidDecimal: the next (upper-cased) character is not A-Z, 0-9 or _
    if end >= len(text):
        return True
    c = text[end].upper()
    return not ("A" <= c <= "Z" or "0" <= c <= "9" or c == "_")


def _suffixed(text: str, end: int, suffix: str) -> int | None:
    return end + len(suffix) if text[end : end + len(suffix)].upper() == suffix else None


def _number_or_word(text: str, pos: int) -> tuple[str, int] | None:
    """The longest of Spark's numeric rules and IDENTIFIER at ``pos`` (ties: numbers first),
    as ``(kind, end)``, or None when neither matches."""
    number_end = _number_end(text, pos)
    word_end = _word_end(text, pos)
    if number_end is not None and (word_end is None or number_end >= word_end):
        return ("number", number_end)
    if word_end is not None:
        return ("word", word_end)
    return None


def _number_end(text: str, pos: int) -> int | None:
    """The end of the longest of Spark's numeric rules at ``pos`` (an end past ``pos``), or None."""
    best: int | None = None
    for end in _integer_ends(text, pos) + _decimal_ends(text, pos):
        if end is not None and end > pos and (best is None or end > best):
            best = end
    return best


def _integer_ends(text: str, pos: int) -> list[int | None]:
    """Candidate ends of the numeric rules that start with INTEGER_VALUE at ``pos``: the
    integer alone, with an EXPONENT, with the L / S / Y suffixes, and the integer or its
    exponent with the F / D / BD suffixes (None: a rule that does not match)."""
    int_end = _digits(text, pos)
    if int_end == pos:
        return []
    exp_end = _exponent(text, int_end)
    ends = [_suffixed(text, int_end, suffix) for suffix in ("L", "S", "Y")]
    ends += [int_end, exp_end]
    for base in (int_end, exp_end):
        if base is not None:
            ends += [_suffixed(text, base, suffix) for suffix in ("F", "D", "BD")]
    return ends


def _decimal_ends(text: str, pos: int) -> list[int]:
    """Ends of the numeric rules built on DECIMAL_DIGITS at ``pos``: the digits alone or with
    EXPONENT, then with the F / D / BD suffixes, each kept only where Spark's
    ``isValidDecimal`` check passes."""
    ends: list[int] = []
    for dec_end in _decimal_digit_ends(text, pos):
        exp_end = _exponent(text, dec_end)
        candidates: list[int | None] = [dec_end, exp_end]
        for base in (dec_end, exp_end):
            if base is not None:
                candidates += [_suffixed(text, base, suffix) for suffix in ("F", "D", "BD")]
        ends += [end for end in candidates if end is not None and _valid_decimal(text, end)]
    return ends


def _word_end(text: str, pos: int) -> int | None:
    """The end of the longest IDENTIFIER at ``pos`` (word characters, or letters followed by
    ``://`` and URI characters), or None when there is none."""
    word_end = pos
    while word_end < len(text) and _is_word_char(text[word_end]):
        word_end += 1
    letters_end = pos
    while letters_end < len(text) and _is_letter(text[letters_end]):
        letters_end += 1
    if letters_end > pos and text.startswith("://", letters_end):
        uri_end = letters_end + 3
        while uri_end < len(text) and (_is_word_char(text[uri_end]) or text[uri_end] in _URI_CHARS):
            uri_end += 1
        if uri_end > letters_end + 3 and uri_end > word_end:
            return uri_end
    return word_end if word_end > pos else None


def _decimal_digit_ends(text: str, pos: int) -> list[int]:
    """The ends of DECIMAL_DIGITS matches at ``pos`` (``1.``, ``1.5``, ``.5``)."""
    ends: list[int] = []
    int_end = _digits(text, pos)
    if int_end > pos and int_end < len(text) and text[int_end] == ".":
        frac_end = _digits(text, int_end + 1)
        ends.extend(range(int_end + 1, frac_end + 1))
    elif int_end == pos and text.startswith(".", pos):
        frac_end = _digits(text, pos + 1)
        ends.extend(range(pos + 2, frac_end + 1))
    return ends

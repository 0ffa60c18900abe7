"""Generated Spark SQL text for the differential tests (Spark is the oracle): every way Spark
lets a value or a condition be spelled, and the blanks between tokens.

Classes of text generated (seeded, deterministic):

* string literals: single- or double-quoted, each character written plainly or as ``\\uXXXX``,
  ``\\UXXXXXXXX``, three-digit octal, a needless backslash (``\\q``), a named escape (``\\n \\t
  \\b \\0 \\Z``), a doubled or backslashed quote; raw ``r'...'`` literals; a value split into
  adjacent literals with whitespace or comments between them; values that hold SQL (``AND``,
  ``--``, ``/*``, quotes, backquotes), Unicode (accents, emoji, NBSP and other Spark whitespace);
* numbers: plain, ``L``/``S``/``Y``/``D``/``F``/``BD`` suffixes in either case, decimals,
  exponents, a leading ``+``/``-``;
* dates: ``DATE '...'`` in either case;
* blanks: spaces, tabs, newlines, NBSP/ideographic space, ``/* */`` comments (nested), ``--``
  comments (with a backslash-continued line), comments that hold ``AND`` conditions;
* conditions over typed columns: comparisons (both orders), ``IN``, ``BETWEEN``, ``LIKE``,
  ``IS [NOT] NULL``, ``NOT``, ``AND``/``OR`` with parentheses, keywords in random case,
  columns plain or backquoted.
"""

from __future__ import annotations

import datetime as dt
import decimal
import random

NAMED = {"\n": "n", "\t": "t", "\b": "b", "\0": "0", "\x1a": "Z", "\r": "r"}
NEEDLESS = "qyjkmABC"  # \q reads as q
TRICKY = [
    "é",
    "A",
    "it's",
    'say "hi"',
    "a\\b",
    "x AND y = 5",
    "-- not a comment",
    "/* nor this */",
    "`tick`",
    "😀",
    "\u00a0nbsp",
    "tab\there",
    "line\nbreak",
    "",
    "%_",
    "ctl\x1a",
    "ß",
    "naïve café",
]
BLANKS = [
    " ",
    "  ",
    "\t",
    "\n",
    "\u00a0",
    "\u3000",
    " /* c */ ",
    "/* a /* nested */ b */",
    " -- comment AND i = 5\n",
    " --\\\n continued comment\n",
    "/**/",
    " /* AND s = 'x' */ ",
]


def blank(rng: random.Random) -> str:
    return rng.choice(BLANKS) if rng.random() < 0.5 else " "


def keyword(rng: random.Random, word: str) -> str:
    return rng.choice([word.upper(), word.lower(), word.capitalize()])


def _char(rng: random.Random, c: str, quote: str) -> str:
    cp = ord(c)
    choices = []
    if c not in (quote, "\\") and c not in NAMED:
        choices.append(c)
    if c == quote:
        choices += [quote + quote, "\\" + quote]
    if c == "\\":
        choices.append("\\\\")
    if c in NAMED:
        choices += ["\\" + NAMED[c], c]
    if cp < 0x10000 and not 0xD800 <= cp <= 0xDFFF:
        choices.append(f"\\u{cp:04x}")
        choices.append(f"\\u{cp:04X}")
    choices.append(f"\\U{cp:08x}")
    if cp < 0o200:
        choices.append(f"\\{cp:03o}")
    if c.isalpha() and c.isascii() and c not in "bnrtuUZ" and not c.isdigit():
        choices.append("\\" + c)
    return rng.choice(choices)


def string_literal(rng: random.Random, value: str) -> str:
    """One spelling of ``value`` as Spark SQL string literal(s)."""
    if value and rng.random() < 0.25:  # adjacent literals are concatenated
        cut = rng.randrange(0, len(value) + 1)
        return (
            string_literal(rng, value[:cut])
            + rng.choice([" ", "\n", " /* x */ ", "\t"])
            + string_literal(rng, value[cut:])
        )
    quote = rng.choice("'\"")
    if rng.random() < 0.2 and quote not in value and not value.endswith("\\"):
        return rng.choice("rR") + quote + value + quote
    return quote + "".join(_char(rng, c, quote) for c in value) + quote


def number_literal(rng: random.Random, value: int) -> str:
    """One spelling of a small integer ``value`` (a type Spark compares with an int column exactly)."""
    forms = [str(value), f"{value}L", f"{value}.0", f"{value}.", f"{value}BD", f"{value}bd", f"{value}l"]
    if -32768 <= value < 32768:
        forms += [f"{value}S", f"{value}s"]
    if -128 <= value < 128:
        forms += [f"{value}Y"]
    forms += [f"{value}D", f"{value}e0", f"{value}E0", f"{value}F"]
    text = rng.choice(forms)
    if value >= 0 and rng.random() < 0.2:
        text = "+" + text
    return text


def date_literal(rng: random.Random, value: dt.date) -> str:
    return keyword(rng, "date") + rng.choice([" ", "", "\t"]) + string_literal(rng, value.isoformat())


def decimal_literal(rng: random.Random, value: decimal.Decimal) -> str:
    return rng.choice([format(value, "f"), format(value, "f") + "BD"])


def column(rng: random.Random, name: str) -> str:
    return rng.choice([name, name.upper(), f"`{name}`"])

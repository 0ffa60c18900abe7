"""The lexer against outcomes measured on Spark 4.3 (no JVM here: the Spark-side differential
tests are tests/spark/test_sql_text_spark.py). Each case is what ``spark.sql`` returned for the
same text."""

from __future__ import annotations

import pytest

from delta_pyds.errors import SqlParseError
from delta_pyds.expressions.lexer import Dialect, tokenize


def words(text):
    return [(t.kind, t.text) for t in tokenize(text) if not t.blank]


@pytest.mark.parametrize(
    "literal, value",
    [
        ("'a''b'", "a'b"),
        ('"a""b"', 'a"b'),
        ("'\\u00e9\\101\\Z\\%\\_\\b\\0x\\q'", "éA\x1a\\%\\_\x08\x00xq"),
        ("r'C:\\'", "C:\\"),
        ("R'a\\nb'", "a\\nb"),
        ("'a\\'b'", "a'b"),
        ("'\\U0001F600'", "😀"),
        ("'\\u00'", "u00"),
        ("'\\400'", "400"),
        ("'\\177'", "\x7f"),
    ],
)
def test_string_values_are_spark_s(literal, value):
    (tok,) = [t for t in tokenize(literal) if not t.blank]
    assert tok.kind == "string" and tok.value() == value


def test_escaped_string_literals_take_the_text_between_the_first_and_last_character():
    escaped = Dialect(escaped_string_literals=True)
    assert tokenize("'\\u00e9\\n'")[0].value(escaped) == "\\u00e9\\n"
    assert tokenize("'a''b'")[0].value(escaped) == "a''b"
    assert tokenize('r"-a"')[0].value(escaped) == '"-a'  # Spark strips r and keeps the quote


def test_comments_whitespace_and_hints():
    # a backslash before the newline continues a -- comment (Spark: SELECT 1 -- c \<nl> + 1 gives 1)
    assert words("SELECT 1 -- c \\\n + 1 AS x\n") == [("word", "SELECT"), ("number", "1")]
    assert words("1 /* a /* b */ c */ AS x") == [("number", "1"), ("word", "AS"), ("word", "x")]
    assert words("/*+ BROADCAST(t) */")[0] == ("punct", "/*+")
    assert words("a\u3000b\u00a0c") == [("word", "a"), ("word", "b"), ("word", "c")]
    assert words("a\u2029b") == [("word", "a"), ("punct", "\u2029"), ("word", "b")]  # not Spark whitespace


def test_numbers_follow_spark_s_rules():
    numbers = "1e2 .5 1. 1.e3 1bd 1L 2S 3Y 1D 1F 1E-2BD"
    assert words(numbers) == [("number", t) for t in numbers.split()]
    # a decimal followed by a letter is not a decimal: 1.5e is 1 . 5e (Spark: field access on 1)
    assert words("1.5e") == [("number", "1"), ("punct", "."), ("word", "5e")]
    assert words("12abc") == [("word", "12abc")]
    assert [t.number_type for t in tokenize("1 1.5 1e5 1D 1F 1L 1S 1Y 1BD") if not t.blank] == [
        "int", "decimal", "double", "double", "float", "bigint", "smallint", "tinyint", "bigdecimal"
    ]  # fmt: skip


def test_shift_right_only_outside_complex_types():
    assert words("array<array<int>>")[-2:] == [("punct", ">"), ("punct", ">")]
    assert words("8 >> 1")[1] == ("punct", ">>")


@pytest.mark.parametrize("text", ["'abc", '"abc', "`abc", "/* abc", "r'abc", "'abc\\'"])
def test_unterminated_is_refused_with_its_position(text):
    with pytest.raises(SqlParseError, match="position 0"):
        tokenize(text)


def test_tokens_join_back_to_the_text():
    text = "SELECT `a``b`, 'x''y' /* c */ -- d\n FROM t WHERE é = r\"\\\" AND x>>=1"
    assert "".join(t.text for t in tokenize(text)) == text

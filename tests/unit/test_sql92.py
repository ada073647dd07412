"""SQL92 filter expressions, judged the way the 5.3.3 broker judges them.

The table rows are the broker's semantics read from its filter module (SelectorParser,
ComparisonExpression, LogicExpression, UnaryExpression, ConstantExpression) and checked against
the real classes by ``tests/integration/test_sql92_differential.py``, which runs every row through
the broker's ``FilterFactory``. The properties check the three-valued logic and the parser's
bounds on arbitrary input.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rmqctl.errors import UsageError
from rmqctl.model.sql92 import SQL92_MAX_CHARS, SQL92_MAX_DEPTH, Sql92Error, compile_sql92

#: (expression, message properties, the broker's outcome)
OUTCOMES: list[tuple[str, dict[str, str], str]] = [
    # numbers: a property is a string, converted to the literal's type (Integer here)
    ("p_a > 5", {"p_a": "6"}, "true"),
    ("p_a > 5", {"p_a": "5"}, "false"),
    ("p_a > 5", {"p_a": "5.5"}, "error"),  # Integer.valueOf("5.5") throws
    ("p_a > 5.0", {"p_a": "5.5"}, "true"),  # a decimal literal is a Double
    ("p_a > 5", {}, "null"),
    ("p_a > 5", {"p_a": "+7"}, "true"),
    ("p_a > 5", {"p_a": " 7"}, "error"),
    ("p_a = 5", {"p_a": "3000000000"}, "error"),  # does not fit an Integer
    ("p_a = 3000000000", {"p_a": "3000000000"}, "true"),  # a Long literal
    ("p_a >= -5", {"p_a": "-5"}, "true"),
    ("p_a > --5", {"p_a": "6"}, "true"),  # no line end: two minus signs, not a comment
    ("p_a > 1e3", {"p_a": "1000.5"}, "true"),
    ("p_a = 5.0", {"p_a": "NaN"}, "false"),
    ("p_a > 5.0", {"p_a": "NaN"}, "true"),  # Double.compare puts NaN above everything
    ("p_a < 0.5", {"p_a": "-0.0"}, "true"),
    ("a > b", {"a": "2", "b": "1e0"}, "true"),  # two strings are compared as doubles
    ("a > b", {"a": "2", "b": "x"}, "error"),
    ("a = b", {"a": "5", "b": "5.0"}, "false"),  # two strings compare as strings under =
    # strings and equality
    ("TAGS = 'tagA'", {"TAGS": "tagA"}, "true"),
    ("TAGS = 'tagA'", {"TAGS": "taga"}, "false"),
    ("TAGS = 'tagA'", {}, "null"),
    ("TAGS <> 'tagA'", {}, "null"),
    ("a = 'x''y'", {"a": "x'y"}, "true"),
    ("a = 5", {"a": "abc"}, "error"),
    ("a = '5'", {"a": "5"}, "true"),
    ("a = TRUE", {"a": "TRUE"}, "true"),  # Boolean.valueOf ignores case
    ("a = TRUE", {"a": "yes"}, "false"),
    ("TRUE = a", {"a": "true"}, "error"),  # the broker casts the Boolean to a String and throws
    ("5 = TRUE", {}, "false"),
    ("a", {"a": "true"}, "false"),  # a bare property is a Boolean cast: a string is FALSE
    ("a", {}, "null"),
    ("NOT a = 1", {"a": "1"}, "false"),  # NOT binds first: (NOT a) = 1
    ("NOT (a = 1)", {"a": "1"}, "false"),
    ("NOT (a = 1)", {"a": "2"}, "true"),
    # IS NULL, IN, BETWEEN, CONTAINS and friends
    ("a IS NULL", {}, "true"),
    ("a IS NULL", {"a": ""}, "false"),
    ("a IS NOT NULL", {"a": "1"}, "true"),
    ("NULL IS NULL", {}, "true"),
    ("a IN ('x', 'y')", {"a": "y"}, "true"),
    ("a IN ('x', 'y')", {"a": "z"}, "false"),
    ("a NOT IN ('x')", {}, "null"),
    ("a NOT IN ('x')", {"a": "y"}, "true"),
    ("a BETWEEN 1 AND 3", {"a": "2"}, "true"),
    ("a BETWEEN 1 AND 3", {"a": "3"}, "true"),
    ("a BETWEEN 1 AND 3", {}, "null"),
    ("a NOT BETWEEN 1 AND 3", {"a": "2"}, "false"),
    ("a NOT BETWEEN 1 AND 3", {"a": "4"}, "true"),
    ("a BETWEEN -3 AND -1", {"a": "-2"}, "true"),
    ("a CONTAINS 'b'", {"a": "abc"}, "true"),
    ("a CONTAINS 'b'", {}, "false"),  # FALSE, not NULL
    ("a NOT CONTAINS 'b'", {}, "false"),
    ("a NOT CONTAINS 'b'", {"a": "xyz"}, "true"),
    ("a CONTAINS ''", {"a": "abc"}, "false"),
    ("a STARTSWITH 'ab'", {"a": "abc"}, "true"),
    ("a ENDSWITH 'bc'", {"a": "abc"}, "true"),
    ("a NOT ENDSWITH 'bc'", {"a": "abc"}, "false"),
    ("'abc' CONTAINS 'b'", {}, "true"),
    # three-valued logic, and an error ends the evaluation where it happens
    ("a = 'x' AND b = 'y'", {"a": "x"}, "null"),
    ("a = 'x' AND b = 'y'", {"a": "z"}, "false"),
    ("a = 'x' OR b = 'y'", {"b": "y"}, "true"),
    ("a = 'x' OR b = 'y'", {"b": "n"}, "null"),
    ("TAGS = 'x' OR a = 5", {"TAGS": "x", "a": "abc"}, "true"),
    ("a = 5 OR TAGS = 'x'", {"TAGS": "x", "a": "abc"}, "error"),
    ("a = 5 AND TAGS = 'x'", {"a": "6", "TAGS": "x"}, "false"),
    ("NOT (a = 'x')", {}, "null"),
    # keywords ignore case; comments; text after the expression is never read
    ("a is not null and TAGS in ('t')", {"a": "1", "TAGS": "t"}, "true"),
    ("a > 5 /* five */ AND b = 'x'", {"a": "6", "b": "x"}, "true"),
    ("a > 5 -- five\n AND b = 'x'", {"a": "6", "b": "y"}, "false"),
    ("a > 5 garbage )", {"a": "9"}, "true"),
    ("7L = a", {"a": "7"}, "true"),
    ("a = 007", {"a": "0"}, "true"),  # a = 0, and "07" is never read
    ("a LIKE 'x%'", {"a": "x1"}, "false"),  # no LIKE: the bare property a, then ignored text
]

#: expressions the broker refuses
REFUSED = [
    "", "   ", "a >", "a = NULL", "a <> NULL", "a > 'x'", "a > TRUE", "5", "'x'", "a == 1", "a != 1",
    "a > 0.0", "a > 1e-400", "a > 1e400", "NOT 5", "(a > 1", "TRUE = 5", "a BETWEEN 5 AND 1",
    "a BETWEEN NULL AND 1", "(a = 1) > 2", "NOT a > 1", "'x' IN ('a')", "a IN ()", "a IN (5)",
    "a ! b", "a = 99999999999999999999", "/* never closed", "'abc", "a IS 5", "a CONTAINS b",
    "- a",
]


@pytest.mark.parametrize(("expression", "properties", "outcome"), OUTCOMES)
def test_evaluates_like_the_broker(expression: str, properties: dict[str, str], outcome: str) -> None:
    selector = compile_sql92(expression)
    assert selector.outcome(properties) == outcome
    assert selector.matches(properties) is (outcome == "true")


@pytest.mark.parametrize("expression", REFUSED)
def test_refuses_what_the_broker_refuses_in_one_line(expression: str) -> None:
    with pytest.raises(Sql92Error) as caught:
        compile_sql92(expression)
    message = str(caught.value)
    assert message.startswith("SQL92 expression") and "\n" not in message
    assert isinstance(caught.value, UsageError)  # a front end shows it as a usage error, exit 2


def test_names_the_properties_it_reads_and_the_tail_it_ignores() -> None:
    selector = compile_sql92("p_a > 5 AND TAGS IN ('x') OR b IS NULL junk")
    assert selector.properties == {"p_a", "TAGS", "b"}
    assert selector.ignored_tail == "junk"
    assert compile_sql92("p_a > 5").ignored_tail == ""


def test_size_and_nesting_are_bounded() -> None:
    with pytest.raises(Sql92Error, match="longer than"):
        compile_sql92("a = 1 OR " * (SQL92_MAX_CHARS // 8) + "a = 1")
    with pytest.raises(Sql92Error, match="nests deeper"):
        compile_sql92("(" * (SQL92_MAX_DEPTH + 1) + "a = 1" + ")" * (SQL92_MAX_DEPTH + 1))
    with pytest.raises(Sql92Error, match="nests deeper"):
        compile_sql92("NOT " * (SQL92_MAX_DEPTH + 1) + "a = 1")
    # a long flat chain is fine: AND/OR are not nested, and evaluating it does not recurse deeply
    chain = " OR ".join(f"a = '{i}'" for i in range(1000))
    assert compile_sql92(chain).matches({"a": "999"})


_WORDS = st.sampled_from(["a", "b", "TAGS", "=", "<>", ">", "<=", "AND", "OR", "NOT", "IN", "(", ")",
                          ",", "'x'", "'5'", "5", "5.5", "-", "+", "IS", "NULL", "BETWEEN", "TRUE",
                          "CONTAINS", "--", "/*", "*/", "'", "\n", "!"])


@given(st.lists(_WORDS, max_size=30).map(" ".join) | st.text(max_size=60))
@settings(max_examples=400, deadline=None)
def test_any_text_compiles_or_fails_with_one_line(text: str) -> None:
    try:
        selector = compile_sql92(text)
    except Sql92Error as exc:
        assert "\n" not in str(exc)
        return
    for props in ({}, {"a": "5", "b": "x", "TAGS": "5"}):
        assert selector.outcome(props) in ("true", "false", "null", "error")


_CONDITIONS = st.sampled_from([
    "a = 5", "a > 5", "a IS NULL", "b IN ('x', 'y')", "a BETWEEN 1 AND 9", "b CONTAINS 'x'",
    "TAGS = 'tagA'", "a = b", "b", "TRUE", "FALSE", "NULL", "a = 5.5", "NOT (a < 2)",
])
_VALUES = st.sampled_from(["5", "6", "x", "y", "", "5.5", "tagA", "true", "-1", "1e1"])
_PROPS = st.dictionaries(st.sampled_from(["a", "b", "TAGS"]), _VALUES)


@given(_CONDITIONS, _PROPS)
def test_not_swaps_true_and_false_and_keeps_unknown(condition: str, props: dict[str, str]) -> None:
    inner = compile_sql92(condition).outcome(props)
    swapped = {"true": "false", "false": "true", "null": "null", "error": "error"}[inner]
    assert compile_sql92(f"NOT ({condition})").outcome(props) == swapped


@given(_CONDITIONS, _CONDITIONS, _PROPS)
def test_and_or_follow_the_brokers_three_valued_short_circuit(left: str, right: str,
                                                              props: dict[str, str]) -> None:
    lv, rv = compile_sql92(left).outcome(props), compile_sql92(right).outcome(props)
    # OR: a TRUE left wins before the right is evaluated; an error met first ends it all
    if lv == "error" or lv == "true":
        want_or = lv
    elif rv in ("error", "true"):
        want_or = rv
    else:
        want_or = "null" if "null" in (lv, rv) else "false"
    if lv == "error" or lv == "false":
        want_and = lv
    elif rv in ("error", "false"):
        want_and = rv
    else:
        want_and = "null" if "null" in (lv, rv) else "true"
    assert compile_sql92(f"({left}) OR ({right})").outcome(props) == want_or
    assert compile_sql92(f"({left}) AND ({right})").outcome(props) == want_and


@given(st.integers(min_value=-(2**31), max_value=2**31 - 1), st.integers(min_value=0, max_value=2**31 - 1))
def test_integer_comparison_is_numeric(value: int, bound: int) -> None:
    selector = compile_sql92(f"p > {bound}")
    assert selector.outcome({"p": str(value)}) == ("true" if value > bound else "false")

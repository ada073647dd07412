"""One tag filter for the emulated broker, the emulated client and the doctor."""

from __future__ import annotations

from rmqctl.model import Subscription, java_string_hash, parse_tag_expression


def test_tag_expressions_accept_their_tags_and_star_accepts_everything() -> None:
    sub = parse_tag_expression("T", "tagA || tagB")
    assert [sub.accepts(t) for t in ("tagA", "tagB", "tagC", None)] == [True, True, False, False]
    star = parse_tag_expression("T", "*")
    assert star.accepts("anything") and star.accepts(None)
    # "Aa" and "BB" share Java's String.hashCode (2112): the broker lets both through, the client
    # keeps only the tag it named
    assert java_string_hash("Aa") == java_string_hash("BB") == 2112
    aa = parse_tag_expression("T", "Aa")
    assert aa.accepts_code(java_string_hash("BB")) and not aa.accepts("BB")
    assert not aa.accepts_code(java_string_hash("Ab"))


def test_a_sql92_expression_is_never_judged_by_tag() -> None:
    sql = Subscription("T", "a > 5", expression_type="SQL92")
    assert sql.accepts("tagA") and sql.accepts(None) and sql.accepts_code(12345)

"""SQL92 message filters, evaluated the way a RocketMQ broker evaluates them.

A consumer that subscribes with ``MessageSelector.bySql(...)`` hands the broker an expression over
message properties; the broker (with ``enablePropertyFilter=true``) compiles it with its selector
grammar and keeps a message only when the expression evaluates to exactly TRUE. This module
mirrors that grammar and its value semantics, so a sampled message can be judged the way the
broker judged it:

* properties are strings (``TAGS`` is one of them); a missing property is NULL;
* literals: ``'text'`` (``''`` escapes a quote), integers (Integer when they fit 32 bits, else
  Long; an ``L`` suffix is allowed), decimals (Double; ``0.0`` is refused like the broker does),
  ``TRUE``, ``FALSE``, ``NULL``; keywords are case-insensitive;
* ``=``/``<>`` compare with Java's type promotion, converting a string operand to the other
  side's type (``'5' = 5`` is TRUE, ``'x' = 5`` is an evaluation error); ``>``, ``>=``, ``<``,
  ``<=`` need a number on a literal side, and two string operands are both read as doubles;
* ``BETWEEN``/``NOT BETWEEN``, ``IN``/``NOT IN`` (a property against string literals),
  ``IS [NOT] NULL``, ``[NOT] CONTAINS``/``STARTSWITH``/``ENDSWITH`` (FALSE on NULL), ``AND``,
  ``OR``, ``NOT`` with three-valued logic; ``NOT`` binds tighter than a comparison (``NOT a = 1``
  is ``(NOT a) = 1``), as in the broker's grammar;
* an evaluation error anywhere (a number that does not parse, a Boolean compared with a string)
  ends the evaluation, and the message does not match; NULL (unknown) does not match either;
* like the broker's parser, text after a complete expression is not read (``a > 5 garbage``
  filters by ``a > 5``); :attr:`Selector.ignored_tail` says when that happened.

The tokenizer and parser run in time linear in the expression, which is bounded in length
(:data:`SQL92_MAX_CHARS`) and nesting (:data:`SQL92_MAX_DEPTH`); a malformed expression raises
:class:`Sql92Error` with a one-line message. Pure: no I/O, imports nothing from rmqctl but
``errors``.
"""

from __future__ import annotations

import math
import re
import struct
from collections.abc import Mapping
from dataclasses import field
from typing import Literal, Union

from rmqctl.errors import UsageError
from rmqctl.records import dataclass

#: longest expression accepted (characters)
SQL92_MAX_CHARS = 16_384
#: deepest nesting of the expression tree (parentheses, NOT, comparisons of comparisons)
SQL92_MAX_DEPTH = 100

_INT_MIN, _INT_MAX = -(2**31), 2**31 - 1
_LONG_MIN, _LONG_MAX = -(2**63), 2**63 - 1


class Sql92Error(UsageError):
    """A SQL92 filter expression the broker's parser would refuse (one line, with a position)."""


class _EvalError(Exception):
    """The broker's evaluation threw: the message does not match."""


# --- Java values ---------------------------------------------------------------------------------
# Java's boxed types are kept apart: bool is Boolean, str is String, float is Double, _Int is
# Integer and _Long is Long (the promotion rules differ between Integer and Long).


class _Int(int):
    """A Java Integer."""


class _Long(int):
    """A Java Long."""


Value = Union[bool, str, float, _Int, _Long, None]


def _is_number(v: object) -> bool:
    return isinstance(v, (_Int, _Long, float)) and not isinstance(v, bool)


def _double_bits(d: float) -> int:
    """``Double.doubleToLongBits``: signed 64-bit pattern, every NaN folded to one."""
    if math.isnan(d):
        return 0x7FF8000000000000
    return int(struct.unpack(">q", struct.pack(">d", d))[0])


def _double_compare(a: float, b: float) -> int:
    """``Double.compare``: -0.0 below 0.0, NaN equal to itself and above everything."""
    if a < b:
        return -1
    if a > b:
        return 1
    ba, bb = _double_bits(a), _double_bits(b)
    return (ba > bb) - (ba < bb)


def _parse_java_integer(s: str, lo: int, hi: int) -> int:
    """``Integer.parseInt`` / ``Long.parseLong``: optional sign, decimal digits, in range."""
    body = s[1:] if s[:1] in ("+", "-") else s
    if not body or not all(c.isdecimal() for c in body):
        raise _EvalError(f"for input string {s!r}")
    value = int("".join(str(int(c)) for c in body))
    if s[:1] == "-":
        value = -value
    if not lo <= value <= hi:
        raise _EvalError(f"for input string {s!r}")
    return value


_JAVA_DOUBLE = re.compile(
    r"[+-]?(?:NaN|Infinity|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?[fFdD]?)")
_JAVA_HEX_DOUBLE = re.compile(
    r"([+-]?)0[xX]((?:[0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)[pP][+-]?[0-9]+)[fFdD]?")


def _parse_java_double(s: str) -> float:
    """``Double.valueOf(String)``: Java's trim, then a decimal, hex, NaN or Infinity literal."""
    start, end = 0, len(s)
    while start < end and s[start] <= " ":
        start += 1
    while end > start and s[end - 1] <= " ":
        end -= 1
    t = s[start:end]
    if _JAVA_DOUBLE.fullmatch(t):
        body = t[:-1] if t[-1] in "fFdD" else t
        sign = -1.0 if body.startswith("-") else 1.0
        core = body.lstrip("+-")
        if core == "NaN":
            return math.nan
        if core == "Infinity":
            return sign * math.inf
        return float(body)
    hex_match = _JAVA_HEX_DOUBLE.fullmatch(t)
    if hex_match:
        return float.fromhex(hex_match.group(1) + "0x" + hex_match.group(2))
    raise _EvalError(f"for input string {s!r}")


def _java_compare(lv: Value, rv: Value) -> int:
    """The broker's ``__compare``: promote mismatched types (strings convert to the other side's
    type), answer -1 for types it cannot reconcile, throw when a string does not convert."""
    assert lv is not None and rv is not None
    lt, rt = _jtype(lv), _jtype(rv)
    if lt != rt:
        if lt == "Boolean":
            if rt == "String":
                # the broker casts the Boolean itself to String here and throws
                raise _EvalError("a Boolean compared with a String")
            return -1
        if lt in ("Integer", "Long", "Double"):
            if rt == "String":
                assert isinstance(rv, str)
                rv = _convert(rv, lt)
            elif rt in ("Integer", "Long", "Double"):
                wider = _wider(lt, rt)
                lv, rv = _as(lv, wider), _as(rv, wider)
            else:
                return -1
        elif lt == "String":
            assert isinstance(lv, str)
            lv = _convert(lv, rt)
        else:  # pragma: no cover - every type is handled above
            return -1
    return _compare_same(lv, rv)


def _jtype(v: Value) -> str:
    if isinstance(v, bool):
        return "Boolean"
    if isinstance(v, str):
        return "String"
    if isinstance(v, float):
        return "Double"
    if isinstance(v, _Long):
        return "Long"
    return "Integer"


def _wider(a: str, b: str) -> str:
    order = ("Integer", "Long", "Double")
    return order[max(order.index(a), order.index(b))]


def _as(v: Value, kind: str) -> Value:
    assert isinstance(v, (int, float)) and not isinstance(v, bool)
    if kind == "Double":
        return float(v)
    return _Long(v) if kind == "Long" else _Int(v)


def _convert(s: str, kind: str) -> Value:
    """``Boolean.valueOf`` / ``Integer.valueOf`` / ``Long.valueOf`` / ``Double.valueOf``."""
    if kind == "Boolean":
        return s.isascii() and s.lower() == "true"
    if kind == "Integer":
        return _Int(_parse_java_integer(s, _INT_MIN, _INT_MAX))
    if kind == "Long":
        return _Long(_parse_java_integer(s, _LONG_MIN, _LONG_MAX))
    return _parse_java_double(s)


def _compare_same(lv: Value, rv: Value) -> int:
    if isinstance(lv, float) and isinstance(rv, float):
        return _double_compare(lv, rv)
    if isinstance(lv, str) and isinstance(rv, str):
        # String.compareTo orders UTF-16 code units
        a, b = lv.encode("utf-16-be", "surrogatepass"), rv.encode("utf-16-be", "surrogatepass")
        return (a > b) - (a < b)
    assert isinstance(lv, int) and isinstance(rv, int)
    return (lv > rv) - (lv < rv)


def _java_equals(lv: Value, rv: Value) -> bool:
    """``Object.equals`` between boxed values (same type and value; Double by bit pattern)."""
    if _jtype(lv) != _jtype(rv):
        return False
    if isinstance(lv, float) and isinstance(rv, float):
        return _double_bits(lv) == _double_bits(rv)
    return lv == rv


# --- the expression tree -------------------------------------------------------------------------

Props = Mapping[str, str]


@dataclass(frozen=True)
class _Node:
    """One node of a parsed expression."""

    kind: str
    #: children, evaluated left to right
    args: tuple[_Node, ...] = ()
    value: Value = None
    name: str = ""
    strings: tuple[str, ...] = ()
    depth: int = 1

    @property
    def is_boolean(self) -> bool:
        """Java's ``instanceof BooleanExpression``."""
        if self.kind == "const":
            return self.name == "bool-const"
        return self.kind not in ("prop", "neg")


def _mk(kind: str, *args: _Node, value: Value = None, name: str = "",
        strings: tuple[str, ...] = ()) -> _Node:
    depth = 1 + max((a.depth for a in args), default=0)
    if depth > SQL92_MAX_DEPTH and kind not in ("and", "or"):
        raise Sql92Error(f"SQL92 expression nests deeper than {SQL92_MAX_DEPTH} levels")
    return _Node(kind, args, value, name, strings, depth)


def _eval(node: _Node, props: Props) -> Value:
    k = node.kind
    if k == "const":
        return node.value
    if k == "prop":
        return props.get(node.name)
    if k == "or" or k == "and":
        stop = k == "or"  # OR stops at the first TRUE, AND at the first FALSE
        unknown = False
        for child in node.args:
            v = _eval(child, props)
            if v is not None and not isinstance(v, bool):
                raise _EvalError("a logical operand is not a Boolean")
            if v is stop:
                return stop
            unknown = unknown or v is None
        return None if unknown else not stop
    if k == "not":
        v = _eval(node.args[0], props)
        if v is None:
            return None
        if not isinstance(v, bool):
            raise _EvalError("NOT of a non-Boolean")
        return not v
    if k == "cast":
        v = _eval(node.args[0], props)
        if v is None:
            return None
        return v if isinstance(v, bool) else False
    if k == "neg":
        v = _eval(node.args[0], props)
        if v is None or not _is_number(v):
            return None
        if isinstance(v, float):
            return -v
        if isinstance(v, _Long):
            return _Long(((-v - _LONG_MIN) % 2**64) + _LONG_MIN)
        return _Int(((-int(v) - _INT_MIN) % 2**32) + _INT_MIN)
    if k == "eq":
        lv, rv = _eval(node.args[0], props), _eval(node.args[1], props)
        if (lv is None) != (rv is None):
            return None if lv is None else False
        if lv is None or _java_equals(lv, rv):
            return True
        return _java_compare(lv, rv) == 0
    if k in ("gt", "ge", "lt", "le"):
        lv = _eval(node.args[0], props)
        if lv is None:
            return None
        rv = _eval(node.args[1], props)
        if rv is None:
            return None
        if isinstance(lv, str) and isinstance(rv, str):
            c = _double_compare(_parse_java_double(lv), _parse_java_double(rv))
        else:
            c = _java_compare(lv, rv)
        return {"gt": c > 0, "ge": c >= 0, "lt": c < 0, "le": c <= 0}[k]
    if k == "in":
        v = _eval(node.args[0], props)
        if v is None or not isinstance(v, str):
            return None
        return (v in node.strings) != (node.name == "not")
    if k in ("contains", "startswith", "endswith"):
        search = node.strings[0]
        if not search:
            return False
        v = _eval(node.args[0], props)
        if v is None or not isinstance(v, str):
            return False
        hit = (search in v if k == "contains" else
               v.startswith(search) if k == "startswith" else v.endswith(search))
        return hit != (node.name == "not")
    raise AssertionError(k)  # pragma: no cover


Outcome = Literal["true", "false", "null", "error"]


@dataclass(frozen=True)
class Selector:
    """A compiled SQL92 filter expression."""

    #: the expression as written
    text: str
    _root: _Node = field(repr=False, compare=False)
    #: the property names the expression reads (``TAGS`` included when used)
    properties: frozenset[str] = frozenset()
    #: text after the complete expression, which the broker never reads ("" when none)
    ignored_tail: str = ""

    def outcome(self, properties: Props) -> Outcome:
        """What the broker's evaluation gives for a message with ``properties``: ``true``,
        ``false``, ``null`` (unknown) or ``error`` (the evaluation threw)."""
        try:
            v = _eval(self._root, properties)
        except _EvalError:
            return "error"
        if v is None:
            return "null"
        return "true" if v is True else "false"

    def matches(self, properties: Props) -> bool:
        """Would the broker deliver a message with ``properties``? Only an exact TRUE does."""
        return self.outcome(properties) == "true"


# --- tokenizer -----------------------------------------------------------------------------------

_KEYWORDS = frozenset({"NOT", "AND", "OR", "BETWEEN", "IN", "TRUE", "FALSE", "NULL", "IS",
                       "CONTAINS", "STARTSWITH", "ENDSWITH"})
_PUNCT = ("<>", ">=", "<=", "=", ">", "<", "(", ")", ",", "+", "-")
_ID_START = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_$")
_ID_PART = _ID_START | frozenset("0123456789")
_DIGITS = frozenset("0123456789")
_SPACE = frozenset(" \t\n\r\f")


@dataclass(frozen=True)
class _Tok:
    """One token of an expression, with its position in the text."""

    kind: str  # a keyword, a punctuation string, "int", "float", "str", "id" or "eof"
    text: str
    pos: int


class _Lexer:
    """Tokens on demand, so that (like the broker) text after the expression is never lexed
    beyond what the parser peeks at."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0
        self.tokens: list[_Tok] = []

    def peek(self, k: int = 0) -> _Tok:
        while len(self.tokens) <= k:
            self.tokens.append(self._next())
        return self.tokens[k]

    def take(self) -> _Tok:
        tok = self.peek()
        self.tokens.pop(0)
        return tok

    def _skip(self) -> None:
        s, n = self.text, len(self.text)
        while self.pos < n:
            c = s[self.pos]
            if c in _SPACE:
                self.pos += 1
            elif s.startswith("--", self.pos):
                ends = [i for i in (s.find("\n", self.pos), s.find("\r", self.pos)) if i >= 0]
                if not ends:
                    return  # a line comment needs its line end; otherwise these are two minus signs
                self.pos = min(ends) + 1
            elif s.startswith("/*", self.pos):
                end = s.find("*/", self.pos + 2)
                if end < 0:
                    raise Sql92Error(f"SQL92 expression has an unterminated comment at {self.pos + 1}")
                self.pos = end + 2
            else:
                return

    def _next(self) -> _Tok:
        self._skip()
        s, n, p = self.text, len(self.text), self.pos
        if p >= n:
            return _Tok("eof", "", p)
        c = s[p]
        if c == "'":
            i, out = p + 1, []
            while True:
                j = s.find("'", i)
                if j < 0:
                    raise Sql92Error(f"SQL92 expression has an unterminated string at {p + 1}")
                out.append(s[i:j])
                if s.startswith("''", j):
                    out.append("'")
                    i = j + 2
                    continue
                self.pos = j + 1
                return _Tok("str", "".join(out), p)
        if c in _DIGITS or (c == "." and p + 1 < n and s[p + 1] in _DIGITS):
            return self._number(p)
        if c in _ID_START:
            i = p + 1
            while i < n and s[i] in _ID_PART:
                i += 1
            word = s[p:i]
            self.pos = i
            upper = word.upper()
            return _Tok(upper if upper in _KEYWORDS else "id", word, p)
        for punct in _PUNCT:
            if s.startswith(punct, p):
                self.pos = p + len(punct)
                return _Tok(punct, punct, p)
        raise Sql92Error(f"SQL92 expression has an unexpected character {c!r} at {p + 1}")

    def _number(self, p: int) -> _Tok:
        s, n = self.text, len(self.text)
        i = p
        while i < n and s[i] in _DIGITS:
            i += 1
        is_float = False
        if i < n and s[i] == ".":
            is_float = True
            i += 1
            while i < n and s[i] in _DIGITS:
                i += 1
        if i < n and s[i] in "eE":
            j = i + 1
            if j < n and s[j] in "+-":
                j += 1
            if j < n and s[j] in _DIGITS:
                while j < n and s[j] in _DIGITS:
                    j += 1
                i, is_float = j, True
        if is_float:
            self.pos = i
            return _Tok("float", s[p:i], p)
        # a decimal literal is "0" or starts with 1-9; "007" lexes as 0, 0, 7
        i = p + 1 if s[p] == "0" else i
        if i < n and s[i] in "lL":
            i += 1
        self.pos = i
        return _Tok("int", s[p:i], p)


# --- parser --------------------------------------------------------------------------------------


class _Parser:
    def __init__(self, text: str) -> None:
        self.lx = _Lexer(text)
        self.text = text
        self.props: set[str] = set()

    def fail(self, tok: _Tok, what: str) -> Sql92Error:
        found = "the end" if tok.kind == "eof" else repr(tok.text)
        return Sql92Error(f"SQL92 expression: expected {what} at {tok.pos + 1}, found {found}")

    def expect(self, kind: str, what: str) -> _Tok:
        tok = self.lx.peek()
        if tok.kind != kind:
            raise self.fail(tok, what)
        return self.lx.take()

    def boolean(self, node: _Node, pos: int) -> _Node:
        """The broker's ``asBooleanExpression``: a bare property is cast, other values refused."""
        if node.is_boolean:
            return node
        if node.kind == "prop":
            return _mk("cast", node)
        raise Sql92Error(f"SQL92 expression: the operand at {pos + 1} is not a condition")

    def top(self) -> Selector:
        if self.lx.peek().kind == "eof":
            raise self.fail(self.lx.peek(), "an expression")
        pos = self.lx.peek().pos
        root = self.boolean(self.or_expr(0), pos)
        tail = self.lx.peek()
        ignored = self.text[tail.pos:].strip() if tail.kind != "eof" else ""
        return Selector(self.text, root, frozenset(self.props), ignored)

    def or_expr(self, depth: int) -> _Node:
        pos = self.lx.peek().pos
        left = self.and_expr(depth)
        if self.lx.peek().kind != "OR":
            return left
        parts = [self.boolean(left, pos)]
        while self.lx.peek().kind == "OR":
            self.lx.take()
            pos = self.lx.peek().pos
            parts.append(self.boolean(self.and_expr(depth), pos))
        return _mk("or", *parts)

    def and_expr(self, depth: int) -> _Node:
        pos = self.lx.peek().pos
        left = self.equality(depth)
        if self.lx.peek().kind != "AND":
            return left
        parts = [self.boolean(left, pos)]
        while self.lx.peek().kind == "AND":
            self.lx.take()
            pos = self.lx.peek().pos
            parts.append(self.boolean(self.equality(depth), pos))
        return _mk("and", *parts)

    def equality(self, depth: int) -> _Node:
        left = self.comparison(depth)
        while True:
            tok = self.lx.peek()
            if tok.kind in ("=", "<>"):
                self.lx.take()
                right = self.comparison(depth)
                _check_equal_operand(left, tok)
                _check_equal_operand(right, tok)
                if left.kind == "const" and right.kind == "const" and left.is_boolean \
                        and not right.is_boolean:
                    raise Sql92Error(f"SQL92 expression: the operands of {tok.text!r} at "
                                     f"{tok.pos + 1} cannot be compared")
                left = _mk("eq", left, right)
                if tok.kind == "<>":
                    left = _mk("not", left)
            elif tok.kind == "IS" and self.lx.peek(1).kind == "NULL":
                self.lx.take()
                self.lx.take()
                left = _mk("eq", left, _mk("const", name="bool-const"))
            elif tok.kind == "IS":
                self.lx.take()
                self.expect("NOT", "NOT or NULL")
                self.expect("NULL", "NULL")
                left = _mk("not", _mk("eq", left, _mk("const", name="bool-const")))
            else:
                return left

    def comparison(self, depth: int) -> _Node:
        left = self.unary(depth)
        ops = {">": "gt", ">=": "ge", "<": "lt", "<=": "le"}
        while True:
            tok = self.lx.peek()
            negated = tok.kind == "NOT" and self.lx.peek(1).kind in (
                "CONTAINS", "STARTSWITH", "ENDSWITH", "BETWEEN", "IN")
            if negated:
                self.lx.take()
                tok = self.lx.peek()
            elif tok.kind == "NOT":
                # the broker's loop enters on any NOT and then finds no operator to go with it
                raise self.fail(self.lx.peek(1), "CONTAINS, STARTSWITH, ENDSWITH, BETWEEN or IN after NOT")
            if tok.kind in ops and not negated:
                self.lx.take()
                right = self.unary(depth)
                _check_less_than_operand(left, tok)
                _check_less_than_operand(right, tok)
                left = _mk(ops[tok.kind], left, right)
            elif tok.kind in ("CONTAINS", "STARTSWITH", "ENDSWITH"):
                self.lx.take()
                search = self.expect("str", "a string literal").text
                left = _mk(tok.kind.lower(), left, name="not" if negated else "", strings=(search,))
            elif tok.kind == "BETWEEN":
                self.lx.take()
                low = self.unary(depth)
                self.expect("AND", "AND")
                high = self.unary(depth)
                left = self._between(left, low, high, negated, tok)
            elif tok.kind == "IN":
                self.lx.take()
                self.expect("(", "'('")
                items = [self.expect("str", "a string literal").text]
                while self.lx.peek().kind == ",":
                    self.lx.take()
                    items.append(self.expect("str", "a string literal").text)
                self.expect(")", "')'")
                if left.kind != "prop":
                    raise Sql92Error(f"SQL92 expression: IN at {tok.pos + 1} needs a property "
                                     f"on its left")
                left = _mk("in", left, name="not" if negated else "", strings=tuple(items))
            else:
                return left

    def _between(self, value: _Node, low: _Node, high: _Node, negated: bool, tok: _Tok) -> _Node:
        if not negated and low.kind == "const" and high.kind == "const":
            if low.value is None or high.value is None:
                raise Sql92Error(f"SQL92 expression: BETWEEN at {tok.pos + 1} has a NULL bound")
            try:
                if _java_compare(high.value, low.value) < 0:
                    raise Sql92Error(f"SQL92 expression: BETWEEN at {tok.pos + 1} has its low "
                                     f"bound above its high bound")
            except _EvalError as exc:
                raise Sql92Error(f"SQL92 expression: the bounds of BETWEEN at {tok.pos + 1} "
                                 f"cannot be compared") from exc
        for node in (value, low, high):
            _check_less_than_operand(node, tok)
        if negated:
            return _mk("or", _mk("lt", value, low), _mk("gt", value, high))
        return _mk("and", _mk("ge", value, low), _mk("le", value, high))

    def unary(self, depth: int) -> _Node:
        if depth > SQL92_MAX_DEPTH:
            raise Sql92Error(f"SQL92 expression nests deeper than {SQL92_MAX_DEPTH} levels")
        tok = self.lx.peek()
        if tok.kind == "+":
            self.lx.take()
            return self.unary(depth + 1)
        if tok.kind == "-":
            self.lx.take()
            return _mk("neg", self.unary(depth + 1))
        if tok.kind == "NOT":
            self.lx.take()
            pos = self.lx.peek().pos
            return _mk("not", self.boolean(self.unary(depth + 1), pos))
        return self.primary(depth)

    def primary(self, depth: int) -> _Node:
        tok = self.lx.peek()
        if tok.kind == "(":
            self.lx.take()
            inner = self.or_expr(depth + 1)
            self.expect(")", "')'")
            return inner
        self.lx.take()
        if tok.kind == "str":
            return _mk("const", value=tok.text)
        if tok.kind == "int":
            digits = tok.text.rstrip("lL")
            value = int(digits)
            if value > _LONG_MAX:
                raise Sql92Error(f"SQL92 expression: {tok.text} at {tok.pos + 1} is out of range")
            return _mk("const", value=_Int(value) if value <= _INT_MAX else _Long(value))
        if tok.kind == "float":
            number = float(tok.text)
            if number > 1.7976931348623157e308 or number < 5e-324:
                raise Sql92Error(f"SQL92 expression: {tok.text} at {tok.pos + 1} is out of range")
            return _mk("const", value=number)
        if tok.kind in ("TRUE", "FALSE"):
            return _mk("const", value=tok.kind == "TRUE", name="bool-const")
        if tok.kind == "NULL":
            return _mk("const", name="bool-const")
        if tok.kind == "id":
            self.props.add(tok.text)
            return _mk("prop", name=tok.text)
        raise self.fail(tok, "a value, a property or '('")


def _check_equal_operand(node: _Node, tok: _Tok) -> None:
    if node.kind == "const" and node.value is None:
        raise Sql92Error(f"SQL92 expression: NULL cannot be compared with {tok.text!r} at "
                         f"{tok.pos + 1}; use IS NULL")


def _check_less_than_operand(node: _Node, tok: _Tok) -> None:
    if node.kind == "const":
        if _is_number(node.value):
            return
        raise Sql92Error(f"SQL92 expression: {tok.text!r} at {tok.pos + 1} compares numbers, "
                         f"not strings, Booleans or NULL")
    if node.is_boolean:
        raise Sql92Error(f"SQL92 expression: {tok.text!r} at {tok.pos + 1} cannot compare a "
                         f"condition")


def compile_sql92(text: str) -> Selector:
    """Compile a SQL92 filter expression as the broker does; :class:`Sql92Error` when it would
    refuse it (the message names the position, counted from 1)."""
    if len(text) > SQL92_MAX_CHARS:
        raise Sql92Error(f"SQL92 expression is longer than {SQL92_MAX_CHARS} characters")
    return _Parser(text).top()

"""The fastjson dialect that RocketMQ servers write, read and written back.

Java's fastjson writes maps keyed by numbers without quotes (``{0:"127.0.0.1:10911"}``) and maps
keyed by objects as object literals (``{{"brokerName":"a","queueId":0,"topic":"T"}:{…}}``), so
response bodies are not JSON. :func:`loads` is a small recursive-descent parser whose object
keys may be any JSON value: number keys come back as ``int``, object keys as a hashable
:class:`ObjectKey` (sorted ``(name, value)`` pairs). :func:`dumps` writes the same dialect, so the
emulator can answer Java tools byte-compatibly.

Bodies come from peers we do not control, so :func:`loads` is linear in its input, nests at most
:data:`MAX_DEPTH` levels, reads integers of at most :data:`MAX_INT_DIGITS` digits, rejects
``NaN``/``Infinity`` (fastjson writes non-finite doubles as ``null``) and raises nothing but
:class:`~rmqctl.errors.ProtocolError` whatever the bytes. Map keys that are objects may hold such
keys at most :data:`MAX_KEY_DEPTH` levels deep, and a key is never re-rendered as text, so memory
stays linear in the input however the keys nest.

Must not import anything from rmqctl but ``errors``.
"""

from __future__ import annotations

import itertools
import json
import math
import re
from collections.abc import Mapping
from json import decoder as _json_decoder
from typing import Any

from rmqctl.errors import ProtocolError

#: The C string scanner behind ``json.loads`` (not in typeshed, but public since Python 2.6).
scanstring = _json_decoder.scanstring  # type: ignore[attr-defined]

#: Deepest nesting of arrays and objects accepted in a body (RocketMQ bodies nest < 10 levels).
MAX_DEPTH = 512
#: Longest integer accepted, in digits (Python's default ``int`` conversion limit).
MAX_INT_DIGITS = 4300
#: Map keys that are objects or arrays may themselves hold such keys this many levels deep
#: (a Java ``MessageQueue`` key is one level; RocketMQ never writes a second).
MAX_KEY_DEPTH = 4

_WS = re.compile(r"[ \t\n\r]*")
_NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][-+]?\d+)?")
_LITERALS = {"true": True, "false": False, "null": None}
_NON_FINITE = ("NaN", "Infinity", "-Infinity")
_IDENT = re.compile(r"-?[A-Za-z_$][A-Za-z0-9_$]*")


class ObjectKey(tuple[tuple[str, Any], ...]):
    """A map key that was itself a JSON object, e.g. a Java ``MessageQueue``."""

    __slots__ = ()

    def get(self, name: str, default: Any = None) -> Any:
        for key, value in self:
            if key == name:
                return value
        return default

    def as_dict(self) -> dict[str, Any]:
        return dict(self)


def _name(key: Any) -> Any:
    """The name an object key's field is kept under: text for scalars, the key itself for a
    key that is an object or array (its text would re-escape every level below it, and that
    grows exponentially with the nesting)."""
    return key if isinstance(key, (str, tuple)) else str(key)


def _order(item: tuple[Any, Any]) -> tuple[int, Any]:
    # Sort by name only: two keys may print alike (``1`` and ``"1"``) and their values need not
    # be comparable; container names are ordered by hash, which equal keys share.
    name = item[0]
    return (0, name) if isinstance(name, str) else (1, hash(name))


def _freeze(value: Any) -> Any:
    if isinstance(value, dict):
        return ObjectKey(sorted(((_name(k), _freeze(v)) for k, v in value.items()), key=_order))
    if isinstance(value, list):
        return tuple(_freeze(v) for v in value)
    return value


class _Parser:
    __slots__ = ("text", "pos", "depth", "key_depth")

    def __init__(self, text: str, key_depth: int = 0) -> None:
        self.text = text
        self.pos = 0
        self.depth = 0
        #: how many map keys that are objects or arrays enclose the current position
        self.key_depth = key_depth

    def fail(self, what: str) -> ProtocolError:
        snippet = self.text[max(0, self.pos - 20) : self.pos + 20]
        return ProtocolError(
            f"malformed body at offset {self.pos}: {what} near {snippet!r}",
            self.text.encode("utf-8", "replace"),
        )

    def skip_ws(self) -> None:
        self.pos = _WS.match(self.text, self.pos).end()  # type: ignore[union-attr]

    def value(self) -> Any:
        self.skip_ws()
        if self.pos >= len(self.text):
            raise self.fail("unexpected end of body")
        ch = self.text[self.pos]
        if ch == "{":
            return self.obj()
        if ch == "[":
            return self.arr()
        if ch == '"':
            try:
                text, self.pos = scanstring(self.text, self.pos + 1, True)
            except ValueError as exc:
                raise self.fail(f"bad string ({exc})") from exc
            return text
        match = _NUMBER.match(self.text, self.pos)
        if match and match.end() > self.pos:
            token = match.group()
            if "." in token or "e" in token or "E" in token:
                number = float(token)
                if not math.isfinite(number):
                    raise self.fail("number out of range")
                self.pos = match.end()
                return number
            if len(token) > MAX_INT_DIGITS + 1:
                raise self.fail(f"integer of more than {MAX_INT_DIGITS} digits")
            self.pos = match.end()
            return int(token)
        match = _IDENT.match(self.text, self.pos)
        if match and match.group() in _LITERALS:
            self.pos = match.end()
            return _LITERALS[match.group()]
        if match and match.group() in _NON_FINITE:
            raise self.fail(f"{match.group()} is not a finite number")
        raise self.fail(f"unexpected character {ch!r}")

    def enter(self) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise self.fail(f"nested deeper than {MAX_DEPTH} levels")

    def key(self) -> Any:
        self.skip_ws()
        if self.pos < len(self.text) and self.text[self.pos] not in '"{[-0123456789tfnNI':
            # fastjson with unquoted field names (not used by RocketMQ, but cheap to accept)
            match = _IDENT.match(self.text, self.pos)
            if match:
                self.pos = match.end()
                return match.group()
        if self.pos < len(self.text) and self.text[self.pos] in "{[":
            self.key_depth += 1
            if self.key_depth > MAX_KEY_DEPTH:
                raise self.fail(f"map keys nested deeper than {MAX_KEY_DEPTH} levels")
            key = self.value()
            self.key_depth -= 1
            return _freeze(key)
        key = self.value()
        if isinstance(key, str) and key.startswith("{") and key.endswith("}"):
            # BrowserCompatible output writes object keys as a JSON string of the object.
            # (each level unescapes once, so at most MAX_KEY_DEPTH passes over shrinking text)
            if self.key_depth >= MAX_KEY_DEPTH:
                return key
            try:
                key = _Parser(key, self.key_depth + 1).document()
            except ProtocolError:
                return key
        return _freeze(key)

    def obj(self) -> dict[Any, Any]:
        self.enter()
        self.pos += 1
        out: dict[Any, Any] = {}
        self.skip_ws()
        if self.text.startswith("}", self.pos):
            self.pos += 1
            self.depth -= 1
            return out
        while True:
            key = self.key()
            self.skip_ws()
            if not self.text.startswith(":", self.pos):
                raise self.fail("expected ':'")
            self.pos += 1
            out[key] = self.value()
            self.skip_ws()
            if self.text.startswith(",", self.pos):
                self.pos += 1
                self.skip_ws()
                if self.text.startswith("}", self.pos):  # tolerate a trailing comma
                    self.pos += 1
                    self.depth -= 1
                    return out
                continue
            if self.text.startswith("}", self.pos):
                self.pos += 1
                self.depth -= 1
                return out
            raise self.fail("expected ',' or '}'")

    def arr(self) -> list[Any]:
        self.enter()
        self.pos += 1
        out: list[Any] = []
        self.skip_ws()
        if self.text.startswith("]", self.pos):
            self.pos += 1
            self.depth -= 1
            return out
        while True:
            out.append(self.value())
            self.skip_ws()
            if self.text.startswith(",", self.pos):
                self.pos += 1
                continue
            if self.text.startswith("]", self.pos):
                self.pos += 1
                self.depth -= 1
                return out
            raise self.fail("expected ',' or ']'")

    def document(self) -> Any:
        result = self.value()
        self.skip_ws()
        if self.pos != len(self.text):
            raise self.fail("trailing data after the document")
        return result


def loads(data: bytes | str) -> Any:
    """Parse a fastjson body. Raises :class:`ProtocolError` with the raw bytes on any failure."""
    raw = data if isinstance(data, bytes) else data.encode("utf-8", "surrogatepass")
    if isinstance(data, bytes):
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ProtocolError(f"body is not UTF-8: {exc}", data) from exc
    else:
        text = data
    try:
        return _loads(text)
    except ProtocolError as exc:
        exc.raw = raw
        raise
    except RecursionError as exc:  # the interpreter's stack ran out before MAX_DEPTH did
        raise ProtocolError("malformed body: nested too deeply", raw) from exc
    except (ValueError, TypeError, OverflowError) as exc:  # pragma: no cover - a parser bug
        raise ProtocolError(f"malformed body: {exc}", raw) from exc


def check_depth(text: str, limit: int = MAX_DEPTH) -> None:
    """Raise ProtocolError if ``text`` nests arrays/objects deeper than ``limit`` (linear time)."""
    if text.count("[") + text.count("{") <= limit:
        return  # cannot nest deeper than it has openers
    brackets = _BRACKETS.findall(_STRINGS.sub("", text))
    deepest = max(itertools.accumulate(map(_BRACKET_STEP.__getitem__, brackets)), default=0)
    if deepest > limit:
        raise ProtocolError(f"malformed body: nested deeper than {limit} levels", text.encode("utf-8", "replace"))


def _reject_constant(name: str) -> Any:
    raise ProtocolError(f"malformed body: {name} is not a finite number")


def _finite_float(token: str) -> float:
    value = float(token)
    if not math.isfinite(value):
        raise ProtocolError(f"malformed body: number {token[:40]} out of range")
    return value


def _loads(text: str) -> Any:
    check_depth(text)
    # Most bodies with string keys only are plain JSON; the C decoder is much faster.
    try:
        return json.loads(text, parse_constant=_reject_constant, parse_float=_finite_float)
    except ValueError:
        pass
    # Next try quoting the non-string keys (outside strings) and let the C decoder run again;
    # anything this rewrite cannot express falls through to the full tolerant parser.
    try:
        return json.loads(_KEY_TOKENS.sub(_quote_key, text), object_pairs_hook=_unquote_keys,
                          parse_constant=_reject_constant, parse_float=_finite_float)
    except ValueError:
        pass
    return _Parser(text).document()


# A string, matched possessively and to the end of the text when it is unterminated, so a lone
# quote never makes the scanner retry from every later position (that was quadratic).
_STRINGS = re.compile(r'"(?:[^"\\]|\\.)*+"?', re.DOTALL)
_BRACKETS = re.compile(r"[\[\]{}]")
_BRACKET_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}

# A string token (skipped as a whole, so nothing inside a string is ever rewritten), or a map key
# that is a number or a flat object literal, right after "{" or ",".
_KEY_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*+"?|([{,])(\s*+)(\{[^{}]*+\}|-?\d++)(\s*+):', re.DOTALL)
_NUMBER_KEY = "\x00N:"
_OBJECT_KEY = "\x00O:"


def _quote_key(match: re.Match[str]) -> str:
    if match.group(1) is None:
        return match.group(0)
    key = match.group(3)
    marker = _OBJECT_KEY if key.startswith("{") else _NUMBER_KEY
    return match.group(1) + match.group(2) + json.dumps(marker + key) + match.group(4) + ":"


def _unquote_keys(pairs: list[tuple[str, Any]]) -> dict[Any, Any]:
    out: dict[Any, Any] = {}
    for key, value in pairs:
        if key.startswith(_NUMBER_KEY):
            out[int(key[len(_NUMBER_KEY) :])] = value
        elif key.startswith(_OBJECT_KEY):
            out[_freeze(json.loads(key[len(_OBJECT_KEY) :]))] = value
        elif key.startswith("{") and key.endswith("}"):
            # as the tolerant parser does with BrowserCompatible object keys
            try:
                out[_freeze(json.loads(key))] = value
            except ValueError:
                out[key] = value
        else:
            out[key] = value
    return out


# ---------------------------------------------------------------------------------------------
# Encoding


def _key(key: Any) -> str:
    if isinstance(key, bool):
        return "true" if key else "false"
    if isinstance(key, int):
        return str(key)  # fastjson leaves Integer/Long keys unquoted
    if isinstance(key, str):
        return json.dumps(key, ensure_ascii=False)
    if isinstance(key, ObjectKey):
        return _dump(dict(key))
    fastjson_key = getattr(key, "__fastjson__", None)
    if fastjson_key is not None:
        return _dump(fastjson_key())
    raise TypeError(f"cannot use {type(key).__name__} as a fastjson key")


def _dump(value: Any) -> str:
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            return "null"
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, Mapping):
        # fastjson omits null bean properties; maps keep them only if the caller wants.
        items = ",".join(f"{_key(k)}:{_dump(v)}" for k, v in value.items() if v is not None)
        return "{" + items + "}"
    if isinstance(value, (list, tuple, set, frozenset)):
        return "[" + ",".join(_dump(v) for v in value) + "]"
    fastjson_value = getattr(value, "__fastjson__", None)
    if fastjson_value is not None:
        return _dump(fastjson_value())
    raise TypeError(f"cannot encode {type(value).__name__} as fastjson")


def dumps(value: Any) -> str:
    """Write ``value`` in fastjson's dialect (non-string keys unquoted or as object literals).

    Objects with a ``__fastjson__()`` method are written as what that method returns.
    """
    return _dump(value)


def dumps_bytes(value: Any) -> bytes:
    return dumps(value).encode("utf-8")

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

import json
import math
import re
from collections.abc import Callable, Mapping
from json import decoder as _json_decoder
from json import encoder as _json_encoder
from typing import Any

from rmqctl.errors import ProtocolError

#: The C string scanner behind ``json.loads`` (not in typeshed, but public since Python 2.6).
scanstring = _json_decoder.scanstring  # type: ignore[attr-defined]
#: A JSON string literal with non-ASCII text kept as it is (the C function behind
#: ``json.dumps(text, ensure_ascii=False)``, without its per-call set-up).
encode_string: Callable[[str], str] = _json_encoder.encode_basestring

#: Deepest nesting of arrays and objects accepted in a body (RocketMQ bodies nest < 10 levels).
MAX_DEPTH = 512
#: Longest integer accepted, in digits (Python's default ``int`` conversion limit).
MAX_INT_DIGITS = 4300
#: Map keys that are objects or arrays may themselves hold such keys this many levels deep
#: (a Java ``MessageQueue`` key is one level; RocketMQ never writes a second).
MAX_KEY_DEPTH = 4

_WS = re.compile(r"[ \t\n\r]*")
_WS_CHARS = (" ", "\t", "\n", "\r")
_NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][-+]?\d+)?")
_LITERALS = {"true": True, "false": False, "null": None}
_NON_FINITE = ("NaN", "Infinity", "-Infinity")
#: how an object whose first key is an object, an array or a number opens (as fastjson writes
#: it, without spaces): the C decoder cannot read it, and would fail at once at a cost above
#: the walk's
_KEYED = ("{{", "{[", "{-", *(f"{{{digit}" for digit in range(10)))
_OPENERS = ("{", "[")
_INT_KEY = re.compile(r"(-?(?:0|[1-9][0-9]{0,18})):")
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


def _freeze_text_keyed(value: dict[str, Any]) -> Any:
    """:func:`_freeze` for an object the C decoder read (its names are all text, and distinct,
    so sorting never compares two values); the common key, a Java ``MessageQueue``, holds
    scalars only and is hashable as it is."""
    key = ObjectKey(sorted(value.items()))
    try:
        hash(key)
    except TypeError:  # a value is an object or array
        return _freeze(value)
    return key


def _freeze(value: Any) -> Any:
    if isinstance(value, dict):
        return ObjectKey(sorted(((_name(k), _freeze(v)) for k, v in value.items()), key=_order))
    if isinstance(value, list):
        return tuple(_freeze(v) for v in value)
    return value


class _Parser:
    """Reads the dialect in one pass: every array or object is first handed to the C decoder,
    which reads plain JSON (most of a body) at C speed and stops at the first key it cannot read;
    only the containers holding such keys are walked here. The characters the C decoder read
    before stopping are charged to :attr:`budget`, so however the keys are placed, at most about
    the body's length is read twice before the rest is walked here alone (linear time)."""

    __slots__ = ("text", "pos", "depth", "key_depth", "budget", "walked")

    def __init__(self, text: str, key_depth: int = 0) -> None:
        self.text = text
        self.pos = 0
        self.depth = 0
        self.budget = len(text) + 64
        #: nesting levels at which a container held what the C decoder cannot read: later
        #: containers at that level are walked here at once. The C decoder's error costs time
        #: in proportion to its offset in the body (it counts the lines before it), so failing
        #: again on each of thousands of sibling containers would cost the square of the body.
        self.walked: set[int] = set()
        #: how many map keys that are objects or arrays enclose the current position
        self.key_depth = key_depth

    def fail(self, what: str) -> ProtocolError:
        snippet = self.text[max(0, self.pos - 20) : self.pos + 20]
        return ProtocolError(
            f"malformed body at offset {self.pos}: {what} near {snippet!r}",
            self.text.encode("utf-8", "replace"),
        )

    def skip_ws(self) -> None:
        if self.text.startswith(_WS_CHARS, self.pos):
            self.pos = _WS.match(self.text, self.pos).end()  # type: ignore[union-attr]

    def value(self) -> Any:
        self.skip_ws()
        if self.pos >= len(self.text):
            raise self.fail("unexpected end of body")
        ch = self.text[self.pos]
        if ch == "{" or ch == "[":
            if (self.budget > 0 and self.depth + 1 not in self.walked
                    and not self.text.startswith(_KEYED, self.pos)):
                start = self.pos
                try:
                    value, self.pos = _scan_once(self.text, start)
                    return value
                except _json_decoder.JSONDecodeError as exc:
                    self.budget -= exc.pos - start + 1
                    self.walked.add(self.depth + 1)
                except (StopIteration, RecursionError, ValueError, ProtocolError):
                    self.budget = 0  # not the C decoder's to judge: walked here, errors named here
            return self.obj() if ch == "{" else self.arr()
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
            if not self.entries(out):
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

    def entries(self, out: dict[Any, Any]) -> bool:
        """Read the run of entries ahead written as fastjson writes them (``"name":value``,
        ``{…}:value`` or ``0:value``, separated by bare commas), the C decoder reading keys and
        values, and stop after the last value read. False when the next entry is not of that
        shape: the general loop then reads it (and names any error)."""
        text, pos = self.text, self.pos
        if self.key_depth >= MAX_KEY_DEPTH:
            return False
        scan = _scan_once
        read = False
        while self.budget > 0:
            start = -1
            walking = False  # set while a container below this entry is walked here
            try:
                if text.startswith("{", pos):
                    key, end = scan(text, pos)
                    if not isinstance(key, dict) or not text.startswith(":", end):
                        break
                    key = _freeze_text_keyed(key)
                elif text.startswith('"', pos):
                    key, end = scanstring(text, pos + 1, True)
                    if key.startswith("{") or not text.startswith(":", end):
                        break  # an object key written as text: the general loop decodes it
                else:
                    number = _INT_KEY.match(text, pos)
                    if number is None:
                        break
                    key, end = int(number.group(1)), number.end() - 1
                start = end + 1
                if text.startswith(_OPENERS, start) and (self.depth + 1 in self.walked
                                                         or text.startswith(_KEYED, start)):
                    # a container at a level where one held what the C decoder cannot read, or
                    # one that opens with a key it cannot read
                    self.pos, walking = start, True
                    value = self.obj() if text.startswith("{", start) else self.arr()
                    end = self.pos
                else:
                    value, end = scan(text, start)
            except _json_decoder.JSONDecodeError as exc:
                if start < 0 or not text.startswith(("{", "["), start):
                    break
                # the value holds what the C decoder cannot read: walk it here, once
                self.budget -= exc.pos - start
                self.walked.add(self.depth + 1)
                self.pos = start
                value = self.obj() if text.startswith("{", start) else self.arr()
                end = self.pos
            except (StopIteration, RecursionError, ValueError, ProtocolError):
                if walking:  # the general loop would walk it again and fail alike, once more per
                    # enclosing level: the walk's own error names the fault
                    raise
                break
            out[key] = value
            self.pos = end
            read = True
            if not text.startswith(",", end):
                break
            pos = end + 1
        return read

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
        self.skip_ws()
        if self.text.startswith("{", self.pos) and "{{" in self.text:
            # an object key somewhere (a MessageQueue, as a rule): the C decoder would give up on
            # the whole body, so its top level is walked here, each value read at C speed
            result: Any = self.obj()
        else:
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


class Scanner:
    """Values of one text read where each starts (no space before it), one after another, as
    :func:`loads` reads a whole body and within the same limits. One scanner shares across its
    reads what keeps :func:`loads` linear (the C decoder's failures are charged once, and a
    nesting level where it failed is walked at once afterwards), so reading many values of one
    text costs what reading the text once does."""

    __slots__ = ("_parser",)

    def __init__(self, text: str) -> None:
        self._parser = _Parser(text)

    def value_at(self, pos: int) -> tuple[Any, int]:
        """The value that starts at ``pos`` and the position just after it; raises
        :class:`ProtocolError` when no value can be read there."""
        parser = self._parser
        parser.pos, parser.depth, parser.key_depth = pos, 0, 0
        try:
            value = parser.value()
        except RecursionError as exc:
            raise ProtocolError("malformed body: nested too deeply") from exc
        except (ValueError, TypeError, OverflowError) as exc:  # pragma: no cover - a parser bug
            raise ProtocolError(f"malformed body: {exc}") from exc
        read = parser.text[pos:parser.pos]
        if read.count("[") + read.count("{") > MAX_DEPTH:
            _check_nesting(value, read)
        return value, parser.pos


def _reject_constant(name: str) -> Any:
    raise ProtocolError(f"malformed body: {name} is not a finite number")


def _finite_float(token: str) -> float:
    value = float(token)
    if not math.isfinite(value):
        raise ProtocolError(f"malformed body: number {token[:40]} out of range")
    return value


def _loads(text: str) -> Any:
    if text.count("[") + text.count("{") <= MAX_DEPTH:
        return _Parser(text).document()  # cannot nest deeper than it has openers
    document = _Parser(text).document()
    _check_nesting(document, text)
    return document


def _check_nesting(document: Any, text: str) -> None:
    """What the C decoder read nests as deep as the interpreter lets it; hold the result to
    :data:`MAX_DEPTH` (the walk visits each container once, without recursion).

    The brackets of the text outside its strings nest at least as deep as the document (a map
    key that is an object is not a container of the document): when they stay within the
    limit, the document does, and the walk (which costs more than the parse of a large body
    of many small objects) is not needed. A text with escapes is walked."""
    # the text parsed, so its strings are well formed: with no escape in it, its quotes pair
    # up in turn, and every other piece between them is outside a string
    marks = text.translate(_MARKS)
    if "\\" not in marks:
        depth = deepest = 0
        for bracket in "".join(marks.split('"')[0::2]):
            if bracket == "[" or bracket == "{":
                depth += 1
                if depth > deepest:
                    deepest = depth
            elif bracket == "]" or bracket == "}":
                depth -= 1
        if deepest <= MAX_DEPTH:
            return
    stack: list[tuple[Any, int]] = [(document, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, dict):
            children: Any = value.values()
        elif isinstance(value, list):
            children = value
        else:
            continue
        if depth > MAX_DEPTH:
            raise ProtocolError(f"malformed body: nested deeper than {MAX_DEPTH} levels",
                                text.encode("utf-8", "replace"))
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))


#: what str.translate leaves of a JSON text to tell its brackets outside strings: quotes,
#: backslashes and brackets (and characters beyond ASCII, which only strings hold)
_MARKS = {c: None for c in range(128) if chr(c) not in '"\\[]{}'}

#: The C decoder's value scanner, with the dialect's rules for numbers.
_scan_once = json.JSONDecoder(  # type: ignore[attr-defined]
    parse_constant=_reject_constant, parse_float=_finite_float).scan_once


# ---------------------------------------------------------------------------------------------
# Encoding


def _key(key: Any) -> str:
    if isinstance(key, bool):
        return "true" if key else "false"
    if isinstance(key, int):
        return str(key)  # fastjson leaves Integer/Long keys unquoted
    if isinstance(key, str):
        return encode_string(key)
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
        return encode_string(value)
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

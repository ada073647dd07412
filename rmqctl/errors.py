"""One exception tree and the documented process exit codes.

Every error rmqctl raises derives from :class:`RmqctlError`; third-party exceptions (socket
errors, ``json`` errors, ``httpx`` errors, TOML errors) are translated exactly once, at the layer
that meets them, with ``raise … from exc``. Front ends render an error in one place as
``rmqctl: error: <message>`` plus an optional hint and exit with :attr:`RmqctlError.exit_code`.

Tree::

    RmqctlError(message, hint)
    ├── ConnectionError        cannot reach or lost a name server / broker       exit 3
    │   ├── ConnectionLost     the socket died while requests were pending        exit 3
    │   └── TlsMismatch        TLS to a plain port, or plain to a TLS-only port   exit 3
    ├── TimeoutError           no answer within --timeout                         exit 4
    ├── ProtocolError          bad frame or bad body (raw bytes kept for --debug) exit 3
    ├── RemoteError(code, remark)  the server answered with a non-success code    exit 6
    │   ├── TopicNotExist (17)
    │   ├── ConsumerNotOnline (206)
    │   ├── RequestCodeNotSupported (3)
    │   ├── NoPermission (16)
    │   └── GoAway (1500)
    ├── ServiceError           an HTTP service (control API, dashboard) failed     exit 6
    ├── JobFailed              the Spark job failed (Spark or its JVM)             exit 7
    ├── WriteRefused           a write refused before anything was sent:          exit 8
    │                          read-only context, stale plan, not confirmed
    ├── NotApplied             a write was sent but reading back shows queues     exit 9
    │                          not at their targets (overwritten, refused)
    ├── NotFound               unknown group / topic (decided by rmqctl itself)   exit 2
    ├── ConfigError            bad config file, context or scenario file          exit 2
    └── UsageError             bad flags or arguments                              exit 2
        └── AllocationError    a strategy refused its input (Java's IllegalArgumentException)
            └── UnknownStrategyError

A partial result is not an exception: multi-broker reads return their data with a per-broker
error mapping, and the CLI exits 5 after rendering what arrived.

Imports nothing from the rest of rmqctl.
"""

from __future__ import annotations

import builtins
import enum
import os
from typing import ClassVar


class ExitCode(enum.IntEnum):
    """Process exit codes; the README documents the same table."""

    OK = 0
    FINDINGS = 1
    USAGE = 2
    CONNECTION = 3
    TIMEOUT = 4
    PARTIAL = 5
    REFUSED = 6
    JOB_FAILED = 7
    WRITE_REFUSED = 8
    NOT_APPLIED = 9
    INTERRUPTED = 130


_made = 0


def errors_made() -> int:
    """How many rmqctl errors this process has constructed so far. A stretch of work across
    which it stays the same took no error path: no read failed, none was refused or missing."""
    return _made


class RmqctlError(Exception):
    """Base of every rmqctl error: a one-line ``message`` and an optional ``hint``."""

    exit_code: ClassVar[ExitCode] = ExitCode.REFUSED

    def __init__(self, message: str, hint: str | None = None) -> None:
        global _made
        _made += 1
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return self.message


class ConnectionError(RmqctlError):  # noqa: A001 - deliberate, lives in our namespace
    """A name server or broker cannot be reached."""

    exit_code = ExitCode.CONNECTION


class ConnectionLost(ConnectionError):
    """The connection died while requests were in flight."""


class TlsMismatch(ConnectionError):
    """One side speaks TLS and the other does not: ``--tls`` against a plain port, or a plain
    connection to a server that enforces TLS (which closes it without an answer)."""


class TimeoutError(RmqctlError):  # noqa: A001
    """A request got no answer within its timeout."""

    exit_code = ExitCode.TIMEOUT


class ProtocolError(RmqctlError):
    """A frame or body could not be decoded. ``raw`` keeps the offending bytes for ``--debug``."""

    exit_code = ExitCode.CONNECTION

    def __init__(self, message: str, raw: bytes = b"", hint: str | None = None) -> None:
        super().__init__(message, hint)
        self.raw = raw


class RemoteError(RmqctlError):
    """The server answered a request with a non-success response code."""

    exit_code = ExitCode.REFUSED
    registry: ClassVar[dict[int, builtins.type[RemoteError]]] = {}
    code_value: ClassVar[int | None] = None

    #: the response code's protocol name (``TOPIC_NOT_EXIST``); subclasses set it, and the
    #: remoting layer passes it in for codes without a subclass
    code_name: ClassVar[str | None] = None

    def __init__(self, code: int, remark: str | None, *, address: str = "", name: str | None = None) -> None:
        where = f" from {address}" if address else ""
        text = (remark or "").strip() or "no remark"
        label = name or self.code_name
        super().__init__(f"{label} ({code}){where}: {text}" if label else f"response code {code}{where}: {text}")
        self.code = code
        self.remark = remark or ""
        self.address = address

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        if cls.code_value is not None:
            RemoteError.registry[cls.code_value] = cls

    @staticmethod
    def for_code(code: int, remark: str | None, *, address: str = "", name: str | None = None) -> RemoteError:
        """Build the most specific subclass registered for ``code``; ``name`` is the code's protocol
        name for the message (``SUBSCRIPTION_NOT_EXIST (24)``) when no subclass knows it."""
        cls = RemoteError.registry.get(code, RemoteError)
        return cls(code, remark, address=address, name=name)


class SystemError(RemoteError):  # noqa: A001
    code_value = 1
    code_name = "SYSTEM_ERROR"


class RequestCodeNotSupported(RemoteError):
    code_value = 3
    code_name = "REQUEST_CODE_NOT_SUPPORTED"


class NoPermission(RemoteError):
    code_value = 16
    code_name = "NO_PERMISSION"
    #: the permission the refused request needs, in words (``Get on Group:G``), when known
    needs: str | None = None


class TopicNotExist(RemoteError):
    code_value = 17
    code_name = "TOPIC_NOT_EXIST"


class QueryNotFound(RemoteError):
    code_value = 22
    code_name = "QUERY_NOT_FOUND"


class SubscriptionGroupNotExist(RemoteError):
    code_value = 26
    code_name = "SUBSCRIPTION_GROUP_NOT_EXIST"


class ConsumerNotOnline(RemoteError):
    code_value = 206
    code_name = "CONSUMER_NOT_ONLINE"


class ConsumeMsgTimeout(RemoteError):
    code_value = 207
    code_name = "CONSUME_MSG_TIMEOUT"


class GoAway(RemoteError):
    code_value = 1500
    code_name = "GO_AWAY"


class WriteRefused(RmqctlError):
    """A write refused before anything was sent: the context is read-only, the plan no longer
    matches the cluster, or the change was not confirmed."""

    exit_code = ExitCode.WRITE_REFUSED


class NotApplied(RmqctlError):
    """A write was sent, and reading the cluster back shows that some of it did not hold."""

    exit_code = ExitCode.NOT_APPLIED


class NotFound(RmqctlError):
    """Something the user named does not exist on the cluster."""

    exit_code = ExitCode.USAGE


class ServiceError(RmqctlError):
    """An HTTP service rmqctl talks to (the emulator's control API, a dashboard) answered with
    an error of its own."""

    exit_code = ExitCode.REFUSED


class JobFailed(RmqctlError):
    """The Spark job of ``analyze`` failed on its own account (Spark, the JVM, too small a heap)."""

    exit_code = ExitCode.JOB_FAILED


class ConfigError(RmqctlError):
    """A config file, context or scenario file is invalid."""

    exit_code = ExitCode.USAGE


class UsageError(RmqctlError):
    """Command-line misuse the parser could not catch."""

    exit_code = ExitCode.USAGE


class AllocationError(UsageError, ValueError):
    """A strategy refused its input, where the Java strategy throws IllegalArgumentException.

    Raised for an empty current client id, an empty queue list or an empty client list (the
    shared ``check`` guard), a negative virtual-node count, and a machine room that resolves
    to an empty name.
    """


class UnknownStrategyError(AllocationError):
    """A strategy name (or an option) that no strategy answers to."""


def os_reason(exc: OSError) -> str:
    """What the operating system says went wrong with a connection, in its own words: a host name
    that does not resolve, else errno's text (``Connection refused``), not the caller's wrapping
    (asyncio's ``Connect call failed (addr)``, httpx's layers) that repeats the address."""
    import socket  # only on this error path

    if isinstance(exc, socket.gaierror):
        return f"cannot resolve host ({exc.strerror})"
    if exc.errno and exc.errno > 0:
        return os.strerror(exc.errno)
    return str(exc) or type(exc).__name__


def mask_url(url: str) -> str:
    """``url`` with the password of its user info replaced (``http://u:******@host``)."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        return url
    authority, slash, path = rest.partition("/")
    userinfo, at, host = authority.rpartition("@")
    if not at or ":" not in userinfo:
        return url
    user = userinfo.split(":", 1)[0]
    return f"{scheme}://{user}:******@{host}{slash}{path}"

"""TLS on the remoting connections, with the choices the Java client's ``tls.*`` settings offer.

RocketMQ's client settings (``TlsSystemConfig``, read by its ``TlsHelper``) map one to one:

=========================  ==============================  =========================================
Java property              here                            meaning
=========================  ==============================  =========================================
``tls.enable``             ``--tls`` / ``tls = true``      speak TLS to name servers, brokers, proxies
``tls.client.trustCertPath``  ``ca_file``                  PEM CA bundle the server's chain must reach
``tls.client.certPath``    ``cert_file``                   client certificate (servers that ask for one)
``tls.client.keyPath``     ``key_file``                    its private key (PEM, PKCS#8 or PKCS#1)
``tls.client.keyPassword`` ``key_password``                the key's password, if it is encrypted
``tls.client.authServer``  ``verify``                      check the server's certificate chain
=========================  ==============================  =========================================

As in Java, the server's certificate is checked only when asked (``verify``; here it defaults to
on as soon as a CA file is given) and then against its chain alone, never against the host name:
brokers are reached at the IP address they register with the name server, which their
certificates rarely name. Without ``verify`` the connection is encrypted but the server is not
authenticated, which is the Java client's default too.

A RocketMQ server in ``tls.server.mode=enforcing`` closes a plain connection as soon as its first
bytes arrive; one in ``disabled`` mode (and any plain server) closes a connection that opens with
a TLS handshake. Both look like a dropped connection; :func:`speaks_tls` tells them apart so the
error can name the mismatch.

Imports nothing of rmqctl but :mod:`rmqctl.errors`; ``ssl`` is loaded only when TLS is used.
"""

from __future__ import annotations

import asyncio
from dataclasses import field
from typing import TYPE_CHECKING

from rmqctl import errors
from rmqctl.records import dataclass

if TYPE_CHECKING:
    import ssl


@dataclass(frozen=True, slots=True)
class TlsOptions:
    """How to speak TLS to every remoting server of one invocation (``repr`` hides the password)."""

    #: PEM file of the certificate authorities the server's chain must lead to (Java:
    #: ``tls.client.trustCertPath``); without it, ``verify`` uses the system's trust store
    ca_file: str | None = None
    #: PEM client certificate, for servers that ask for one (``tls.server.need.client.auth``)
    cert_file: str | None = None
    #: PEM private key of ``cert_file`` (the certificate file itself when it holds both)
    key_file: str | None = None
    key_password: str | None = field(default=None, repr=False)
    #: check the server's certificate chain (Java: ``tls.client.authServer``); ``None``: only when a
    #: CA file is given
    verify: bool | None = None

    @property
    def verifies(self) -> bool:
        """Whether the server's certificate chain is checked."""
        return self.verify if self.verify is not None else self.ca_file is not None

    def context(self) -> ssl.SSLContext:
        """The client SSL context; an unreadable or invalid file is a :class:`~rmqctl.errors.ConfigError`."""
        import ssl

        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.check_hostname = False  # the chain only, as the Java client: brokers are reached by IP
        if self.verifies:
            ctx.verify_mode = ssl.CERT_REQUIRED
            if self.ca_file:
                _load(lambda: ctx.load_verify_locations(cafile=self.ca_file), "CA file", self.ca_file)
            else:
                ctx.load_default_certs(ssl.Purpose.SERVER_AUTH)
        else:
            ctx.verify_mode = ssl.CERT_NONE
            if self.ca_file:  # given but not asked to verify: still read, so a typo shows now
                _load(lambda: ctx.load_verify_locations(cafile=self.ca_file), "CA file", self.ca_file)
        if self.key_file and not self.cert_file:
            raise errors.ConfigError("a TLS client key needs its certificate too (cert_file)")
        if self.cert_file:
            cert_file = self.cert_file
            _load(lambda: ctx.load_cert_chain(cert_file, self.key_file, self.key_password),
                  "client certificate or key", cert_file if not self.key_file else f"{cert_file}, {self.key_file}")
        return ctx


def _load(action: object, what: str, path: str) -> None:
    import ssl

    assert callable(action)
    try:
        action()
    except FileNotFoundError as exc:
        raise errors.ConfigError(f"TLS {what} {path}: no such file") from exc
    except ssl.SSLError as exc:  # before OSError: it is one
        raise errors.ConfigError(f"TLS {what} {path} is not usable: {describe(exc)}",
                                 hint="PEM files are expected, as the Java client's tls.client.* settings take"
                                 ) from exc
    except OSError as exc:
        raise errors.ConfigError(f"cannot read TLS {what} {path}: {exc.strerror or exc}") from exc


def describe(exc: BaseException) -> str:
    """What an ``ssl`` error says, in a few words (its reason, else its text)."""
    import ssl

    if isinstance(exc, (ConnectionResetError, BrokenPipeError, asyncio.IncompleteReadError, ssl.SSLEOFError)):
        return "the server closed the connection"
    reason = getattr(exc, "reason", None)
    verify = getattr(exc, "verify_message", None)
    if verify:
        return str(verify)
    if reason:
        return str(reason).replace("_", " ").lower()
    return str(exc) or type(exc).__name__


def is_handshake_refusal(exc: BaseException) -> bool:
    """An error during the TLS handshake that means the peer does not speak TLS there: it closed
    the connection, reset it, or answered with bytes that are no TLS record."""
    import ssl

    if isinstance(exc, ssl.SSLCertVerificationError):
        return False
    if isinstance(exc, (ssl.SSLEOFError, ssl.SSLZeroReturnError, ConnectionResetError, BrokenPipeError,
                        asyncio.IncompleteReadError)):
        return True
    reason = getattr(exc, "reason", None) or ""
    return isinstance(exc, ssl.SSLError) and reason in {
        "WRONG_VERSION_NUMBER", "UNEXPECTED_EOF_WHILE_READING", "RECORD_LAYER_FAILURE", "PACKET_LENGTH_TOO_LONG",
        "HTTP_REQUEST", "UNKNOWN_PROTOCOL"}


def handshake_error(address: str, exc: BaseException, options: TlsOptions) -> errors.ConnectionError:
    """The one-line error for a TLS handshake with ``address`` that failed with ``exc``."""
    import ssl

    if isinstance(exc, ssl.SSLCertVerificationError):
        where = f"the CA file {options.ca_file}" if options.ca_file else "the system's trust store"
        return errors.ConnectionError(
            f"TLS: the certificate of {address} is not trusted: {describe(exc)}",
            hint=f"it was checked against {where}; name the CA that signed it with tls_ca_file, "
                 "or set tls_verify = false in the context")
    if is_handshake_refusal(exc):
        return errors.TlsMismatch(
            f"{address} does not speak TLS: it refused the TLS handshake ({describe(exc)})",
            hint="it is a plain port: drop --tls (or set tls = false in the context)")
    return errors.ConnectionError(f"TLS handshake with {address} failed: {describe(exc)}",
                                  hint="check the context's tls_* files and the server's tls.* settings")


async def speaks_tls(host: str, port: int, timeout: float) -> bool:
    """Whether ``host:port`` completes a TLS handshake (certificate unchecked): asked only after a
    plain connection was closed before any answer, to tell a TLS-enforcing server from a dead one."""
    import ssl

    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    try:
        async with asyncio.timeout(timeout):
            _, writer = await asyncio.open_connection(host, port, ssl=ctx)
    except (OSError, TimeoutError, ssl.SSLError, asyncio.IncompleteReadError):
        return False
    writer.close()
    try:
        async with asyncio.timeout(0.5):
            await writer.wait_closed()
    except (OSError, TimeoutError, ssl.SSLError):
        pass
    return True


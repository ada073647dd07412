"""An HTTP session with one rocketmq-dashboard: generation detection, login, envelope checks.

One :class:`DashboardClient` (one ``httpx.AsyncClient``, so one connection pool) serves one
command. It learns how the dashboard wants to be logged in to:

* ``GET /login/check.query`` says whether a login is required at all;
* ``GET /rocketmq-dashboard/csrf-token`` answers only on the Spring Security build (after 2.1.0):
  its ``XSRF-TOKEN`` cookie goes back as the ``X-XSRF-TOKEN`` header and the login is a JSON body;
* otherwise (1.0.0 … 2.1.0) the login is a form post, and the session lives in ``JSESSIONID``.

A 302 to the login page on an API path means the session expired: the client logs in again once
and repeats the request. Each request has its own deadline (``--timeout``, like a request to a name
server or broker), so ``--watch`` and ``doctor --interval`` run as long as the dashboard answers;
concurrent requests are bounded by a semaphore. httpx errors are translated to :mod:`rmqctl.errors` here and nowhere
else; no httpx object leaves this module. Debug logging names paths only, never cookies, headers or
form fields.

Must not import the CLI, the TUI or pyspark.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

import httpx

from rmqctl import errors
from rmqctl.dashboard import wire

log = logging.getLogger("rmqctl.dashboard")

CSRF_PATH = "/rocketmq-dashboard/csrf-token"
CHECK_PATH = "/login/check.query"
LOGIN_PATH = "/login/login.do"
#: only on 2.x: a cheap path that tells 2.x (``address`` parameters, group cache) from 1.0.0
PROXY_PATH = "/proxy/homePage.query"


@dataclass(frozen=True, slots=True)
class Generation:
    """What this dashboard expects from a client."""

    #: "none" (no login required), "form" (1.0.0–2.1.0) or "csrf-json" (Spring Security build)
    login: str
    #: 2.x: per-broker ``address`` on consumer endpoints, ``group.refresh.all``
    v2: bool

    @property
    def label(self) -> str:
        if self.login == "csrf-json":
            return "2.x with Spring Security"
        return "2.x" if self.v2 else "1.x"


def _base_url(url: str) -> tuple[str, str | None, str | None]:
    """The dashboard's URL without user info, and the user and password that were in it.

    Credentials are taken out of the URL here, once, so no message, label or log line that
    names the dashboard can show them."""
    text = url.strip()
    if "://" not in text:
        text = "http://" + text
    try:
        parts = urlsplit(text)
        valid = parts.scheme in ("http", "https") and bool(parts.hostname) and (parts.port or 0) >= 0
    except ValueError:  # a port that is not a number, a bad IPv6 literal
        valid = False
    if not valid:
        raise errors.UsageError(f"not a dashboard URL: {errors.mask_url(url)!r}",
                                hint="for example --dashboard http://host:8082")
    user = unquote(parts.username) if parts.username is not None else None
    password = unquote(parts.password) if parts.password is not None else None
    netloc = parts.netloc.rpartition("@")[2]
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment)).rstrip("/"), user, password


#: What rocketmq-dashboard 1.0.0 answers ("... should be init before you get this") when a request
#: could not borrow an admin client from its pool (eight of them, a 10 s wait): a busy dashboard,
#: not a refusal of the request.
ADMIN_NOT_READY = "defaultMQAdminExt should be init before"
#: the pauses before asking such a request again
ADMIN_NOT_READY_PAUSES = (0.25, 0.5, 1.0)


class DashboardClient:
    """Requests to one dashboard; every reply's envelope checked, errors translated."""

    def __init__(self, url: str, *, username: str | None, password: str | None, timeout: float,
                 concurrency: int = 8, transport: httpx.AsyncBaseTransport | None = None) -> None:
        self.url, url_user, url_password = _base_url(url)
        self._username = username if username is not None else url_user
        self._password = password if password is not None else url_password
        #: the deadline of each request, in seconds (waiting for a free slot of the semaphore included)
        self.timeout = timeout
        self._semaphore = asyncio.Semaphore(concurrency)
        self._login_lock = asyncio.Lock()
        self._login_count = 0
        self.generation: Generation | None = None
        # httpcore's DEBUG records carry raw headers (Set-Cookie, X-XSRF-TOKEN): keep them out of --debug
        if logging.getLogger("httpcore").getEffectiveLevel() < logging.INFO:
            logging.getLogger("httpcore").setLevel(logging.INFO)
        # no Origin header (2.1.0's CORS rejects foreign origins); redirects are handled here
        self._http = httpx.AsyncClient(base_url=self.url, follow_redirects=False, transport=transport,
                                       headers={"Accept": "application/json"})

    async def close(self) -> None:
        await self._http.aclose()

    # -- transport ---------------------------------------------------------------------------

    async def _send(self, method: str, path: str, *, params: Mapping[str, str] | None = None,
                    data: Mapping[str, str] | None = None, json_body: Any = None,
                    headers: Mapping[str, str] | None = None) -> httpx.Response:
        log.debug("dashboard %s %s", method, path)

        async def request() -> httpx.Response:
            async with self._semaphore:
                return await self._http.request(method, path, params=params, data=data, json=json_body,
                                                headers=headers, timeout=self.timeout)

        try:
            return await asyncio.wait_for(request(), timeout=self.timeout)
        except (httpx.TimeoutException, asyncio.TimeoutError) as exc:
            raise errors.TimeoutError(f"dashboard {self.url}: no answer to {path} within {self.timeout:g}s",
                                      hint="raise --timeout") from exc
        except httpx.ConnectError as exc:
            tls = _tls_failure(exc)
            if tls is not None:
                raise errors.ConnectionError(f"cannot reach the dashboard at {self.url}: {tls}",
                                             hint=_tls_hint(self.url, tls)) from exc
            raise errors.ConnectionError(f"cannot reach the dashboard at {self.url}: {_reason(exc)}",
                                         hint="check --dashboard or the context's dashboard URL") from exc
        except httpx.HTTPError as exc:
            raise errors.ConnectionError(f"dashboard {self.url}: {path}: {_reason(exc)}") from exc

    @staticmethod
    def _is_login_redirect(response: httpx.Response) -> bool:
        return response.status_code in (301, 302, 303, 307, 308) and "login" in response.headers.get("location", "")

    def _decode(self, response: httpx.Response, path: str) -> Any:
        if response.status_code == 404:
            raise wire.DashboardRefused(path, 404, "HTTP 404: this dashboard has no such endpoint")
        if response.status_code in (301, 302, 303, 307, 308):
            raise errors.ProtocolError(f"dashboard redirected {path} to {response.headers.get('location', '?')}")
        if not response.content:
            raise errors.ProtocolError(f"dashboard answered {path} with HTTP {response.status_code} and no body")
        return wire.unwrap(wire.decode_json(response.content, path), path)

    # -- login ---------------------------------------------------------------------------------

    async def open(self) -> Generation:
        """Detect the generation and log in when the dashboard requires it."""
        check = wire.obj(self._decode(await self._send("GET", CHECK_PATH), CHECK_PATH), "login check")
        csrf = await self._send("GET", CSRF_PATH)
        login = "csrf-json" if csrf.status_code == 200 and b'"token"' in csrf.content else "form"
        if not check.get("loginRequired"):
            login = "none"
        self.generation = Generation(login, v2=True)
        if login != "none":
            await self._login()
        probe = await self._send("GET", PROXY_PATH)
        self.generation = Generation(login, v2=probe.status_code != 404)
        log.debug("dashboard generation: %s", self.generation.label)
        return self.generation

    async def _login(self) -> None:
        if not self._username or self._password is None:
            raise errors.ConfigError(
                f"the dashboard at {self.url} requires a login and no credentials were given",
                hint="set RMQCTL_DASHBOARD_USER and RMQCTL_DASHBOARD_PASSWORD, or dashboard_user/"
                     "dashboard_password in the context",
            )
        assert self.generation is not None
        self._login_count += 1
        if self.generation.login == "csrf-json":
            token_reply = await self._send("GET", CSRF_PATH)
            token = str(wire.obj(self._decode(token_reply, CSRF_PATH), "csrf token").get("token") or "")
            response = await self._send("POST", LOGIN_PATH, json_body={"username": self._username,
                                                                       "password": self._password},
                                        headers={"X-XSRF-TOKEN": self._http.cookies.get("XSRF-TOKEN") or token})
        else:
            response = await self._send("POST", LOGIN_PATH, data={"username": self._username,
                                                                  "password": self._password})
        try:
            self._decode(response, LOGIN_PATH)
        except wire.DashboardRefused as exc:
            raise errors.ConfigError(
                f"dashboard login as {self._username!r} failed: {wire.first_line(exc.remark) or exc.message}",
                hint="check RMQCTL_DASHBOARD_USER / RMQCTL_DASHBOARD_PASSWORD or the context's credentials",
            ) from exc

    async def get(self, path: str, params: Mapping[str, str] | None = None) -> Any:
        """``data`` of a GET; logs in again once when the session expired."""
        epoch = self._login_count
        response = await self._send("GET", path, params=params)
        if self._is_login_redirect(response):
            log.debug("dashboard session expired on %s; logging in again", path)
            async with self._login_lock:
                if self._login_count == epoch:  # not already renewed by a concurrent request
                    await self._login()
            response = await self._send("GET", path, params=params)
            if self._is_login_redirect(response):
                raise errors.ConnectionError(
                    f"dashboard {self.url} sent {path} to its login page again right after a fresh login",
                    hint="the dashboard drops sessions at once; check its session settings or proxy",
                )
        for pause in ADMIN_NOT_READY_PAUSES:
            try:
                return self._decode(response, path)
            except wire.DashboardRefused as exc:
                if ADMIN_NOT_READY not in (exc.remark or ""):
                    raise
            # 1.0.0 had no admin client free for the request; a moment later it is served
            log.debug("dashboard %s: no admin client free for %s; asking again in %g s", self.url, path, pause)
            await asyncio.sleep(pause)
            response = await self._send("GET", path, params=params)
        return self._decode(response, path)


#: what OpenSSL says when the other side answers a TLS hello with something that is not TLS (plain HTTP)
_NOT_TLS = ("WRONG_VERSION_NUMBER", "RECORD_LAYER_FAILURE", "PACKET_LENGTH_TOO_LONG", "HTTP_REQUEST",
            "UNKNOWN_PROTOCOL")


def _tls_failure(exc: BaseException) -> str | None:
    """The TLS handshake's failure in words, or None when the connection failed otherwise.

    An ``ssl.SSLError`` is an ``OSError`` whose errno is OpenSSL's error kind (1), which errno's table
    would word "Operation not permitted": name the TLS failure instead."""
    import ssl  # only on this error path

    cause: BaseException | None = exc
    while cause is not None:
        if isinstance(cause, ssl.SSLCertVerificationError):
            return f"TLS certificate not accepted ({cause.verify_message or cause.reason})"
        if isinstance(cause, ssl.SSLError):
            reason = str(cause.reason or "")
            if reason in _NOT_TLS:
                return "the dashboard does not speak TLS on this port (it serves plain HTTP?)"
            return f"TLS handshake failed ({reason or cause.strerror or cause})"
        cause = cause.__cause__ or cause.__context__
    return None


def _tls_hint(url: str, problem: str) -> str:
    if url.startswith("https://") and "plain HTTP" in problem:
        return f"use http://{url[len('https://'):]}"
    return "check --dashboard (http:// or https://) and the dashboard's certificate"


def _reason(exc: BaseException) -> str:
    """The innermost OS reason (``Connection refused``) instead of httpx's layered text."""
    cause: BaseException | None = exc
    text = str(exc) or type(exc).__name__
    while cause is not None:
        if isinstance(cause, OSError) and cause.errno:
            return errors.os_reason(cause)
        cause = cause.__cause__ or cause.__context__
    return text

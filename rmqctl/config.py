"""Named contexts in a TOML file, and how a command's connection settings are resolved.

The file lives at ``$RMQCTL_CONFIG`` or ``$XDG_CONFIG_HOME/rmqctl/config.toml`` (default
``~/.config/rmqctl/config.toml``)::

    current-context = "prod"

    [contexts.prod]
    namesrv = "10.0.0.1:9876;10.0.0.2:9876"
    timeout = "5s"             # seconds, or a duration like 5s, 1m
    access_key = "ak"          # secrets may instead come from RMQCTL_ACCESS_KEY/RMQCTL_SECRET_KEY
    secret_key = "sk"
    read_only = false          # true (the default): commands that write refuse (docs/actions.md)
    tls = true                 # TLS to name servers, brokers and proxies (as --tls); how:
    tls_ca_file = "/etc/rocketmq/ca.pem"   # the server's chain is checked against it
    tls_cert_file = "client.pem"           # client certificate and key, for servers asking one
    tls_key_file = "client.key"
    tls_verify = true          # default: true when tls_ca_file is given (Java: tls.client.authServer)

    [tui.keys]                 # optional: remap rmqctl tui keys by binding id (docs/tui.md)
    pause = "space"
    quit = "q,ctrl+q"

What a command reads is decided in one function, :func:`resolve_connection`: the name servers
(first match wins: ``-n/--namesrv``, the context named by ``--context``, the ``NAMESRV_ADDR``
environment variable as mqadmin, the current context) or a context's dashboard, the deadline,
and the ACL keys. The keys are only carried here (:class:`AccessKeys`); signing is the remoting
layer's.

Must not import the CLI or the remoting layer.
"""

from __future__ import annotations

import contextlib
import math
import os
from dataclasses import field
from pathlib import Path
from typing import Any

from rmqctl import errors
from rmqctl.durations import duration_seconds
from rmqctl.records import dataclass

_CONTEXT_KEYS: dict[str, type | tuple[type, ...]] = {
    "namesrv": str, "timeout": (int, float, str), "access_key": str, "secret_key": str,
    # a URL, or a table {url, user, password}; see rmqctl/dashboard/settings.py
    "dashboard": (str, dict), "dashboard_user": str, "dashboard_password": str,
    # writes (group reset …) refuse on a read-only context; a context without the key is read-only
    "read_only": bool,
    # 5.x proxies' remoting addresses: a list, or one string 'host:8080;host2:8080'
    "proxy": (list, str),
    # TLS on the remoting connections, as the Java client's tls.* settings (rmqctl/remoting/tls.py)
    "tls": bool, "tls_ca_file": str, "tls_cert_file": str, "tls_key_file": str, "tls_key_password": str,
    "tls_verify": bool,
}
_SECRET_KEYS = frozenset({"secret_key", "dashboard_password", "tls_key_password"})


#: Largest config file read, in bytes (a config of contexts is a few KiB).
MAX_CONFIG_BYTES = 1024 * 1024


def _redact(key: str, value: Any) -> Any:
    if key in _SECRET_KEYS:
        return "******"
    if key == "dashboard" and isinstance(value, dict):
        return {k: ("******" if k == "password" else errors.mask_url(v) if k == "url" and isinstance(v, str) else v)
                for k, v in value.items()}
    if key == "dashboard" and isinstance(value, str):
        return errors.mask_url(value)
    return value


def _read_config(path: Path) -> str:
    """The file's text: a regular file of at most MAX_CONFIG_BYTES (a FIFO would block, a device
    never end)."""
    import stat

    try:
        # O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
        with open(fd, "rb", buffering=0) as handle:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise errors.ConfigError(f"config file {path} is not a regular file")
            data = handle.read(MAX_CONFIG_BYTES + 1)
    except OSError as exc:
        raise errors.ConfigError(f"cannot read config file {path}: {exc.strerror or exc}") from exc
    if len(data) > MAX_CONFIG_BYTES:
        raise errors.ConfigError(f"config file {path} is larger than {MAX_CONFIG_BYTES // 1024} KiB")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise errors.ConfigError(f"cannot read config file {path}: not UTF-8 ({exc.reason})") from exc


#: Largest ``--timeout``/``timeout`` accepted, in seconds (a day; larger values mean "hang").
MAX_TIMEOUT = 86_400.0


def timeout_problem(value: float) -> str | None:
    """Why ``value`` is not a usable timeout (None when it is): finite, > 0, at most a day."""
    if not math.isfinite(value) or value <= 0:
        return f"must be a finite number of seconds > 0, not {value:g}"
    if value > MAX_TIMEOUT:
        return f"must be at most {MAX_TIMEOUT:g} seconds, not {value:g}"
    return None


def config_path() -> Path:
    explicit = os.environ.get("RMQCTL_CONFIG")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "rmqctl" / "config.toml"


@dataclass
class Config:
    """The whole config file."""

    current_context: str | None = None
    contexts: dict[str, dict[str, Any]] = field(default_factory=dict)
    path: Path = field(default_factory=config_path)
    #: ``[tui.keys]``: binding id → comma-separated keys for ``rmqctl tui``
    tui_keys: dict[str, str] = field(default_factory=dict)

    @classmethod
    def load(cls, path: Path | None = None) -> Config:
        path = path or config_path()
        if not path.exists():
            return cls(path=path)
        import tomllib  # only when there is a file: most one-off commands run without one

        text = _read_config(path)
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise errors.ConfigError(f"config file {path} is not valid TOML: {exc}") from exc
        except RecursionError as exc:
            raise errors.ConfigError(f"config file {path} is not valid TOML: nested too deeply") from exc
        current = data.get("current-context")
        contexts = data.get("contexts", {})
        if current is not None and not isinstance(current, str):
            raise errors.ConfigError(f"{path}: current-context must be a string")
        if not isinstance(contexts, dict):
            raise errors.ConfigError(f"{path}: [contexts] must be a table")
        for name, ctx in contexts.items():
            if not isinstance(ctx, dict):
                raise errors.ConfigError(f"{path}: contexts.{name} must be a table")
            for key, value in ctx.items():
                expected = _CONTEXT_KEYS.get(key)
                if expected is None:
                    raise errors.ConfigError(
                        f"{path}: contexts.{name}: unknown key {key!r}",
                        hint="known keys: " + ", ".join(sorted(_CONTEXT_KEYS)),
                    )
                if not isinstance(value, expected) or (isinstance(value, bool) and expected is not bool):
                    raise errors.ConfigError(f"{path}: contexts.{name}.{key} has the wrong type")
                if key == "timeout":
                    try:
                        problem = timeout_problem(duration_seconds(value))  # type: ignore[arg-type]
                    except OverflowError:  # a TOML integer too large for a float
                        problem = "must be a finite number of seconds > 0"
                    except ValueError as exc:
                        problem = str(exc)
                    if problem:
                        raise errors.ConfigError(f"{path}: contexts.{name}.timeout {problem}")
        return cls(current, dict(contexts), path, _tui_keys(path, data.get("tui", {})))

    def save(self) -> None:
        data: dict[str, Any] = {}
        if self.current_context:
            data["current-context"] = self.current_context
        data["contexts"] = self.contexts
        if self.tui_keys:
            data["tui"] = {"keys": dict(self.tui_keys)}
        import tempfile

        import tomli_w  # only a command that writes the file loads the writer

        tmp: str | None = None
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            # mkstemp creates the file 0600 from its first byte: it may hold a secret key, and
            # writing first and chmod-ing after left a window where other users could read it
            fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=f".{self.path.name}.", suffix=".tmp")
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(tomli_w.dumps(data))
            os.replace(tmp, self.path)
            tmp = None
        except OSError as exc:
            raise errors.ConfigError(f"cannot write config file {self.path}: {exc}") from exc
        finally:
            if tmp is not None:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)

    def context(self, name: str) -> dict[str, Any]:
        if name not in self.contexts:
            known = ", ".join(sorted(self.contexts)) or "none defined"
            raise errors.ConfigError(f"unknown context {name!r} in {self.path} (known: {known})",
                                     hint="create one with: rmqctl config set-context NAME -n host:9876")
        return self.contexts[name]

    def redacted(self) -> dict[str, Any]:
        """The file's content with secrets masked, for ``config view``."""
        contexts = {
            name: {k: _redact(k, v) for k, v in ctx.items()}
            for name, ctx in sorted(self.contexts.items())
        }
        return {"path": str(self.path), "current_context": self.current_context,
                "contexts": contexts}


def _tui_keys(path: Path, tui: Any) -> dict[str, str]:
    """Validate ``[tui]``: only a ``keys`` table of binding id → key names (strings)."""
    if not isinstance(tui, dict):
        raise errors.ConfigError(f"{path}: [tui] must be a table")
    unknown = sorted(set(tui) - {"keys"})
    if unknown:
        raise errors.ConfigError(f"{path}: tui: unknown key {unknown[0]!r}", hint="known keys: keys")
    keys = tui.get("keys", {})
    if not isinstance(keys, dict):
        raise errors.ConfigError(f"{path}: [tui.keys] must be a table")
    for binding_id, value in keys.items():
        if not isinstance(value, str) or not value.strip():
            raise errors.ConfigError(f"{path}: tui.keys.{binding_id} must be a non-empty string of key names")
    return dict(keys)


@dataclass(frozen=True)
class AccessKeys:
    """ACL credentials as the config file and the environment give them; the remoting layer signs
    requests with them (this module only carries them)."""

    access_key: str
    secret_key: str = field(repr=False)
    security_token: str | None = field(default=None, repr=False)


@dataclass(frozen=True)
class DashboardLogin:
    """A rocketmq-dashboard to read through, and how to log in (``repr`` never shows the password)."""

    url: str
    username: str | None
    password: str | None = field(repr=False)


@dataclass(frozen=True)
class TlsFiles:
    """TLS as a context (or ``--tls``) asks for it; the remoting layer builds the SSL context from
    it (this module only carries it). Paths have ``~`` expanded."""

    ca_file: str | None = None
    cert_file: str | None = None
    key_file: str | None = None
    key_password: str | None = field(default=None, repr=False)
    #: check the server's certificate chain; ``None``: only when ``ca_file`` is given
    verify: bool | None = None


def _tls_of(ctx: dict[str, Any], wanted: bool | None) -> TlsFiles | None:
    """TLS settings when ``--tls``/``RMQCTL_TLS`` or the context's ``tls = true`` ask for it."""
    on = wanted if wanted is not None else os.environ.get(TLS_ENV, "").strip().lower() in {"1", "true", "yes", "on"}
    if not (on or ctx.get("tls") is True):
        return None

    def path(key: str) -> str | None:
        value = ctx.get(key)
        return os.path.expanduser(value) if isinstance(value, str) and value else None

    return TlsFiles(path("tls_ca_file"), path("tls_cert_file"), path("tls_key_file"),
                    ctx.get("tls_key_password"), ctx.get("tls_verify"))


#: ``RMQCTL_TLS=1`` asks for TLS as ``--tls`` does
TLS_ENV = "RMQCTL_TLS"
#: the environment variables that override a context's secrets
ACCESS_KEY_ENV, SECRET_KEY_ENV, SECURITY_TOKEN_ENV = "RMQCTL_ACCESS_KEY", "RMQCTL_SECRET_KEY", "RMQCTL_SECURITY_TOKEN"
DASHBOARD_USER_ENV, DASHBOARD_PASSWORD_ENV = "RMQCTL_DASHBOARD_USER", "RMQCTL_DASHBOARD_PASSWORD"
#: default deadline of one request to a name server or broker, and of one request to a dashboard
DEFAULT_TIMEOUT, DEFAULT_DASHBOARD_TIMEOUT = 5.0, 30.0
_DASHBOARD_TABLE_KEYS = {"url", "user", "password"}


@dataclass(frozen=True)
class Resolved:
    """What one invocation reads and how: name servers (``namesrv``) or a dashboard
    (``dashboard``), exactly one of them; the deadline, the ACL keys, and the context used."""

    namesrv: str | None
    dashboard: DashboardLogin | None
    timeout: float
    credentials: AccessKeys | None
    context: str | None
    #: writes refuse: the context says ``read_only = true`` or has no ``read_only`` key; name
    #: servers named without a context (``-n``, ``NAMESRV_ADDR``) are not read-only
    read_only: bool = False
    #: 5.x proxies' remoting addresses (``--proxy``, else the context's ``proxy``)
    proxies: tuple[str, ...] = ()
    #: TLS on every remoting connection (``--tls``, ``RMQCTL_TLS``, the context's ``tls``), or None
    tls: TlsFiles | None = None


def split_addresses(value: str | list[Any] | None, where: str) -> tuple[str, ...]:
    """``host:port`` addresses from ``'a:1;b:2'`` or a list of them (a context's ``proxy``)."""
    if value is None:
        return ()
    items = value.split(";") if isinstance(value, str) else value
    out = []
    for item in items:
        if not isinstance(item, str):
            raise errors.ConfigError(f"{where} must hold host:port strings")
        item = item.strip()
        if not item:
            continue
        host, colon, port = item.rpartition(":")
        if not colon or not host or not port.isdigit() or "://" in item:
            raise errors.UsageError(f"{where} takes host:port, not {item!r}")
        out.append(item)
    return tuple(dict.fromkeys(out))


def dashboard_of(ctx: dict[str, Any], ctx_name: str) -> tuple[str | None, str | None, str | None]:
    """A context's dashboard ``(url, user, password)``, flat keys or a ``dashboard`` table."""
    value = ctx.get("dashboard")
    if isinstance(value, dict):
        unknown = set(value) - _DASHBOARD_TABLE_KEYS
        if unknown:
            raise errors.ConfigError(f"contexts.{ctx_name}.dashboard: unknown key {sorted(unknown)[0]!r}",
                                     hint="known keys: password, url, user")
        for key in _DASHBOARD_TABLE_KEYS & set(value):
            if not isinstance(value[key], str):
                raise errors.ConfigError(f"contexts.{ctx_name}.dashboard.{key} must be a string")
        return value.get("url"), value.get("user"), value.get("password")
    return value, ctx.get("dashboard_user"), ctx.get("dashboard_password")


def resolve_connection(
    *,
    namesrv: str | None,
    context: str | None,
    timeout: float | None,
    dashboard: str | None = None,
    config: Config | None = None,
    dashboards: bool = True,
    proxy: str | None = None,
    tls: bool | None = None,
) -> Resolved:
    """The one place that decides what a command reads, first match wins (``dashboards=False``:
    name servers only, for what speaks the native protocol alone).

    - The context: ``--context``; else the current context, unless a name server is named
      (``-n`` or ``NAMESRV_ADDR``) and no ``--dashboard`` asks for the context's login.
    - A dashboard: ``--dashboard``; else the context's ``dashboard``, unless ``-n`` names a name
      server (or ``NAMESRV_ADDR`` does and no ``--context`` was given). Its login: the
      ``RMQCTL_DASHBOARD_USER``/``RMQCTL_DASHBOARD_PASSWORD`` environment, then the context.
    - Otherwise name servers: ``-n``, the context's ``namesrv``, ``NAMESRV_ADDR``. ACL keys: the
      ``RMQCTL_ACCESS_KEY``/``RMQCTL_SECRET_KEY`` environment, then the context.
    - The deadline: ``--timeout``, the context's ``timeout``, else 5 s per request (30 s for a
      whole dashboard command).
    - TLS on the native protocol: ``--tls`` (``tls``), ``RMQCTL_TLS=1``, or the context's
      ``tls = true``; its files and checks from the context's ``tls_*`` keys.
    """
    env_namesrv = os.environ.get("NAMESRV_ADDR") or None
    # -n (or NAMESRV_ADDR) on its own needs nothing from the config file: a broken file must not
    # stand in its way; the file is read (and its faults reported) only when a context is used
    needs_config = bool(context or dashboard or not (namesrv or env_namesrv))
    cfg = config or (Config.load() if needs_config else Config())
    ctx_name = context
    if not ctx_name and cfg.current_context and (dashboard or not (namesrv or env_namesrv)):
        ctx_name = cfg.current_context
    ctx = cfg.context(ctx_name) if ctx_name else {}
    url, user, password = dashboard_of(ctx, ctx_name or "")
    if not dashboards or (not dashboard and (namesrv or (env_namesrv and not context))):
        url = None
    url = (dashboard if dashboards else None) or url
    login = None
    address = None
    if url:
        login = DashboardLogin(url, os.environ.get(DASHBOARD_USER_ENV) or user,
                               os.environ.get(DASHBOARD_PASSWORD_ENV) or password)
    else:
        address = namesrv or ctx.get("namesrv") or env_namesrv
        if not address:
            raise errors.UsageError(
                "no name server address",
                hint="pass -n host:9876, set NAMESRV_ADDR, use a context, or try --emulator tag-overwrite",
            )
        if "://" in address:
            where = ("-n" if namesrv else f"contexts.{ctx_name}.namesrv" if ctx.get("namesrv")
                     else "NAMESRV_ADDR")
            raise errors.UsageError(f"{where} takes host:port, not a URL ({address}); "
                                    "for a dashboard use --dashboard")
    keys = None
    if os.environ.get(ACCESS_KEY_ENV) and os.environ.get(SECRET_KEY_ENV):
        keys = AccessKeys(os.environ[ACCESS_KEY_ENV], os.environ[SECRET_KEY_ENV],
                          os.environ.get(SECURITY_TOKEN_ENV) or None)
    elif ctx.get("access_key") and ctx.get("secret_key"):
        keys = AccessKeys(ctx["access_key"], ctx["secret_key"])
    default = DEFAULT_DASHBOARD_TIMEOUT if login else DEFAULT_TIMEOUT
    effective = timeout if timeout is not None else duration_seconds(ctx.get("timeout", default))
    problem = timeout_problem(effective)
    if problem:
        raise errors.UsageError(f"--timeout {problem}")
    proxies = split_addresses(proxy, "--proxy") if proxy else split_addresses(
        ctx.get("proxy"), f"contexts.{ctx_name}.proxy")
    if proxies and login:
        raise errors.UsageError("--proxy reads proxies over the native protocol; a dashboard cannot",
                                hint="name the name servers with -n instead of a dashboard")
    tls_files = _tls_of(ctx, tls)
    if tls_files is not None and login and tls:
        raise errors.UsageError("--tls is for the native protocol; a dashboard's URL says https:// itself",
                                hint="name the name servers with -n, or drop --tls")
    return Resolved(address, login, effective, keys, ctx_name,
                    read_only=bool(ctx_name) and ctx.get("read_only", True) is not False, proxies=proxies,
                    tls=None if login else tls_files)


@dataclass(frozen=True)
class Target:
    """Where and how one command connects to name servers."""

    namesrv: str
    timeout: float
    credentials: AccessKeys | None
    context: str | None
    read_only: bool = False
    proxies: tuple[str, ...] = ()
    tls: TlsFiles | None = None


def resolve(
    *,
    namesrv: str | None,
    context: str | None,
    timeout: float | None,
    config: Config | None = None,
    proxy: str | None = None,
    tls: bool | None = None,
) -> Target:
    """The name servers, timeout and ACL keys of this invocation (:func:`resolve_connection`
    when it reads name servers, a context's dashboard left aside)."""
    resolved = resolve_connection(namesrv=namesrv, context=context, timeout=timeout, config=config,
                                  dashboards=False, proxy=proxy, tls=tls)
    assert resolved.namesrv is not None  # without dashboards, a name server or a UsageError
    return Target(resolved.namesrv, resolved.timeout, resolved.credentials, resolved.context,
                  resolved.read_only, resolved.proxies, resolved.tls)

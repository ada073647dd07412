"""Who writes, and whether this invocation may write at all.

A context of the config file is read-only unless it says ``read_only = false`` (``rmqctl config
set-context NAME --allow-writes``); a context without the key is read-only too. Name servers named
without a context (``-n``, ``NAMESRV_ADDR``) and the emulator may be written. A refusal is one
line and exit 8 (:class:`~rmqctl.errors.WriteRefused`), before anything is sent.

An ACL refusal from a broker (NO_PERMISSION, 16) names the permission the request needs: the
remoting layer does it from the request (:mod:`rmqctl.remoting.permissions`), and
:func:`missing_permission` for a refusal that reached here without it.

Must not import the CLI, textual or pyspark.
"""

from __future__ import annotations

from dataclasses import dataclass

from rmqctl import errors
from rmqctl.actions.audit import os_user
from rmqctl.config import resolve
from rmqctl.remoting.codes import RequestCode


@dataclass(frozen=True, slots=True)
class Writer:
    """Who is writing: the OS user, the ACL access key name (never the secret) and the context."""

    os_user: str
    access_key: str | None
    context: str | None


def check_writable(*, namesrv: str | None, context: str | None, timeout: float | None,
                   emulator: bool = False) -> Writer:
    """The writer of this invocation, or :class:`~rmqctl.errors.WriteRefused` when the context
    it resolves to is read-only."""
    if emulator:
        return Writer(os_user(), None, None)
    resolved = resolve(namesrv=namesrv, context=context, timeout=timeout)
    if resolved.read_only:
        raise errors.WriteRefused(
            f"context {resolved.context!r} is read-only: nothing was written",
            hint=f"allow writes with: rmqctl config set-context {resolved.context} --allow-writes")
    keys = resolved.credentials
    return Writer(os_user(), keys.access_key if keys else None, resolved.context)


#: request code → the permission it needs (ACL 2.0 actions; ACL 1.0 plain_acl in brackets)
_NEEDS: dict[int, str] = {
    RequestCode.INVOKE_BROKER_TO_RESET_OFFSET:
        "UPDATE on group {group} and topic {topic} (plain ACL 1.0: SUB on both)",
    RequestCode.UPDATE_CONSUMER_OFFSET:
        "SUB on group {group} and topic {topic} (plain ACL 1.0: SUB on both)",
}


def missing_permission(code: int, *, group: str, topic: str) -> str:
    """The permission request ``code`` needs on ``group`` and ``topic``, in words."""
    text = _NEEDS.get(code)
    if text is None:
        return f"the permission for request {code}"
    return text.format(group=group, topic=topic)


def no_permission_error(exc: errors.NoPermission, code: int, *, group: str, topic: str,
                        access_key: str | None) -> errors.NoPermission:
    """``exc`` with a message naming the missing permission and the access key that lacks it
    (as it is when the remoting layer already named them from the request)."""
    if exc.needs is not None or exc.hint is not None:
        return exc
    who = f"access key {access_key!r}" if access_key else "an unsigned request (no access key)"
    error = errors.NoPermission(exc.code, f"{exc.remark.strip() or 'no remark'}; {who} needs "
                                f"{missing_permission(code, group=group, topic=topic)}",
                                address=exc.address)
    error.hint = "grant it in the broker's ACL, or use a context whose access key has it"
    return error

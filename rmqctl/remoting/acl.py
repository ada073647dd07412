"""ACL request signing (RocketMQ 4.x ACL 1.0 and 5.x ACL 2.0 sign the same way).

The signature is HMAC-SHA1, keyed by the secret key, over the values of every ext field except
``Signature`` in key order, followed by the raw body; Base64 of the digest goes into
``Signature``. Credentials are never printed: :class:`Credentials` hides the secret in ``repr``.

Imports nothing from rmqctl but the frame codec and the model's Java string ordering.
"""

from __future__ import annotations

import base64
import os
from dataclasses import field, replace

from rmqctl.model import java_str_key
from rmqctl.records import dataclass
from rmqctl.remoting.frame import RemotingCommand


@dataclass(frozen=True, slots=True)
class Credentials:
    """The ACL keys a request is signed with; the secret never shows in a repr."""

    access_key: str
    secret_key: str = field(repr=False)
    security_token: str | None = field(default=None, repr=False)

    @classmethod
    def from_env(cls) -> Credentials | None:
        """``RMQCTL_ACCESS_KEY``/``RMQCTL_SECRET_KEY`` (and ``RMQCTL_SECURITY_TOKEN``), if set."""
        ak = os.environ.get("RMQCTL_ACCESS_KEY")
        sk = os.environ.get("RMQCTL_SECRET_KEY")
        if ak and sk:
            return cls(ak, sk, os.environ.get("RMQCTL_SECURITY_TOKEN") or None)
        return None


def signature(ext_fields: dict[str, str], body: bytes, secret_key: str) -> str:
    """Base64 HMAC-SHA1 of the sorted ext-field values plus the body."""
    import hashlib  # here, not at the top: loading OpenSSL costs every unsigned command ~3 ms
    import hmac

    # Java sorts the keys in a TreeMap, i.e. by UTF-16 code units.
    content = "".join(
        ext_fields[k] for k in sorted(ext_fields, key=java_str_key) if k != "Signature"
    ).encode("utf-8") + body
    digest = hmac.new(secret_key.encode("utf-8"), content, hashlib.sha1).digest()
    return base64.b64encode(digest).decode("ascii")


def sign(cmd: RemotingCommand, credentials: Credentials) -> RemotingCommand:
    """Return ``cmd`` with ``AccessKey`` (and ``SecurityToken``) added and signed."""
    fields = dict(cmd.ext_fields)
    fields.pop("Signature", None)
    fields["AccessKey"] = credentials.access_key
    if credentials.security_token:
        fields["SecurityToken"] = credentials.security_token
    fields["Signature"] = signature(fields, cmd.body, credentials.secret_key)
    return replace(cmd, ext_fields=fields)

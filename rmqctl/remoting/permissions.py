"""What an ACL refusal means: the permission a request needs, and which half of ACL said no.

A RocketMQ 5.3 broker with ACL 2.0 (``authenticationEnabled``/``authorizationEnabled``) answers
NO_PERMISSION (16) for two different reasons, told apart by its remark:

* authentication failed: no access key on the request (``username cannot be null.``), an unknown
  or disabled user, or a signature made with the wrong secret (``check signature failed.``);
* authorization failed: ``User:alice has no permission to access Group:G from 10.0.0.1, …``. The
  remark names the subject and the resource but not the action; the action comes from the request
  code, which the broker maps to one through the ``@RocketMQAction`` of the request's header
  (``GET_CONSUME_STATS`` → Get on the group, ``INVOKE_BROKER_TO_RESET_OFFSET`` → Update on the
  group and topic, ``UPDATE_CONSUMER_OFFSET`` → Sub on them, ``DELETE_SUBSCRIPTIONGROUP`` →
  Delete …). :data:`ACTIONS` holds that table (facts read from RocketMQ 5.3.3) for the requests
  rmqctl sends.

A rocketmq-proxy (5.3) that checks ACL itself answers a refusal as SYSTEM_ERROR (1) with the same
words (:func:`is_proxy_acl_refusal`).

:func:`denied` turns the refusal into one line that says what is missing, for which access key,
with a hint that grants it (``mqadmin createAcl``) or fixes the keys.

Imports nothing of rmqctl but :mod:`rmqctl.errors` and the request codes.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from rmqctl import errors
from rmqctl.remoting.codes import RequestCode

#: request code → (ACL 2.0 action, resource kinds it is checked on), as RocketMQ 5.3.3 declares
ACTIONS: dict[int, tuple[str, tuple[str, ...]]] = {
    RequestCode.SEND_MESSAGE: ("Pub", ("Topic",)),
    RequestCode.SEND_MESSAGE_V2: ("Pub", ("Topic",)),
    RequestCode.PULL_MESSAGE: ("Sub", ("Group", "Topic")),
    RequestCode.QUERY_MESSAGE: ("Sub or Get", ("Topic",)),
    RequestCode.QUERY_CONSUMER_OFFSET: ("Get", ("Group", "Topic")),
    RequestCode.UPDATE_CONSUMER_OFFSET: ("Sub", ("Group", "Topic")),
    RequestCode.UPDATE_AND_CREATE_TOPIC: ("Create", ("Topic",)),
    RequestCode.GET_ALL_TOPIC_CONFIG: ("List", ()),
    RequestCode.SEARCH_OFFSET_BY_TIMESTAMP: ("Get", ("Topic",)),
    RequestCode.GET_MAX_OFFSET: ("Get", ("Topic",)),
    RequestCode.GET_MIN_OFFSET: ("Get", ("Topic",)),
    RequestCode.GET_EARLIEST_MSG_STORETIME: ("Get", ("Topic",)),
    RequestCode.VIEW_MESSAGE_BY_ID: ("Get", ("Topic",)),
    RequestCode.GET_CONSUMER_LIST_BY_GROUP: ("Sub", ("Group",)),
    RequestCode.GET_KV_CONFIG: ("Get", ()),
    RequestCode.GET_ROUTEINFO_BY_TOPIC: ("Get", ("Topic",)),
    RequestCode.GET_TOPIC_STATS_INFO: ("Get", ("Topic",)),
    RequestCode.GET_CONSUMER_CONNECTION_LIST: ("Get", ("Group",)),
    RequestCode.GET_PRODUCER_CONNECTION_LIST: ("Get", ("Group", "Topic")),
    RequestCode.DELETE_SUBSCRIPTIONGROUP: ("Delete", ("Group",)),
    RequestCode.GET_CONSUME_STATS: ("Get", ("Group", "Topic")),
    RequestCode.DELETE_TOPIC_IN_BROKER: ("Delete", ("Topic",)),
    RequestCode.DELETE_TOPIC_IN_NAMESRV: ("Update", ()),
    RequestCode.GET_KVLIST_BY_NAMESPACE: ("Get", ()),
    RequestCode.INVOKE_BROKER_TO_RESET_OFFSET: ("Update", ("Group", "Topic")),
    RequestCode.GET_TOPICS_BY_CLUSTER: ("List", ()),
    RequestCode.QUERY_TOPIC_CONSUME_BY_WHO: ("Get", ("Topic",)),
    RequestCode.GET_CONSUMER_RUNNING_INFO: ("Get", ("Group",)),
    RequestCode.GET_BROKER_CONSUME_STATS: ("Get", ()),
    RequestCode.QUERY_TOPICS_BY_CONSUMER: ("Get", ("Group",)),
    RequestCode.QUERY_SUBSCRIPTION_BY_CONSUMER: ("Get", ("Group", "Topic")),
    RequestCode.GET_TOPIC_CONFIG: ("Get", ("Topic",)),
    RequestCode.GET_SUBSCRIPTIONGROUP_CONFIG: ("Get", ("Group",)),
}

#: where a request names its group and its topic (the header fields the broker reads)
_GROUP_FIELDS = ("consumerGroup", "group", "groupName", "producerGroup")
_TOPIC_FIELDS = ("topic",)

#: remarks of a refused authentication (ACL 2.0), in the broker's words
_AUTHENTICATION = ("username cannot be null", "check signature failed", "is not found", "is disabled",
                   "authenticationmetadataprovider")


def resources(code: int, ext: Mapping[str, object]) -> list[str]:
    """The resources request ``code`` is checked on, in ACL 2.0's notation (``Group:G``, ``Topic:T``)."""
    _, kinds = ACTIONS.get(code, ("", ()))
    found = []
    for kind, fields in (("Group", _GROUP_FIELDS), ("Topic", _TOPIC_FIELDS)):
        if kind not in kinds:
            continue
        value = next((str(ext[f]) for f in fields if ext.get(f)), None)
        if value:
            found.append(f"{kind}:{value}")
    return found


def needs(code: int, ext: Mapping[str, object]) -> str | None:
    """What request ``code`` needs, in words (``Get on Group:G and Topic:T``), or None when unknown."""
    known = ACTIONS.get(code)
    if known is None:
        return None
    where = resources(code, ext)
    return f"{known[0]} on {' and '.join(where)}" if where else f"{known[0]} on the cluster"


#: remarks of a refusal by the ACL (2.0: the first; plain ACL 1.0: the others); NO_PERMISSION
#: also says a topic or group is not readable or writable (``… pulling message is forbidden``,
#: ``subscription group no permission, G``), which is no ACL matter
_AUTHORIZATION = ("has no permission to access", "no permission for", "accesskey", " acl", "[10015")


def is_acl_refusal(remark: str | None) -> bool:
    """Whether a NO_PERMISSION remark comes from the ACL (authentication or authorization)."""
    text = f" {(remark or '').lower()}"
    return is_authentication(text) or any(marker in text for marker in _AUTHORIZATION)


#: remarks a rocketmq-proxy (5.3) answers with SYSTEM_ERROR (1) when its own ACL check fails: it
#: turns the refusal into a generic error whose remark is the refusal's text, so only these exact
#: words (no looser marker: a SYSTEM_ERROR says many other things) make it a refusal
_PROXY_REFUSAL = ("username cannot be null", "check signature failed", "has no permission to access")
_PROXY_USER = r"\buser:\S+ is (not found|disabled)"  # compiled on first use (``re`` keeps it)


def is_proxy_acl_refusal(remark: str | None) -> bool:
    """Whether a SYSTEM_ERROR remark is a proxy's ACL refusal (authentication or authorization)."""
    text = (remark or "").lower()
    return any(marker in text for marker in _PROXY_REFUSAL) or re.search(_PROXY_USER, text) is not None


def is_authentication(remark: str) -> bool:
    """Whether a NO_PERMISSION remark says the caller was not authenticated (not: not allowed)."""
    text = remark.lower()
    return any(marker in text for marker in _AUTHENTICATION)


def denied(code: int, ext: Mapping[str, object], remark: str | None, *, address: str,
           access_key: str | None, response_code: int = 16) -> errors.NoPermission:
    """The refusal of request ``code``, naming what is missing and for whom: a NO_PERMISSION
    answer, or (``response_code`` 1) a proxy's SYSTEM_ERROR that carries an ACL refusal."""
    text = (remark or "").strip() or "no remark"
    who = f"access key {access_key!r}" if access_key else "an unsigned request (no access key)"
    name = "SYSTEM_ERROR" if response_code == 1 else None
    error = errors.NoPermission(response_code, text, address=address, name=name)
    if is_authentication(text):
        error.message += f" (authentication of {who} failed)"
        error.hint = ("the broker checks ACL credentials: set the user's access key and secret key "
                      "(RMQCTL_ACCESS_KEY/RMQCTL_SECRET_KEY, or access_key/secret_key in the context)"
                      if not access_key else
                      f"check that user {access_key!r} exists and that the secret key is its password")
        return error
    wanted = needs(code, ext)
    name = RequestCode(code).name if code in RequestCode._value2member_map_ else f"request {code}"
    if wanted is None:
        error.message += f"; {who} lacks the permission for {name}"
        error.hint = "grant it in the broker's ACL, or use a context whose access key has it"
        return error
    error.message += f"; {who} needs {wanted} ({name})"
    error.needs = wanted
    action, _ = ACTIONS[code]
    granted = ",".join(resources(code, ext))
    if not granted:
        error.hint = "grant it in the broker's ACL, or use a context whose access key has it"
        return error
    subject = f"User:{access_key}" if access_key else "User:<name>"
    error.hint = (f"grant it, e.g.: mqadmin createAcl -b {address} -s {subject} -r {granted} "
                  f"-a {action.split(' or ')[0]} -d Allow")
    return error

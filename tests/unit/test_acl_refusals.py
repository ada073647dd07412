"""ACL refusals name what is missing: an ACL 2.0 broker's NO_PERMISSION is told apart as a failed
authentication (no keys, wrong secret, unknown user) or a missing permission, whose action comes
from the request code and whose resources from the request's own group and topic. A proxy's own
refusal, which it answers as a SYSTEM_ERROR, is named the same way."""

from __future__ import annotations

import asyncio

import pytest

from rmqctl import errors
from rmqctl.remoting import frame
from rmqctl.remoting.acl import Credentials
from rmqctl.remoting.admin import AdminClient
from rmqctl.remoting.codes import RequestCode
from rmqctl.remoting.frame import RemotingCommand
from rmqctl.remoting.permissions import ACTIONS, needs
from tests.fakes import FakeServer, Raw

DENIED = "User:reader has no permission to access Group:G from 127.0.0.1, no matched policies."


def ask(address: str, code: int, ext: dict[str, object], credentials: Credentials | None) -> errors.RmqctlError:
    async def go() -> errors.RmqctlError:
        admin = AdminClient([address], timeout=5, credentials=credentials)
        try:
            await admin.call(address, code, ext)
        except errors.RmqctlError as exc:
            return exc
        finally:
            await admin.close()
        raise AssertionError("the request was not refused")

    return asyncio.run(go())


@pytest.fixture
def remark_server(request: pytest.FixtureRequest) -> FakeServer:
    remark = request.param

    def answer(req: RemotingCommand) -> Raw:
        return Raw(frame.encode(req.response(16, remark=remark)))

    return FakeServer({RequestCode.GET_CONSUME_STATS: answer, RequestCode.INVOKE_BROKER_TO_RESET_OFFSET: answer,
                       RequestCode.UPDATE_CONSUMER_OFFSET: answer})


@pytest.mark.parametrize("remark_server", [DENIED], indirect=True)
def test_a_denied_read_names_the_action_the_resources_and_the_access_key(remark_server: FakeServer) -> None:
    with remark_server as server:
        error = ask(server.address, RequestCode.GET_CONSUME_STATS, {"consumerGroup": "G", "topic": "T"},
                    Credentials("reader", "pw"))
    assert isinstance(error, errors.NoPermission) and error.exit_code == errors.ExitCode.REFUSED
    assert error.message == (f"NO_PERMISSION (16) from {server.address}: {DENIED}; access key 'reader' needs "
                             "Get on Group:G and Topic:T (GET_CONSUME_STATS)")
    assert error.needs == "Get on Group:G and Topic:T"
    assert error.hint == (f"grant it, e.g.: mqadmin createAcl -b {server.address} -s User:reader "
                          "-r Group:G,Topic:T -a Get -d Allow")


@pytest.mark.parametrize("remark_server", [DENIED], indirect=True)
def test_a_denied_write_names_its_own_action(remark_server: FakeServer) -> None:
    with remark_server as server:
        reset = ask(server.address, RequestCode.INVOKE_BROKER_TO_RESET_OFFSET,
                    {"group": "G", "topic": "T", "queueId": 0, "offset": 0, "timestamp": -1}, Credentials("ops", "pw"))
        commit = ask(server.address, RequestCode.UPDATE_CONSUMER_OFFSET,
                     {"consumerGroup": "G", "topic": "T", "queueId": 0, "commitOffset": 0}, Credentials("ops", "pw"))
    assert isinstance(reset, errors.NoPermission) and reset.needs == "Update on Group:G and Topic:T"
    assert "INVOKE_BROKER_TO_RESET_OFFSET" in reset.message
    assert isinstance(commit, errors.NoPermission) and commit.needs == "Sub on Group:G and Topic:T"


@pytest.mark.parametrize("remark_server", ["username cannot be null."], indirect=True)
def test_an_unsigned_request_to_an_acl_broker_says_keys_are_needed(remark_server: FakeServer) -> None:
    with remark_server as server:
        error = ask(server.address, RequestCode.GET_CONSUME_STATS, {"consumerGroup": "G"}, None)
    assert isinstance(error, errors.NoPermission) and error.needs is None
    assert error.message.endswith("username cannot be null. (authentication of an unsigned request "
                                  "(no access key) failed)")
    assert error.hint is not None and "RMQCTL_ACCESS_KEY" in error.hint


@pytest.mark.parametrize("remark_server", ["check signature failed."], indirect=True)
def test_a_wrong_secret_says_authentication_failed_for_that_key(remark_server: FakeServer) -> None:
    with remark_server as server:
        error = ask(server.address, RequestCode.GET_CONSUME_STATS, {"consumerGroup": "G"}, Credentials("reader", "x"))
    assert "authentication of access key 'reader' failed" in error.message
    assert error.hint is not None and "'reader'" in error.hint and "secret key" in error.hint


@pytest.mark.parametrize("remark_server", ["subscription group no permission, G"], indirect=True)
def test_a_brokers_own_no_permission_is_not_called_an_acl_refusal(remark_server: FakeServer) -> None:
    with remark_server as server:
        error = ask(server.address, RequestCode.GET_CONSUME_STATS, {"consumerGroup": "G"}, Credentials("reader", "x"))
    assert isinstance(error, errors.NoPermission) and error.needs is None and error.hint is None
    assert error.message == f"NO_PERMISSION (16) from {server.address}: subscription group no permission, G"


def proxy_answering(remark: str) -> FakeServer:
    """A rocketmq-proxy's remoting port: its own ACL check answers SYSTEM_ERROR (1) with the
    refusal's words (seen on a real 5.3.3 proxy with authentication on)."""
    def answer(req: RemotingCommand) -> Raw:
        return Raw(frame.encode(req.response(1, remark=remark)))

    return FakeServer({RequestCode.GET_CONSUMER_CONNECTION_LIST: answer})


@pytest.mark.parametrize(("remark", "keys", "says"), [
    ("check signature failed.", Credentials("viewer", "x"), "(authentication of access key 'viewer' failed)"),
    ("username cannot be null.", None, "(authentication of an unsigned request (no access key) failed)"),
    ("User:ghost is not found.", Credentials("ghost", "x"), "(authentication of access key 'ghost' failed)"),
    ("User:nobody has no permission to access Group:G from 127.0.0.1, no matched policies.",
     Credentials("nobody", "x"), "access key 'nobody' needs Get on Group:G (GET_CONSUMER_CONNECTION_LIST)"),
])
def test_a_proxys_acl_refusal_in_a_system_error_is_named_as_a_refusal(
    remark: str, keys: Credentials | None, says: str,
) -> None:
    with proxy_answering(remark) as server:
        error = ask(server.address, RequestCode.GET_CONSUMER_CONNECTION_LIST, {"consumerGroup": "G"}, keys)
    assert isinstance(error, errors.NoPermission) and error.exit_code == errors.ExitCode.REFUSED
    assert error.message.startswith(f"SYSTEM_ERROR (1) from {server.address}: {remark}")
    assert says in error.message and error.hint


def test_a_proxys_other_system_errors_stay_system_errors() -> None:
    with proxy_answering("get consumer connection failed: the group is not found in the cache") as server:
        error = ask(server.address, RequestCode.GET_CONSUMER_CONNECTION_LIST, {"consumerGroup": "G"},
                    Credentials("viewer", "x"))
    assert type(error) is errors.SystemError and error.hint is None


def test_every_request_rmqctl_sends_to_a_broker_has_its_action() -> None:
    # the admin reads and the writes: each one's refusal can say what it needs
    for code in (RequestCode.GET_CONSUME_STATS, RequestCode.GET_CONSUMER_CONNECTION_LIST,
                 RequestCode.QUERY_CONSUMER_OFFSET, RequestCode.GET_CONSUMER_RUNNING_INFO,
                 RequestCode.GET_MAX_OFFSET, RequestCode.GET_MIN_OFFSET, RequestCode.SEARCH_OFFSET_BY_TIMESTAMP,
                 RequestCode.QUERY_TOPIC_CONSUME_BY_WHO, RequestCode.UPDATE_CONSUMER_OFFSET,
                 RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, RequestCode.DELETE_SUBSCRIPTIONGROUP):
        assert code in ACTIONS, code.name
    assert needs(RequestCode.GET_ALL_TOPIC_CONFIG, {}) == "List on the cluster"
    assert needs(RequestCode.GET_CONSUMER_CONNECTION_LIST, {"consumerGroup": "G", "topic": "T"}) == "Get on Group:G"

"""Who writes and what an ACL refusal says: the missing permission is named with the access key
that lacks it, for each request a write sends."""

from __future__ import annotations

from rmqctl import errors
from rmqctl.actions.permission import missing_permission, no_permission_error
from rmqctl.remoting.codes import RequestCode


def test_an_acl_refusal_names_the_missing_permission_and_the_access_key() -> None:
    refused = errors.NoPermission(16, "No permission for operation", address="127.0.0.1:10911")
    error = no_permission_error(refused, RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, group="g1", topic="T1",
                                access_key="ops-ro")
    assert isinstance(error, errors.NoPermission) and error.code == 16
    assert error.message == ("NO_PERMISSION (16) from 127.0.0.1:10911: No permission for operation; access key "
                             "'ops-ro' needs UPDATE on group g1 and topic T1 (plain ACL 1.0: SUB on both)")
    assert error.hint is not None and "ACL" in error.hint


def test_each_write_request_has_its_permission_in_words() -> None:
    assert missing_permission(RequestCode.UPDATE_CONSUMER_OFFSET, group="g", topic="t") == (
        "SUB on group g and topic t (plain ACL 1.0: SUB on both)")  # 5.3.3 declares Sub alone for it
    unsigned = no_permission_error(errors.NoPermission(16, ""), RequestCode.UPDATE_CONSUMER_OFFSET, group="g",
                                   topic="t", access_key=None)
    assert "an unsigned request (no access key) needs SUB on group g" in unsigned.message

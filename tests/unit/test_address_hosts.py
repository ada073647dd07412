"""``split_address`` refuses exactly the host names the ``idna`` codec refuses: ASCII names are
checked without loading the codec, so every ASCII name is compared with the codec's own answer."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rmqctl import errors
from rmqctl.remoting.connection import split_address


def codec_takes(host: str) -> bool:
    try:
        host.encode("idna")
    except UnicodeError:
        return False
    return True


def split_takes(host: str) -> bool:
    try:
        split_address(f"{host}:9876")
    except errors.UsageError as exc:
        assert "not a valid DNS host name" in str(exc), exc
        return False
    return True


labels = st.one_of(st.text("ab-9", min_size=0, max_size=3), st.integers(60, 66).map(lambda n: "x" * n))
ascii_hosts = (st.lists(labels, min_size=1, max_size=5).map(".".join)
               .filter(lambda h: h.strip("[]") == h and 0 < len(h) <= 253))


@settings(max_examples=400, deadline=None)
@given(ascii_hosts)
def test_ascii_names_are_refused_as_the_codec_refuses_them(host: str) -> None:
    assert split_takes(host) == codec_takes(host)


@pytest.mark.parametrize("host", [
    "127.0.0.1", "::1", "broker-a.example.com", "broker-a.example.com.", "a..b", ".a", "a.",
    "x" * 63 + ".example", "x" * 64 + ".example", "example." + "x" * 63, "example." + "x" * 64,
    "bücher.example", "b\u00fccher." + "x" * 64, "\u0661\u0662",
])
def test_chosen_names_are_refused_as_the_codec_refuses_them(host: str) -> None:
    assert split_takes(host) == codec_takes(host)

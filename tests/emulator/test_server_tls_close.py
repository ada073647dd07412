"""A TLS client of the served emulator that closes its connection leaves no warning behind.

The server's connections are asyncio protocols; over TLS the transport flushes the replies
queued for a peer that closed by itself, and asyncio writes a warning for every connection whose
protocol asks it to stay open after the peer's end of stream. Clients that come and go (every
``rmqctl --tls`` command) must not fill the emulator's log.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
from pathlib import Path

import pytest

from rmqctl.emulator.scenario import load_scenario
from rmqctl.emulator.serve import ServeOptions, running_emulator
from rmqctl.remoting import frame
from rmqctl.remoting.codes import RequestCode
from tests.tlsfiles import make_tls_files

BOUND = 10.0


async def test_tls_clients_that_close_leave_no_warning(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    certs = make_tls_files(tmp_path)
    options = ServeOptions(clock="virtual", at=5, ssl_context=certs.server_context())
    client = ssl.create_default_context(cafile=str(certs.ca))
    client.check_hostname = False
    async with running_emulator(load_scenario("healthy"), options) as (served, _):
        host, port = served.namesrv.rsplit(":", 1)
        for _ in range(3):
            reader, writer = await asyncio.open_connection(host, int(port), ssl=client)
            writer.write(frame.encode(frame.request(RequestCode.GET_BROKER_CLUSTER_INFO)))
            length = int.from_bytes(await asyncio.wait_for(reader.readexactly(4), BOUND), "big")
            assert frame.decode_payload(await reader.readexactly(length)).code == 0
            writer.close()
            await writer.wait_closed()
        await asyncio.sleep(0.2)  # the server sees each end of stream
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert warnings == []

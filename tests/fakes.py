"""Scripted remoting servers for tests: each answers request codes with canned responses.

They run on loopback in a background thread with their own event loop, so in-process CLI runs
(which call ``asyncio.run``) and subprocess runs can both talk to them.
"""

from __future__ import annotations

import asyncio
import socket
import struct
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rmqctl.remoting import fastjson, frame
from rmqctl.remoting.frame import RemotingCommand

Handler = Callable[[RemotingCommand], Any]


@dataclass(frozen=True)
class Raw:
    """A handler result: write these bytes (a malformed frame, say) instead of a response."""

    data: bytes


class Silence:
    """A handler result: never answer (a black-holed server); the connection stays open."""


class Reset:
    """A handler result: drop the connection with a TCP reset."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class FakeServer:
    """Answers each request code with ``handlers[code](request) -> (response_code, body)``.

    A body that is not ``bytes`` is written with the fastjson dialect; unknown codes get 3. A
    handler may instead return :class:`Raw`, :class:`Silence` or :class:`Reset` to misbehave.
    """

    def __init__(self, handlers: dict[int, Handler]) -> None:
        self.handlers = handlers
        self.requests: list[RemotingCommand] = []
        self.port = 0
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._server: asyncio.base_events.Server | None = None

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        decoder = frame.FrameDecoder()
        try:
            while chunk := await reader.read(65536):
                decoder.feed(chunk)
                for req in decoder:
                    self.requests.append(req)
                    handler = self.handlers.get(req.code)
                    result = None if handler is None else handler(req)
                    if isinstance(result, Silence):
                        continue
                    if isinstance(result, Reset):
                        sock = writer.get_extra_info("socket")
                        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                        writer.transport.abort()
                        return
                    if isinstance(result, Raw):
                        writer.write(result.data)
                        await writer.drain()
                        continue
                    if handler is None:
                        resp = req.response(3, remark=f" request type {req.code} not supported")
                    else:
                        code, body = result
                        raw = body if isinstance(body, bytes) else fastjson.dumps_bytes(body)
                        resp = req.response(code, body=raw if body is not None else b"",
                                            remark=None if code == 0 else "fake error")
                    writer.write(frame.encode(resp))
                    await writer.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            writer.close()

    def start(self) -> FakeServer:
        self._thread.start()

        async def boot() -> None:
            self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
            self.port = self._server.sockets[0].getsockname()[1]

        asyncio.run_coroutine_threadsafe(boot(), self._loop).result(5)
        return self

    def stop(self) -> None:
        async def shutdown() -> None:
            if self._server is not None:
                self._server.close()
            current = asyncio.current_task()
            tasks = [t for t in asyncio.all_tasks() if t is not current]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        asyncio.run_coroutine_threadsafe(shutdown(), self._loop).result(5)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)
        self._loop.close()

    def __enter__(self) -> FakeServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def mq_key(topic: str, broker: str, qid: int) -> fastjson.ObjectKey:
    return fastjson.ObjectKey(sorted({"brokerName": broker, "queueId": qid, "topic": topic}.items()))

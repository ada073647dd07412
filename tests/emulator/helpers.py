"""Helpers shared by the emulator tests."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from rmqctl.emulator.scenario import load_scenario
from rmqctl.emulator.serve import Served, ServeOptions, serve_emulator

TIMEOUT = 20.0


@contextmanager
def served_in_thread(name: str, options: ServeOptions) -> Iterator[Served]:
    """Serve on a background event loop so synchronous CLI code can talk to it."""
    ready: list[Served] = []
    started = threading.Event()
    loop = asyncio.new_event_loop()
    stop_box: list[asyncio.Event] = []

    async def main() -> None:
        stop = asyncio.Event()
        stop_box.append(stop)

        def on_ready(served: Served) -> None:
            ready.append(served)
            started.set()

        try:
            await serve_emulator(load_scenario(name), options, stop=stop, ready=on_ready)
        finally:
            started.set()

    thread = threading.Thread(target=loop.run_until_complete, args=(main(),), daemon=True)
    thread.start()
    assert started.wait(TIMEOUT) and ready, "the emulator did not start"
    try:
        yield ready[0]
    finally:
        loop.call_soon_threadsafe(stop_box[0].set)
        thread.join(TIMEOUT)
        loop.close()

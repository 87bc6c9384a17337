"""The client's event-loop thread: a caller waiting on it when it stops gets ``Unreachable`` instead of waiting
forever (a write pool's thread blocked so held ``kai all`` past its SIGTERM), and so does a caller after it."""

import asyncio
import threading

import pytest

from kai.cluster.kube.errors import Unreachable
from kai.cluster.kube.runtime import LoopThread


def test_a_caller_waiting_when_the_loop_stops_and_one_after_it_get_unreachable() -> None:
    io = LoopThread()
    started, outcome = threading.Event(), []

    async def forever() -> None:
        started.set()
        await asyncio.Event().wait()

    def caller() -> None:
        try:
            io.call(forever())
        except Unreachable as error:
            outcome.append(error.reason)

    thread = threading.Thread(target=caller)
    thread.start()
    assert started.wait(10)
    io.stop()
    thread.join(10)
    assert outcome == ["Closed"]
    with pytest.raises(Unreachable, match="the API client was closed"):
        io.call(asyncio.sleep(0))

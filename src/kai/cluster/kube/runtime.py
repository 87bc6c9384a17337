"""The two threads behind the synchronous adapter: an asyncio loop for all I/O, and one that calls listeners.

The scheduler loop is synchronous, but watches are long-lived streams best multiplexed by asyncio. So every request
and every informer runs on one event loop on a daemon thread (``LoopThread``), and synchronous callers wait on it.

Listeners do not run on that loop: a slow listener would stall every watch, and a listener that writes to the
cluster would wait on the loop it is blocking. ``Dispatcher`` hands changes to listeners on a thread of its own, in
the order the informers produced them (client-go runs its handlers off the reflector's goroutine for the same
reasons). Listeners may therefore call the adapter, and must be thread-safe against the caller's own thread.
"""

import asyncio
import concurrent.futures
import logging
import queue
import threading
from collections.abc import Coroutine, Iterable
from typing import Any, TypeVar

from kai.cluster.kube.errors import client_closed
from kai.cluster.port import Listener, Raw

log = logging.getLogger(__name__)

T = TypeVar("T")
CHECK_EVERY_S = 1.0
"""How often a caller waiting on the loop checks that it still runs."""
STOP_TIMEOUT_S = 10.0
"""How long ``stop`` waits for what is under way to be cancelled."""


class LoopThread:
    """An asyncio event loop running on a daemon thread until ``stop``."""

    def __init__(self, name: str = "kai-kube-io") -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name=name, daemon=True)
        self._thread.start()

    def call(self, coro: Coroutine[Any, Any, T]) -> T:
        """Runs ``coro`` on the loop and waits for its result (or its exception) on the calling thread; once the loop
        is stopped (or stops meanwhile), ``Unreachable``: a caller never waits for a loop that will not answer."""
        try:
            future = asyncio.run_coroutine_threadsafe(coro, self.loop)
        except RuntimeError as error:  # the loop is closed
            coro.close()
            raise client_closed() from error
        while True:
            try:
                return future.result(timeout=CHECK_EVERY_S)
            except concurrent.futures.CancelledError as error:
                raise client_closed() from error
            except TimeoutError:
                if not self._thread.is_alive():  # stopped before it ran the coroutine
                    future.cancel()
                    raise client_closed() from None

    def stop(self) -> None:
        """Cancels what is under way (its callers get ``Unreachable``, so no thread waits on for it), then stops."""
        if self._thread.is_alive():

            async def cancel_all() -> None:
                tasks = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
                for task in tasks:
                    task.cancel()
                await asyncio.gather(*tasks, return_exceptions=True)

            asyncio.run_coroutine_threadsafe(cancel_all(), self.loop).result(timeout=STOP_TIMEOUT_S)
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join()
        self.loop.close()


_Item = tuple[tuple[Listener, ...], str, Raw, bool] | threading.Event


class Dispatcher:
    """Calls listeners, per kind, on its own thread and in publication order; a failing listener is logged."""

    def __init__(self, name: str = "kai-kube-listeners") -> None:
        self._listeners: dict[str, list[Listener]] = {}
        self._queue: queue.SimpleQueue[_Item | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def publish(self, kind: str, obj: Raw, deleted: bool) -> None:
        """Queues a change for the listeners of ``kind`` registered now (a later listener gets it by replay)."""
        targets = tuple(self._listeners.get(kind, ()))
        if targets:
            self._queue.put((targets, kind, obj, deleted))

    def add(self, kind: str, listener: Listener, replay: Iterable[Raw]) -> None:
        """Registers ``listener`` for ``kind`` and queues ``replay`` (the store now) to it alone, as additions.
        Called under the informer's lock, so the replay and later changes neither overlap nor leave a gap."""
        self._listeners.setdefault(kind, []).append(listener)
        for obj in replay:
            self._queue.put(((listener,), kind, obj, False))

    def wait_delivered(self) -> None:
        """Returns once every change queued so far has been delivered (at once on the listeners' own thread, which
        would wait for itself, and once the thread has stopped)."""
        if threading.current_thread() is self._thread or not self._thread.is_alive():
            return
        delivered = threading.Event()
        self._queue.put(delivered)
        delivered.wait()

    def stop(self) -> None:
        """Delivers what is queued, then ends the thread."""
        if self._thread.is_alive():
            self._queue.put(None)
            self._thread.join()

    def _run(self) -> None:
        while (item := self._queue.get()) is not None:
            if isinstance(item, threading.Event):
                item.set()
                continue
            targets, kind, obj, deleted = item
            for listener in targets:
                try:
                    listener(kind, obj, deleted)
                except Exception:
                    log.exception(
                        "listener %r failed on %s %s", listener, kind, (obj.get("metadata") or {}).get("name")
                    )

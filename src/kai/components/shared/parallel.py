"""Running a component's independent writes side by side, and its writes off the critical path in the background.

Against an API server, each write waits a round trip; writes to different objects do not depend on each other, so
components issue them from a small thread pool (the kube adapter multiplexes them on one connection pool). Writes
nothing waits for (events, a bind's report) go to a background pool (``later``), as client-go's event broadcaster
writes events from a goroutine of its own: the pass goes on to the next bind meanwhile. The in-memory cluster is not
thread-safe and runs them all one by one, at once (``workers=1``).
"""

import logging
import queue
import threading
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar, cast

from kai.cluster.port import AlreadyExists, ClusterError, Conflict, NotFound, reporting

log = logging.getLogger(__name__)
T = TypeVar("T")
_END = object()


class Writes:
    def __init__(self, workers: int = 1, name: str = "kai") -> None:
        """``name``: its threads' prefix (``kai-binder`` makes ``kai-binder-write_0``…), so that a thread's CPU is
        counted to its component."""
        self.workers = workers
        self._pool = ThreadPoolExecutor(workers, thread_name_prefix=f"{name}-write") if workers > 1 else None
        self._name = name
        self._later: queue.SimpleQueue[Callable[[], None]] | None = queue.SimpleQueue() if workers > 1 else None
        self._started = False
        self._lock = threading.Lock()

    def later(self, what: str, item: T, action: Callable[[T], object]) -> None:
        """Apply ``action`` to ``item`` in the background (at once with one worker), its writes as reports
        (``port.reporting``); a failure is logged as in ``each``."""

        def run() -> None:  # on the background thread itself: the pool's workers are the pass's, and do not report
            with reporting():
                _guarded(what, item, action)

        if self._later is None:
            run()
            return

        with self._lock:
            if not self._started:  # daemon threads: a write still waiting at exit does not hold the process
                self._started = True
                for i in range(self.workers):
                    thread = threading.Thread(
                        target=self._work, args=(self._later,), name=f"{self._name}-write-later_{i}", daemon=True
                    )
                    thread.start()
        self._later.put(run)

    @staticmethod
    def _work(jobs: "queue.SimpleQueue[Callable[[], None]]") -> None:
        while True:
            jobs.get()()

    def drain(self, what: str, items: Iterator[T], action: Callable[[T], object]) -> None:
        """Apply ``action`` to each item of ``items`` as it comes, each worker taking the next one as soon as it is
        done with one (no batch to wait for: items that come meanwhile are taken too); a failure is logged as in
        ``each``."""
        lock = threading.Lock()

        def work() -> None:
            while True:
                with lock:  # one worker at a time asks the iterator
                    item = next(items, _END)
                if item is _END:
                    return
                _guarded(what, cast(T, item), action)

        if self._pool is None:
            work()
            return
        for done in [self._pool.submit(work) for _ in range(self.workers)]:
            done.result()

    def each(self, what: str, items: Iterable[T], action: Callable[[T], object]) -> int:
        """Apply ``action`` to every item; a failure is logged with the item and the others go on. Returns how
        many succeeded."""
        if self._pool is None:
            return sum(_guarded(what, item, action) for item in items)
        return sum(self._pool.map(lambda item: _guarded(what, item, action), list(items)))


def _guarded(what: str, item: T, action: Callable[[T], object]) -> bool:
    """``action(item)``; whether it succeeded (a failure is logged with the item)."""
    try:
        action(item)
    except (AlreadyExists, Conflict, NotFound) as error:  # made, changed or gone meanwhile: next pass sees it
        log.warning("%s %s: %s", what, _name(item), error)
        return False
    except ClusterError as error:  # the API server refused or could not be reached, after the retries
        log.error("%s %s failed: %s", what, _name(item), error)
        return False
    except Exception:  # one object's failure never stops the others (docs/architecture.md §8)
        log.exception("%s %s failed", what, _name(item))
        return False
    return True


def _name(item: object) -> str:
    """An object's namespace/name for logs (not its whole body)."""
    if isinstance(item, dict) and isinstance(item.get("metadata"), dict):
        meta = item["metadata"]
        return f"{meta.get('namespace', '')}/{meta.get('name', '')}".lstrip("/")
    return str(item)[:200]

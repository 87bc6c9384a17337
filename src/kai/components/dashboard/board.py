"""What the dashboard's pages show: the latest look, refreshed on a thread of its own and published whole.

A look (a dry cycle of the real scheduler at 1,000 nodes) takes seconds; a page asks every few seconds. So the
pages never wait for a look: each request is answered from the last published document, encoded (and compressed)
once per look, and a page that has it already gets ``304 Not Modified`` (its generation is the ETag). A look that
fails keeps the last document and says why on the page; the next look may succeed.
"""

import gzip
import json
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kai.components.dashboard.feeds import Feed
from kai.components.dashboard.page import page_document
from kai.components.sim.scenario import Scenario

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Published:
    generation: int
    document: dict[str, Any]
    body: bytes
    """The document as JSON."""
    gzipped: bytes

    @property
    def etag(self) -> str:
        return f'"kai-{self.generation}"'


def published(generation: int, document: dict[str, Any]) -> Published:
    body = json.dumps(document, separators=(",", ":")).encode()
    return Published(generation, document, body, gzip.compress(body, compresslevel=5))


class Board:
    def __init__(self, feed: Feed, refresh_s: float, clock: Callable[[], float] = time.time) -> None:
        """``refresh_s``: the time from the end of one look to the start of the next."""
        self.feed = feed
        self.refresh_s = refresh_s
        self.clock = clock
        self.scenario: Scenario | None = None
        """The input of the latest look, for what-if runs."""
        self._lock = threading.Lock()
        self._published = published(0, self._head(0) | {"looking": True})
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def current(self) -> Published:
        with self._lock:
            return self._published

    def refresh(self) -> None:
        """One look, published; a failed one keeps the last document and adds why."""
        started = time.perf_counter()
        generation = self.current.generation + 1
        try:
            ins = self.feed.look()
            document = page_document(self.feed, ins)
        except Exception as error:  # one failed look is said on the page; the dashboard goes on
            log.warning("dashboard: looking at %s failed: %s", self.feed.label, error, exc_info=True)
            last = self.current.document
            failed = {**last, **self._head(generation), "error": f"the last look at {self.feed.label} failed: {error}"}
            self._publish(published(generation, failed | {"looking": False}))
            return
        head = self._head(generation) | {"lookSeconds": round(time.perf_counter() - started, 3)}
        self.scenario = ins.scenario
        self._publish(published(generation, head | {"error": "", "looking": False} | document))

    def _head(self, generation: int) -> dict[str, Any]:
        return {
            "label": self.feed.label,
            "generation": generation,
            "refreshedAt": self.clock(),
            "refreshSeconds": self.refresh_s,
        }

    def _publish(self, document: Published) -> None:
        with self._lock:
            self._published = document

    def start(self) -> None:
        """Look now and then every ``refresh_s`` while the input may have changed, until ``close``."""
        self._thread = threading.Thread(target=self._run, name="kai-dashboard-looks", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            if self.current.generation == 0 or self.feed.changed():
                self.refresh()
            self._stop.wait(self.refresh_s)

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)  # a look under way is not waited for: its thread ends with the process

"""The cluster's queues as the Queue webhook needs them: parsed once per change (from the informer's events), and a
parent missing from the cache read from the API server before a queue is refused for it (a parent applied a moment
before its child may not have reached the watch yet)."""

import threading
from collections.abc import Callable, Mapping
from typing import Any

from kai.core.model.errors import InvalidObject
from kai.core.model.objects import Queue, parse_queue

Lookup = Callable[[str], Mapping[str, Any] | None]


class QueueCache:
    def __init__(self, lookup: Lookup) -> None:
        self._lookup = lookup
        self._lock = threading.Lock()
        self._queues: dict[str, Queue] = {}
        self._invalid: set[str] = set()

    def on_change(self, kind: str, raw: Mapping[str, Any], deleted: bool) -> None:
        if kind != "Queue":
            return
        name = str((raw.get("metadata") or {}).get("name") or "")
        with self._lock:
            self._queues.pop(name, None)
            self._invalid.discard(name)
            if deleted:
                return
            try:
                self._queues[name] = parse_queue(raw)
            except InvalidObject:
                self._invalid.add(name)

    def view(self, parent: str) -> tuple[dict[str, Queue], set[str]]:
        """The queues and the names that do not parse, with ``parent`` read from the server if it is not cached."""
        with self._lock:
            known = parent in self._queues or parent in self._invalid or not parent
        if not known:
            raw = self._lookup(parent)
            if raw is not None:
                self.on_change("Queue", raw, False)
        with self._lock:
            return dict(self._queues), set(self._invalid)

"""Running a component's independent writes side by side.

Against an API server, each write waits a round trip; writes to different objects do not depend on each other, so
components issue them from a small thread pool (the kube adapter multiplexes them on one connection pool). The
in-memory cluster is not thread-safe and runs them one by one (``workers=1``).
"""

import logging
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from kai.cluster.port import AlreadyExists, ClusterError, Conflict, NotFound

log = logging.getLogger(__name__)
T = TypeVar("T")


class Writes:
    def __init__(self, workers: int = 1) -> None:
        self.workers = workers
        self._pool = ThreadPoolExecutor(workers, thread_name_prefix="kai-write") if workers > 1 else None

    def each(self, what: str, items: Iterable[T], action: Callable[[T], object]) -> int:
        """Apply ``action`` to every item; a failure is logged with the item and the others go on. Returns how
        many succeeded."""

        def guarded(item: T) -> bool:
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

        if self._pool is None:
            return sum(guarded(item) for item in items)
        return sum(self._pool.map(guarded, list(items)))


def _name(item: object) -> str:
    """An object's namespace/name for logs (not its whole body)."""
    if isinstance(item, dict) and isinstance(item.get("metadata"), dict):
        meta = item["metadata"]
        return f"{meta.get('namespace', '')}/{meta.get('name', '')}".lstrip("/")
    return str(item)[:200]

"""Objects the status controllers cannot read: each is logged once, not on every change or pass.

The scheduler reports such an object on the object itself (``kai.components.scheduler.invalid``); like KAI's, the
status controllers record no events, so the log is where they say what they skipped.
"""

import logging

from kai.core.model.errors import InvalidObject

log = logging.getLogger(__name__)


class ProblemLog:
    """Logs an object's problem when it first has it, and again only when the problem changes or comes back after
    the object was fine (or gone) meanwhile."""

    def __init__(self) -> None:
        self._told: dict[str, str] = {}

    def report(self, key: str, error: InvalidObject) -> None:
        """``key`` names the object with its kind (``Pod ns/name``)."""
        message = str(error)
        if self._told.get(key) != message:
            self._told[key] = message
            log.warning("skipping %s", message)

    def clear(self, key: str) -> None:
        self._told.pop(key, None)

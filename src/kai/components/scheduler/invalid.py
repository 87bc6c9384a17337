"""Objects the scheduler cannot use, reported on the objects themselves, where their owners look.

``ClusterState.invalid`` holds the objects the scheduler skips, ``ClusterState.warnings`` the ones it schedules
while something in them is ignored or suspicious. Each problem becomes a Warning event on its object, and an
invalid object also gets a condition: a pod ``PodScheduled=False`` (reason ``InvalidObject``, so autoscalers do
not take it for a pod that needs a node), a PodGroup a scheduling condition, a Queue a ``Valid=False`` status
condition. Each is reported once per object and problem: again only when the problem changes or the object is
re-created, not every cycle. When the object is fixed its condition goes away.
"""

import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from kai.cluster.port import ClusterClient, Raw
from kai.components.scheduler.conditions import (
    INVALID_OBJECT,
    QUEUE_VALID,
    clear_scheduling_conditions,
    remove_condition,
    set_condition,
    set_scheduling_condition,
)
from kai.components.shared.events import EventRecorder, ObjectRef
from kai.components.shared.parallel import Writes
from kai.core.model.errors import InvalidObject

log = logging.getLogger(__name__)
OBJECT_WARNING = "ObjectWarning"
"""Reason of the events about problems that do not stop the object."""
Key = tuple[str, str]


@dataclass(frozen=True, slots=True)
class _Report:
    """What was reported about an object: its uid, the messages, and the problems they came from (the same
    instances until the object changes, so an unchanged object costs one comparison a cycle)."""

    uid: str
    messages: tuple[str, ...]
    problems: tuple[InvalidObject, ...]

    def about(self, problems: Sequence[InvalidObject]) -> bool:
        return len(problems) == len(self.problems) and all(a is b for a, b in zip(problems, self.problems, strict=True))


class InvalidObjectReporter:
    def __init__(
        self,
        cluster: ClusterClient,
        recorder: EventRecorder,
        now: Callable[[], float],
        writes: Writes,
        pool_of: Callable[[Raw], str],
    ):
        """``pool_of``: the node pool of a PodGroup's condition (the scheduler's ``NodePool.pool_of``)."""
        self.cluster = cluster
        self.pool_of = pool_of
        self.recorder = recorder
        self.now = now
        self.writes = writes
        self._invalid: dict[Key, _Report] = {}
        self._warned: dict[Key, _Report] = {}
        self._lock = threading.Lock()

    def report(self, invalid: Mapping[Key, InvalidObject], warnings: Mapping[Key, Sequence[InvalidObject]]) -> None:
        """Reports what is new since the last call and lifts the conditions of objects that are valid again."""
        fixed = [key for key in self._invalid if key not in invalid]
        for key in fixed:
            del self._invalid[key]
        for key in [key for key in self._warned if key not in warnings]:
            del self._warned[key]
        new_invalid = [(k, [e]) for k, e in invalid.items() if not self._reported(self._invalid, k, [e])]
        self.writes.each("invalid object", new_invalid, self._report_invalid)
        new_warnings = [(k, ws) for k, ws in warnings.items() if not self._reported(self._warned, k, ws)]
        self.writes.each("object warning", new_warnings, self._report_warnings)
        self.writes.each("valid again", fixed, self._lift)

    @staticmethod
    def _reported(reported: dict[Key, _Report], key: Key, problems: Sequence[InvalidObject]) -> bool:
        report = reported.get(key)
        return report is not None and report.about(problems)

    def _report_invalid(self, item: tuple[Key, Sequence[InvalidObject]]) -> None:
        (kind, key), errors = item
        found = self._new(self._invalid, kind, key, errors)
        if found is None:
            return
        obj, report = found
        message = report.messages[0]
        if self._mark(kind, obj, message):
            self.cluster.update_status(kind, obj)  # a conflict raises: the next cycle tries again
        log.warning("skipping invalid %s", message)
        self.recorder.record(ObjectRef.of(kind, obj), "Warning", INVALID_OBJECT, message)
        self._done(self._invalid, (kind, key), report)

    def _report_warnings(self, item: tuple[Key, Sequence[InvalidObject]]) -> None:
        (kind, key), warnings = item
        found = self._new(self._warned, kind, key, warnings)
        if found is None:
            return
        obj, report = found
        for message in report.messages:
            log.warning("%s", message)
            self.recorder.record(ObjectRef.of(kind, obj), "Warning", OBJECT_WARNING, message)
        self._done(self._warned, (kind, key), report)

    def _new(
        self, reported: dict[Key, _Report], kind: str, key: str, problems: Sequence[InvalidObject]
    ) -> tuple[Raw, _Report] | None:
        """The object and what to report about it, unless these problems of this object were reported (then the
        record is brought up to these problems' instances)."""
        obj = self.cluster.get(kind, key)
        if obj is None:
            return None
        uid = str((obj.get("metadata") or {}).get("uid") or "")
        report = _Report(uid, tuple(str(problem) for problem in problems), tuple(problems))
        with self._lock:
            before = reported.get((kind, key))
        if before is not None and (before.uid, before.messages) == (report.uid, report.messages):
            self._done(reported, (kind, key), report)
            return None
        return obj, report

    def _done(self, reported: dict[Key, _Report], key: Key, report: _Report) -> None:
        with self._lock:
            reported[key] = report

    def _mark(self, kind: str, obj: Raw, message: str) -> bool:
        now = self.now()
        if kind == "Pod":
            condition = {"type": "PodScheduled", "status": "False", "reason": INVALID_OBJECT, "message": message}
            return set_condition(obj, condition, now)
        if kind == "PodGroup":
            reasons = [{"reason": INVALID_OBJECT, "message": message}]
            return set_scheduling_condition(obj, message, reasons, now, self.pool_of(obj))
        if kind == "Queue":
            condition = {"type": QUEUE_VALID, "status": "False", "reason": INVALID_OBJECT, "message": message}
            return set_condition(obj, condition, now)
        return False

    def _lift(self, key: Key) -> None:
        kind, name = key
        obj = self.cluster.get(kind, name)
        if obj is None:
            return
        if kind == "Pod":
            changed = remove_condition(obj, "PodScheduled", INVALID_OBJECT)
        elif kind == "PodGroup":
            changed = clear_scheduling_conditions(obj, INVALID_OBJECT)
        elif kind == "Queue":
            changed = remove_condition(obj, QUEUE_VALID, INVALID_OBJECT)
        else:
            changed = False
        if changed:
            self.cluster.update_status(kind, obj)

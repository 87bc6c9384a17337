"""The scheduler's last cycles, kept so ``kai explain`` can say what they did for a podgroup.

The loop keeps each cycle's result (a reference, no copy; reasons equal to the previous cycle's are pointed at its
objects, so that a pod waiting for many cycles costs its reasons once); only a request for one podgroup walks them,
picking out what concerns it: pods placed or pipelined, pods it lost, pods evicted to make room for it, or why it
waited.
"""

from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from kai.core.framework.decisions import CycleResult
from kai.core.state.reason_text import describe

KEPT_CYCLES = 20
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class CycleEntry:
    number: int
    at: float
    result: CycleResult


class CycleHistory:
    def __init__(self, size: int = KEPT_CYCLES) -> None:
        self._entries: deque[CycleEntry] = deque(maxlen=size)

    def add(self, number: int, at: float, result: CycleResult) -> None:
        if self._entries:
            _share_repeats(self._entries[-1].result, result)
        self._entries.append(CycleEntry(number, at, result))

    def summary(self) -> list[dict[str, Any]]:
        """Per cycle, how many decisions of each kind it made."""
        return [
            {
                "cycle": entry.number,
                "at": entry.at,
                "binds": len(entry.result.binds),
                "pipelined": len(entry.result.pipelined),
                "evictions": len(entry.result.evictions),
                "unschedulable": len(entry.result.unschedulable),
            }
            for entry in list(self._entries)
        ]

    def for_podgroup(self, key: str) -> list[dict[str, Any]]:
        """Per kept cycle, oldest first, what it did for the podgroup ``key``."""
        return [{"cycle": entry.number, "at": entry.at, **outcome(entry.result, key)} for entry in list(self._entries)]


def _share_repeats(previous: CycleResult, result: CycleResult) -> None:
    """Points ``result``'s reasons that equal the previous cycle's at that cycle's objects: a waiting pod's reasons
    repeat every cycle, and the kept cycles' copies of them grew the scheduler by hundreds of MB at 5,000 waiting
    pods (what KAI's users see as #1725); shared, the kept cycles cost about one cycle's reasons."""
    _share(previous.pod_errors, result.pod_errors)
    _share(previous.pod_reasons, result.pod_reasons)
    _share(previous.unschedulable, result.unschedulable)


def _share(before: Mapping[str, T], now: dict[str, T]) -> None:
    for key, value in now.items():
        kept = before.get(key)
        if kept is not None and kept is not value and kept == value:
            now[key] = kept


def outcome(result: CycleResult, key: str) -> dict[str, Any]:
    """What one cycle did for a podgroup: ``did`` is placed, pipelined, evicted-others, lost-pods, waited or
    nothing, with the pods, nodes or reason."""
    placed = [{"pod": b.pod_key, "node": b.node} for b in result.binds if b.podgroup_key == key]
    if placed:
        return {"did": "placed", "pods": placed}
    evicted = sorted({e.pod_key for e in result.evictions if e.evictor == key})
    pipelined = [{"pod": p.pod_key, "node": p.node} for p in result.pipelined if p.podgroup_key == key]
    if evicted or pipelined:
        return {"did": "pipelined", "pods": pipelined, "evicted": evicted}
    lost = [{"pod": e.pod_key, "by": e.evictor, "action": e.action} for e in result.evictions if e.podgroup_key == key]
    if lost:
        return {"did": "lost-pods", "pods": lost}
    waiting = result.unschedulable.get(key)
    if waiting is not None:
        headline = waiting.reasons[0] if waiting.reasons else None
        return {
            "did": "waited",
            "reason": waiting.reason,
            "kind": headline.kind.value if headline is not None else "",
            "text": describe(headline, None) if headline is not None else waiting.message,
        }
    return {"did": "nothing"}

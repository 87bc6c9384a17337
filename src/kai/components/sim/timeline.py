"""Per-queue allocation over simulated time: one sample per cycle of what each queue holds after it, its fair share
and (with time-based fair share) its historical usage."""

from dataclasses import dataclass

from kai.core.framework.session import Session

RESOURCES = ("cpu", "memory", "gpu")


@dataclass(frozen=True, slots=True)
class QueueSample:
    allocated: dict[str, float]
    """cpu millicores, memory bytes, GPUs, after the cycle's decisions."""
    fair_share: dict[str, float]
    usage: dict[str, float]
    """Share of the cluster's capacity used over the usage window (0 without time-based fair share)."""


@dataclass(frozen=True, slots=True)
class TimelineSample:
    cycle: int
    time: float
    elapsed_s: float
    queues: dict[str, QueueSample]
    leaves: tuple[str, ...]
    """Queues without children, in name order (the ones jobs run in)."""
    binds: int = 0
    evictions: int = 0
    pipelined: int = 0
    unschedulable: int = 0
    """Podgroups the cycle left waiting with a reason."""


def sample_of(cycle: int, now: float, elapsed_s: float, session: Session) -> TimelineSample:
    queues: dict[str, QueueSample] = {}
    if session.queue_share_fns:
        shares = session.queue_share_fns[0]
        for uid in sorted(session.queues):
            found = shares(uid)
            queues[uid] = QueueSample(found["allocated"], found["fairShare"], found["usage"])
    leaves = tuple(uid for uid in sorted(session.queues) if session.queues[uid].is_leaf)
    result = session.result
    return TimelineSample(
        cycle,
        now,
        elapsed_s,
        queues,
        leaves,
        len(result.binds),
        len(result.evictions),
        len(result.pipelined),
        len(result.unschedulable),
    )

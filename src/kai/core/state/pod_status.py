"""KAI's pod status model: what the scheduler thinks of each pod, and the status groups actions count by."""

from enum import StrEnum


class PodStatus(StrEnum):
    """A StrEnum so that the status groups below are tested by str's hash (an Enum's ``__hash__`` is Python code:
    at 100,000 tasks a cycle, millions of calls)."""

    PENDING = "Pending"
    GATED = "Gated"
    ALLOCATED = "Allocated"
    PIPELINED = "Pipelined"
    BINDING = "Binding"
    BOUND = "Bound"
    RUNNING = "Running"
    RELEASING = "Releasing"
    STUCK_IN_RELEASING = "StuckInReleasing"
    """Terminating for longer than ``stuckInReleasingThreshold``: it holds its node, but its resources are not
    counted as about to be freed (nothing is pipelined onto them)."""
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"
    UNKNOWN = "Unknown"


ACTIVE_USED = frozenset(
    {
        PodStatus.ALLOCATED,
        PodStatus.PIPELINED,
        PodStatus.BINDING,
        PodStatus.BOUND,
        PodStatus.RUNNING,
        PodStatus.RELEASING,
        PodStatus.STUCK_IN_RELEASING,
    }
)
"""Statuses that occupy a node."""
ACTIVE_ALLOCATED = ACTIVE_USED - {PodStatus.RELEASING, PodStatus.STUCK_IN_RELEASING}
ALIVE = frozenset(
    {
        PodStatus.ALLOCATED,
        PodStatus.PIPELINED,
        PodStatus.BINDING,
        PodStatus.BOUND,
        PodStatus.RUNNING,
        PodStatus.PENDING,
        PodStatus.GATED,
    }
)
ALLOCATED = frozenset({PodStatus.ALLOCATED, PodStatus.BOUND, PodStatus.BINDING, PodStatus.RUNNING})
"""Statuses whose resources are charged to the queue."""

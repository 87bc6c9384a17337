"""gpujoborder: among jobs of equal priority, the one asking for more GPUs first (``prefer-larger``, the default) or
fewer (``prefer-smaller``): KAI #1995's tie-break after priority.

A job's GPUs are those its alive pods ask for (whole GPUs, fractions, and GPUs of their DRA claims; ``gpu-memory``
and MIG requests count 0), as KAI's ``GetAliveTasksRequestedGPUs``. KAI's order function defers (returns 0) when the
priorities differ; as a sort key that is priority first, then GPUs, which is the same wherever the plugin comes after
``priority`` in the config (docs/deviations.md). An unknown mode is ``prefer-larger``, with a config warning.
"""

from collections.abc import Mapping
from typing import Any

from kai.core.framework.session import Session
from kai.core.state.pod_status import ALIVE
from kai.core.state.podgroup_info import PodGroupInfo

PREFER_LARGER, PREFER_SMALLER = "prefer-larger", "prefer-smaller"
MODES = (PREFER_LARGER, PREFER_SMALLER)
"""The ``mode`` argument: which of two jobs of equal priority goes first, the one asking for more GPUs or for
fewer."""


def argument_warnings(arguments: Mapping[str, Any]) -> list[tuple[str, str]]:
    """An unknown mode is ``prefer-larger``, as KAI has it; the config says so."""
    mode = arguments.get("mode", PREFER_LARGER)
    if mode in MODES:
        return []
    return [("mode", f"got {mode!r}; allowed: {', '.join(MODES)}; {PREFER_LARGER} is used, as KAI does")]


def requested_gpus(job: PodGroupInfo) -> float:
    return sum(task.request.gpus + task.dra_gpus for task in job.tasks.values() if task.status in ALIVE)


class GpuJobOrderPlugin:
    name = "gpujoborder"

    def __init__(self, arguments: Mapping[str, Any]) -> None:
        mode = arguments.get("mode")
        self.sign = 1.0 if mode == PREFER_SMALLER else -1.0

    def on_session_open(self, ssn: Session) -> None:
        ssn.job_order_keys.append(self.job_key)

    def job_key(self, job: PodGroupInfo) -> tuple[int, float]:
        return -job.priority, self.sign * requested_gpus(job)

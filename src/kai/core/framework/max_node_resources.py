"""KAI's MaxNodePoolResources pre-predicate: a pod that asks for more of a resource than the largest node offers
can never run here, whatever is evicted.

Allocate reports it as the pod's scheduling condition; reclaim, preempt and consolidation skip such a job without
searching for victims (KAI v0.17's victim-invariant pre-predicates). The texts are KAI's, byte for byte.
"""

import numpy as np

from kai.core.model import names
from kai.core.model.text import BYTES_PER_GB, MILLI_CPU_PER_CORE, humanize
from kai.core.state.node_table import NodeTable
from kai.core.state.resource_index import CPU_ROW, GPU_ROW, MEMORY_ROW
from kai.core.state.task import TaskInfo

PREDICATE = "MaxNodePoolResources"
NODE_POOL = "default"
_STORAGE = ("ephemeral-storage", "storage")


class MaxNodeResources:
    """The largest allocatable amount of every resource over the cluster's nodes, and the check against it."""

    def __init__(self, nodes: NodeTable) -> None:
        self.names = nodes.index.names
        self.maximum = nodes.allocatable.max(axis=1) if len(nodes) else np.zeros(len(self.names))

    def failure(self, task: TaskInfo) -> str | None:
        """Why the pod fits on no node of the pool, or None (GPUs first, then CPU, memory, the rest)."""
        request = task.req_vec
        gpus = task.request.gpus + task.dra_gpus
        if gpus > self.maximum[GPU_ROW]:
            return self._message(task, "GPU", self.maximum[GPU_ROW], "")
        if request[CPU_ROW] > self.maximum[CPU_ROW]:
            return self._message(task, "CPU", self.maximum[CPU_ROW] / MILLI_CPU_PER_CORE, "cores")
        if request[MEMORY_ROW] > self.maximum[MEMORY_ROW]:
            return self._message(task, "memory", self.maximum[MEMORY_ROW] / BYTES_PER_GB, "GB")
        for row, name in enumerate(self.names):
            if row in (CPU_ROW, MEMORY_ROW, GPU_ROW):
                continue
            if request[row] > 0 and self.maximum[row] < request[row]:
                storage = name in _STORAGE
                shown = self.maximum[row] / BYTES_PER_GB if storage else 0.0  # KAI shows only storage amounts
                return self._message(task, name, shown, "GB" if storage else "")
        return None

    def condition(self, task: TaskInfo) -> str | None:
        """The pre-predicate failure as allocate reports it for the pod."""
        failure = self.failure(task)
        if failure is None:
            return None
        return f"Scheduling conditions were not met for pod {task.namespace}/{task.name}:\n{PREDICATE}: {failure}.\n"

    def _message(self, task: TaskInfo, resource: str, amount: float, units: str) -> str:
        text = f"The pod {task.namespace}/{task.name} requires {self._requested(task)}. "
        if amount == 0:
            return f"{text}No node in the {NODE_POOL} node-pool has {resource} resources"
        text += f"Max {resource} resources available in a single node in the {NODE_POOL} node-pool is topped at "
        return text + humanize(amount) + (f" {units}" if units else "")

    def _requested(self, task: TaskInfo) -> str:
        """KAI's DetailedResourceString."""
        request = task.req_vec
        parts = [
            f"GPU: {humanize(task.gpus_quota)}, CPU: {humanize(request[CPU_ROW], MILLI_CPU_PER_CORE)} (cores), "
            f"memory: {humanize(request[MEMORY_ROW], BYTES_PER_GB)} (GB)"
        ]
        for row, name in enumerate(self.names):
            if row in (CPU_ROW, MEMORY_ROW, GPU_ROW) or name.startswith(names.MIG_PREFIX) or not request[row]:
                continue
            if name in _STORAGE:
                parts.append(f"{name}: {humanize(request[row], BYTES_PER_GB)} (GB)")
            else:
                parts.append(f"{name}: {humanize(request[row])}")
        parts.extend(f"mig {name}: {int(count)}" for name, count in task.request.mig.items())
        return ", ".join(parts)

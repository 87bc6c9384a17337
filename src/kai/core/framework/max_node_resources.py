"""KAI's MaxNodePoolResources pre-predicate: a pod that asks for more of a resource than the largest node offers
can never run here, whatever is evicted.

Allocate reports it as the pod's scheduling condition; reclaim, preempt and consolidation skip such a job without
searching for victims (KAI v0.17's victim-invariant pre-predicates). The texts are KAI's, byte for byte.
"""

import numpy as np

from kai.core.model import names
from kai.core.model.text import BYTES_PER_GB, MILLI_CPU_PER_CORE, humanize
from kai.core.state.node_table import NodeTable
from kai.core.state.reasons import Predicate, Refusal, amount
from kai.core.state.resource_index import CPU_ROW, GPU_ROW, MEMORY_ROW
from kai.core.state.task import TaskInfo

PREDICATE = "MaxNodePoolResources"
_STORAGE = ("ephemeral-storage", "storage")


class MaxNodeResources:
    """The largest allocatable amount of every resource over the cluster's nodes, and the check against it."""

    def __init__(self, nodes: NodeTable, node_pool: str) -> None:
        """``node_pool``: the pool's name in the texts."""
        self.names = nodes.index.names
        self.node_pool = node_pool
        self.maximum = nodes.allocatable.max(axis=1) if len(nodes) else np.zeros(len(self.names))

    def failure(self, task: TaskInfo) -> Refusal | None:
        """Why the pod fits on no node of the pool, or None (GPUs first, then CPU, memory, the rest)."""
        request = task.req_vec
        gpus = task.request.gpus + task.dra_gpus
        if gpus > self.maximum[GPU_ROW]:
            return self._message(task, "GPU", (gpus, self.maximum[GPU_ROW]), "")
        if request[CPU_ROW] > self.maximum[CPU_ROW]:
            numbers = (request[CPU_ROW] / MILLI_CPU_PER_CORE, self.maximum[CPU_ROW] / MILLI_CPU_PER_CORE)
            return self._message(task, "CPU", numbers, "cores")
        if request[MEMORY_ROW] > self.maximum[MEMORY_ROW]:
            numbers = (request[MEMORY_ROW] / BYTES_PER_GB, self.maximum[MEMORY_ROW] / BYTES_PER_GB)
            return self._message(task, "memory", numbers, "GB")
        for row, name in enumerate(self.names):
            if row in (CPU_ROW, MEMORY_ROW, GPU_ROW):
                continue
            if request[row] > 0 and self.maximum[row] < request[row]:
                storage = name in _STORAGE
                scale = BYTES_PER_GB if storage else 1.0
                return self._message(
                    task, name, (request[row] / scale, self.maximum[row] / scale), "GB" if storage else ""
                )
        return None

    def condition(self, task: TaskInfo) -> Refusal | None:
        """The pre-predicate failure as allocate reports it for the pod."""
        failure = self.failure(task)
        if failure is None:
            return None
        text = f"Scheduling conditions were not met for pod {task.namespace}/{task.name}:\n{PREDICATE}: {failure}.\n"
        return Refusal(text, Predicate.TOO_LARGE, failure.evidence)

    def _message(self, task: TaskInfo, resource: str, numbers: tuple[float, float], units: str) -> Refusal:
        """KAI's text; it shows the largest node's amount only for GPUs, CPU, memory and storage."""
        requested, largest = numbers
        shown = largest if units or resource == "GPU" else 0.0
        unit = units or ("GPUs" if resource == "GPU" else "")
        evidence = {"resource": resource, "unit": unit, "requested": amount(requested), "largest": amount(largest)}
        text = f"The pod {task.namespace}/{task.name} requires {self._requested(task)}. "
        if shown == 0:
            return Refusal(
                f"{text}No node in the {self.node_pool} node-pool has {resource} resources",
                Predicate.TOO_LARGE,
                evidence,
            )
        text += f"Max {resource} resources available in a single node in the {self.node_pool} node-pool is topped at "
        return Refusal(text + humanize(shown) + (f" {units}" if units else ""), Predicate.TOO_LARGE, evidence)

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

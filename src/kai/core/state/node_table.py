"""Nodes of a cycle as resource-major numpy arrays (one row per resource, one column per node).

Fit checks and node scores run over all nodes at once (DESIGN.md §7). Columns are in node-name order, so the
first of equal-scored nodes is also the first by name — KAI's tie-break. Accounting follows KAI's NodeInfo:
a Releasing pod adds to used and releasing; a Pipelined pod adds to used and takes from releasing; any other
placed pod adds to used and takes from idle.
"""

import numpy as np
import numpy.typing as npt

from kai.core.model.objects import Node
from kai.core.state.pod_status import PodStatus
from kai.core.state.resource_index import GPU_ROW, ResourceIndex, Vector
from kai.core.state.task import TaskInfo

Matrix = npt.NDArray[np.float64]
Mask = npt.NDArray[np.bool_]


class NodeInfo:
    """The Python side of one node: its object, its column and the tasks placed on it."""

    __slots__ = ("column", "legacy_mig_tasks", "name", "node", "tasks")

    def __init__(self, node: Node, column: int) -> None:
        self.node = node
        self.name = node.name
        self.column = column
        self.tasks: dict[str, TaskInfo] = {}
        self.legacy_mig_tasks: set[str] = set()

    @property
    def gpu_memory_mib(self) -> int:
        return self.node.gpu_memory_mib


class NodeTable:
    def __init__(self, nodes: list[Node], index: ResourceIndex) -> None:
        ordered = sorted(nodes, key=lambda n: n.name)
        self.index = index
        self.infos: list[NodeInfo] = [NodeInfo(node, i) for i, node in enumerate(ordered)]
        self.by_name: dict[str, NodeInfo] = {info.name: info for info in self.infos}
        count = len(ordered)
        self.allocatable: Matrix = np.zeros((len(index), count))
        for info in self.infos:
            self.allocatable[:, info.column] = index.vector(info.node.allocatable)
        self.idle: Matrix = self.allocatable.copy()
        self.used: Matrix = np.zeros_like(self.allocatable)
        self.releasing: Matrix = np.zeros_like(self.allocatable)
        self.ready: Mask = np.array([info.node.ready for info in self.infos], dtype=bool)
        self.has_gpus: Mask = self.allocatable[GPU_ROW] > 0
        self.cpu_only: Mask = np.array(
            [not info.node.mig_enabled and self.allocatable[GPU_ROW, info.column] <= 0 for info in self.infos],
            dtype=bool,
        )

    def __len__(self) -> int:
        return len(self.infos)

    def add_task(self, task: TaskInfo, node: NodeInfo) -> None:
        """Place a task's resources on a node according to its status."""
        node.tasks[task.key] = task
        if task.pod.is_legacy_mig:
            node.legacy_mig_tasks.add(task.key)
        self._account(task, node.column, 1.0)

    def remove_task(self, task: TaskInfo, node: NodeInfo) -> None:
        del node.tasks[task.key]
        node.legacy_mig_tasks.discard(task.key)
        self._account(task, node.column, -1.0)

    def _account(self, task: TaskInfo, column: int, sign: float) -> None:
        vec = _tracked(task)
        self.used[:, column] += sign * vec
        if task.status is PodStatus.RELEASING:
            self.releasing[:, column] += sign * vec
            self.idle[:, column] -= sign * vec
        elif task.status is PodStatus.PIPELINED:
            self.releasing[:, column] -= sign * vec
        else:
            self.idle[:, column] -= sign * vec

    def non_allocated(self) -> Matrix:
        """Idle plus releasing resources of every node: what a pipelined task may wait for."""
        return self.idle + self.releasing


def _tracked(task: TaskInfo) -> Vector:
    """The resources a task holds on its node; a reservation pod's GPU is charged through the pods sharing it."""
    if task.pod.is_reservation and task.req_vec[GPU_ROW]:
        vec = task.req_vec.copy()
        vec[GPU_ROW] = 0.0
        return vec
    return task.req_vec

"""nodeplacement: binpack (fullest fitting node first) or spread (emptiest first), for GPU and CPU-only tasks.

Binpack scores a node 0..9 by how little of the resource it has left relative to the other candidate nodes;
spread scores it by the free fraction of the resource. GPU tasks look at GPUs, CPU-only tasks at CPU.
"""

from collections.abc import Mapping
from typing import Any

import numpy as np

from kai.core.framework.scores import MAX_HIGH_DENSITY
from kai.core.framework.session import Session
from kai.core.model.errors import InvalidObject
from kai.core.state.node_table import Mask
from kai.core.state.resource_index import CPU_ROW, GPU_ROW, Vector
from kai.core.state.task import TaskInfo

STRATEGIES = ("binpack", "spread")


class NodePlacementPlugin:
    name = "nodeplacement"

    def __init__(self, arguments: Mapping[str, Any]) -> None:
        self.strategy: dict[str, str] = {}
        for kind in ("gpu", "cpu"):
            value = str(arguments.get(kind, "binpack"))
            if value not in STRATEGIES:
                raise InvalidObject("scheduler config", f"nodeplacement.arguments.{kind}", "allowed: binpack, spread")
            self.strategy[kind] = value

    def on_session_open(self, ssn: Session) -> None:
        self.ssn = ssn
        nodes = ssn.nodes
        gpu_count = np.array([info.gpu_count for info in nodes.infos], dtype=float)
        self.spread_total = {GPU_ROW: gpu_count, CPU_ROW: nodes.allocatable[CPU_ROW]}
        ssn.node_order_fns.append(self.score)

    def score(self, task: TaskInfo, candidates: Mask) -> Vector:
        kind = "cpu" if task.request.is_cpu_only else "gpu"
        row = CPU_ROW if kind == "cpu" else GPU_ROW
        nodes = self.ssn.nodes
        free = nodes.idle[row] + nodes.releasing[row]  # one row, not the whole idle+releasing matrix
        if self.strategy[kind] == "spread":
            total = self.spread_total[row]
            with np.errstate(divide="ignore", invalid="ignore"):
                result: Vector = np.where(total == 0, 0.0, free / np.where(total == 0, 1.0, total))
            return result
        has = nodes.allocatable[row] != 0
        considered = free[candidates & has]
        if not considered.size:
            return np.zeros(len(nodes))
        low, high = float(considered.min()), float(considered.max())
        if high == 0:
            return np.zeros(len(nodes))
        if low == high:
            return np.where(has, MAX_HIGH_DENSITY, 0.0)
        scores: Vector = MAX_HIGH_DENSITY * (1 - (free - low) / (high - low))
        return np.where(has, scores, 0.0)

"""resourcetype: CPU-only tasks prefer CPU-only nodes, keeping GPU nodes for GPU work."""

import numpy as np

from kai.core.framework.scores import RESOURCE_TYPE
from kai.core.framework.session import Session
from kai.core.state.node_table import Mask
from kai.core.state.resource_index import Vector
from kai.core.state.task import TaskInfo


class ResourceTypePlugin:
    name = "resourcetype"

    def on_session_open(self, ssn: Session) -> None:
        self.ssn = ssn
        ssn.node_order_fns.append(self.score)

    def score(self, task: TaskInfo, candidates: Mask) -> Vector:
        nodes = self.ssn.nodes
        if not task.request.is_cpu_only:
            return np.zeros(len(nodes))
        result: Vector = np.where(nodes.cpu_only, RESOURCE_TYPE, 0.0)
        return result

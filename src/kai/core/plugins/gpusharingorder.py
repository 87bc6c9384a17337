"""gpusharingorder: prefer nodes that already have a shared GPU this request fits on (fills shared GPUs first)."""

import numpy as np

from kai.core.framework.scores import GPU_SHARING
from kai.core.framework.session import Session
from kai.core.state.node_table import Mask
from kai.core.state.resource_index import Vector
from kai.core.state.task import TaskInfo


class GpuSharingOrderPlugin:
    name = "gpusharingorder"

    def on_session_open(self, ssn: Session) -> None:
        self.ssn = ssn
        ssn.node_order_fns.append(self.score)

    def score(self, task: TaskInfo, candidates: Mask) -> Vector:
        nodes = self.ssn.nodes
        if not task.request.is_shared_gpu:
            return np.zeros(len(nodes))
        result: Vector = np.where(nodes.shared_fit_counts(task) > 0, GPU_SHARING, 0.0)
        return result

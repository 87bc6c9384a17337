"""nodeavailability: prefer nodes where the task fits on idle resources (no waiting for releasing pods)."""

import numpy as np

from kai.core.framework.scores import AVAILABILITY
from kai.core.framework.session import Session
from kai.core.state.node_table import Mask
from kai.core.state.resource_index import Vector
from kai.core.state.task import TaskInfo


class NodeAvailabilityPlugin:
    name = "nodeavailability"

    def on_session_open(self, ssn: Session) -> None:
        self.ssn = ssn
        ssn.node_order_fns.append(self.score)

    def score(self, task: TaskInfo, candidates: Mask) -> Vector:
        nodes = self.ssn.nodes
        if task.request.is_best_effort:
            return np.full(len(nodes), AVAILABILITY)
        fits = np.all(task.req_vec[:, None] <= nodes.idle + 1e-9, axis=0)
        result: Vector = np.where(fits, AVAILABILITY, 0.0)
        return result

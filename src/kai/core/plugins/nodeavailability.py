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
        result: Vector = np.where(self.ssn.nodes.fits_idle(task), AVAILABILITY, 0.0)
        return result

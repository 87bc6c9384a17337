"""nominatednode: a pod's status.nominatedNodeName is preferred above every other score."""

import numpy as np

from kai.core.framework.scores import NOMINATED_NODE
from kai.core.framework.session import Session
from kai.core.state.node_table import Mask
from kai.core.state.resource_index import Vector
from kai.core.state.task import TaskInfo


class NominatedNodePlugin:
    name = "nominatednode"

    def on_session_open(self, ssn: Session) -> None:
        self.ssn = ssn
        ssn.node_order_fns.append(self.score)

    def score(self, task: TaskInfo, candidates: Mask) -> Vector:
        nodes = self.ssn.nodes
        scores = np.zeros(len(nodes))
        node = nodes.by_name.get(task.pod.nominated_node) if task.pod.nominated_node else None
        if node is not None:
            scores[node.column] = NOMINATED_NODE
        return scores

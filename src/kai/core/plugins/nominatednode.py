"""nominatednode: a pod's status.nominatedNodeName is preferred above every other score.

kai's, for a pod with none: a node the previous cycle pipelined a pod of its podgroup onto counts as nominated, once
for each pod pipelined there. A pod a consolidation moved comes back (made again by its controller, under the same
name or another) with nothing that says where it was moved to; placed by binpack it went back where it was evicted
from, took the room the consolidation had made for another job, and the next consolidation moved it again, every
other cycle (docs/deviations.md).
"""

from collections import Counter

import numpy as np

from kai.core.framework.scores import NOMINATED_NODE
from kai.core.framework.session import Session
from kai.core.state.node_table import Mask
from kai.core.state.pod_status import PodStatus
from kai.core.state.resource_index import Vector
from kai.core.state.task import TaskInfo

PLACED = frozenset({PodStatus.ALLOCATED, PodStatus.PIPELINED})
"""A task placed by the session (a running one put back where it was, an eviction undone, takes no nomination)."""


class NominatedNodePlugin:
    name = "nominatednode"

    def on_session_open(self, ssn: Session) -> None:
        self.ssn = ssn
        self.left = {key: Counter(nodes) for key, nodes in ssn.cluster.pipelined_before.items()}
        """Per podgroup, the nodes the previous cycle pipelined its pods onto that no pod of it took yet."""
        self.taken: dict[str, str] = {}
        """Tasks placed on one of those nodes, with the node (given back when the placement is undone)."""
        ssn.node_order_fns.append(self.score)
        if self.left:
            ssn.allocate_handlers.append(self._take)
            ssn.deallocate_handlers.append(self._give_back)

    def score(self, task: TaskInfo, candidates: Mask) -> Vector:
        nodes = self.ssn.nodes
        scores = np.zeros(len(nodes))
        if task.pod.nominated_node:
            node = nodes.by_name.get(task.pod.nominated_node)
            if node is not None:
                scores[node.column] = NOMINATED_NODE
            return scores
        for name, count in self.left.get(task.job_key, {}).items():
            node = nodes.by_name.get(name)
            if count > 0 and node is not None:
                scores[node.column] = NOMINATED_NODE
        return scores

    def _take(self, task: TaskInfo) -> None:
        left = self.left.get(task.job_key)
        if left and task.status in PLACED and left[task.node_name] > 0 and task.key not in self.taken:
            left[task.node_name] -= 1
            self.taken[task.key] = task.node_name

    def _give_back(self, task: TaskInfo) -> None:
        node = self.taken.pop(task.key, None)
        if node is not None:
            self.left[task.job_key][node] += 1

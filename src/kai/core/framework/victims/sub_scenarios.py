"""Node-picked sub-scenarios of an accumulated victim scenario (KAI's subScenarioEmitter, used by sg-multinodegang).

The nodes that hold potential victims are sorted by the GPUs a pending pod could get there once its victims are
gone (smallest first, ties in the order the victims were taken), nodes too small for any pending pod dropped.
The first sub-scenario takes the fewest nodes whose GPUs, added to what the other feasible nodes already offer,
cover the pending pods; each next one takes exponentially more nodes, up to all. Taking a node takes every victim
batch with a pod on it, whole (a gang is never split by node).
"""

from collections.abc import Iterator

from kai.core.framework.session import Session
from kai.core.framework.victims.scenario import Scenario
from kai.core.state.node_table import Mask
from kai.core.state.task import TaskInfo


def held_gpus(task: TaskInfo) -> float:
    """GPUs a placed task holds (KAI's AcceptedGpuRequirement.GetGpusQuota)."""
    return task.accepted_gpus + task.gpus_quota - task.request.gpus


class SubScenarioEmitter:
    def __init__(self, ssn: Session, base: Scenario, feasible: Mask) -> None:
        self.base = base
        recorded = _by_node(base.recorded_tasks)
        self.batches: list[list[TaskInfo]] = []
        self.node_batches: dict[str, list[int]] = {}
        first_seen: dict[str, int] = {}
        batch_of: dict[int, int] = {}
        for index, task in enumerate(base.potential_tasks):
            group = base.batch_of(task)
            if group is None:
                continue
            batch = batch_of.setdefault(id(group), len(self.batches))
            if batch == len(self.batches):
                self.batches.append([])
            self.batches[batch].append(task)
            if not task.node_name:
                continue
            first_seen.setdefault(task.node_name, index)
            on_node = self.node_batches.setdefault(task.node_name, [])
            if batch not in on_node:
                on_node.append(batch)
        nodes = ssn.nodes
        capacity: dict[str, float] = {}
        for name, batches in self.node_batches.items():
            amount = recorded.get(name, 0.0)
            info = nodes.by_name.get(name)
            if info is not None:
                amount += nodes.idle_or_releasing_gpus(info)[0]
            amount += sum(held_gpus(t) for b in batches for t in self.batches[b] if t.node_name == name)
            capacity[name] = amount
        requests = [task.gpus_quota for task in base.pending_tasks]
        smallest = min(requests, default=0.0)
        self.nodes = sorted(
            (name for name in self.node_batches if not (smallest > 0 and capacity[name] < smallest)),
            key=lambda name: (capacity[name], first_seen[name]),
        )
        baseline = 0.0
        for column in feasible.nonzero()[0]:
            info = nodes.infos[int(column)]
            if info.name not in self.node_batches:
                baseline += nodes.idle_or_releasing_gpus(info)[0] + recorded.get(info.name, 0.0)
        self.first_k = _smallest_covering([capacity[n] for n in self.nodes], sum(requests) - baseline)

    def scenarios(self) -> Iterator[Scenario]:
        k, step = self.first_k, 1
        while k <= len(self.nodes):
            picked = sorted({b for name in self.nodes[:k] for b in self.node_batches[name]})
            yield self.base.derived(self.batches[b] for b in picked)
            if k == len(self.nodes):
                return
            k, step = min(k + step, len(self.nodes)), step * 2


def _by_node(tasks: list[TaskInfo]) -> dict[str, float]:
    freed: dict[str, float] = {}
    for task in tasks:
        if task.node_name:
            freed[task.node_name] = freed.get(task.node_name, 0.0) + held_gpus(task)
    return freed


def _smallest_covering(capacities: list[float], demand: float) -> int:
    """The fewest leading capacities that reach ``demand`` (0 if nothing is needed; past the end if none do)."""
    if demand <= 0:
        return 0
    total = 0.0
    for index, amount in enumerate(capacities):
        total += amount
        if total >= demand:
            return index + 1
    return len(capacities) + 1

"""Cheap checks that pass over an accumulated victim scenario no simulation could solve (KAI's accumulated scenario
filters: AccumulatedNodeAffinities, TopologyAwareIdleGpus, AccumulatedIdleGpus, in that order).

Each filter is built from the first scenario of a builder and then sees the same scenario grow victim by victim,
so it adds only the victims it has not seen. A filter only ever rejects what would fail anyway; it saves the
simulations, which are most of a victim search's time when a pod can run on few nodes.
"""

from bisect import bisect_left, insort
from collections.abc import Iterator
from typing import Protocol

import numpy as np
import numpy.typing as npt

from kai.core.framework.session import Session
from kai.core.framework.victims.scenario import Scenario
from kai.core.framework.victims.sub_scenarios import held_gpus
from kai.core.model.objects import TopologyConstraint
from kai.core.state.node_table import Mask, NodeTable
from kai.core.state.podgroup_info import SubGroupSet
from kai.core.state.resource_index import GPU_ROW
from kai.core.state.task import TaskInfo

Capacities = npt.NDArray[np.float64]
TOLERANCE = 1e-6
"""GPUs below which a shortfall found by summing is put down to rounding (first fit adds in another order)."""


class ScenarioFilter(Protocol):
    name: str

    def valid(self, scenario: Scenario) -> bool: ...


def scenario_filters(ssn: Session, first: Scenario, feasible: Mask) -> list[ScenarioFilter]:
    """The filters that apply to the builder whose first scenario is ``first``."""
    filters: list[ScenarioFilter] = []
    if any(not task.pod.node_affinity.is_empty for task in first.pending_tasks):
        filters.append(NodeAffinityFilter(ssn, first, feasible))
    required = _required_topology(first.preemptor.root, [])
    if required:
        filters.append(TopologyIdleGpusFilter(ssn.nodes, first, required))
    filters.append(IdleGpusFilter(ssn.nodes, first))
    return filters


class _NewVictims:
    """The victims of a growing scenario not seen yet (recorded ones first, then potential ones as they come). The
    builder's scenario only ever gains potential victims, so for the same scenario only the new tail is read."""

    def __init__(self) -> None:
        self.seen: set[str] = set()
        self.scenario: Scenario | None = None
        self.read = 0

    def __call__(self, scenario: Scenario) -> list[TaskInfo]:
        if scenario is self.scenario:
            candidates = scenario.potential_tasks[self.read :]
        else:
            self.scenario = scenario
            candidates = [*scenario.recorded_tasks, *scenario.potential_tasks]
        self.read = len(scenario.potential_tasks)
        fresh = []
        for task in candidates:
            if task.node_name and task.key not in self.seen:
                self.seen.add(task.key)
                fresh.append(task)
        return fresh

    def on_nodes(self, scenario: Scenario, nodes: NodeTable) -> Iterator[tuple[int, TaskInfo]]:
        """The new victims that are on a node of ``nodes``, with its column."""
        for task in self(scenario):
            info = nodes.by_name.get(task.node_name)
            if info is not None:
                yield info.column, task


class NodeAffinityFilter:
    """Every pending pod with a node selector or required node affinity needs a matching node among the feasible
    nodes and the nodes that hold victims."""

    name = "AccumulatedNodeAffinities"

    def __init__(self, ssn: Session, first: Scenario, feasible: Mask) -> None:
        self.nodes = ssn.nodes
        self.candidates = feasible.copy()
        self.masks = [_affinity_mask(ssn, task) for task in first.pending_tasks if not task.pod.node_affinity.is_empty]
        self.new_victims = _NewVictims()
        self.valid(first)

    def valid(self, scenario: Scenario) -> bool:
        for column, _ in self.new_victims.on_nodes(scenario, self.nodes):
            self.candidates[column] = True
        return all(bool((mask & self.candidates).any()) for mask in self.masks)


def _affinity_mask(ssn: Session, task: TaskInfo) -> Mask:
    """Nodes matching the pod's node selector and required node affinity, once per constraint and session."""
    affinity = task.pod.node_affinity
    mask = ssn.node_affinity_masks.get(affinity.key)
    if mask is None:
        infos = ssn.nodes.infos
        mask = np.fromiter((affinity.matches(i.name, i.node.labels) for i in infos), dtype=bool, count=len(infos))
        ssn.node_affinity_masks[affinity.key] = mask
    return mask


class IdleGpusFilter:
    """The pending pods' GPUs, largest first, must each fit (first fit) in one of the nodes with the most idle or
    releasing GPUs once the victims are gone, as many nodes as there are pending pods.

    A victim search adds victims one at a time over a whole cluster, so those nodes are kept as victims come
    (``LargestCapacities``) rather than picked anew, and most scenarios fail on a sum before first fit: the best
    nodes must hold the pods' total (with a tolerance, so that rounding never refuses what first fit would take)."""

    name = "AccumulatedIdleGpus"

    def __init__(self, nodes: NodeTable, first: Scenario) -> None:
        self.nodes = nodes
        self.required = sorted((task.gpus_quota for task in first.pending_tasks), reverse=True)
        self.total = sum(amount for amount in self.required if amount > 0)
        capacity = idle_gpus(nodes)
        self.best = LargestCapacities(capacity, min(len(self.required), len(capacity)))
        self.new_victims = _NewVictims()
        self.valid(first)

    def valid(self, scenario: Scenario) -> bool:
        for column, task in self.new_victims.on_nodes(scenario, self.nodes):
            self.best.add(column, held_gpus(task))
        if self.best.count == 0:
            return not self.required or self.required[0] == 0
        if self.best.total < self.total - TOLERANCE:
            return False
        return first_fit(self.required, self.best.values())


class LargestCapacities:
    """The ``count`` largest entries of a capacity array, kept sorted as entries change (one node's at a time):
    an entry that grows joins them if it passes their smallest; one that shrinks makes them be picked anew."""

    def __init__(self, capacity: Capacities, count: int) -> None:
        self.capacity = capacity
        self.count = count
        self._pick()

    def _pick(self) -> None:
        columns = np.argsort(self.capacity, kind="stable")[len(self.capacity) - self.count :]
        self.top = sorted((float(self.capacity[column]), int(column)) for column in columns)
        """(capacity, column) ascending."""
        self.members = {column for _, column in self.top}
        self.total = sum(max(value, 0.0) for value, _ in self.top)
        """Their positive sum (up to rounding)."""

    def add(self, column: int, amount: float) -> None:
        old = float(self.capacity[column])
        self.capacity[column] += amount
        new = float(self.capacity[column])
        if new < old:
            self._pick()
        elif column in self.members:
            del self.top[bisect_left(self.top, (old, column))]
            insort(self.top, (new, column))
            self.total += max(new, 0.0) - max(old, 0.0)
        elif self.count and new > self.top[0][0]:
            value, dropped = self.top.pop(0)
            self.members.discard(dropped)
            insort(self.top, (new, column))
            self.members.add(column)
            self.total += max(new, 0.0) - max(value, 0.0)

    def values(self) -> list[float]:
        """Largest first."""
        return [value for value, _ in reversed(self.top)]


class TopologyIdleGpusFilter:
    """Each sub-group with a required topology level needs its GPUs in one domain of that level: first fit of the
    sub-groups' GPUs, largest first, into the domains with the most idle or releasing GPUs."""

    name = "TopologyAwareIdleGpus"

    def __init__(self, nodes: NodeTable, first: Scenario, required: list[tuple[TopologyConstraint, float]]) -> None:
        self.nodes = nodes
        self.demand: dict[tuple[str, str], list[float]] = {}
        for constraint, amount in required:
            self.demand.setdefault((constraint.topology, constraint.required_level), []).append(amount)
        for amounts in self.demand.values():
            amounts.sort(reverse=True)
        idle = idle_gpus(nodes)
        self.domains: dict[tuple[str, str], dict[str, float]] = {key: {} for key in self.demand}
        self.node_domains: dict[str, list[tuple[tuple[str, str], str]]] = {}
        for info in nodes.infos:
            for key in self.demand:
                value = info.node.labels.get(key[1], "")
                if not value:
                    continue
                domains = self.domains[key]
                domains[value] = domains.get(value, 0.0) + float(idle[info.column])
                self.node_domains.setdefault(info.name, []).append((key, value))
        self.new_victims = _NewVictims()
        self.valid(first)

    def valid(self, scenario: Scenario) -> bool:
        for task in self.new_victims(scenario):
            for key, value in self.node_domains.get(task.node_name, ()):
                self.domains[key][value] += held_gpus(task)
        return all(
            first_fit(gpus, sorted(self.domains[key].values(), reverse=True)) for key, gpus in self.demand.items()
        )


def _required_topology(
    group: SubGroupSet, found: list[tuple[TopologyConstraint, float]]
) -> list[tuple[TopologyConstraint, float]]:
    """Sets of sub-groups (the root included) with a required topology level, with the GPUs of all their pods."""
    if group.topology is not None and group.topology.required_level:
        gpus = sum(task.gpus_quota for pod_set in group.all_pod_sets() for task in pod_set.tasks.values())
        found.append((group.topology, gpus))
    for child in group.children:
        _required_topology(child, found)
    return found


def idle_gpus(nodes: NodeTable) -> Capacities:
    """Per node, the GPUs idle or being released (``NodeTable.idle_or_releasing_gpus`` over all nodes at once)."""
    capacity: Capacities = nodes.idle[GPU_ROW] + nodes.releasing[GPU_ROW]
    for row, portion in nodes.mig_rows:
        capacity += portion * (nodes.idle[row] + nodes.releasing[row])
    for column in nodes.shared_columns:
        capacity[column] = nodes.idle_or_releasing_gpus(nodes.infos[column])[0]
    return capacity


def first_fit(required: list[float], capacities: list[float]) -> bool:
    """Each requirement (largest first) takes room in the first holder (largest first) that still has it; a
    requirement of 0 GPUs and all after it fit anywhere. A requirement equal to the last one starts where that one
    went: every holder before had too little room for it already, so the search is linear, not quadratic."""
    taken = [0.0] * len(capacities)
    start, previous = 0, None
    for amount in required:
        if amount == 0:
            return True
        if amount != previous:
            start, previous = 0, amount
        for index in range(start, len(capacities)):
            capacity = capacities[index]
            if capacity < amount:
                return False
            if capacity - taken[index] >= amount:
                taken[index] += amount
                start = index
                break
        else:
            return False
    return True

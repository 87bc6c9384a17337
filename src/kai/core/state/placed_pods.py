"""The pods placed on a session's nodes, indexed for inter-pod affinity (upstream InterPodAffinity's node infos).

A pod's affinity terms select other pods by label, so the pods a term can select are looked up by one of its label
requirements instead of scanning every pod: each label key a term asks about is indexed once per session, on first
use (one pass over the placed pods), by value, then by namespace and node, so that a term of one label (a
``matchLabels`` of one key, the common case) counts the pods it selects per node without visiting them. The pods that
carry terms of their own are grouped by those terms (pods of one template share them). Counts per node are vectors
over the node table's columns, so a score adds them up per topology domain at once.
Both are kept current from the node table's change journal, re-reading only the nodes a statement changed.
"""

from collections import Counter
from collections.abc import Iterator

import numpy as np

from kai.core.model.pod_affinity import AffinityTerm, PodAffinity
from kai.core.model.selectors import Operator
from kai.core.state.node_table import NodeInfo, NodeTable
from kai.core.state.resource_index import Vector
from kai.core.state.task import TaskInfo

Placed = tuple[TaskInfo, NodeInfo]
_Where = tuple[str, int]
"""A pod's namespace and node column."""
_Groups = dict[_Where, dict[str, TaskInfo]]
"""Placed pods by namespace and node, then by task key."""


class PlacedPods:
    """Placed pods of a node table, found by label; every query first catches up with the table's changes."""

    def __init__(self, nodes: NodeTable) -> None:
        self._nodes = nodes
        self._version = nodes.version
        self._by_label: dict[str, dict[str, _Groups]] = {}
        """Per indexed label key: per value, the placed pods with it."""
        self._sizes: Counter[tuple[str, str | None]] = Counter()
        """How many placed pods each (key, value) pair, and each key (value None), holds."""
        self._counts: dict[tuple[str, str, str], Vector] = {}
        """Per indexed (label key, value, namespace): how many placed pods have it, per node column."""
        self._indexed: dict[int, dict[str, TaskInfo]] = {}
        """Per node column: its pods in some label index (what to drop when the node changes)."""
        self._with_terms: dict[PodAffinity, Vector] | None = None
        """The placed pods with terms of their own: per distinct terms, how many pods per node column."""
        self._terms_on: dict[int, Counter[PodAffinity]] = {}
        """Per node column: the terms counted in ``_with_terms`` for it."""

    def _sync(self) -> None:
        nodes = self._nodes
        if nodes.version == self._version:
            return
        changed = set(nodes.changes_since(self._version))
        self._version = nodes.version
        for column in changed:  # all dropped before any is added: a pod may have moved between them
            for task in self._indexed.pop(column, {}).values():
                self._place(task, column, -1)
            if self._with_terms is not None:
                for terms, count in self._terms_on.pop(column, Counter()).items():
                    self._with_terms[terms][column] -= count
        for column in changed:
            for task in nodes.infos[column].tasks.values():
                self._place(task, column, 1)
                if self._with_terms is not None and task.pod.pod_affinity.has_terms:
                    self._count_terms(task, column)

    def _place(self, task: TaskInfo, column: int, sign: int) -> None:
        """Add a pod to (or, ``sign`` -1, drop it from) the indexed keys."""
        labels, where = task.pod.meta.labels, (task.namespace, column)
        for key, by_value in self._by_label.items():
            value = labels.get(key)
            if value is None:
                continue
            if sign > 0:
                by_value.setdefault(value, {}).setdefault(where, {})[task.key] = task
                self._indexed.setdefault(column, {})[task.key] = task
            else:
                by_value[value][where].pop(task.key, None)
            self._sizes[(key, value)] += sign
            self._sizes[(key, None)] += sign
            counts = self._counts.get((key, value, task.namespace))
            if counts is None:
                counts = self._counts[(key, value, task.namespace)] = np.zeros(len(self._nodes))
            counts[column] += sign

    def _count_terms(self, task: TaskInfo, column: int) -> None:
        assert self._with_terms is not None
        terms = task.pod.pod_affinity
        counts = self._with_terms.get(terms)
        if counts is None:
            counts = self._with_terms[terms] = np.zeros(len(self._nodes))
        counts[column] += 1
        self._terms_on.setdefault(column, Counter())[terms] += 1

    def _index(self, key: str) -> None:
        self._by_label[key] = {}
        only = {key: self._by_label[key]}
        every, self._by_label = self._by_label, only
        for info in self._nodes.infos:
            for task in info.tasks.values():
                self._place(task, info.column, 1)
        self._by_label = every

    def _groups(self, term: AffinityTerm) -> list[_Groups] | None:
        """The index entries holding every pod ``term``'s selector may select (from its narrowest In or Exists
        requirement); None when it has none (then any pod may be selected)."""
        best: tuple[int, list[_Groups]] | None = None
        for requirement in term.selector.requirements:
            if requirement.operator not in (Operator.IN, Operator.EXISTS):
                continue
            key = requirement.key
            if key not in self._by_label:
                self._index(key)
            by_value = self._by_label[key]
            if requirement.operator is Operator.EXISTS:
                found = (self._sizes[(key, None)], list(by_value.values()))
            else:
                values = [value for value in requirement.values if value in by_value]
                found = (sum(self._sizes[(key, value)] for value in values), [by_value[value] for value in values])
            if best is None or found[0] < best[0]:
                best = found
        return None if best is None else best[1]

    def selectable(self, term: AffinityTerm) -> Iterator[Placed]:
        """The placed pods ``term``'s label selector may select: a superset (check ``term.matches``)."""
        self._sync()
        if term.selector.selects_nothing:
            return
        groups = self._groups(term)
        if groups is None:
            for info in self._nodes.infos:
                for task in info.tasks.values():
                    yield task, info
            return
        infos = self._nodes.infos
        for by_where in groups:
            for (_, column), tasks in by_where.items():
                for task in tasks.values():
                    yield task, infos[column]

    def selected_per_node(self, term: AffinityTerm) -> Vector | None:
        """How many placed pods ``term`` selects on each node (per column), counted without visiting them when its
        selector is one In requirement and its namespaces are listed (no namespace selector); else None. Read-only."""
        self._sync()
        selector = term.selector
        if not term.namespace_selector.selects_nothing or len(selector.requirements) != 1:
            return None
        (requirement,) = selector.requirements
        if requirement.operator is not Operator.IN:
            return None
        if requirement.key not in self._by_label:
            self._index(requirement.key)
        total = np.zeros(len(self._nodes))
        for value in requirement.values:
            for namespace in term.namespaces:
                counts = self._counts.get((requirement.key, value, namespace))
                if counts is not None:
                    total += counts
        return total

    def with_terms(self) -> list[tuple[PodAffinity, Vector]]:
        """The placed pods with affinity terms of their own, required or preferred: per distinct terms, how many
        such pods each node holds (per column). Read-only."""
        self._sync()
        if self._with_terms is None:
            self._with_terms = {}
            for column in self._nodes.affinity_columns | set(self._nodes.changes_since(0)):
                for task in self._nodes.infos[column].tasks.values():
                    if task.pod.pod_affinity.has_terms:
                        self._count_terms(task, column)
        return list(self._with_terms.items())

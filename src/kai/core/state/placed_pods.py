"""The pods placed on a session's nodes, indexed for inter-pod affinity (upstream InterPodAffinity's node infos).

A pod's affinity terms select other pods by label, so the pods a term can select are looked up by one of its label
requirements instead of scanning every pod: each label key a term asks about is indexed once per session, on first
use (one pass over the placed pods), and kept current from the node table's change journal, re-reading only the
nodes a statement changed. The pods that carry terms of their own (whose terms score or block the incoming pod) are
read from the nodes the snapshot marked as holding such pods, plus the changed ones.
"""

from collections.abc import Iterable, Iterator

from kai.core.model.pod_affinity import AffinityTerm
from kai.core.model.selectors import Operator
from kai.core.state.node_table import NodeInfo, NodeTable
from kai.core.state.task import TaskInfo

Placed = tuple[TaskInfo, NodeInfo]
_Pods = dict[str, Placed]
"""Placed pods by task key."""


class PlacedPods:
    """Placed pods of a node table, found by label; call ``sync`` (or any query) after the table changed."""

    def __init__(self, nodes: NodeTable) -> None:
        self._nodes = nodes
        self._version = nodes.version
        self._by_label: dict[str, dict[str, _Pods]] = {}
        """Per indexed label key: per value, the placed pods with it."""
        self._by_key: dict[str, _Pods] = {}
        """Per indexed label key: every placed pod with it (for Exists)."""
        self._indexed: dict[int, dict[str, TaskInfo]] = {}
        """Per node column: its pods in some index (what to drop when the node changes)."""
        self._affinity_columns = set(nodes.affinity_columns)

    def sync(self) -> None:
        """Re-index the nodes the table changed since the last call."""
        nodes = self._nodes
        if nodes.version == self._version:
            return
        changed = set(nodes.changes_since(self._version))
        self._version = nodes.version
        for column in changed:  # all dropped before any is added: a pod may have moved between them
            for task in self._indexed.pop(column, {}).values():
                self._drop(task)
        for column in changed:
            info = nodes.infos[column]
            for task in info.tasks.values():
                self._add(task, info)
                if task.pod.pod_affinity.has_terms:
                    self._affinity_columns.add(column)

    def _add(self, task: TaskInfo, info: NodeInfo) -> None:
        labels = task.pod.meta.labels
        for key, by_value in self._by_label.items():
            value = labels.get(key)
            if value is not None:
                by_value.setdefault(value, {})[task.key] = (task, info)
                self._by_key[key][task.key] = (task, info)
                self._indexed.setdefault(info.column, {})[task.key] = task

    def _drop(self, task: TaskInfo) -> None:
        labels = task.pod.meta.labels
        for key, by_value in self._by_label.items():
            value = labels.get(key)
            if value is not None:
                by_value.get(value, {}).pop(task.key, None)
                self._by_key[key].pop(task.key, None)

    def _index(self, key: str) -> None:
        by_value: dict[str, _Pods] = {}
        every: _Pods = {}
        for info in self._nodes.infos:
            for task in info.tasks.values():
                value = task.pod.meta.labels.get(key)
                if value is not None:
                    by_value.setdefault(value, {})[task.key] = (task, info)
                    every[task.key] = (task, info)
                    self._indexed.setdefault(info.column, {})[task.key] = task
        self._by_label[key] = by_value
        self._by_key[key] = every

    def all(self) -> Iterator[Placed]:
        """Every placed pod."""
        self.sync()
        for info in self._nodes.infos:
            for task in info.tasks.values():
                yield task, info

    def selectable(self, term: AffinityTerm) -> Iterable[Placed]:
        """The placed pods ``term``'s label selector may select: a superset (check ``term.matches``), found through
        its narrowest In / Exists requirement (matchLabels are In requirements), else every placed pod."""
        self.sync()
        selector = term.selector
        if selector.selects_nothing:
            return ()
        best: list[_Pods] | None = None
        for requirement in selector.requirements:
            if requirement.operator not in (Operator.IN, Operator.EXISTS):
                continue
            if requirement.key not in self._by_label:
                self._index(requirement.key)
            if requirement.operator is Operator.EXISTS:
                found = [self._by_key[requirement.key]]
            else:
                by_value = self._by_label[requirement.key]
                found = [by_value[value] for value in requirement.values if value in by_value]
            if best is None or sum(map(len, found)) < sum(map(len, best)):
                best = found
        if best is None:
            return self.all()
        return (placed for pods in best for placed in pods.values())

    def with_terms(self) -> Iterator[Placed]:
        """The placed pods with affinity terms of their own, required or preferred."""
        self.sync()
        for column in sorted(self._affinity_columns):
            info = self._nodes.infos[column]
            for task in info.tasks.values():
                if task.pod.pod_affinity.has_terms:
                    yield task, info

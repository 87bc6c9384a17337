"""Queue ``status`` (KAI's queue-controller, docs/kai-reference.md §1.6) and the queue metrics, kept from changes.

Each queue's status sums the totals of the PodGroups in it and in its descendants, and lists its child queues. The
controller keeps, per queue, the sums of its own PodGroups' totals, by difference and exactly (``totals``), from the
PodGroup totals that changed (``TotalsSource``: the PodGroup status controller's in ``kai controllers`` and
``kai all``, what the PodGroups' statuses say in a separate ``kai queue-controller``). A pass re-sums and compares
only the queues whose own sums changed and their ancestors (every queue after the tree itself changed), writes the
statuses that differ (a failed write is tried again the next pass) and exports their metrics.
"""

from collections.abc import Mapping
from contextlib import suppress
from typing import Any, Protocol

from prometheus_client import CollectorRegistry, Gauge

from kai.cluster.port import ClusterClient, Raw, merge_patch
from kai.components.controllers.changes import Changes
from kai.components.controllers.podgroup_status import PodGroupTotals
from kai.components.controllers.problems import ProblemLog
from kai.components.controllers.status_writes import patch_statuses
from kai.components.controllers.totals import Amount, add, freeze, resource_list
from kai.components.shared.parallel import Writes
from kai.core.model import names
from kai.core.model.errors import InvalidObject
from kai.core.model.objects import parse_queue

FIELDS = ("requested", "allocated", "allocatedNonPreemptible")
Sums = dict[str, dict[str, Amount]]
"""Per status field, the exact totals."""


class TotalsSource(Protocol):
    def take_totals(self) -> Mapping[str, PodGroupTotals | None]:
        """Per PodGroup key whose totals may have changed since the last call (every one, the first time): its
        totals now, or None when it counts towards no queue."""
        ...


class QueueStatusController:
    def __init__(
        self,
        cluster: ClusterClient,
        podgroups: TotalsSource,
        registry: CollectorRegistry | None = None,
        namespace: str = "kai",
        writes: Writes | None = None,
    ) -> None:
        """Subscribes to ``cluster``'s Queue changes; the first pass takes in every queue there."""
        self.cluster = cluster
        self.podgroups = podgroups
        self.writes = writes or Writes()
        self.problems = ProblemLog()
        self.gauges: dict[str, Gauge] = {}
        if registry is not None:
            for name, doc in (
                ("queue_info", "Queue exists"),
                ("queue_deserved_gpus", "GPU quota"),
                ("queue_quota_cpu_cores", "CPU quota in cores"),
                ("queue_quota_memory_bytes", "Memory quota in bytes"),
                ("queue_allocated_gpus", "Allocated GPUs"),
                ("queue_allocated_cpu_cores", "Allocated CPU cores"),
                ("queue_allocated_memory_bytes", "Allocated memory in bytes"),
            ):
                self.gauges[name] = Gauge(name, doc, ("queue_name",), namespace=namespace, registry=registry)
        self._queues: dict[str, Mapping[str, Any]] = {}
        """The queues that can be read (the others get no status), as last seen."""
        self._parents: dict[str, str] = {}
        self._children: dict[str, list[str]] = {}
        self._totals: dict[str, PodGroupTotals] = {}
        """Per PodGroup: the totals summed into its queue."""
        self._own: dict[str, Sums] = {}
        """Per queue name: the sums of its own PodGroups' totals."""
        self._dirty: set[str] = set()
        """Queues whose status and metrics may be out of date."""
        self._changes = Changes(cluster, ("Queue",))

    def reconcile(self) -> None:
        """Take in the changes, then write the statuses that differ and export the changed queues' metrics."""
        if self._take_queues():
            self._children = {}
            for name, parent in self._parents.items():
                if parent:
                    self._children.setdefault(parent, []).append(name)
            self._dirty.update(self._queues)
        for queue in self._take_totals():
            self._dirty_up(queue)
        dirty, self._dirty = self._dirty, set()
        changed: list[tuple[str, Raw]] = []
        for name in sorted(dirty):
            raw = self._queues.get(name)
            if raw is None:  # deleted, or unreadable: its metrics go (a scrape shows only queues that exist)
                self._unexport(name)
                continue
            sums = self._subtree(name)
            wanted: dict[str, Any] = {field: resource_list(freeze(sums[field])) for field in FIELDS}
            wanted["childQueues"] = sorted(self._children.get(name, []))
            status = raw.get("status")
            status = status if isinstance(status, Mapping) else {}
            owned = {field: status[field] for field in wanted if field in status}
            if owned != wanted:
                changed.append((name, merge_patch(owned, wanted)))
            self._export(name, raw, sums["allocated"])
        self._dirty |= patch_statuses(self.cluster, self.writes, "Queue", changed)

    def _take_queues(self) -> bool:
        """Take in the changed queues; whether the queue tree changed."""
        tree_changed = False
        for name, raw in self._changes.take()["Queue"].items():
            parent = None
            if raw is None:
                self.problems.clear(f"Queue {name}")
            else:
                try:
                    parent = parse_queue(raw).parent
                except InvalidObject as error:
                    self.problems.report(f"Queue {name}", error)
                else:
                    self.problems.clear(f"Queue {name}")
                    self._queues[name] = raw
            if parent is None:
                self._queues.pop(name, None)
            if self._parents.get(name) != parent:
                tree_changed = True
                if parent is None:
                    del self._parents[name]
                else:
                    self._parents[name] = parent
            self._dirty.add(name)
        return tree_changed

    def _take_totals(self) -> set[str]:
        """Take in the changed PodGroup totals; the queues whose own sums changed."""
        touched: set[str] = set()
        for key, totals in self.podgroups.take_totals().items():
            old = self._totals.get(key)
            if old == totals:
                continue
            if old is not None:
                self._sum(old, -1)
                touched.add(old.queue)
                del self._totals[key]
            if totals is not None:
                self._sum(totals, 1)
                touched.add(totals.queue)
                self._totals[key] = totals
        return touched

    def _sum(self, totals: PodGroupTotals, sign: int) -> None:
        own = self._own.setdefault(totals.queue, {field: {} for field in FIELDS})
        add(own["requested"], totals.requested, sign)
        add(own["allocated"], totals.allocated, sign)
        add(own["allocatedNonPreemptible"], totals.allocated_non_preemptible, sign)
        if not any(own.values()):
            del self._own[totals.queue]

    def _dirty_up(self, queue: str) -> None:
        """A queue whose own sums changed: its status and its ancestors' may be out of date."""
        seen: set[str] = set()
        while queue in self._queues and queue not in seen:
            seen.add(queue)
            self._dirty.add(queue)
            queue = self._parents[queue]

    def _subtree(self, name: str) -> Sums:
        """The sums of a queue and its descendants (each once, though a parent loop lead back to it)."""
        sums: Sums = {field: {} for field in FIELDS}
        seen, stack = {name}, [name]
        while stack:
            queue = stack.pop()
            for field, totals in self._own.get(queue, {}).items():
                add(sums[field], totals.items())
            for child in self._children.get(queue, ()):
                if child not in seen:
                    seen.add(child)
                    stack.append(child)
        return sums

    def _unexport(self, name: str) -> None:
        for gauge in self.gauges.values():
            with suppress(KeyError):
                gauge.remove(name)

    def _export(self, name: str, raw: Mapping[str, Any], allocated: Mapping[str, Amount]) -> None:
        if not self.gauges:
            return
        resources = (raw.get("spec") or {}).get("resources") or {}
        quota = {key: float((resources.get(key) or {}).get("quota", 0)) for key in ("gpu", "cpu", "memory")}
        self.gauges["queue_info"].labels(name).set(1)
        self.gauges["queue_deserved_gpus"].labels(name).set(quota["gpu"])
        self.gauges["queue_quota_cpu_cores"].labels(name).set(
            quota["cpu"] if quota["cpu"] == -1 else quota["cpu"] / 1000
        )
        memory = quota["memory"] if quota["memory"] == -1 else quota["memory"] * names.MEGABYTE
        self.gauges["queue_quota_memory_bytes"].labels(name).set(memory)
        self.gauges["queue_allocated_gpus"].labels(name).set(round(float(allocated.get(names.GPU, 0)), 4))
        self.gauges["queue_allocated_cpu_cores"].labels(name).set(round(float(allocated.get(names.CPU, 0)) / 1000, 4))
        self.gauges["queue_allocated_memory_bytes"].labels(name).set(round(float(allocated.get(names.MEMORY, 0)), 4))

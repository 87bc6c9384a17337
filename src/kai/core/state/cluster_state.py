"""Cluster state kept up to date from object events: each object is parsed once, when it changes.

A malformed object is kept out of the state and recorded in ``invalid`` with its error, so one bad object never
stops the scheduler and is reported by name (docs/architecture.md §8). A parsed object whose reference cannot be
resolved is kept in its store but also recorded in ``invalid``, and is not scheduled: a queue whose ancestors are
missing or form a cycle (with its subtree), a pod naming a PodGroup that does not exist (it still occupies its node). An
object another scheduler has (another node pool's, or a PodGroup whose backoff is used up in its pool:
``apply(..., elsewhere=True)``) is kept out like a deleted one, but its pods are not this scheduler's to judge.
Problems kai works around are in ``warnings``: the object is used and the warning reported. Both are kept up to date on
every change, never recomputed per cycle.
"""

import sys
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from collections.abc import Set as AbstractSet
from typing import Any

from kai.core.model import names
from kai.core.model.config_maps import parse_config_map
from kai.core.model.disruption_budget import DisruptionBudget, parse_disruption_budget
from kai.core.model.dra import ResourceClaim, ResourceSlice, parse_resource_claim, parse_resource_slice
from kai.core.model.errors import InvalidObject
from kai.core.model.meta import Metadata, Raw, object_ref
from kai.core.model.numa import NodeTopology, parse_node_topology
from kai.core.model.objects import (
    BindRequest,
    Node,
    Pod,
    PodGroup,
    PriorityClass,
    Queue,
    Topology,
    parse_bind_request,
    parse_node,
    parse_pod,
    parse_podgroup,
    parse_priority_class,
    parse_queue,
    parse_topology,
)
from kai.core.model.resources import ResourceRequest
from kai.core.model.shared import SharedValues
from kai.core.model.suspension import is_stand_in, stand_ins
from kai.core.state.queue_tree import queue_tree_problems
from kai.core.state.resource_index import Vector

KINDS: dict[str, Callable[[Raw], Any]] = {
    "ConfigMap": parse_config_map,
    "ResourceSlice": parse_resource_slice,
    "ResourceClaim": parse_resource_claim,
    "Pod": parse_pod,
    "Node": parse_node,
    "Queue": parse_queue,
    "PodGroup": parse_podgroup,
    "PriorityClass": parse_priority_class,
    "BindRequest": parse_bind_request,
    "Topology": parse_topology,
    "NodeResourceTopology": parse_node_topology,
    "PodDisruptionBudget": parse_disruption_budget,
}


class Changes:
    """What changed in a ``ClusterState`` since its consumer last took the changes: per kind, the key of every object
    added, changed or deleted, and whether it was (re)inserted — which puts it last in its store's order. Inserted
    keys are kept in the order of their last insertion, so a consumer that appends them in turn keeps the store's
    order (what a snapshot's iteration order is)."""

    __slots__ = ("kinds",)

    def __init__(self) -> None:
        self.kinds: dict[str, dict[str, bool]] = {}

    def record(self, kind: str, key: str, inserted: bool) -> None:
        keys = self.kinds.setdefault(kind, {})
        if inserted:
            keys.pop(key, None)
            keys[key] = True
        else:
            keys.setdefault(key, False)

    def take(self) -> dict[str, dict[str, bool]]:
        taken, self.kinds = self.kinds, {}
        return taken


def object_key(raw: Mapping[str, Any]) -> str:
    """An object's key: ``namespace/name``, or ``name`` for a cluster-scoped one (how the state files objects).
    Interned: the state's indexes and an informer's store hold one string per object, not one each."""
    meta = raw.get("metadata") or {}
    name = str(meta.get("name", ""))
    namespace = meta.get("namespace")
    return sys.intern(f"{namespace}/{name}") if namespace else name


class ClusterState:
    def __init__(self) -> None:
        self.pods: dict[str, Pod] = {}
        self.nodes: dict[str, Node] = {}
        self.queues: dict[str, Queue] = {}
        self.podgroups: dict[str, PodGroup] = {}
        self.priority_classes: dict[str, PriorityClass] = {}
        self.bind_requests: dict[str, BindRequest] = {}
        self.topologies: dict[str, Topology] = {}
        self.resource_slices: dict[str, ResourceSlice] = {}
        self.resource_claims: dict[str, ResourceClaim] = {}
        self.node_topologies: dict[str, NodeTopology] = {}
        """NUMA zones per node name, from NodeResourceTopology objects (the ``numa`` plugin reads them)."""
        self.disruption_budgets: dict[str, DisruptionBudget] = {}
        self.config_maps: dict[str, Metadata] = {}
        """ConfigMaps by ``namespace/name`` (the ConfigMap pre-predicate asks whether a pod's exist)."""
        self.invalid: dict[tuple[str, str], InvalidObject] = {}
        self.warnings: dict[tuple[str, str], list[InvalidObject]] = {}
        """Problems that do not stop an object (it is still scheduled), per (kind, key)."""
        self.elsewhere: set[str] = set()
        """PodGroups that exist but are not this scheduler's (``apply``'s ``elsewhere``)."""
        self.unusable_queues: dict[str, InvalidObject] = {}
        """Parsed queues the hierarchy cannot use (also in ``invalid``), with the reason."""
        self.resource_names: Counter[str] = Counter()
        """How many parsed pods request, and nodes offer, each resource name: the snapshot's resource rows."""
        self.pod_vectors: dict[str, Vector] = {}
        """Each pod's request as a row vector of ``vector_names`` (read-only, shared by every snapshot until the pod
        changes): the snapshot's per-pod arithmetic, done once per pod version rather than every cycle."""
        self.vector_names: list[str] = []
        self.request_vectors: SharedValues[int, tuple[ResourceRequest, Vector]] = SharedValues(10_000)
        """The vector of each request object, by its id (kept with it, so the id stays its own while the entry
        lives): pods that ask alike hold one request (``parse_pod``), and so one vector. Emptied with
        ``pod_vectors``."""
        self._pods_by_podgroup: dict[str, set[str]] = {}
        self._stand_ins: dict[str, list[Raw]] = {}
        """The stand-in pods of each PodGroup whose workload the scheduler suspended (``suspension``)."""
        self._suspended: dict[str, list[Raw]] = {}
        """PodGroups with a suspended-pods record: the stand-ins it makes."""
        self._trackers: list[Changes] = []
        self._podgroup_of_pod: dict[str, str] = {}
        self._stores: Mapping[str, dict[str, Any]] = {
            "Pod": self.pods,
            "Node": self.nodes,
            "Queue": self.queues,
            "PodGroup": self.podgroups,
            "PriorityClass": self.priority_classes,
            "BindRequest": self.bind_requests,
            "Topology": self.topologies,
            "ResourceSlice": self.resource_slices,
            "ResourceClaim": self.resource_claims,
            "NodeResourceTopology": self.node_topologies,
            "PodDisruptionBudget": self.disruption_budgets,
            "ConfigMap": self.config_maps,
        }

    def apply(self, kind: str, raw: Raw, deleted: bool = False, elsewhere: bool = False) -> InvalidObject | None:
        """Take one added/modified/deleted object; returns the error when the object cannot be used. ``elsewhere``:
        the object exists but is another scheduler's, so it is kept out as if deleted."""
        store = self._stores.get(kind)
        if store is None:
            return None
        key = object_key(raw)
        error: InvalidObject | None = None
        parent_before = self._parent_of(kind, key)
        before = store.get(key)
        self.warnings.pop((kind, key), None)
        if kind == "PodGroup":
            if elsewhere and not deleted:
                self.elsewhere.add(key)
            else:
                self.elsewhere.discard(key)
        if deleted or elsewhere:
            store.pop(key, None)
            self.invalid.pop((kind, key), None)
        else:
            try:
                parsed = KINDS[kind](raw)
            except InvalidObject as invalid:
                error = invalid
            except (TypeError, AttributeError, ValueError) as unreadable:
                error = InvalidObject(object_ref(kind, raw), "<object>", f"cannot be read: {unreadable}")
            if error is None:
                store[key] = parsed
                self.invalid.pop((kind, key), None)
                if getattr(parsed, "warnings", ()):
                    self.warnings[(kind, key)] = list(parsed.warnings)
            else:
                store.pop(key, None)
                self.invalid[(kind, key)] = error
        for tracker in self._trackers:
            tracker.record(kind, key, before is None and key in store)
        if kind in ("Pod", "Node"):
            self._count_resources(before, store.get(key))
        if kind == "Pod":
            self.pod_vectors.pop(key, None)
            podgroup_before = self._podgroup_of_pod.get(key)
            self._index_pod(key)
            if not is_stand_in(key):
                for podgroup_key in {podgroup_before, self._podgroup_of_pod.get(key)} - {None}:
                    self._sync_stand_ins(str(podgroup_key))
        elif kind == "PodGroup":
            for pod_key in self._pods_by_podgroup.get(key, ()):
                self._check_podgroup_of(pod_key)
            parsed_group = store.get(key)
            if parsed_group is not None and parsed_group.suspended_pods:
                self._suspended[key] = stand_ins(raw, parsed_group.suspended_pods)
            else:
                self._suspended.pop(key, None)
            self._sync_stand_ins(key)
        elif kind == "Queue":
            if self._parent_of(kind, key) != parent_before:  # a status update leaves the tree as it is
                self._check_queue_tree()
            elif key in self.unusable_queues:
                self.invalid[(kind, key)] = self.unusable_queues[key]
        return error

    def track(self) -> Changes:
        """Changes from now on, for a consumer that keeps structures derived from this state (``Snapshots``)."""
        tracker = Changes()
        self._trackers.append(tracker)
        return tracker

    def pods_of(self, podgroup_key: str) -> AbstractSet[str]:
        """Keys of the parsed pods naming the podgroup."""
        return self._pods_by_podgroup.get(podgroup_key, _NO_PODS)

    def _count_resources(self, before: Pod | Node | None, after: Pod | Node | None) -> None:
        if before is after:
            return
        if before is not None:
            self.resource_names.subtract(_resource_names(before))
            self.resource_names += Counter()  # drops names no object has any more
        if after is not None:
            self.resource_names.update(_resource_names(after))

    def _parent_of(self, kind: str, key: str) -> str | None:
        """A usable queue's parent ("" at the top), None when there is no parsed queue: what the tree depends on."""
        queue = self.queues.get(key) if kind == "Queue" else None
        return None if queue is None else queue.parent

    def _index_pod(self, key: str) -> None:
        """Keep the pods-by-podgroup index and the pod's reference check up to date."""
        previous = self._podgroup_of_pod.pop(key, None)
        if previous is not None:
            pods = self._pods_by_podgroup[previous]
            pods.discard(key)
            if not pods:
                del self._pods_by_podgroup[previous]
        pod = self.pods.get(key)
        if pod is not None and pod.podgroup_name:
            podgroup_key = _podgroup_key(pod)
            self._podgroup_of_pod[key] = podgroup_key
            self._pods_by_podgroup.setdefault(podgroup_key, set()).add(key)
            self._check_podgroup_of(key)

    def _sync_stand_ins(self, podgroup_key: str) -> None:
        """A suspended workload's stand-in pods exist while its PodGroup has the record and none of its own pods is
        alive; its real pods, once back, replace them."""
        if podgroup_key not in self._suspended and podgroup_key not in self._stand_ins:
            return  # nearly every podgroup: nothing to look at
        wanted = self._suspended.get(podgroup_key, [])
        real_alive = any(
            not is_stand_in(pod_key) and pod.phase not in ("Succeeded", "Failed")
            for pod_key in self._pods_by_podgroup.get(podgroup_key, ())
            if (pod := self.pods.get(pod_key)) is not None
        )
        if real_alive:
            wanted = []
        have = self._stand_ins.get(podgroup_key, [])
        if wanted == have:
            return
        for stand_in in have:
            self.apply("Pod", stand_in, deleted=True)
        for stand_in in wanted:
            self.apply("Pod", stand_in)
        if wanted:
            self._stand_ins[podgroup_key] = wanted
        else:
            self._stand_ins.pop(podgroup_key, None)

    def mark_elsewhere(self, podgroup_key: str) -> None:
        """A PodGroup known to be another scheduler's that the state is given no object of (a shard's snapshot lists
        every pod but only its own pool's PodGroups): its pods only occupy their nodes, as with ``elsewhere``."""
        self.elsewhere.add(podgroup_key)
        for pod_key in self._pods_by_podgroup.get(podgroup_key, ()):
            self._check_podgroup_of(pod_key)

    def _check_podgroup_of(self, pod_key: str) -> None:
        pod = self.pods.get(pod_key)
        if pod is None:
            return
        podgroup_key = _podgroup_key(pod)
        if podgroup_key in self.podgroups or podgroup_key in self.elsewhere or pod.phase in ("Succeeded", "Failed"):
            self.invalid.pop(("Pod", pod_key), None)
            return
        state = "is invalid (see its own error)" if ("PodGroup", podgroup_key) in self.invalid else "does not exist"
        self._set_invalid(
            ("Pod", pod_key),
            InvalidObject(
                f"Pod {pod_key}",
                f"metadata.annotations.{names.POD_GROUP_ANNOTATION}",
                f"PodGroup '{pod.podgroup_name}' {state} in namespace {pod.meta.namespace}; the pod is not scheduled "
                "until it does",
            ),
        )

    def _check_queue_tree(self) -> None:
        before = self.unusable_queues
        for name, problem in before.items():
            if self.invalid.get(("Queue", name)) is problem:  # not a parse error recorded since
                del self.invalid[("Queue", name)]
        unparsed = {key for kind, key in self.invalid if kind == "Queue"}
        self.unusable_queues = {
            name: kept if (kept := before.get(name)) is not None and str(kept) == str(problem) else problem
            for name, problem in queue_tree_problems(self.queues, unparsed).items()
        }  # unchanged problems keep their instance: reporters compare instances
        for name, problem in self.unusable_queues.items():
            self.invalid[("Queue", name)] = problem

    def _set_invalid(self, key: tuple[str, str], problem: InvalidObject) -> None:
        """Record a problem, keeping the recorded instance when nothing changed."""
        kept = self.invalid.get(key)
        if kept is None or str(kept) != str(problem):
            self.invalid[key] = problem


_NO_PODS: frozenset[str] = frozenset()


def _resource_names(obj: Pod | Node) -> Iterable[str]:
    return obj.request.amounts if isinstance(obj, Pod) else obj.allocatable


def _podgroup_key(pod: Pod) -> str:
    return sys.intern(f"{pod.meta.namespace}/{pod.podgroup_name}")  # one string for the podgroup's pods

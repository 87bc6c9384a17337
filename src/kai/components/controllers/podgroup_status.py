"""PodGroup ``status.resourcesStatus`` (KAI's podgroup-controller, docs/kai-reference.md §1.5), kept from change events.

The controller keeps each counted pod's usage (``pod_usage``, read once per version of the pod) and, per PodGroup
key, the sums of its pods' usage, kept by difference and exactly (``totals``): a pod's old usage is taken away and
its new one added. Sums are kept for PodGroups that do not exist (yet) too, so that one that appears later has its
totals at once. Beside them it keeps what the statuses depend on, with an index from each to what it affects: the
PodGroups (queue, priority class, preemptibility, status as last seen), the priority classes (a change re-decides
``allocatedNonPreemptible`` of their PodGroups) and the nodes' GPU memory (a change of the label re-counts the
``gpu-memory`` pods on the node).

A pass takes in the changes since the last one (``changes``), then compares the wanted status of the PodGroups
they touched (and of those whose write it deferred) with their status, and writes those that differ; a failed write
is tried again the next pass. What did not change costs nothing. There is no periodic full pass: the statuses are a
function of the objects alone (no clock), and the stream of changes is complete (the informer turns a re-list into
the changes it missed, ``kai.cluster.kube.informer``).

``settle``: a changed status is written once it has held for a pass, or after ``MAX_DEFERRED_PASSES`` passes if it
keeps changing, so a pod placed within a pass of being grouped costs its PodGroup one status write (its pods
allocated), not two (requested, then allocated); docs/deviations.md has it.
"""

from collections.abc import Mapping
from contextlib import suppress
from dataclasses import dataclass, field, replace
from typing import Any, NamedTuple

from kai.cluster.port import ClusterClient, Raw, merge_patch
from kai.components.controllers.changes import Changes
from kai.components.controllers.pod_usage import (
    PodUsage,
    counted_podgroup,
    node_gpu_memory,
    pod_usage,
    shared_gpus,
)
from kai.components.controllers.problems import ProblemLog
from kai.components.controllers.status_writes import patch_statuses
from kai.components.controllers.totals import NONE, Frozen, added, resource_list
from kai.components.shared.parallel import Writes
from kai.core.model import names
from kai.core.model.errors import InvalidObject
from kai.core.model.objects import parse_podgroup, parse_priority_class

MAX_DEFERRED_PASSES = 3
"""A PodGroup status that changes every pass is written at least every this many passes."""
KINDS = ("PriorityClass", "Node", "PodGroup", "Pod")
"""What the statuses depend on, in the order a pass takes in their changes (a pod's after its node's)."""


class PodGroupTotals(NamedTuple):
    """A PodGroup's status totals, and the queue they count towards."""

    queue: str
    requested: Frozen
    allocated: Frozen
    allocated_non_preemptible: Frozen

    def status(self) -> dict[str, dict[str, str]]:
        """As ``status.resourcesStatus`` holds them."""
        return {
            "requested": resource_list(self.requested),
            "allocated": resource_list(self.allocated),
            "allocatedNonPreemptible": resource_list(self.allocated_non_preemptible),
        }


@dataclass(frozen=True, slots=True)
class _PodGroup:
    queue: str
    priority_class: str
    preemptibility: str
    resources_status: Any
    """Its ``status.resourcesStatus`` as last seen."""
    raw: Mapping[str, Any] = field(compare=False)
    """The PodGroup as last seen (the cluster's cache holds it anyway)."""


class _Sums(NamedTuple):
    requested: Frozen
    allocated: Frozen
    pods: int


_NO_SUMS = _Sums(NONE, NONE, 0)
_VOLATILE_METADATA = frozenset({"resourceVersion", "managedFields"})


def _same_but_status(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    """Whether two versions of an object differ in their status (or resourceVersion) only."""
    return old.get("spec") == new.get("spec") and _lasting(old.get("metadata")) == _lasting(new.get("metadata"))


def _lasting(meta: Any) -> Any:
    if not isinstance(meta, Mapping):
        return meta
    return {key: value for key, value in meta.items() if key not in _VOLATILE_METADATA}


class PodGroupStatusController:
    def __init__(self, cluster: ClusterClient, writes: Writes | None = None, *, settle: bool = False) -> None:
        """Subscribes to ``cluster``'s changes; the first pass takes in every object there."""
        self.cluster = cluster
        self.writes = writes or Writes()
        self.settle = settle
        self.problems = ProblemLog()
        self._pods: dict[str, PodUsage] = {}
        self._broken: dict[str, str] = {}
        """Counted pods that cannot be read: the PodGroup key each names."""
        self._broken_in: dict[str, dict[str, InvalidObject]] = {}
        self._sums: dict[str, _Sums] = {}
        self._node_memory: dict[str, int] = {}
        self._on_node: dict[str, set[str]] = {}
        """Per node: the pods whose GPUs depend on its GPU memory (``PodUsage.shared_mib``)."""
        self._classes: dict[str, int] = {}
        self._podgroups: dict[str, _PodGroup] = {}
        """The PodGroups that can be read (the others get no status and count towards no queue)."""
        self._of_class: dict[str, set[str]] = {}
        self._dirty: set[str] = set()
        """PodGroups whose status may be out of date."""
        self._totals_dirty: set[str] | None = None
        """PodGroups whose totals may have changed since ``take_totals`` (None until it is first called: a
        PodGroup status controller running alone keeps no such set)."""
        self._deferred: dict[str, tuple[Raw, int]] = {}
        """Per PodGroup: the status wanted by the last pass and not written, and how many passes it waited."""
        self._changes = Changes(cluster, KINDS)

    def reconcile(self) -> None:
        """Take in the changes, then write the statuses that differ from what the PodGroups' pods make."""
        self._take_changes()
        dirty, self._dirty = self._dirty, set()
        deferred, self._deferred = self._deferred, {}
        changed: list[tuple[str, Raw]] = []
        for key in dirty | deferred.keys():
            totals = self._totals(key)
            if totals is None:
                continue
            wanted = totals.status()
            current = self._podgroups[key].resources_status
            if current == wanted:
                continue
            last, waited = deferred.get(key, (None, 0))
            if self.settle and last != wanted and waited < MAX_DEFERRED_PASSES:
                self._deferred[key] = (wanted, waited + 1)
                continue
            before = current if isinstance(current, Mapping) else {}
            changed.append((key, {"resourcesStatus": merge_patch(before, wanted)}))
        changed.sort(key=lambda item: item[0])
        self._dirty |= patch_statuses(self.cluster, self.writes, "PodGroup", changed)

    def take_totals(self) -> dict[str, PodGroupTotals | None]:
        """Per PodGroup whose totals may have changed since the last call (every one, the first time): its totals
        now, or None when there is no such PodGroup that can be read. What the queue controller sums."""
        self._take_changes()
        keys = self._podgroups.keys() if self._totals_dirty is None else self._totals_dirty
        self._totals_dirty = set()
        return {key: self._totals(key) for key in keys}

    # ------------------------------------------------------------------------------------------- taking in changes

    def _take_changes(self) -> None:
        latest = self._changes.take()
        for name, raw in latest["PriorityClass"].items():
            self._priority_class(name, raw)
        for name, raw in latest["Node"].items():
            self._node(name, raw)
        for key, raw in latest["PodGroup"].items():
            self._podgroup(key, raw)
        for key, raw in latest["Pod"].items():
            self._pod(key, raw)

    def _priority_class(self, name: str, raw: Mapping[str, Any] | None) -> None:
        value = None
        if raw is not None:
            with suppress(InvalidObject):  # the scheduler reports it; here it is as if it did not exist
                value = parse_priority_class(raw).value
        if self._classes.get(name) == value:
            return
        if value is None:
            del self._classes[name]
        else:
            self._classes[name] = value
        for key in self._of_class.get(name, ()):
            self._touch(key)

    def _node(self, name: str, raw: Mapping[str, Any] | None) -> None:
        memory = node_gpu_memory(raw)
        if memory == self._node_memory.get(name, 0):
            return
        usages = [self._pods[key] for key in self._on_node.get(name, ())]
        for usage in usages:
            self._count(usage, -1)
        if memory:
            self._node_memory[name] = memory
        else:
            del self._node_memory[name]
        for usage in usages:
            self._count(usage, 1)

    def _podgroup(self, key: str, raw: Mapping[str, Any] | None) -> None:
        old = self._podgroups.get(key)
        new = self._read_podgroup(key, raw, old)
        if new is None:
            self._podgroups.pop(key, None)
        else:
            self._podgroups[key] = new
        if new == old:  # e.g. the scheduler's conditions
            return
        if old is not None:
            members = self._of_class[old.priority_class]
            members.discard(key)
            if not members:
                del self._of_class[old.priority_class]
        if new is not None:
            self._of_class.setdefault(new.priority_class, set()).add(key)
        if (old is None) != (new is None):
            for pod, problem in self._broken_in.get(key, {}).items():
                self._tell(pod, key, problem)
        self._touch(key)

    def _read_podgroup(self, key: str, raw: Mapping[str, Any] | None, old: _PodGroup | None) -> _PodGroup | None:
        """What the statuses need of a PodGroup (None when it is gone or cannot be read). ``parse_podgroup`` reads
        metadata and spec, so a PodGroup is read again only when more than its status changed (most changes are
        status writes: this controller's, the scheduler's)."""
        if raw is None:
            self.problems.clear(f"PodGroup {key}")
            return None
        status = raw.get("status")
        resources_status = status.get("resourcesStatus") if isinstance(status, Mapping) else None
        if old is not None and _same_but_status(old.raw, raw):
            return replace(old, resources_status=resources_status, raw=raw)
        try:
            parsed = parse_podgroup(raw)
        except InvalidObject as error:
            self.problems.report(f"PodGroup {key}", error)
            return None
        self.problems.clear(f"PodGroup {key}")
        return _PodGroup(parsed.queue, parsed.priority_class_name, parsed.preemptibility, resources_status, raw)

    def _pod(self, key: str, raw: Mapping[str, Any] | None) -> None:
        podgroup = counted_podgroup(raw) if raw is not None else ""
        usage: PodUsage | None = None
        problem: InvalidObject | None = None
        if podgroup:
            try:
                usage = pod_usage(raw or {}, podgroup)
            except InvalidObject as error:
                problem = error
        old = self._pods.get(key)
        if usage != old:
            if old is not None:
                del self._pods[key]
                self._count(old, -1)
                if old.node:
                    self._on_node[old.node].discard(key)
                    if not self._on_node[old.node]:
                        del self._on_node[old.node]
            if usage is not None:
                self._pods[key] = usage
                self._count(usage, 1)
                if usage.node:
                    self._on_node.setdefault(usage.node, set()).add(key)
        self._set_broken(key, podgroup, problem)

    def _set_broken(self, key: str, podgroup: str, problem: InvalidObject | None) -> None:
        was = self._broken.pop(key, None)
        if was is not None:
            broken = self._broken_in[was]
            del broken[key]
            if not broken:
                del self._broken_in[was]
        if problem is None:
            self.problems.clear(f"Pod {key}")
            return
        self._broken[key] = podgroup
        self._broken_in.setdefault(podgroup, {})[key] = problem
        self._tell(key, podgroup, problem)

    def _tell(self, pod: str, podgroup: str, problem: InvalidObject) -> None:
        """A pod that cannot be read is skipped (and logged) while its PodGroup exists; without one, it would not
        count anyway."""
        if podgroup in self._podgroups:
            self.problems.report(f"Pod {pod}", problem)
        else:
            self.problems.clear(f"Pod {pod}")

    # ------------------------------------------------------------------------------------------- the sums

    def _count(self, usage: PodUsage, sign: int) -> None:
        """Add a pod's usage to its PodGroup's sums (``sign`` 1) or take it away (-1)."""
        key = usage.podgroup
        sums = self._sums.get(key, _NO_SUMS)
        allocated = sums.allocated
        if usage.allocated is not None:
            held = usage.allocated + shared_gpus(usage.shared_mib, self._node_memory.get(usage.node, 0))
            allocated = added(allocated, held, sign)
        pods = sums.pods + sign
        if pods:
            self._sums[key] = _Sums(added(sums.requested, usage.requested, sign), allocated, pods)
        else:
            del self._sums[key]  # exact sums: nothing is left over
        self._touch(key)

    def _touch(self, key: str) -> None:
        self._dirty.add(key)
        if self._totals_dirty is not None:
            self._totals_dirty.add(key)

    def _totals(self, key: str) -> PodGroupTotals | None:
        podgroup = self._podgroups.get(key)
        if podgroup is None:
            return None
        sums = self._sums.get(key, _NO_SUMS)
        if podgroup.preemptibility:
            preemptible = podgroup.preemptibility == "preemptible"
        else:
            priority = self._classes.get(podgroup.priority_class, names.DEFAULT_PRIORITY)
            preemptible = priority < names.PREEMPTIBLE_BELOW_PRIORITY
        return PodGroupTotals(podgroup.queue, sums.requested, sums.allocated, NONE if preemptible else sums.allocated)

"""Writing a cycle's decisions back to the cluster, as KAI's cache and status updater do (docs/kai-reference.md §3.5).

Binds become BindRequests (the binder binds), evictions go through the Eviction API (``evictor``; KAI deletes pods),
a suspended workload whose stand-in pods the cycle placed is resumed, pods the ``ungate`` action admitted lose
their queue-admission gate, podgroups get their start and staleness annotations, and every waiting podgroup gets
KAI's scheduling condition, its pending pods the ``PodScheduled=False`` condition and events. As in KAI, the events
are recorded every cycle (the recorder counts repeats on one Event) and conditions are written only when they
change; a podgroup's scheduling condition is cleared once none of its pods waits or awaits its bind (the API server
sets ``PodScheduled=True`` when it binds a pod). Every write is idempotent: an existing BindRequest is left alone,
an unchanged condition is not rewritten.

A pod or podgroup that waits for many cycles is read once: the writer remembers what its condition says (and the
object's resourceVersion, which a watch event changes), and while both hold it only records the cycle's event.
"""

import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kai.cluster.port import ClusterClient, Raw
from kai.components.scheduler.conditions import clear_scheduling_conditions, set_condition, set_scheduling_condition
from kai.components.scheduler.evictor import Evictor, workload
from kai.components.scheduler.node_pool import SINGLE_SCHEDULING_BACKOFF, NodePool
from kai.components.shared.events import EventRecorder, ObjectRef
from kai.components.shared.parallel import Writes
from kai.core.framework.decisions import Bind, CycleResult, Pipeline, Unschedulable
from kai.core.model import names
from kai.core.model.meta import format_time
from kai.core.model.numa import ZonePlacement
from kai.core.model.quantity import format_amount
from kai.core.model.suspension import is_stand_in, is_suspended, suspend_patch
from kai.core.state.cluster_state import object_key
from kai.core.state.pod_status import ACTIVE_ALLOCATED, PodStatus
from kai.core.state.podgroup_info import PodGroupInfo

log = logging.getLogger(__name__)
COMPONENT = "kai-scheduler"
"""The scheduler's event source, as KAI's (its scheduler name)."""
UNSETTLED = frozenset({PodStatus.PENDING, PodStatus.GATED, PodStatus.ALLOCATED, PodStatus.PIPELINED, PodStatus.BINDING})
"""A podgroup with a task in one of these keeps its scheduling condition (KAI: pending, gated, or awaiting bind)."""


@dataclass(frozen=True, slots=True)
class _Condition:
    ref: ObjectRef
    says: tuple[Any, ...]
    version: Any
    """The object's resourceVersion when its condition said it."""


class DecisionWriter:
    def __init__(
        self,
        cluster: ClusterClient,
        now: Callable[[], float],
        writes: Writes | None = None,
        recorder: EventRecorder | None = None,
        on_bind_request: Callable[[Raw], None] | None = None,
        node_pool: NodePool | None = None,
        on_bind_ms: Callable[[float], None] | None = None,
        through_eviction_api: bool = True,
    ) -> None:
        """``on_bind_request``: given each BindRequest created, as the API server returned it; ``node_pool``: the
        scheduler's (its name in bind events, its label key for the pool of each podgroup's condition);
        ``on_bind_ms``: how long each BindRequest took to write (KAI's task_bind_latency_milliseconds);
        ``through_eviction_api``: evictions through ``pods/eviction`` (PodDisruptionBudgets enforced), else pod
        deletions as KAI's."""
        self.cluster = cluster
        self.node_pool = node_pool or NodePool()
        self.on_bind_request = on_bind_request
        self.on_bind_ms = on_bind_ms
        self.now = now
        self.writes = writes or Writes()
        self.recorder = recorder or EventRecorder(cluster, COMPONENT, now)
        self.evictor = Evictor(cluster, self._event, now, through_eviction_api)
        self._resumed: set[str] = set()
        """Podgroups whose workload this writer resumed and whose pods are not back yet (the cache may lag)."""
        self._conditioned: set[str] = set()
        """PodGroups whose stored status has scheduling conditions (kept from watch events)."""
        self._settled_as: dict[tuple[str, str], _Condition] = {}
        """What the scheduler's condition on a waiting pod or podgroup says, as of a resourceVersion."""
        self._lock = threading.Lock()
        cluster.subscribe(self._on_change)

    def _on_change(self, kind: str, obj: Mapping[str, Any], deleted: bool) -> None:
        if kind not in ("Pod", "PodGroup"):
            return
        meta = obj.get("metadata") or {}
        key = f"{meta.get('namespace')}/{meta.get('name')}"
        with self._lock:
            known = self._settled_as.get((kind, key))
            if known is not None and (deleted or known.version != meta.get("resourceVersion")):
                del self._settled_as[(kind, key)]
            if kind != "PodGroup":
                return
            if not deleted and (obj.get("status") or {}).get("schedulingConditions"):
                self._conditioned.add(key)
            else:
                self._conditioned.discard(key)

    def _known(self, kind: str, key: str, says: tuple[Any, ...]) -> ObjectRef | None:
        """The object's reference when its condition says ``says`` and it has not changed since."""
        with self._lock:
            known = self._settled_as.get((kind, key))
        return known.ref if known is not None and known.says == says else None

    def _remember(self, kind: str, obj: Raw, says: tuple[Any, ...]) -> ObjectRef:
        ref = ObjectRef.of(kind, obj)
        condition = _Condition(ref, says, (obj.get("metadata") or {}).get("resourceVersion"))
        with self._lock:
            self._settled_as[(kind, object_key(obj))] = condition
        return ref

    def write(self, result: CycleResult, jobs: Mapping[str, PodGroupInfo] | None = None) -> None:
        """Apply every decision; a failure on one object is logged and the others still go out."""
        writes = self.writes
        jobs = jobs or {}
        writes.each("bind", [b for b in result.binds if not is_stand_in(b.pod_key)], self._bind_request)
        suspended = self.evictor.send(result.evictions, result.last_eviction, writes).suspended
        with self._lock:
            self._resumed -= suspended  # suspended again: resumed again once its pods fit
        resumed = {b.podgroup_key for b in result.binds} | {p.podgroup_key for p in result.pipelined}
        resuming = sorted(k for k in resumed - self._resumed if _suspended(jobs.get(k)))
        writes.each("resume", resuming, lambda k: self._resume(jobs[k]))
        writes.each("resumed", [job for job in jobs.values() if _back(job)], self._forget_suspension)
        writes.each("ungate", result.ungated, self._ungate)
        writes.each(
            "start", result.started.items(), lambda item: self._annotate(item[0], names.LAST_START_ANNOTATION, item[1])
        )
        writes.each(
            "stale", result.stale_since.items(), lambda item: self._annotate(item[0], names.STALE_ANNOTATION, item[1])
        )
        writes.each(
            "delete bind request", result.bind_requests_to_delete, lambda key: self.cluster.delete("BindRequest", key)
        )
        prefixes, pod_prefixes = self._pool_prefixes(result, jobs)
        writes.each(
            "podgroup condition",
            result.unschedulable.values(),
            lambda waiting: self._podgroup_condition(
                waiting, prefixes.get(waiting.podgroup_key, ""), not _allocated(jobs.get(waiting.podgroup_key))
            ),
        )
        writes.each(
            "pod condition",
            result.pod_errors.items(),
            lambda item: self._pod_unschedulable(
                item[0], pod_prefixes.get(item[0], "") + item[1], mark=item[0] not in result.events_only
            ),
        )
        writes.each("pipeline event", [p for p in result.pipelined if not is_stand_in(p.pod_key)], self._pipelined)
        writes.each("clear podgroup condition", self._settled(jobs), self._clear_podgroup_conditions)
        self.recorder.flush()

    def _bind_request(self, bind: Bind) -> None:
        namespace, pod_name = bind.pod_key.split("/", 1)
        if self.cluster.get("BindRequest", bind.pod_key) is not None:
            return
        started = time.perf_counter()
        created = self.cluster.create(
            "BindRequest",
            {
                "apiVersion": "scheduling.run.ai/v1alpha2",
                "kind": "BindRequest",
                "metadata": {
                    "name": pod_name,
                    "namespace": namespace,
                    "labels": {names.SELECTED_NODE_LABEL: bind.node},
                    "ownerReferences": [
                        {"apiVersion": "v1", "kind": "Pod", "name": pod_name, "uid": bind.pod_uid, "controller": False}
                    ],
                },
                "spec": {
                    "podName": pod_name,
                    "selectedNode": bind.node,
                    "receivedResourceType": bind.received_resource_type,
                    "receivedGPU": {"count": bind.gpu_count, "portion": f"{bind.gpu_portion:.2f}"},
                    "selectedGPUGroups": list(bind.gpu_groups),
                    "resourceClaimAllocations": [
                        {
                            "name": allocation.name,
                            "allocation": {
                                "devices": {
                                    "results": [
                                        {"request": request, "driver": driver, "pool": pool, "device": device}
                                        for request, driver, pool, device in allocation.results
                                    ]
                                }
                            },
                        }
                        for allocation in bind.claim_allocations
                    ],
                    **(
                        {"predictedNUMAZones": [numa_zone(zone) for zone in bind.numa_zones]} if bind.numa_zones else {}
                    ),
                },
            },
        )
        if self.on_bind_ms is not None:
            self.on_bind_ms((time.perf_counter() - started) * 1000)
        if self.on_bind_request is not None:
            self.on_bind_request(created)
        self.recorder.record(
            ObjectRef("v1", "Pod", namespace, pod_name, bind.pod_uid),
            "Normal",
            "Scheduled",
            f"Successfully assigned pod {bind.pod_key} to node {bind.node} at node-pool {self.node_pool.name}",
        )

    def _resume(self, job: PodGroupInfo) -> None:
        """A suspended workload whose stand-ins the cycle placed (or pipelined): unsuspended; its controller makes
        its pods again, and the stand-ins hold their room until they are back."""
        owner = job.podgroup.owner
        patch = suspend_patch(owner.api_version, owner.kind, False) if owner is not None else None
        if owner is None or patch is None:
            return
        found = workload(self.cluster, owner, job.namespace)
        if found is None or not is_suspended(owner.api_version, owner.kind, found[1]):
            return
        self.cluster.patch_merge(found[0], f"{job.namespace}/{owner.name}", patch)
        with self._lock:
            self._resumed.add(job.key)
        self._event("PodGroup", job.key, "Normal", "Resumed", f"{owner.kind} {owner.name} resumed: its pods fit again")

    def _forget_suspension(self, job: PodGroupInfo) -> None:
        """A resumed workload's pods are back: its PodGroup's suspension record goes. Pods of a workload still
        suspended are the ones its controller has yet to delete: the record stays (it is what resumes it)."""
        owner = job.podgroup.owner
        found = workload(self.cluster, owner, job.namespace) if owner is not None else None
        if owner is not None and found is not None and is_suspended(owner.api_version, owner.kind, found[1]):
            return
        self.cluster.patch_merge(
            "PodGroup", job.key, {"metadata": {"annotations": {names.SUSPENDED_PODS_ANNOTATION: None}}}
        )
        with self._lock:
            self._resumed.discard(job.key)

    def _ungate(self, pod_key: str) -> None:
        """The queue admits the pod: its queue-admission gate lifted (the only gate it has), and when, which its
        reservation of the queue's quota runs from."""
        pod = self.cluster.get("Pod", pod_key)
        gates = ((pod or {}).get("spec") or {}).get("schedulingGates") or []
        if pod is None or [g.get("name") for g in gates] != [names.QUEUE_ADMISSION_GATE]:
            return
        change = {
            "metadata": {"annotations": {names.QUEUE_ADMITTED_ANNOTATION: format_time(self.now())}},
            "spec": {"schedulingGates": None},
        }
        self.cluster.patch_merge("Pod", pod_key, change)
        self._event(
            "Pod", pod_key, "Normal", "Admitted", f"queue admits the pod: {names.QUEUE_ADMISSION_GATE} gate lifted"
        )

    def _pipelined(self, pipeline: Pipeline) -> None:
        self._event("Pod", pipeline.pod_key, "Normal", "Pipelined", pipeline.message)

    def _annotate(self, podgroup_key: str, annotation: str, when: float | None) -> None:
        podgroup = self.cluster.get("PodGroup", podgroup_key)
        if podgroup is None:
            return
        if when is None and annotation not in (podgroup["metadata"].get("annotations") or {}):
            return
        value = None if when is None else format_time(when)
        self.cluster.patch_merge("PodGroup", podgroup_key, {"metadata": {"annotations": {annotation: value}}})

    def _pool_prefixes(
        self, result: CycleResult, jobs: Mapping[str, PodGroupInfo]
    ) -> tuple[dict[str, str], dict[str, str]]:
        """KAI's ``Node-Pool '<pool>': `` before the unschedulable messages of a waiting podgroup tried once per pool
        (``schedulingBackoff: 1``) and of its pods: per podgroup and per pod."""
        prefixes = {
            key: f"Node-Pool '{self.node_pool.pool_named(job.podgroup.meta.labels)}': "
            for key in result.unschedulable
            if (job := jobs.get(key)) is not None and job.podgroup.scheduling_backoff == SINGLE_SCHEDULING_BACKOFF
        }
        pod_prefixes = {pod: prefixes[key] for key in prefixes for pod in jobs[key].tasks}
        return prefixes, pod_prefixes

    def _podgroup_condition(self, waiting: Unschedulable, prefix: str, conditioned: bool) -> None:
        """KAI's Normal ``Unschedulable`` event on the podgroup (or the event KAI records instead: ``NotReady``),
        every cycle, and (``conditioned``: none of its pods is allocated, as KAI) its scheduling condition for the
        podgroup's pool."""
        key, message = waiting.podgroup_key, prefix + waiting.message
        reasons = [{"reason": waiting.reason, "message": waiting.detailed_message.strip()}]
        says = (message, waiting.reason, reasons[0]["message"], conditioned)
        event = waiting.event or ("Unschedulable", message)
        podgroup = self._unschedulable_event("PodGroup", key, says, "Normal", *event)
        if podgroup is None:
            return
        pool = self.node_pool.pool_of(podgroup)
        if conditioned and set_scheduling_condition(podgroup, message, reasons, self.now(), pool):
            podgroup = self._write_scheduling_conditions(key, podgroup)
        self._remember("PodGroup", podgroup, says)

    def _settled(self, jobs: Mapping[str, PodGroupInfo]) -> list[str]:
        """Podgroups with a scheduling condition none of whose pods waits or awaits its bind any more."""
        with self._lock:
            conditioned = list(self._conditioned)
        return [
            key
            for key in conditioned
            if key in jobs and not any(task.status in UNSETTLED for task in jobs[key].tasks.values())
        ]

    def _clear_podgroup_conditions(self, key: str) -> None:
        podgroup = self.cluster.get("PodGroup", key)
        if podgroup is not None and clear_scheduling_conditions(podgroup):
            self._write_scheduling_conditions(key, podgroup)
        with self._lock:  # until the watch shows the change, so the next cycle does not clear it again
            self._conditioned.discard(key)

    def _pod_unschedulable(self, pod_key: str, message: str, mark: bool = True) -> None:
        """KAI's Warning ``Unschedulable`` event every cycle, and ``PodScheduled=False/Unschedulable`` when it
        changes (the event only, with markUnschedulable off)."""
        says = (message, mark)
        pod = self._unschedulable_event("Pod", pod_key, says, "Warning", "Unschedulable", message)
        if pod is None:
            return
        condition = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": message}
        if mark and set_condition(pod, condition, self.now()):
            scheduled = next(c for c in pod["status"]["conditions"] if c["type"] == "PodScheduled")
            pod = self.cluster.patch_status("Pod", pod_key, {"conditions": [scheduled]}, strategic=True)
        self._remember("Pod", pod, says)

    def _unschedulable_event(
        self, kind: str, key: str, says: tuple[Any, ...], event_type: str, reason: str, message: str
    ) -> Raw | None:
        """The event of every cycle a pod or podgroup waits; the object as read when what it ``says`` changed (its
        condition may need writing), None when it did not or the object is gone."""
        ref = self._known(kind, key, says)
        if ref is not None:
            self.recorder.record(ref, event_type, reason, message)
            return None
        obj = self.cluster.get(kind, key)
        if obj is not None:
            self.recorder.record(ObjectRef.of(kind, obj), event_type, reason, message)
        return obj

    def _write_scheduling_conditions(self, key: str, podgroup: Raw) -> Raw:
        """The scheduler owns ``status.schedulingConditions``: a patch of that list alone never conflicts with the
        podgroup controller's ``resourcesStatus``. Returns the podgroup written."""
        conditions = podgroup["status"]["schedulingConditions"]
        return self.cluster.patch_status("PodGroup", key, {"schedulingConditions": conditions})

    def _event(self, kind: str, key: str, event_type: str, reason: str, message: str) -> None:
        """An event about the object ``key`` of ``kind`` (as cached; by name alone once it is gone)."""
        obj = self.cluster.get(kind, key)
        namespace, _, name = key.rpartition("/")
        self.recorder.record(
            ObjectRef.of(kind, obj if obj is not None else {"metadata": {"name": name, "namespace": namespace}}),
            event_type,
            reason,
            message,
        )


def _suspended(job: PodGroupInfo | None) -> bool:
    """A podgroup the scheduler keeps suspended: it has the record, and its pods are the stand-ins."""
    return job is not None and bool(job.podgroup.suspended_pods) and all(is_stand_in(k) for k in job.tasks)


def _back(job: PodGroupInfo) -> bool:
    """A podgroup with a suspension record and pods of its own: resumed and back (its record is to go), or
    suspended and not yet taken down by its controller."""
    return bool(job.podgroup.suspended_pods) and any(not is_stand_in(k) for k in job.tasks)


def _allocated(job: PodGroupInfo | None) -> bool:
    """Whether a pod of the podgroup is allocated, binding or running (KAI's GetActiveAllocatedTasksCount > 0)."""
    return job is not None and any(task.status in ACTIVE_ALLOCATED for task in job.tasks.values())


def numa_zone(zone: ZonePlacement) -> dict[str, object]:
    """A predicted NUMA zone as KAI's BindRequest carries it (``NUMAZonePlacement``)."""
    return {"zone": zone.zone, "amount": {name: format_amount(name, amount) for name, amount in zone.amounts.items()}}

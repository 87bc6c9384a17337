"""The pod-grouper: every pod of this scheduler gets the PodGroup KAI would make for its workload.

A PodGroup exists before its pods can be scheduled: the scheduler only schedules a pod that names its PodGroup, and
a pod is pointed at its PodGroup (``pod-group-name``, ``kai.scheduler/subgroup-name``) only once that is written.

Work follows changes, not passes: a pod that is added or changed is queued, and a pass's workers each take the
oldest queued pod as soon as they are free (pods queued during the pass too, for up to ``PASS_S``), so that a pod
queued in a burst waits for a free worker rather than for every pod queued before it. A worker decides the pod's
PodGroup by the rules (owners read through the port, once per pass), writes it, and points the pod at it at once.
Pods of a workload whose PodGroup another worker is writing go to that worker: it writes the PodGroup again if they
want it otherwise (the last one wins, as KAI's one-pod-at-a-time reconcile would leave it), and every worker then
points them, before taking a queued pod. A PodGroup is updated whenever one of its pods changes (an elastic job's
replicas came or went); a pod that is deleted queues a sibling, and a deleted PodGroup queues its pods.

A conflict (the PodGroup or pod changed meanwhile, or another writer created it first) is retried on the next pass,
without a word. A pod that cannot be grouped gets one ``PodGrouperWarning`` event per distinct problem and is
retried with backoff (1 s doubling up to 1 min, as KAI's controller), or at once when it changes.
"""

import copy
import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from kai.cluster.kube.errors import AlreadyExists, ApiError, Conflict, NotFound
from kai.cluster.port import ClusterClient, Raw
from kai.components.podgrouper.owners import ClusterLookup, UnknownKind, owner_chain
from kai.components.podgrouper.podgroups import podgroup_object, updated
from kai.components.podgrouper.rules import hub, keys
from kai.components.podgrouper.rules.default import parse_default_priorities, podgroup_name
from kai.components.podgrouper.rules.model import Context, Grouping, KindDefaults, Obj, Settings, Workload
from kai.components.shared.events import EventRecorder, ObjectRef
from kai.components.shared.parallel import Writes
from kai.core.model import names
from kai.core.model.errors import InvalidObject

log = logging.getLogger(__name__)
COMPONENT = "pod-grouper"
WARNING_REASON = "PodGrouperWarning"
FIRST_RETRY_S = 1.0
MAX_RETRY_S = 60.0
PASS_S = 1.0
"""How long a pass takes pods queued after it began (what it read of owners is kept for one pass)."""


@dataclass(frozen=True, slots=True)
class _Decision:
    key: str
    pod: Raw
    grouping: Grouping


_Work = str | _Decision
"""A pass's work: a queued pod (its key), or a pod to point at its PodGroup just written."""


class PodGrouper:
    def __init__(
        self,
        cluster: ClusterClient,
        scheduler_name: str = names.SCHEDULER_NAME,
        writes: Writes | None = None,
        settings: Settings | None = None,
        now: Callable[[], float] = time.time,
        clock: Callable[[], float] = time.monotonic,
        logger: logging.Logger = log,
    ) -> None:
        """``logger``: where what it cannot do is logged besides its events (a simulation's stand-in keeps its log
        quiet: its events are the run's problems)."""
        self.cluster = cluster
        self.scheduler_name = scheduler_name
        self.writes = writes or Writes()
        self.settings = settings or Settings()
        self._clock = clock
        self.log = logger
        self._lock = threading.RLock()
        self._pods: dict[str, dict[str, Raw]] = {}
        self._members: dict[tuple[str, str], set[str]] = {}
        self._queued: dict[str, None] = {}
        self._writing: dict[tuple[str, str], list[_Decision]] = {}
        """PodGroups a worker is writing, with the pods of the same workload decided meanwhile (that worker writes
        their PodGroup again if they want it otherwise, and has them pointed at it)."""
        self._points: deque[_Decision] = deque()
        """Pods whose PodGroup is written, to point at it: taken before any queued pod."""
        self._again: list[str] = []
        """Pods that lost a race this pass (their PodGroup or they changed meanwhile): queued again for the next pass,
        once the watch has brought the change."""
        self._due: dict[str, float] = {}
        self._delay: dict[str, float] = {}
        self._reported: dict[str, set[str]] = {}
        self._unknown_kinds: set[str] = set()
        self.recorder = EventRecorder(cluster, COMPONENT, now, writes=self.writes)
        cluster.subscribe(self._on_change)

    # ------------------------------------------------------------------------------------------- a pass

    def reconcile(self) -> int:
        """Group the queued pods, and those queued meanwhile for up to ``PASS_S``; returns how many pods were
        pointed at a (new or other) PodGroup."""
        if not self._has_work():
            return 0
        lookup = ClusterLookup(self.cluster, self._pods_in)
        ctx = Context(self.settings, lookup, self._priority_classes(), self._default_priorities(lookup))
        assigned: list[str] = []
        ends = self._clock() + PASS_S

        def work() -> Iterator[_Work]:
            while (item := self._next(ends)) is not None:
                yield item

        self.writes.drain("group pod", work(), lambda item: self._handle(item, ctx, lookup, assigned))
        again, self._again = self._again, []
        self._queue(again)
        return len(assigned)

    def _handle(self, item: _Work, ctx: Context, lookup: ClusterLookup, assigned: list[str]) -> None:
        """A queued pod: its PodGroup written (unless another worker is writing it: then that worker takes the pod
        along) and the pod pointed at it; or a pod of a PodGroup written meanwhile: pointed at it."""
        if isinstance(item, _Decision):
            self._assign(item, assigned)
            return
        decision = self._decide(item, ctx, lookup)
        if decision is None:
            return
        podgroup = (decision.grouping.namespace, decision.grouping.name)
        with self._lock:
            if podgroup in self._writing:
                self._writing[podgroup].append(decision)
                return
            self._writing[podgroup] = []
        decisions, written = [decision], None
        try:
            while decisions:
                written = self._write(decisions, written)
                if written is not None:
                    self._assign(decisions[0], assigned)
                    with self._lock:
                        self._points.extend(decisions[1:])
                with self._lock:  # pods of the same workload that came meanwhile: the PodGroup is brought up to them
                    decisions = self._writing[podgroup]
                    if decisions:
                        self._writing[podgroup] = []
                    else:
                        del self._writing[podgroup]
        except BaseException:  # logged by the pass; the workload's pods are grouped again next pass
            with self._lock:
                self._again.extend(d.key for d in [*decisions, *self._writing.pop(podgroup, [])])
            raise

    def _next(self, ends: float) -> _Work | None:
        """The next work of a pass: pods to point at a PodGroup just written first, then the first queued pod (until
        the pass ends), then the first pod due again after a failure."""
        with self._lock:
            if self._points:
                return self._points.popleft()
            if self._clock() > ends:
                return None
            if self._queued:
                key = next(iter(self._queued))
                del self._queued[key]
                self._due.pop(key, None)  # queued again: its retry is now
                return key
            now = self._clock()
            due = next((key for key, at in self._due.items() if at <= now), None)
            if due is not None:
                del self._due[due]
            return due

    def _has_work(self) -> bool:
        with self._lock:
            now = self._clock()
            return bool(self._queued) or any(at <= now for at in self._due.values())

    def _decide(self, key: str, ctx: Context, lookup: ClusterLookup) -> "_Decision | None":
        """The pod's PodGroup, or None when there is nothing to write (the pod is gone, left alone, or failed)."""
        pod = self._pod(key)
        if pod is None:
            return None
        try:
            grouping = self._grouping(pod, ctx, lookup)
        except InvalidObject as error:
            self._failed(key, pod, error)
            return None
        except ApiError as error:
            self.log.warning("cannot group pod %s yet: %s", key, error)
            self._retry_later(key)
            return None
        if grouping is None:
            self._done(key, pod, [])
            return None
        return _Decision(key, pod, grouping)

    def _grouping(self, raw: Raw, ctx: Context, lookup: ClusterLookup) -> Grouping | None:
        """The pod's PodGroup, or None when the pod-grouper leaves the pod alone (KAI's order of checks)."""
        pod = Obj.parse(raw, "Pod", "v1")
        if pod.get("spec", "schedulerName").text() != self.scheduler_name or pod.deleting:
            return None
        if pod.annotations.get(keys.SKIP_ANNOTATION) == "true":
            return None
        if not pod.owner_refs and names.POD_GROUP_ANNOTATION in pod.annotations:
            if pod.annotations[names.POD_GROUP_ANNOTATION] != podgroup_name(pod):
                return None  # an ownerless pod that joins a PodGroup made by someone else
            if self.cluster.get("PodGroup", f"{pod.namespace}/{podgroup_name(pod)}") is not None:
                return None  # grouped by this pod-grouper before, and its PodGroup is there: left as KAI leaves it
            # grouped before, and its PodGroup was deleted: made again (KAI leaves the pod without one)
        owners = owner_chain(pod, lookup, self._unknown_kinds)
        if any(owner.annotations.get(keys.SKIP_ANNOTATION) == "true" for owner in owners):
            return None
        grouping = hub.group(Workload(pod, owners, owners[-1] if owners else pod), ctx)
        node_pool = self.settings.node_pool_label
        if node_pool not in grouping.labels and node_pool in pod.labels:
            grouping.labels[node_pool] = pod.labels[node_pool]
        return grouping

    def _write(self, decisions: list[_Decision], written: Raw | None = None) -> Raw | None:
        """Writes the PodGroup of ``decisions`` (pods of one workload); the PodGroup as it is now, or None when its
        pods may not be pointed at it. ``written``: what this worker wrote of it a moment ago, which the watch may
        not have brought yet."""
        grouping = decisions[-1].grouping
        key = f"{grouping.namespace}/{grouping.name}"
        desired = podgroup_object(grouping)
        try:
            existing = self.cluster.get("PodGroup", key) or written
            if existing is None:
                existing = self.cluster.create("PodGroup", desired)
            else:
                change = updated(existing, desired, self.settings.node_pool_label, self.settings.queue_label)
                if change is not None:
                    existing = self.cluster.update("PodGroup", change)
        except (Conflict, AlreadyExists):
            self.log.debug("PodGroup %s changed meanwhile; its pods are grouped again", key)
            self._again.extend(d.key for d in decisions)
            return None
        except ApiError as error:
            for decision in decisions:
                self._failed(decision.key, decision.pod, f"its PodGroup {key} cannot be written: {error.message}")
            return None
        return existing

    def _assign(self, decision: _Decision, assigned: list[str]) -> None:
        grouping, key = decision.grouping, decision.key
        pod = self._pod(key) or decision.pod
        meta: Mapping[str, Any] = pod.get("metadata") or {}
        annotations: Mapping[str, str] = meta.get("annotations") or {}
        labels: Mapping[str, str] = meta.get("labels") or {}
        subgroup = grouping.pod_subgroup
        if annotations.get(names.POD_GROUP_ANNOTATION) == grouping.name and (
            not subgroup or labels.get(names.SUBGROUP_LABEL) == subgroup
        ):
            self._done(key, pod, grouping.warnings)
            return
        change = copy.deepcopy(pod)
        change["metadata"].setdefault("annotations", {})[names.POD_GROUP_ANNOTATION] = grouping.name
        if subgroup:
            change["metadata"].setdefault("labels", {})[names.SUBGROUP_LABEL] = subgroup
        try:
            self.cluster.update("Pod", change)
        except NotFound:
            return
        except Conflict:
            self.log.debug("pod %s changed meanwhile; it is grouped again", key)
            self._again.append(key)
            return
        except ApiError as error:
            self._failed(key, pod, f"it cannot be pointed at PodGroup {grouping.name}: {error.message}")
            return
        assigned.append(key)
        self._done(key, pod, grouping.warnings)

    # ------------------------------------------------------------------------------------------- what a pass reads

    def _priority_classes(self) -> frozenset[str]:
        names_found = (pc.get("metadata", {}).get("name") for pc in self.cluster.list("PriorityClass"))
        return frozenset(name for name in names_found if isinstance(name, str))

    def _default_priorities(self, lookup: ClusterLookup) -> Mapping[str, KindDefaults]:
        """The default-priorities ConfigMap's per-kind defaults; none (as KAI) when it is missing or malformed, which
        is told once on the ConfigMap (or in the log when it does not exist)."""
        where = self.settings.default_priorities_configmap
        if not where:
            return {}
        namespace, _, name = where.partition("/")
        try:
            raw = lookup.read("v1", "ConfigMap", namespace, name)
        except (ApiError, UnknownKind) as error:
            self.log.warning("cannot read the default-priorities ConfigMap %s: %s", where, error)
            return {}
        if raw is None:
            if self._first_report(f"ConfigMap {where}", "missing"):
                self.log.warning("the default-priorities ConfigMap %s does not exist; no per-kind defaults", where)
            return {}
        try:
            defaults = parse_default_priorities(Obj.parse(raw, "ConfigMap", "v1", namespace))
        except InvalidObject as error:
            message = f"{error}; the pod-grouper uses no per-kind defaults"
            if self._first_report(f"ConfigMap {where}", message):
                self.log.warning("%s", message)
                self._event(raw, "ConfigMap", message, error)
            return {}
        with self._lock:
            self._reported.pop(f"ConfigMap {where}", None)
        return defaults

    # ------------------------------------------------------------------------------------------- outcomes

    def _failed(self, key: str, pod: Raw, error: InvalidObject | str) -> None:
        message = str(error)
        if self._first_report(key, message):
            self.log.warning("cannot group pod %s: %s", key, message)
            self._event(pod, "Pod", message, error if isinstance(error, InvalidObject) else None)
        self._retry_later(key)

    def _done(self, key: str, pod: Raw, warnings: list[InvalidObject]) -> None:
        """The pod is grouped (or left alone): its backoff ends and what it was told resets, but the warnings of
        this grouping are told (once)."""
        with self._lock:
            self._due.pop(key, None)
            self._delay.pop(key, None)
            told = self._reported.pop(key, set())
        for warning in warnings:
            if str(warning) not in told:
                self.log.warning("pod %s: %s", key, warning)
                self._event(pod, "Pod", str(warning), warning)
        if warnings:
            with self._lock:
                self._reported[key] = {str(warning) for warning in warnings}

    def _first_report(self, key: str, message: str) -> bool:
        with self._lock:
            told = self._reported.setdefault(key, set())
            if message in told:
                return False
            told.add(message)
            return True

    def _event(self, involved: Raw, kind: str, message: str, about: InvalidObject | None = None) -> None:
        """A warning event on ``involved``; ``about`` (a problem in a field of it or of an owner) is the event's
        ``related`` object reference, with that field as its ``fieldPath``."""
        related = _reference(about) if about is not None else None
        self.recorder.record(ObjectRef.of(kind, involved), "Warning", WARNING_REASON, message, related=related)

    # ------------------------------------------------------------------------------------------- the queue

    def _on_change(self, kind: str, obj: Mapping[str, Any], deleted: bool) -> None:
        if kind == "Pod":
            self._pod_changed(obj, deleted)
        elif kind == "PodGroup" and deleted:
            namespace, name = _namespaced_name(obj)
            with self._lock:
                self._queue(f"{namespace}/{pod}" for pod in self._members.get((namespace, name), ()))

    def _pod_changed(self, obj: Mapping[str, Any], deleted: bool) -> None:
        namespace, name = _namespaced_name(obj)
        if not name:
            self.log.warning("a Pod without metadata.name or metadata.namespace cannot be grouped: %.200r", obj)
            return
        key, group = f"{namespace}/{name}", _podgroup_of(obj)
        with self._lock:
            pods = self._pods.setdefault(namespace, {})
            previous = _podgroup_of(pods.get(name))
            if previous and (previous != group or deleted):
                self._members.get((namespace, previous), set()).discard(name)
            if deleted:
                pods.pop(name, None)
                for table in (self._queued, self._due, self._delay, self._reported):
                    table.pop(key, None)
                sibling = next(
                    (n for n in self._members.get((namespace, group), ()) if self._concerns(pods.get(n))), None
                )
                if sibling:
                    self._queued[f"{namespace}/{sibling}"] = None
                return
            before, pods[name] = pods.get(name), dict(obj)
            if group:
                self._members.setdefault((namespace, group), set()).add(name)
            if self._concerns(obj) and not (before is not None and _only_pointed(before, obj)):
                self._queued[key] = None

    def _concerns(self, pod: Mapping[str, Any] | None) -> bool:
        """A pod this pod-grouper groups: of its scheduler and not terminating (or too malformed to tell, so that
        the pass reports it)."""
        if pod is None:
            return False
        spec, meta = pod.get("spec"), pod.get("metadata")
        if not isinstance(spec, Mapping) or not isinstance(meta, Mapping):
            return True
        return spec.get("schedulerName") == self.scheduler_name and not meta.get("deletionTimestamp")

    def _queue(self, pod_keys: Iterable[str]) -> None:
        with self._lock:
            for key in pod_keys:
                self._queued[key] = None

    def _retry_later(self, key: str) -> None:
        with self._lock:
            delay = min(MAX_RETRY_S, self._delay.get(key, FIRST_RETRY_S / 2) * 2)
            self._delay[key] = delay
            self._due[key] = self._clock() + delay

    def _pod(self, key: str) -> Raw | None:
        namespace, _, name = key.partition("/")
        with self._lock:
            return self._pods.get(namespace, {}).get(name)

    def _pods_in(self, namespace: str) -> list[Raw]:
        with self._lock:
            return list(self._pods.get(namespace, {}).values())


def _namespaced_name(obj: Mapping[str, Any]) -> tuple[str, str]:
    meta = obj.get("metadata")
    if not isinstance(meta, Mapping):
        return "", ""
    namespace, name = meta.get("namespace"), meta.get("name")
    if not isinstance(namespace, str) or not isinstance(name, str) or not namespace:
        return "", ""
    return namespace, name


def _only_pointed(before: Mapping[str, Any], after: Mapping[str, Any]) -> bool:
    """Whether a pod changed only by being pointed at its PodGroup (the pod-grouper's own write: nothing to redo)."""
    return _without_grouping(before) == _without_grouping(after)


def _without_grouping(pod: Mapping[str, Any]) -> dict[str, Any]:
    meta = pod.get("metadata")
    if not isinstance(meta, Mapping):
        return dict(pod)
    ignored = {"resourceVersion", "managedFields", "annotations", "labels"}
    kept: dict[str, Any] = {k: v for k, v in meta.items() if k not in ignored}
    for field, own in (("annotations", names.POD_GROUP_ANNOTATION), ("labels", names.SUBGROUP_LABEL)):
        values = meta.get(field)
        kept[field] = {k: v for k, v in values.items() if k != own} if isinstance(values, Mapping) else values
    return {**pod, "metadata": kept}


def _podgroup_of(pod: Mapping[str, Any] | None) -> str:
    meta = pod.get("metadata") if pod is not None else None
    annotations = meta.get("annotations") if isinstance(meta, Mapping) else None
    group = annotations.get(names.POD_GROUP_ANNOTATION) if isinstance(annotations, Mapping) else None
    return group if isinstance(group, str) else ""


def _reference(problem: InvalidObject) -> Raw:
    """The object reference of the object ``problem`` names (``Kind namespace/name``, as ``Obj.ref`` writes it),
    with the field as its ``fieldPath``."""
    kind, _, key = problem.obj.partition(" ")
    namespace, _, name = key.rpartition("/")
    reference: Raw = {"kind": kind, "name": name, "fieldPath": problem.field}
    if namespace:
        reference["namespace"] = namespace
    return reference

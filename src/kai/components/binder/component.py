"""The binder: turns BindRequests into bound pods (KAI's binder, docs/kai-reference.md §1.2).

An attempt checks that the pod still exists (the one the request was made for), is not bound elsewhere and that
its node exists; makes sure each shared GPU group has its reservation pod and a shared GPU's pod its ConfigMaps
(``sharing_configmaps``); records on the pod what it received
(``received-resource-type``, its GPU group); binds it through the binding subresource, guarded by the pod's uid;
and writes the devices chosen for its DRA claims. The outcome goes to the BindRequest status and to the pod's
``PodBound`` condition and a ``Bound`` / ``BindingError`` event; a success's are written in the background
(``Writes.later``), so that the next bind does not wait for them.

Every write is a patch of only the fields the binder owns (as KAI's are), so no write can conflict with another
client's, whatever changed the objects since they were read; the bind itself is conditional on the pod's uid.

Failures follow KAI's ``spec.backoffLimit`` / ``status.failedAttempts``. One that no retry can fix (the pod is gone
or was re-created, it is bound to another node, the node is gone, the request is invalid) marks the request Failed
once, its failedAttempts raised to the limit, so the scheduler deletes it and places the pod again. Any other
failure is one failed attempt: while the limit allows another, the request is tried again after 2^(n-1) s (at most
a minute), else it is Failed for good. A failed attempt is rolled back (the pod's label and annotation, reservation
pods nothing else holds) and logged as one WARNING line naming the request, the pod and the reason. A request is not
given up while reservation pods its failed attempt held cannot be removed (the API server away): failed for good, its
GPU would look free to the scheduler while a kubelet still counts it held. It is tried again instead, leftovers first.
"""

import json
import logging
import math
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from prometheus_client import CollectorRegistry

from kai.cluster.port import ClusterClient, ClusterError, Conflict, NotFound, Raw
from kai.components.binder.reservations import GroupOnNode, Reservations
from kai.components.binder.sharing_configmaps import SharingConfigMaps
from kai.components.shared.events import EventRecorder, ObjectRef
from kai.components.shared.metrics import BinderMetrics
from kai.components.shared.parallel import Writes
from kai.core.model import names
from kai.core.model.errors import InvalidObject
from kai.core.model.meta import format_time
from kai.core.model.objects import BindRequest, parse_bind_request
from kai.core.model.resources import GpuRequestKind

log = logging.getLogger(__name__)
FRACTION = GpuRequestKind.FRACTION.value
"""The received resource type of a pod bound to a share of a GPU (KAI's IsSharedGPUAllocation)."""

COMPONENT = "binder"
"""The events' source, as KAI's binder names it."""
MAX_RETRY_DELAY_S = 60.0
"""The longest wait between two attempts of one request (KAI's ``--rate-limiter-max-delay``)."""


class BindFailure(Exception):
    """A failure no retry can fix: the request is Failed for good and the scheduler places the pod again.
    ``pod_changed``: the pod is gone, re-created or bound elsewhere, so its PodBound condition is not ours to set."""

    def __init__(self, reason: str, *, pod_changed: bool = False) -> None:
        super().__init__(reason)
        self.pod_changed = pod_changed


def retry_delay_s(failed_attempts: int) -> float:
    """Seconds from the n-th failed attempt to the next: 1, 2, 4, … (KAI requeues after 2^(n-1) s), at most a
    minute."""
    return min(2.0 ** (failed_attempts - 1), MAX_RETRY_DELAY_S)


@dataclass
class _Tracked:
    request: Raw
    next_attempt: float = 0.0
    """When the request may be tried (again); infinite while an attempt is under way or its outcome is written."""
    seen_at: float = field(default_factory=time.monotonic)
    """When the binder first saw it (for its lag)."""


class Binder:
    def __init__(
        self,
        cluster: ClusterClient,
        now: Callable[[], float],
        writes: Writes | None = None,
        *,
        reservation_namespace: str = names.RESERVATION_NAMESPACE,
        metrics: BinderMetrics | None = None,
    ) -> None:
        self.cluster = cluster
        self.now = now
        self.writes = writes or Writes()
        self.reservations = Reservations(cluster, reservation_namespace)
        self.configmaps = SharingConfigMaps(cluster)
        self.metrics = metrics or BinderMetrics(CollectorRegistry())
        self.events = EventRecorder(cluster, COMPONENT, now, writes=self.writes)
        self._requests: dict[str, _Tracked] = {}
        """BindRequests neither Succeeded nor Failed for good, by key, from events (a pass reads no others)."""
        self._held: dict[str, set[GroupOnNode]] = {}
        """GPU groups of binds under way, or done but not yet seen bound in the cache, by pod: kept reserved."""
        self._unreleased: dict[str, set[GroupOnNode]] = {}
        """GPU groups whose reservation pods a pod's failed bind could not remove, by pod: its request is not given
        up until they are gone (``_failed``)."""
        self._sync_needed = False
        self._lock = threading.Lock()
        cluster.subscribe(self._on_change)

    def _on_change(self, kind: str, obj: Mapping[str, Any], deleted: bool) -> None:
        meta = obj.get("metadata") or {}
        key = f"{meta.get('namespace')}/{meta.get('name')}"
        if kind == "Pod" and names.GPU_GROUP_LABEL in (meta.get("labels") or {}):
            finished = (obj.get("status") or {}).get("phase") in ("Succeeded", "Failed")
            gone = deleted or finished or bool(meta.get("deletionTimestamp"))
            with self._lock:  # a reservation pod to check, or a GPU group that may have lost its last pod
                self._sync_needed |= gone or meta.get("namespace") == self.reservations.namespace
                if gone or (obj.get("spec") or {}).get("nodeName"):
                    self._held.pop(key, None)
        if kind != "BindRequest":
            return
        with self._lock:
            tracked = self._requests.get(key)
            if deleted or meta.get("deletionTimestamp") or _settled(obj):
                self._requests.pop(key, None)
                if self._unreleased:  # a kept request gone: nothing tries it again, so the sync tidies up
                    pod_key = f"{meta.get('namespace')}/{(obj.get('spec') or {}).get('podName')}"
                    self._sync_needed |= self._unreleased.pop(pod_key, None) is not None
            elif tracked is not None and _uid(tracked.request) == meta.get("uid"):
                tracked.request = dict(obj)
            else:
                self._requests[key] = _Tracked(dict(obj))

    def start(self) -> None:
        """What the binder does once, before its first pass: the GPU reservation namespace, as KAI's install makes
        it (if that fails, the first fractional bind creates it)."""
        try:
            self.reservations.ensure_namespace()
        except ClusterError as error:
            log.warning("the GPU reservation namespace %s could not be created: %s", self.reservations.namespace, error)

    def reconcile(self) -> int:
        """Attempts every request that is due (independent requests side by side); returns how many pods were
        bound."""
        now = self.now()
        with self._lock:
            due = [t.request for t in self._requests.values() if t.next_attempt <= now]
            for request in due:
                self._requests[_key(request)].next_attempt = math.inf
        bound: list[str] = []

        def attempt(request: Raw) -> None:
            if self._attempt(request):
                bound.append(_key(request))

        self.writes.each("bind", due, attempt)
        self.events.flush()
        if self._sync_needed:
            self.sync_reservations()
        return len(bound)

    def sync_reservations(self) -> None:
        """Removes reservation pods whose GPU group no longer has a live pod (or a bind under way) on that node."""
        with self._lock:
            self._sync_needed = False
            held = self._held_groups()
        try:
            self.reservations.sync(held)
        except ClusterError as error:  # the API server is away: the next pass tries again
            log.warning("reservation pods could not be cleaned up: %s; tried again on the next pass", error)
            with self._lock:
                self._sync_needed = True

    # ------------------------------------------------------------------------------------------- one attempt

    def _attempt(self, request: Raw) -> bool:
        started = time.perf_counter()
        try:
            bind_request = parse_bind_request(request)
        except InvalidObject as error:
            self.metrics.failed(time.perf_counter() - started)
            self._delete_invalid(request, error)
            return False
        try:
            self._release_leftovers(bind_request)
            self._bind(request, bind_request)
        except Exception as error:  # reported on the request (and retried, or the scheduler places the pod again)
            self.metrics.failed(time.perf_counter() - started)
            self._failed(request, bind_request, error)
            return False
        self.metrics.succeeded(time.perf_counter() - started)
        with self._lock:
            tracked = self._requests.get(_key(request))
        if tracked is not None and _uid(tracked.request) == _uid(request):
            self.metrics.lag.observe(time.monotonic() - tracked.seen_at)
        self.writes.later("bind report", (request, bind_request), self._succeeded)
        return True

    def _succeeded(self, bound: tuple[Raw, BindRequest]) -> None:
        """A bind's report, in the background (the next bind does not wait for it): the pod's condition and event,
        then the request's status."""
        request, bind_request = bound
        self._report(bind_request, "True", "Bound", f"Pod bound successfully to node {bind_request.selected_node}")
        self._finish(request, {"phase": "Succeeded"}, retry_in_s=1.0)

    def _bind(self, request: Raw, br: BindRequest) -> None:
        pod_key, node = br.pod_key, br.selected_node
        if not br.pod_name or not node:
            raise BindFailure("invalid BindRequest: spec.podName and spec.selectedNode are required")
        pod = self.cluster.get("Pod", pod_key)
        if pod is None:
            raise BindFailure(f"pod {pod_key} does not exist", pod_changed=True)
        uid = str(pod["metadata"].get("uid") or "")
        meant = _owner_uid(request)
        if meant and uid and uid != meant:
            raise BindFailure(
                f"pod {pod_key} was re-created (uid {uid}; the request is for uid {meant})", pod_changed=True
            )
        bound = (pod.get("spec") or {}).get("nodeName")
        if bound and bound != node:
            raise BindFailure(f"pod {pod_key} is already bound to node {bound}", pod_changed=True)
        if not bound:
            if self.cluster.get("Node", node) is None:
                raise BindFailure(f"node {node} does not exist")
            if br.received_resource_type == FRACTION and not br.gpu_groups:
                raise BindFailure("invalid BindRequest: a Fraction request needs spec.selectedGPUGroups")
            self._bind_pod(br, pod, request.get("spec") or {})
        self._allocate_claims(pod, (request.get("spec") or {}).get("resourceClaimAllocations") or [])

    def _bind_pod(self, br: BindRequest, pod: Raw, spec: Raw) -> None:
        """Reservation pods, a shared GPU's ConfigMaps and the pod's GPU group label, then the binding, which
        carries the received resource annotation and the predicted NUMA zones (the API server adds a Binding's
        annotations to the pod: one write fewer than KAI's patch); undone on failure."""
        pod_key, node, uid = br.pod_key, br.selected_node, str(pod["metadata"].get("uid") or "")
        held = {(node, group) for group in br.gpu_groups}
        if held:
            with self._lock:
                self._held[pod_key] = held
        received = {names.RECEIVED_RESOURCE_TYPE_ANNOTATION: br.received_resource_type}
        if numa_zones := spec.get("predictedNUMAZones"):
            received[names.NUMA_PLACEMENT_PREDICTED_ANNOTATION] = json.dumps(numa_zones, separators=(",", ":"))
        shared = br.received_resource_type == FRACTION
        try:
            devices = [self.reservations.ensure(node, group) for group in br.gpu_groups]
            if shared:
                self.configmaps.write(pod, str((spec.get("receivedGPU") or {}).get("portion", "")), devices)
            try:
                if br.gpu_groups:
                    self.cluster.patch_merge(
                        "Pod", pod_key, {"metadata": {"labels": {names.GPU_GROUP_LABEL: br.gpu_groups[0]}}}
                    )
                self.cluster.bind_pod(br.meta.namespace, br.pod_name, node, uid, received)
            except NotFound as error:
                raise BindFailure(f"pod {pod_key} does not exist", pod_changed=True) from error
            except Conflict as error:  # the server's word: bound elsewhere meanwhile, or not the same pod
                raise BindFailure(f"pod {pod_key} cannot be bound to node {node}: {error}", pod_changed=True) from error
        except Exception:
            self._rollback(pod, held, shared)
            raise

    def _rollback(self, pod: Raw, held: set[GroupOnNode], shared: bool) -> None:
        """Undoes the GPU group label a failed bind wrote on the pod (its annotation comes only with the binding)
        and its GPU-sharing ConfigMaps, and removes its reservation pods nothing else holds, so a retry starts clean
        (KAI's Rollback). The reservation pods go now, before the failure is written: once the request has failed for
        good, the scheduler counts their GPUs free, while a kubelet still counts them held until the pods are gone."""
        pod_key = f"{pod['metadata']['namespace']}/{pod['metadata']['name']}"
        with self._lock:
            self._held.pop(pod_key, None)
            others = self._held_groups() if held else set()
        if held:
            try:
                self.reservations.release(held, others)
            except ClusterError as error:
                log.warning("rolling back pod %s after a failed bind: its reservation pods: %s", pod_key, error)
                with self._lock:
                    self._unreleased[pod_key] = held
            try:
                self.cluster.patch_merge("Pod", pod_key, {"metadata": {"labels": {names.GPU_GROUP_LABEL: None}}})
            except NotFound:
                pass
            except ClusterError as error:
                log.warning("rolling back pod %s after a failed bind: %s", pod_key, error)
        if shared:
            try:
                self.configmaps.delete(pod)
            except ClusterError as error:
                log.warning("rolling back pod %s after a failed bind: its GPU-sharing ConfigMaps: %s", pod_key, error)

    def _held_groups(self) -> set[GroupOnNode]:
        """The GPU groups every bind under way holds (the caller holds the lock)."""
        return set().union(*self._held.values())

    def _release_leftovers(self, br: BindRequest) -> None:
        """Removes the reservation pods an earlier failed attempt for this pod could not, but those this attempt
        uses again: its own rollback answers for them (raises if it still cannot: one more failed attempt)."""
        with self._lock:
            groups = self._unreleased.get(br.pod_key)
            if groups is None:  # every bind asks: most have nothing left over
                return
            others = self._held_groups()
        self.reservations.release(groups - {(br.selected_node, group) for group in br.gpu_groups}, others)
        with self._lock:
            self._unreleased.pop(br.pod_key, None)

    def _allocate_claims(self, pod: Raw, allocations: list[Raw]) -> None:
        """Writes the devices chosen for the pod's DRA claims onto the claims and reserves them for the pod; a
        claim already allocated or reserved for it is left as it is, so a repeat changes nothing."""
        meta = pod["metadata"]
        names_to_claims = {
            entry.get("name"): entry.get("resourceClaimName")
            for entry in (pod.get("status") or {}).get("resourceClaimStatuses") or []
        }
        names_to_claims.update(
            (entry.get("name"), entry.get("resourceClaimName"))
            for entry in (pod.get("spec") or {}).get("resourceClaims") or []
            if entry.get("resourceClaimName")
        )
        uid = meta.get("uid", meta["name"])
        for allocation in allocations:
            claim_name = names_to_claims.get(allocation.get("name"))
            key = f"{meta['namespace']}/{claim_name}"
            claim = self.cluster.get("ResourceClaim", key) if claim_name else None
            if claim is None:
                continue
            status = claim.get("status") or {}
            patch: Raw = {}
            if not status.get("allocation"):
                patch["allocation"] = allocation.get("allocation") or {}
            if all(c.get("uid") != uid for c in status.get("reservedFor") or []):
                patch["reservedFor"] = [{"resource": "pods", "name": meta["name"], "uid": uid}]
            if patch:
                self.cluster.patch_status("ResourceClaim", key, patch, strategic=True)

    # ------------------------------------------------------------------------------------------- outcomes

    def _delete_invalid(self, request: Raw, error: InvalidObject) -> None:
        """A request the scheduler cannot read either blocks its pod: deleted, so that the scheduler writes a valid
        one (KAI deletes an invalid request too)."""
        log.warning(
            "bind request %s is invalid (%s); deleted so that the scheduler writes a valid one", _key(request), error
        )
        try:
            self.cluster.delete("BindRequest", _key(request))
        except ClusterError as failure:
            log.warning("bind request %s could not be deleted: %s; tried again later", _key(request), failure)
            self._schedule(request, self.now() + MAX_RETRY_DELAY_S)

    def _failed(self, request: Raw, br: BindRequest, error: Exception) -> None:
        """Records a failed attempt: Failed status with the reason, a retry if the backoff limit allows one."""
        spec = request.get("spec") or {}
        limit = br.backoff_limit
        attempts = br.failed_attempts + 1
        terminal = isinstance(error, BindFailure)
        if terminal:
            attempts = max(attempts, limit)
        reason = str(error) or type(error).__name__
        with self._lock:
            unreleased = br.pod_key in self._unreleased
        retry = attempts < limit
        delay = retry_delay_s(attempts)
        if retry:
            outcome = f"attempt {attempts} of {limit}, retried in {delay:.0f}s"
        elif unreleased:  # given up, the GPU would look free to the scheduler while its reservation pod holds it
            outcome = f"kept and tried again in {delay:.0f}s: its reservation pods could not be removed"
        else:
            outcome = "not retried: the scheduler will place the pod again"
        line = "bind request %s (pod %s/%s, node %s) failed: %s; %s"
        args = (_key(request), _namespace(request), spec.get("podName"), spec.get("selectedNode"), reason, outcome)
        if terminal or isinstance(error, ClusterError):
            log.warning(line, *args)
        else:  # not an expected failure: a bug, shown with its traceback
            log.exception(line, *args)
        if not (isinstance(error, BindFailure) and error.pod_changed):
            message = f"Failed to bind pod {br.pod_key} to node {br.selected_node}: {reason}"
            self._report(br, "False", "BindingError", message)
        if not retry and unreleased:
            self._schedule(request, self.now() + delay)
            return
        self._finish(request, {"phase": "Failed", "reason": reason, "failedAttempts": attempts}, delay)
        if retry:
            self._schedule(request, self.now() + delay)

    def _finish(self, request: Raw, status: Raw, retry_in_s: float) -> None:
        """Writes the request's status, unless the request was deleted or replaced meanwhile; if the write itself
        fails, the request is tried again after ``retry_in_s``."""
        key = _key(request)
        current = self.cluster.get("BindRequest", key)
        if current is None or _uid(current) != _uid(request):
            return
        try:
            self.cluster.patch_status("BindRequest", key, status)
        except NotFound:
            return
        except ClusterError as error:
            log.warning("bind request %s: its status could not be written: %s; tried again later", key, error)
            self._schedule(request, self.now() + retry_in_s)

    def _schedule(self, request: Raw, when: float) -> None:
        with self._lock:
            tracked = self._requests.get(_key(request))
            if tracked is not None and _uid(tracked.request) == _uid(request):
                tracked.next_attempt = when

    def _report(self, br: BindRequest, status: str, reason: str, message: str) -> None:
        """The outcome on the pod, as KAI's binder reports it: the ``PodBound`` condition (merged into the pod's
        conditions by type; written before the request's status, so a Succeeded request's pod shows it) and an
        event of the same reason."""
        pod = self.cluster.get("Pod", br.pod_key)
        if pod is None:
            return
        condition = {
            "type": "PodBound",
            "status": status,
            "reason": reason,
            "message": message,
            "lastTransitionTime": format_time(self.now()),
        }
        try:
            self.cluster.patch_status("Pod", br.pod_key, {"conditions": [condition]}, strategic=True)
        except NotFound:
            return
        except ClusterError as error:
            log.warning("pod %s: its PodBound condition could not be written: %s", br.pod_key, error)
        self.events.record(ObjectRef.of("Pod", pod), "Normal" if status == "True" else "Warning", reason, message)


def _settled(request: Mapping[str, Any]) -> bool:
    """Succeeded, or Failed with no attempt left (KAI's BindRequestInfo.IsFailed)."""
    try:
        bind_request = parse_bind_request(request)
    except InvalidObject:  # to be deleted (see Binder._delete_invalid)
        return False
    return bind_request.phase == "Succeeded" or bind_request.failed


def _key(obj: Mapping[str, Any]) -> str:
    return f"{_namespace(obj)}/{obj['metadata']['name']}"


def _namespace(obj: Mapping[str, Any]) -> str:
    return str(obj["metadata"].get("namespace", ""))


def _uid(obj: Mapping[str, Any]) -> Any:
    return (obj.get("metadata") or {}).get("uid")


def _owner_uid(request: Raw) -> str:
    """The uid of the pod the request was made for (its owner reference), if it names one."""
    for owner in (request.get("metadata") or {}).get("ownerReferences") or []:
        if owner.get("kind") == "Pod":
            return str(owner.get("uid") or "")
    return ""

"""Sending a cycle's evictions (KAI's evictor; kai's way, ``docs/deviations.md``).

KAI deletes every victim pod at once. kai sends each decision — a preemptor's victims, or a stale gang's pods — as
one unit through the Eviction API (``pods/eviction``), so that the API server enforces PodDisruptionBudgets: the
victims a PDB covers go first, one at a time (two or more are first asked together in a dry run), then the others.
A refusal (the PDB's status moved since the scheduler read it) withdraws the rest of that decision for the cycle:
the preemptor was only pipelined, so it simply waits for the next cycle, and no gang is left half evicted by the
victims still to come. With ``disruption.podDisruptionBudgets: false`` pods are deleted, as KAI does.

A victim podgroup the cycle evicted whole whose workload opted in to suspension is suspended instead, once, before
the decisions (its controller deletes its pods): its pods are recorded on its PodGroup first, so that the scheduler
can tell when they fit again and resume it. If the workload cannot be suspended its pods are evicted.

Every eviction is told as KAI's ``Evict`` event on the pod and its PodGroup, kai's audit line first (who, why), and
the PodGroup gets the record ``kai explain`` shows (``kai.scheduler/eviction-record``), in the same patch as KAI's
last-eviction time.
"""

import json
import logging
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kai.cluster.port import ClusterClient, ClusterError, EvictionRefused, Raw
from kai.components.shared.parallel import Writes
from kai.core.framework.decisions import Eviction
from kai.core.model import names
from kai.core.model.meta import format_time
from kai.core.model.objects import OwnerRef, recent_evictions
from kai.core.model.suspension import record, suspend_patch

log = logging.getLogger(__name__)
EventFn = Callable[[str, str, str, str, str], None]
"""(kind, key, type, reason, message): the writer's event recorder."""
MINUTE_S = 60.0
RECORD = names.EVICTION_RECORD_ANNOTATION


@dataclass
class Sent:
    """What became of a cycle's evictions."""

    evicted: list[Eviction] = field(default_factory=list)
    refused: list[tuple[Eviction, str]] = field(default_factory=list)
    """Evictions not sent: the API server refused one of their decision (the reason), or this one."""
    suspended: set[str] = field(default_factory=set)
    """PodGroups whose workload was suspended (instead of their pods evicted)."""

    def outcomes(self) -> list[tuple[str, str]]:
        """(action, evicted | suspended | refused) per pod, for metrics."""
        done = [(e.action, "suspended" if e.podgroup_key in self.suspended else "evicted") for e in self.evicted]
        return done + [(e.action, "refused") for e, _ in self.refused]


class Evictor:
    def __init__(self, cluster: ClusterClient, event: EventFn, now: Callable[[], float], through_api: bool) -> None:
        self.cluster = cluster
        self.event = event
        self.now = now
        self.through_api = through_api
        self._sent: deque[tuple[float, int]] = deque()
        """(time, pods) of the evictions sent in the last minute: the per-minute eviction budget."""
        self.last = Sent()

    def recent(self, now: float) -> int:
        """Pods evicted (sent) in the minute before ``now``."""
        while self._sent and self._sent[0][0] <= now - MINUTE_S:
            self._sent.popleft()
        return sum(count for _, count in self._sent)

    def send(self, evictions: list[Eviction], last_eviction: dict[str, float], writes: Writes) -> Sent:
        """Every decision as one unit (``writes`` runs decisions side by side), each podgroup to suspend once (the
        cycle may have taken its pods for several preemptors), then each victim PodGroup's annotations;
        ``last_eviction``: KAI's last-eviction time of the podgroups whose preemption delay it re-arms."""
        sent = Sent()
        suspending: dict[str, list[Eviction]] = {}
        for eviction in evictions:
            if eviction.suspend is not None:
                suspending.setdefault(eviction.podgroup_key, []).append(eviction)
        writes.each("suspend", list(suspending.values()), lambda group: self._suspended(group, sent))
        others = [e for e in evictions if e.podgroup_key not in sent.suspended]
        writes.each("evict", _decisions(others), lambda decision: self._decision(decision, sent))
        self._sent.append((self.now(), len(sent.evicted)))
        stamped = self._records(sent, last_eviction)
        writes.each("eviction record", stamped.items(), lambda item: self._annotate(*item))
        self.last = sent
        return sent

    def _suspended(self, group: list[Eviction], sent: Sent) -> None:
        if self._suspend(group):
            sent.evicted.extend(group)
            sent.suspended.add(group[0].podgroup_key)

    def _decision(self, decision: list[Eviction], sent: Sent) -> None:
        """The PDB-covered pods first (a refusal stops the rest), then the others."""
        covered = [e for e in decision if e.budgets]
        if len(covered) > 1 and self.through_api and (refusal := self._dry_run(covered)):
            self._refused(decision, refusal, sent)
            return
        for index, eviction in enumerate([*covered, *(e for e in decision if not e.budgets)]):
            try:
                self._evict(eviction)
            except EvictionRefused as refused:
                if index >= len(covered):  # a PDB the scheduler did not see: this pod only
                    sent.refused.append((eviction, str(refused)))
                    continue
                taken = set(map(id, covered[:index]))
                self._refused([e for e in decision if id(e) not in taken], str(refused), sent)
                return
            except ClusterError as error:
                log.error("evict %s failed: %s", eviction.pod_key, error)
                sent.refused.append((eviction, str(error)))
                continue
            sent.evicted.append(eviction)
            self._told(eviction)

    def _evict(self, eviction: Eviction) -> None:
        namespace, _, name = eviction.pod_key.partition("/")
        if self.through_api:
            self.cluster.evict(namespace, name)
        else:
            self.cluster.delete("Pod", eviction.pod_key)

    def _dry_run(self, covered: list[Eviction]) -> str:
        """The first refusal of a dry run of each covered eviction ("" when all would go)."""
        for eviction in covered:
            namespace, _, name = eviction.pod_key.partition("/")
            try:
                self.cluster.evict(namespace, name, dry_run=True)
            except EvictionRefused as refused:
                return str(refused)
        return ""

    def _refused(self, withdrawn: list[Eviction], why: str, sent: Sent) -> None:
        """The rest of a decision withdrawn for this cycle: said on the preemptor's PodGroup and the victims'."""
        sent.refused.extend((eviction, why) for eviction in withdrawn)
        first = withdrawn[0]
        text = f"{first.audit}: withdrawn this cycle, the API server refused an eviction: {why}"
        if first.evictor:
            self.event("PodGroup", first.evictor, "Warning", "EvictionRefused", text)
        for podgroup in sorted({e.podgroup_key for e in withdrawn}):
            self.event("PodGroup", podgroup, "Warning", "EvictionRefused", text)

    def _told(self, eviction: Eviction) -> None:
        message = f"{eviction.audit}\n{eviction.message}" if eviction.message else eviction.audit
        self.event("Pod", eviction.pod_key, "Normal", "Evict", message)
        self.event("PodGroup", eviction.podgroup_key, "Normal", "Evict", message)

    def _suspend(self, group: list[Eviction]) -> bool:
        """Suspends the workload of a podgroup evicted whole: its pods recorded on the PodGroup first (so that a
        suspension is never without its record), then the workload's ``suspend`` set; on failure the record is
        taken back and False returned (its pods are then evicted)."""
        owner = group[0].suspend
        patch = suspend_patch(owner.api_version, owner.kind, True) if owner is not None else None
        if owner is None or patch is None:
            return False
        pods = [pod for e in group if (pod := self.cluster.get("Pod", e.pod_key)) is not None]
        key = group[0].podgroup_key
        namespace = key.partition("/")[0]
        try:
            found = workload(self.cluster, owner, namespace)
            if found is None:
                raise ClusterError(f"{owner.api_version} {owner.kind} {namespace}/{owner.name} not found")
            self.cluster.patch_merge("PodGroup", key, _annotation(names.SUSPENDED_PODS_ANNOTATION, record(pods)))
            self.cluster.patch_merge(found[0], f"{namespace}/{owner.name}", patch)
        except ClusterError as error:
            log.warning("suspend %s of PodGroup %s failed, its pods are evicted: %s", owner.name, key, error)
            try:
                self.cluster.patch_merge("PodGroup", key, _annotation(names.SUSPENDED_PODS_ANNOTATION, None))
            except ClusterError as again:
                log.error("PodGroup %s keeps a suspension record that failed: %s", key, again)
            return False
        for eviction in group:
            self._told(eviction)
        self.event("PodGroup", key, "Normal", "Suspended", f"{group[0].audit}: {_workload(owner)} suspended")
        return True

    def _records(self, sent: Sent, last_eviction: dict[str, float]) -> dict[str, dict[str, str | None]]:
        """Per victim PodGroup, the annotations to write: kai's eviction record, and KAI's last-eviction time."""
        now = self.now()
        by_podgroup: dict[str, list[Eviction]] = {}
        for eviction in sent.evicted:
            by_podgroup.setdefault(eviction.podgroup_key, []).append(eviction)
        annotations: dict[str, dict[str, str | None]] = {}
        for key, group in by_podgroup.items():
            first = group[0]
            earlier = recent_evictions(
                _annotations(self.cluster.get("PodGroup", key)).get(names.EVICTION_RECORD_ANNOTATION, "")
            )
            recent = [[format_time(at), pods] for at, pods in earlier if at > now - MINUTE_S]
            entry = {
                "at": format_time(now),
                "action": first.action,
                "by": first.evictor,
                "why": first.why,
                "pods": len(group),
                "suspended": _workload(first.suspend) if key in sent.suspended else "",
                "recent": [*recent, [format_time(now), len(group)]],
            }
            annotations[key] = {names.EVICTION_RECORD_ANNOTATION: json.dumps(entry)}
            if key in last_eviction:
                annotations[key][names.LAST_EVICTION_ANNOTATION] = format_time(last_eviction[key])
        return annotations

    def _annotate(self, key: str, annotations: dict[str, str | None]) -> None:
        self.cluster.patch_merge("PodGroup", key, {"metadata": {"annotations": annotations}})


def workload(cluster: ClusterClient, owner: OwnerRef, namespace: str) -> tuple[str, Raw] | None:
    """The workload an owner reference names, and the cluster-port kind it is read and patched under: its bare kind
    (one of kai's own kinds, and every kind in the embedded cluster), else ``Kind.version.group`` (a custom
    resource, as the kube adapter reads it); None when it is not there."""
    group, _, version = owner.api_version.rpartition("/")
    for kind in (owner.kind, f"{owner.kind}.{version}.{group}") if group else (owner.kind,):
        try:
            found = cluster.get(kind, f"{namespace}/{owner.name}")
        except ValueError:  # the kube adapter does not know the bare kind
            continue
        if found is not None and str(found.get("apiVersion") or owner.api_version).rpartition("/")[0] == group:
            return kind, found
    return None


def _decisions(evictions: list[Eviction]) -> list[list[Eviction]]:
    """Evictions by decision: a preemptor's (action, evictor), or a podgroup's own (stale gangs)."""
    units: dict[tuple[str, str], list[Eviction]] = {}
    for eviction in evictions:
        units.setdefault((eviction.action, eviction.evictor or eviction.podgroup_key), []).append(eviction)
    return list(units.values())


def _annotations(obj: Mapping[str, Any] | None) -> Mapping[str, str]:
    return ((obj or {}).get("metadata") or {}).get("annotations") or {}


def _annotation(key: str, value: str | None) -> dict[str, object]:
    return {"metadata": {"annotations": {key: value}}}


def _workload(owner: OwnerRef | None) -> str:
    return f"{owner.kind} {owner.name}" if owner is not None else ""

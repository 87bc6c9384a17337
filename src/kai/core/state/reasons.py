"""Typed reasons a podgroup or a pod waits, with their evidence and the nearest fix.

KAI explains a waiting podgroup in free text (events, conditions); kai keeps those texts byte for byte and puts a
typed reason beside each: a kind from a fixed set, the evidence (names, and numbers in the units KAI's messages
use), and, where one exists, the nearest fix: the smallest change that would let it start now. The texts of both
are rendered in one place (``reason_text``); ``kai explain``, ``kai queues`` and the scheduler's endpoints read the
typed form. Reasons are plain data (no references into a session), so a cycle's result can be kept and served.
"""

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

Evidence = Mapping[str, Any]


class ReasonKind(StrEnum):
    INVALID_OBJECT = "InvalidObject"
    QUEUE_UNUSABLE = "QueueUnusable"
    TOO_LARGE = "TooLargeForAnyNode"
    GANG_INCOMPLETE = "GangIncomplete"
    SUSPENDED = "Suspended"
    QUEUE_ADMISSION = "WaitingForQueueAdmission"
    SCHEDULING_GATE = "SchedulingGate"
    DRA = "DynamicResources"
    CONFIG_MAP = "ConfigMapMissing"
    QUEUE_LIMIT = "QueueLimit"
    NON_PREEMPTIBLE_OVER_QUOTA = "NonPreemptibleOverQuota"
    TOPOLOGY = "TopologyDomain"
    RECLAIMABLE_AFTER_DELAY = "ReclaimableAfterDelay"
    PREEMPTION_DELAY = "PreemptionDelay"
    PREEMPTION_NEVER = "PreemptionPolicyNever"
    MIN_RUNTIME = "VictimsProtectedByMinRuntime"
    DISRUPTION_BUDGET = "VictimsProtectedByDisruptionBudget"
    EVICTION_BUDGET = "EvictionBudgetSpent"
    FAIR_SHARE = "FairShareBelowRequest"
    GANG_SHORT = "GangShort"
    GPU_SHARING = "GpuSharingFit"
    NODE_FIT = "NodeFit"
    PIPELINED = "WaitingForReleasingResources"
    UNKNOWN = "Unknown"


SEVERITY = tuple(ReasonKind)
"""Headline order, most decisive first: an object kai cannot use or a queue it cannot use trumps everything; a
reason with a known end (a delay, a protected victim) comes before the node-fit facts it explains."""


class FixKind(StrEnum):
    FIX_FIELD = "FixField"
    CREATE_QUEUE = "CreateQueue"
    REQUEST_AT_MOST = "RequestAtMost"
    CREATE_PODS = "CreatePods"
    REMOVE_GATES = "RemoveSchedulingGates"
    ENABLE_FEATURE_GATE = "EnableFeatureGate"
    CREATE_CLAIM = "CreateResourceClaim"
    CREATE_CONFIG_MAP = "CreateConfigMap"
    LABEL_CLAIM = "LabelResourceClaim"
    FREE_CLAIM = "FreeResourceClaim"
    RAISE_QUEUE_LIMIT = "RaiseQueueLimit"
    RAISE_QUEUE_QUOTA = "RaiseQueueQuota"
    MAKE_PREEMPTIBLE = "MakePreemptible"
    CREATE_TOPOLOGY = "CreateTopology"
    FREE_IN_DOMAIN = "FreeInDomain"
    RECLAIM_AFTER = "ReclaimAfterDelay"
    WAIT_UNTIL = "WaitUntil"
    WAIT_FOR_JOB = "WaitForJob"
    FREE_ON_NODE = "FreeOnNode"
    FREE_GPU_MEMORY = "FreeGpuMemory"
    TOLERATE_TAINT = "TolerateTaint"
    MATCH_NODE = "MatchNodeAffinity"
    WAIT_FOR_NODE = "WaitForNodeReady"
    RESOLVE_ON_NODE = "ResolveOnNode"
    WAIT_FOR_EVICTIONS = "WaitForEvictions"
    WAIT_FOR_DISRUPTIONS = "WaitForDisruptionBudget"
    WAIT_FOR_EVICTION_BUDGET = "WaitForEvictionBudget"
    WAIT_FOR_ROOM = "WaitForFreeRoom"


class Predicate(StrEnum):
    """What refused a pod on a node (or on every node, for the pre-predicates)."""

    RESOURCES = "Resources"
    NODE_AFFINITY = "NodeAffinity"
    TAINT = "Taint"
    NOT_READY = "NodeNotReady"
    GPU_KIND = "GpuKind"
    HOST_PORTS = "HostPorts"
    POD_AFFINITY = "PodAffinity"
    QUEUE_CAPACITY = "QueueCapacityOnNode"
    CLAIM_ON_NODE = "ResourceClaimOnNode"
    GPU_SHARING = "GpuSharing"
    TOO_LARGE = "MaxNodePoolResources"
    DRA = "DynamicResources"
    CONFIG_MAP = "ConfigMap"
    NUMA = "NUMA"
    OTHER = "Other"


@dataclass(frozen=True, slots=True, eq=True)
class Fix:
    kind: FixKind
    evidence: Evidence = field(default_factory=dict)


@dataclass(frozen=True, slots=True, eq=True)
class Reason:
    kind: ReasonKind
    evidence: Evidence = field(default_factory=dict)
    fixes: tuple[Fix, ...] = ()
    """Nearest first."""
    children: tuple["Reason", ...] = ()
    """The facts this reason rests on (the pod that did not fit, the domains tried)."""

    @property
    def fix(self) -> Fix | None:
        """This reason's nearest fix, else the first of its children's."""
        if self.fixes:
            return self.fixes[0]
        return next((child.fix for child in self.children if child.fix is not None), None)


class Refusal(str):
    """KAI's text for one refusal (a node predicate or a pre-predicate) carrying its predicate and evidence.

    It is the text wherever texts are counted, joined and printed, so those stay KAI's byte for byte; only the
    code that explains a failure reads ``predicate`` and ``evidence``."""

    predicate: Predicate
    evidence: Evidence

    def __new__(cls, text: str, predicate: Predicate, evidence: Evidence | None = None) -> "Refusal":
        refusal = super().__new__(cls, text)
        refusal.predicate = predicate
        refusal.evidence = evidence or {}
        return refusal

    def __reduce__(self) -> tuple[type["Refusal"], tuple[str, Predicate, Evidence]]:
        return (Refusal, (str(self), self.predicate, self.evidence))


def predicate_of(text: str) -> Predicate:
    return text.predicate if isinstance(text, Refusal) else Predicate.OTHER


def headline_order(reasons: Iterable[Reason]) -> tuple[Reason, ...]:
    """Most decisive first (``SEVERITY``), equal kinds in the order given, repeats dropped."""
    unique: list[Reason] = []
    for reason in reasons:
        if reason not in unique:
            unique.append(reason)
    return tuple(sorted(unique, key=lambda reason: SEVERITY.index(reason.kind)))


def nearest_fix(reasons: Iterable[Reason]) -> Fix | None:
    """The fix of the most decisive reason that has one."""
    return next((reason.fix for reason in headline_order(reasons) if reason.fix is not None), None)


QUANTITIES = (("CPU", "cores", 1000.0), ("memory", "GB", 1e9), ("GPU", "GPUs", 1.0))
"""(resource, unit, scheduler units per display unit) of the proportion triples (millicores, bytes, GPUs)."""


def amount(value: float, scale: float = 1.0) -> float:
    """A quantity in display units, rounded as KAI's messages round (3 decimals); -1 stays unlimited."""
    return -1.0 if value == -1 else round(float(value) / scale, 3)


def invalid_object(obj: str, field_name: str, problem: str) -> Reason:
    """An object kai skips (it names the field and what is allowed): fixing that field is the fix."""
    evidence = {"object": obj, "field": field_name, "problem": problem}
    return Reason(ReasonKind.INVALID_OBJECT, evidence, (Fix(FixKind.FIX_FIELD, evidence),))


def pipelined(nodes: Iterable[str]) -> Reason:
    """A job placed on resources still held by pods being evicted: it starts once they are gone."""
    names = sorted(set(nodes))
    return Reason(ReasonKind.PIPELINED, {"nodes": names}, (Fix(FixKind.WAIT_FOR_EVICTIONS, {"nodes": names}),))

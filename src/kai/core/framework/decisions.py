"""What a cycle decided, as data: the writer turns it into BindRequests, deletions, events and conditions."""

from collections import Counter
from dataclasses import dataclass, field

from kai.core.model.numa import NumaPlacement
from kai.core.model.objects import OwnerRef
from kai.core.state.numa_ledger import NumaLedger
from kai.core.state.reasons import Fix, Reason, nearest_fix


@dataclass(frozen=True, slots=True)
class ClaimAllocation:
    """Devices allocated to one of a pod's DRA claims (``name`` is the pod's name for the claim)."""

    name: str
    claim: str
    results: tuple[tuple[str, str, str, str], ...]
    """(request, driver, pool, device) per allocated device."""


@dataclass(frozen=True, slots=True)
class Bind:
    """Bind a pod to a node (KAI's BindRequest spec)."""

    pod_key: str
    pod_uid: str
    node: str
    received_resource_type: str
    gpu_count: int
    gpu_portion: float
    gpu_groups: tuple[str, ...]
    claim_allocations: tuple[ClaimAllocation, ...] = ()
    podgroup_key: str = ""
    numa_zones: NumaPlacement = ()
    """The NUMA zones the ``numa`` plugin predicts the pod's resources come from (``spec.predictedNUMAZones``)."""


@dataclass(frozen=True, slots=True)
class Eviction:
    pod_key: str
    podgroup_key: str
    node: str
    action: str
    message: str
    """KAI's text (its Evict event's message)."""
    evictor: str
    """The podgroup the pod is evicted for ("" for stale-gang eviction)."""
    why: str = ""
    """kai's account of why, for the audit: "team-vision over its fair share by 6 GPUs"."""
    budgets: tuple[str, ...] = ()
    """The PodDisruptionBudgets covering the pod, as the cycle saw them: the writer evicts those pods first."""
    suspend: OwnerRef | None = None
    """The workload to suspend instead of deleting the pod (its podgroup is evicted whole and opted in)."""

    @property
    def audit(self) -> str:
        """Who and why, one line: "evicted by reclaim for team-llm/llama-finetune: team-vision over ..."."""
        by = f"evicted by {self.action}" + (f" for {self.evictor}" if self.evictor else "")
        return f"{by}: {self.why}" if self.why else by


@dataclass(frozen=True, slots=True)
class Pipeline:
    pod_key: str
    node: str
    message: str
    podgroup_key: str = ""


@dataclass(frozen=True, slots=True)
class Unschedulable:
    """A podgroup that could not be scheduled, with KAI's reason code and rendered messages, and beside them the
    typed reasons, most decisive first."""

    podgroup_key: str
    reason: str
    message: str
    detailed_message: str
    reasons: tuple[Reason, ...] = ()
    event: tuple[str, str] | None = None
    """KAI's own event for the podgroup in place of ``Unschedulable`` (reason, message): ``NotReady`` with its
    message for a gang with fewer pods than it needs, as KAI's status updater records it."""

    @property
    def nearest_fix(self) -> Fix | None:
        return nearest_fix(self.reasons)


@dataclass
class ScenarioSearchStats:
    """What the bounded victim search did this cycle (KAI's ``scenario_search_*`` metrics)."""

    jobs: Counter[tuple[str, str, bool]] = field(default_factory=Counter)
    """(action, result, reduced budget) per pending job searched for."""
    scenarios: Counter[tuple[str, str, str]] = field(default_factory=Counter)
    """(action, generator, state): emitted, simulated, duplicate, validator_rejected."""
    durations: list[tuple[str, str, str, float]] = field(default_factory=list)
    """(action, generator, result, seconds) of each generator attempt."""
    budget_exhausted: Counter[str] = field(default_factory=Counter)
    """Actions whose whole search budget ran out."""
    filtered: Counter[str] = field(default_factory=Counter)
    """Accumulated scenarios a filter passed over, per action."""


@dataclass
class CycleResult:
    binds: list[Bind] = field(default_factory=list)
    bound: set[str] = field(default_factory=set)
    """The pods of ``binds``: placed by this cycle, nothing of them runs yet."""
    evictions: list[Eviction] = field(default_factory=list)
    pipelined: list[Pipeline] = field(default_factory=list)
    started: dict[str, float] = field(default_factory=dict)
    """Podgroups that started running this cycle, with the new last-start timestamp."""
    stale_since: dict[str, float | None] = field(default_factory=dict)
    """Podgroups whose staleness timestamp changed (None: no longer stale)."""
    last_eviction: dict[str, float] = field(default_factory=dict)
    """Podgroups that lost pods to reclaim, preempt or consolidation this cycle, with the time: it re-arms their
    preemption delay (KAI's last-eviction-timestamp annotation)."""
    unschedulable: dict[str, Unschedulable] = field(default_factory=dict)
    pod_errors: dict[str, str] = field(default_factory=dict)
    """Why each still-pending pod of an unschedulable podgroup waits (the pod event / condition message)."""
    pod_reasons: dict[str, Reason] = field(default_factory=dict)
    """The typed form of ``pod_errors``: the pod's own reason where it has one, else its podgroup's headline."""

    def pipelined_podgroups(self) -> dict[str, tuple[str, ...]]:
        """The podgroups this cycle pipelined, each with the nodes of its pipelined pods (one a pod): the next
        cycle's ``ClusterInfo.pipelined_before``."""
        nodes: dict[str, list[str]] = {}
        for pipeline in self.pipelined:
            nodes.setdefault(pipeline.podgroup_key, []).append(pipeline.node)
        return {key: tuple(names) for key, names in nodes.items()}

    events_only: set[str] = field(default_factory=set)
    """Pods of podgroups with ``markUnschedulable: false``: they get the event but no PodScheduled condition."""
    bind_requests_to_delete: list[str] = field(default_factory=list)
    scheduled: dict[str, int] = field(default_factory=dict)
    """Podgroups each action placed or found room for (KAI's podgroups_scheduled_by_action)."""
    search: ScenarioSearchStats = field(default_factory=ScenarioSearchStats)
    action_ms: dict[str, float] = field(default_factory=dict)
    open_ms: float = 0.0
    close_ms: float = 0.0
    skipped: list[str] = field(default_factory=list)
    """Configured plugins and actions kai does not implement yet; they were not run."""
    ungated: list[str] = field(default_factory=list)
    """Pods whose queue-admission gate the ``ungate`` action lifts (their queue admits them)."""
    numa: dict[str, NumaLedger] = field(default_factory=dict)
    """The ``numa`` plugin's NUMA zones per node, as the cycle leaves them (what it predicts they hold)."""

"""The Session: one scheduling cycle's snapshot plus the hooks plugins register (KAI's extension points).

Plugins only add functions to the hook lists in ``on_session_open``; actions call the combined hooks. Node-level
hooks are vectorised: they take and return arrays over all nodes of the node table.
"""

from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass
from functools import cmp_to_key
from typing import Any, Protocol

import numpy as np

from kai.core.framework.config import SchedulerConfig
from kai.core.framework.decisions import ClaimAllocation, CycleResult
from kai.core.framework.disruption import Disruption, Protected
from kai.core.framework.signatures import Footprints
from kai.core.framework.usage.usage_store import AllocationSample
from kai.core.model.numa import NumaPlacement
from kai.core.state.fit_errors import JobFitError
from kai.core.state.node_table import Mask, NodeInfo, NodeTable
from kai.core.state.placed_pods import PlacedPods
from kai.core.state.podgroup_info import Member, PodGroupInfo, PodSet, SubGroupSet
from kai.core.state.queue_info import QueueInfo
from kai.core.state.reasons import Reason
from kai.core.state.resource_index import Vector
from kai.core.state.snapshot import ClusterInfo
from kai.core.state.task import TaskInfo

Cmp = Callable[[Any, Any], int]


class QueueOrderFn(Protocol):
    def __call__(
        self,
        left: QueueInfo,
        right: QueueInfo,
        left_job: PodGroupInfo | None,
        right_job: PodGroupInfo | None,
        left_victims: list[PodGroupInfo],
        right_victims: list[PodGroupInfo],
    ) -> int: ...


@dataclass(frozen=True, slots=True)
class Exclusion:
    """The nodes a static filter keeps for a task. KAI counts every node it excludes under one text, the first
    excluded node's (``reason``); ``by_reason`` keeps each reason's own nodes, for explaining."""

    allowed: Mask
    reason: str
    by_reason: tuple[tuple[str, Mask], ...] = ()


class NodeFilter(Protocol):
    """Static per-task node mask (affinity, taints, node kind)."""

    def __call__(self, task: TaskInfo, job: PodGroupInfo) -> Exclusion | None: ...


Predicate = Callable[[TaskInfo, PodGroupInfo, NodeInfo], str | None]
"""Per-node check that depends on what is placed (host ports, pod affinity); returns the reason or None."""
CapacityCheck = Callable[[PodGroupInfo, list[TaskInfo]], JobFitError | None]
WaitReasonFn = Callable[[PodGroupInfo, Sequence[Reason]], list[Reason]]
"""A plugin's own typed reasons for a job that still waits at session close, given the reasons found so far (KAI
says nothing about them: protected victims, a fair share too small to reclaim)."""
SubsetNodes = Callable[[PodGroupInfo, "SubGroupSet | PodSet", list[PodSet], list[TaskInfo], Mask], list[Mask]]
"""Split a node set into candidate node sets for a (sub-)group (topology domains); [] when none fits."""


def placed_on(ssn: "Session", task: TaskInfo) -> NodeInfo | None:
    """The node the task is placed on in the session (its own terms are then among the placed pods'), else None."""
    node = ssn.nodes.by_name.get(task.node_name) if task.node_name else None
    return node if node is not None and node.tasks.get(task.key) is task else None


class Plugin(Protocol):
    name: str

    def on_session_open(self, ssn: "Session") -> None: ...


class Session:
    def __init__(
        self, cluster: ClusterInfo, config: SchedulerConfig, now: float, clock: Callable[[], float] = lambda: 0.0
    ) -> None:
        """``now`` is the scheduler's time (timestamps, delays); ``clock`` a monotonic clock in seconds for search
        budgets (a constant one, the default, never runs them out)."""
        self.cluster = cluster
        self.config = config
        self.now = now
        self.clock = clock
        self.nodes: NodeTable = cluster.nodes
        self.result = CycleResult()
        self.job_order_keys: list[Callable[[PodGroupInfo], Any]] = []
        self.task_order_fns: list[Cmp] = []
        self.subgroup_order_fns: list[Cmp] = []
        self.queue_order_fns: list[QueueOrderFn] = []
        self.pre_predicates: list[Callable[[TaskInfo, PodGroupInfo], str | None]] = []
        self.victim_invariant_fns: list[Callable[[TaskInfo], str | None]] = []
        """Pre-predicates no eviction can change: a job failing one is not tried by reclaim, preempt or
        consolidation (the failure text goes into its fit errors)."""
        self.node_filters: list[NodeFilter] = []
        self.predicates: list[Predicate] = []
        self.node_pre_order_fns: list[Callable[[TaskInfo, Mask], None]] = []
        self.node_order_fns: list[Callable[[TaskInfo, Mask], Vector]] = []
        self.gpu_order_fns: list[Callable[[TaskInfo, NodeInfo, str], float]] = []
        self.job_over_capacity_fns: list[CapacityCheck] = []
        self.non_preemptible_over_quota_fns: list[CapacityCheck] = []
        self.task_over_capacity_on_node_fns: list[Callable[[TaskInfo, PodGroupInfo, NodeInfo], JobFitError | None]] = []
        self.allocate_handlers: list[Callable[[TaskInfo], None]] = []
        self.deallocate_handlers: list[Callable[[TaskInfo], None]] = []
        self.queue_share_fns: list[Callable[[str], dict[str, dict[str, float]]]] = []
        self.queue_order_terms_fns: list[Callable[[str, PodGroupInfo], dict[str, Any]]] = []
        """What the queue order reads of a queue with a job as its next (``kai explain``'s order key)."""
        self.allocation_sample_fns: list[Callable[[], AllocationSample]] = []
        """The cluster's capacity and every queue's allocation at session open (what time-based fair share records)."""
        self.can_reclaim_fns: list[Callable[[PodGroupInfo], bool]] = []
        self.reclaim_validators: list[Callable[[Any], bool]] = []
        self.preempt_validators: list[Callable[[Any], bool]] = []
        self.reclaim_yield_fns: list[Callable[[PodGroupInfo, str], Any]] = []
        """What the reclaim validators let a reclaimer take from a victim queue, for the search under way (a
        ``victims.hopeless.Yield``): proves searches hopeless before any simulation."""
        self.reclaim_victim_filters: list[Callable[[PodGroupInfo, PodGroupInfo], bool]] = []
        self.preempt_victim_filters: list[Callable[[PodGroupInfo, PodGroupInfo], bool]] = []
        self.job_solution_start_fns: list[Callable[[], None]] = []
        self.eviction_guards: list[Callable[[PodGroupInfo, list[TaskInfo]], bool]] = []
        """May these tasks of a job be evicted with no preemptor (kai's ``overlimiteviction``)? All must agree."""
        self.subset_nodes_fns: list[SubsetNodes] = []
        self.pre_job_allocation_fns: list[Callable[[PodGroupInfo], None]] = []
        self.wait_reason_fns: list[WaitReasonFn] = []
        self.numa_placement_fn: Callable[[TaskInfo, NodeInfo], NumaPlacement | None] | None = None
        """The NUMA zones a task would take on a node it is being placed on (one plugin's: KAI's NumaPlacementFn);
        stamped on the task before the statement places it, so that the allocate handlers only charge it."""
        self.node_affinity_masks: dict[Hashable, Mask] = {}
        """Nodes matching each distinct node selector and required node affinity (the victim search's filters)."""
        self.fix_cache: dict[Hashable, Any] = {}
        """Nearest fixes per pod shape and node-table state (``fit_reasons``): identical pods fail alike."""
        self.scenario_generators: list[tuple[str, Callable[[Any], Any]]] = []
        """Victim-scenario generators in plugin order (name, factory of a generator for one solve context)."""
        self.claim_allocations: dict[str, tuple[ClaimAllocation, ...]] = {}
        """DRA devices chosen for a placed pod's claims, carried into its BindRequest."""
        self._may_pend: dict[str, None] | None = None
        """Keys of the jobs that may have a pending task (``pending_jobs``), in ``jobs`` order once sorted."""
        self._may_pend_sorted = True
        self.committed: list[str] = []
        """Keys of the jobs whose pods each statement commit changed, in commit order (repeats allowed): what
        structures kept across commits read to catch up (``job_index``)."""
        self.order_keys: dict[str, tuple[int, tuple[Any, ...]]] = {}
        """Each session job's order key (``job_queue.order_key``), with the job's ``status_version`` it holds for."""
        self.footprints = Footprints()
        """Each job's scheduling signature and pending requests, for every evicting action's ``MinimalFailedJobs``."""
        self.disruption = Disruption(cluster, config.disruption, now)
        """PodDisruptionBudgets and the eviction budget: what the session may still evict (kai's)."""
        if self.disruption.by_namespace:
            self.reclaim_victim_filters.append(Protected(self.disruption, "reclaim"))
            self.preempt_victim_filters.append(Protected(self.disruption, "preempt"))
        self.wait_reason_fns.append(self.disruption.wait_reasons)
        self._placed_pods: PlacedPods | None = None
        self._positions: tuple[list[str], dict[str, int]] | None = None
        self.allocation_version = 0
        """Counts allocate and deallocate events: what queue order reads changes only with them (and with a job's
        own ``status_version``)."""
        self._preemptible: list[PodGroupInfo] | None = None

    @property
    def placed_pods(self) -> PlacedPods:
        """The placed pods indexed by label, for inter-pod affinity (built on first use, kept current with the
        node table)."""
        if self._placed_pods is None:
            self._placed_pods = PlacedPods(self.nodes)
        return self._placed_pods

    @property
    def jobs(self) -> dict[str, PodGroupInfo]:
        return self.cluster.jobs

    @property
    def queues(self) -> dict[str, QueueInfo]:
        return self.cluster.queues

    def pending_jobs(self) -> list[PodGroupInfo]:
        """The jobs with a pending task, in ``jobs`` order, without testing every job: the victim search asks once
        per simulation, and at 100,000 mostly running jobs that scan was a third of a reclaim."""
        jobs = self.jobs
        if self._may_pend is None:
            self._may_pend = {job.key: None for job in self.cluster.may_wait() if job.has_pending()}
        elif not self._may_pend_sorted:
            self._may_pend = dict.fromkeys(sorted(self._may_pend, key=self.cluster.job_order.__getitem__))
        self._may_pend_sorted = True
        pending = [jobs[key] for key in self._may_pend if jobs[key].has_pending()]
        if len(pending) < len(self._may_pend):  # a job leaves pending only by allocation; it returns via mark_pending
            self._may_pend = {job.key: None for job in pending}
        return pending

    def job_positions(self) -> tuple[list[str], dict[str, int]]:
        """The job keys in ``jobs`` order and each one's place in it, worked out once (every victim index reads them;
        not to be changed)."""
        if self._positions is None:
            order = list(self.jobs)
            self._positions = order, {key: i for i, key in enumerate(order)}
        return self._positions

    def preemptible_jobs(self) -> list[PodGroupInfo]:
        """The preemptible jobs in ``jobs`` order, found once (a job's preemptibility is fixed): the only jobs that
        may lose pods, of some ten thousand among a hundred thousand."""
        if self._preemptible is None:
            self._preemptible = [job for job in self.jobs.values() if job.preemptible]
        return self._preemptible

    def mark_pending(self, job_key: str) -> None:
        """A statement set one of the job's tasks back to pending (an un-pipeline or a rollback)."""
        if self._may_pend is not None and job_key not in self._may_pend:
            self._may_pend[job_key] = None
            self._may_pend_sorted = False

    def allocation_sample(self) -> AllocationSample | None:
        """What the queues held at session open, for the usage store; None without a fair-share plugin."""
        return self.allocation_sample_fns[0]() if self.allocation_sample_fns else None

    def queue_depth(self, action: str) -> int:
        return self.config.queue_depth_per_action.get(action, -1)

    def job_key(self, job: PodGroupInfo) -> tuple[Any, ...]:
        """The job order as a sort key: plugin keys first, then creation time and UID (KAI's fallback)."""
        return (*(key(job) for key in self.job_order_keys), job.creation_ts, job.podgroup.meta.uid)

    def task_cmp(self, left: TaskInfo, right: TaskInfo) -> int:
        for fn in self.task_order_fns:
            result = fn(left, right)
            if result:
                return int(result)
        lkey = (left.pod.meta.creation_ts, left.pod.meta.uid)
        rkey = (right.pod.meta.creation_ts, right.pod.meta.uid)
        return -1 if lkey < rkey else (1 if lkey > rkey else 0)

    def ordered_tasks(self, tasks: Iterable[TaskInfo]) -> list[TaskInfo]:
        return sorted(tasks, key=cmp_to_key(self.task_cmp))

    def subgroup_less(self, left: Member, right: Member) -> bool:
        """KAI's SubGroupOrderFn over sub-group members (pod sets and sets alike); ties by name."""
        for fn in self.subgroup_order_fns:
            result = fn(left, right)
            if result:
                return bool(result < 0)
        return left.name < right.name

    def subgroup_cmp(self, left: Member, right: Member) -> int:
        if self.subgroup_less(left, right):
            return -1
        return 1 if self.subgroup_less(right, left) else 0

    def queue_less(
        self,
        left: QueueInfo,
        right: QueueInfo,
        left_job: PodGroupInfo | None,
        right_job: PodGroupInfo | None,
        left_victims: list[PodGroupInfo],
        right_victims: list[PodGroupInfo],
    ) -> bool:
        for fn in self.queue_order_fns:
            result = fn(left, right, left_job, right_job, left_victims, right_victims)
            if result:
                return result < 0
        if left.creation_ts == right.creation_ts:
            return left.uid < right.uid
        return left.creation_ts < right.creation_ts

    def job_over_capacity(self, job: PodGroupInfo, tasks: list[TaskInfo]) -> JobFitError | None:
        for fn in self.job_over_capacity_fns:
            return fn(job, tasks)
        return None

    def non_preemptible_over_quota(self, job: PodGroupInfo, tasks: list[TaskInfo]) -> JobFitError | None:
        for fn in self.non_preemptible_over_quota_fns:
            return fn(job, tasks)
        return None

    def subset_nodes(
        self, job: PodGroupInfo, group: SubGroupSet | PodSet, pod_sets: list[PodSet], tasks: list[TaskInfo], nodes: Mask
    ) -> list[Mask]:
        """Each plugin refines every current node set (KAI's cartesian refinement)."""
        sets = [nodes]
        for fn in self.subset_nodes_fns:
            sets = [subset for current in sets for subset in fn(job, group, pod_sets, tasks, current)]
        return sets

    def can_reclaim(self, job: PodGroupInfo) -> bool:
        for fn in self.can_reclaim_fns:
            return fn(job)
        return False

    def job_solution_start(self) -> None:
        for fn in self.job_solution_start_fns:
            fn()

    def task_over_capacity_on_node(self, task: TaskInfo, job: PodGroupInfo, node: NodeInfo) -> JobFitError | None:
        for fn in self.task_over_capacity_on_node_fns:
            return fn(task, job, node)
        return None

    def node_scores(self, task: TaskInfo, candidates: Mask) -> Vector:
        for pre in self.node_pre_order_fns:
            pre(task, candidates)
        scores = np.zeros(len(self.nodes))
        for fn in self.node_order_fns:
            scores = scores + fn(task, candidates)
        return scores

    def allocated(self, task: TaskInfo) -> None:
        self.allocation_version += 1
        for handler in self.allocate_handlers:
            handler(task)

    def deallocated(self, task: TaskInfo) -> None:
        self.allocation_version += 1
        for handler in self.deallocate_handlers:
            handler(task)

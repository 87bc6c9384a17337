"""The proportion plugin: hierarchical fair share, queue order, and queue capacity (KAI plugins/proportion).

At session open it sums the cluster's capacity, builds each queue's attributes from its quota, adds up what
every queue's jobs hold and ask for, and divides the cluster level by level. During the session, allocate and
deallocate events keep each queue's allocated amounts (and its ancestors') in step.
"""

import math
from collections.abc import Iterable, Mapping
from typing import Any

from kai.core.framework.job_allocation import init_request
from kai.core.framework.session import Session
from kai.core.framework.usage.usage_store import AllocationSample
from kai.core.framework.victims.hopeless import Yield
from kai.core.model.resources import GpuRequestKind, mig_gpu_portion
from kai.core.plugins.proportion.attributes import Quantities, QueueAttributes, ancestry
from kai.core.plugins.proportion.capacity import non_preemptible_over_quota, over_limit
from kai.core.plugins.proportion.charges import Charges, pending_quantities, task_quantities
from kai.core.plugins.proportion.queue_order import Request, Standings, queue_order
from kai.core.plugins.proportion.reclaimable import can_reclaim, may_reclaim_from, reclaimable, refuses_every_eviction
from kai.core.plugins.proportion.resource_division import (
    QueueShares,
    ResourceShare,
    ResourceTotals,
    divide_tree,
)
from kai.core.plugins.proportion.wait_reasons import wait_reasons
from kai.core.state.fit_errors import JobFitError
from kai.core.state.node_table import NodeInfo
from kai.core.state.pod_status import ACTIVE_ALLOCATED, ALLOCATED, PodStatus
from kai.core.state.podgroup_info import PodGroupInfo
from kai.core.state.queue_info import QueueInfo
from kai.core.state.resource_index import CPU_ROW, MEMORY_ROW
from kai.core.state.task import TaskInfo, admission_gated

ALLOCATED_JOBS_LIMIT = 1 << 16
"""Jobs (and partial representatives) whose holdings are remembered at most, before starting afresh."""
ORDERS_LIMIT = 1 << 16
"""Queue comparisons remembered at most (``_remembered_order``)."""


def _request(ssn: Session, job: PodGroupInfo | None) -> Request:
    """``init_request``, its cache read here first (a queue comparison asks for two)."""
    if job is None:
        return _NO_REQUEST
    return job.init_request_cache or init_request(ssn, job)


_NO_REQUEST: Request = (0.0, 0.0, 0.0)


def _no_victims() -> list[Request]:
    return []


def _float_arg(arguments: Mapping[str, Any], key: str, default: float) -> float:
    value = arguments.get(key, default)
    try:
        return float(value)
    except (TypeError, ValueError):
        return default


class ProportionPlugin:
    name = "proportion"

    def __init__(self, arguments: Mapping[str, Any]) -> None:
        self.k_value = max(0.0, _float_arg(arguments, "kValue", 1.0))
        self.saturation_multiplier = max(1.0, _float_arg(arguments, "relcaimerSaturationMultiplier", 1.0))
        self.queues: dict[str, QueueAttributes] = {}
        self.total: Quantities = (0.0, 0.0, 0.0)

    def on_session_open(self, ssn: Session) -> None:
        self.ssn = ssn
        self._allocated_jobs: dict[int, tuple[PodGroupInfo, int, Quantities]] = {}
        self._orders: dict[tuple[Any, ...], int] = {}
        self.total = self._total(ssn)
        usage = ssn.cluster.queue_usage
        self.queues = {uid: _attributes(queue, usage.get(uid)) for uid, queue in ssn.queues.items()}
        self._charge_jobs(ssn)
        self.opening = AllocationSample(
            self.total, {uid: (q.allocated[0], q.allocated[1], q.allocated[2]) for uid, q in self.queues.items()}
        )
        tops = [q.shares for q in self.queues.values() if not q.parent]
        children = {uid: [self.queues[c].shares for c in q.children] for uid, q in self.queues.items()}
        divide_tree(
            ResourceTotals(gpu=self.total[2], cpu=self.total[0], memory=self.total[1]),
            tops,
            children,
            self.k_value,
        )
        for queue in self.queues.values():
            queue.settle()
        self.standings = Standings(self.total)
        ssn.queue_order_fns.append(self.queue_order)
        ssn.job_over_capacity_fns.append(self.job_over_capacity)
        ssn.non_preemptible_over_quota_fns.append(self.non_preemptible_over_quota)
        ssn.allocate_handlers.append(self.on_allocate)
        ssn.deallocate_handlers.append(self.on_deallocate)
        ssn.queue_share_fns.append(self.queue_shares)
        ssn.queue_order_terms_fns.append(self.queue_order_terms)
        ssn.allocation_sample_fns.append(self.allocation_sample)
        ssn.can_reclaim_fns.append(self.can_reclaim)
        ssn.reclaim_victim_filters.append(_VictimQueues(self))
        ssn.reclaim_validators.append(self.reclaim_validator)
        ssn.reclaim_yield_fns.append(self.reclaim_yield)
        ssn.job_solution_start_fns.append(self.job_solution_start)
        self.simulation_queues = self.queues
        ssn.task_over_capacity_on_node_fns.append(self._task_over_capacity_on_node)
        ssn.wait_reason_fns.append(lambda job, found: wait_reasons(ssn, self.queues, job, found))

    def _total(self, ssn: Session) -> Quantities:
        """The ready nodes' resources less what other schedulers' pods hold on them (only nodes with a task of no
        job can hold one)."""
        nodes = ssn.nodes
        cpu = memory = gpu = 0.0
        for info in nodes.infos:
            if not info.node.ready:
                continue
            column = info.column
            cpu += nodes.allocatable[CPU_ROW, column]
            memory += nodes.allocatable[MEMORY_ROW, column]
            gpu += _node_gpus(info, nodes.allocatable[:, column], nodes.index.names)
            if column not in nodes.jobless_columns:
                continue
            for task in info.tasks.values():
                if task.pod.scheduler_name != ssn.config.scheduler_name and not task.pod.is_reservation:
                    used = task_quantities(task)
                    cpu, memory, gpu = cpu - used[0], memory - used[1], gpu - used[2]
        return (cpu, memory, gpu)

    def _charge_jobs(self, ssn: Session) -> None:
        """Every queue and its ancestors charged with what its jobs hold and ask for: from each queue's sums, kept
        across snapshots, when their order cannot matter, else task by task."""
        charges = Charges.of(ssn.cluster)
        if not charges.exact:
            self._charge_tasks(ssn)
            return
        for uid, charge in charges.queues.items():
            for queue in ancestry(self.queues, uid):
                for i in range(3):
                    queue.share(i).request += charge.requested[i]
                    queue.allocated[i] += charge.allocated[i]
                    queue.allocated_non_preemptible[i] += charge.allocated_non_preemptible[i]

    def _charge_tasks(self, ssn: Session) -> None:
        min_memory = ssn.cluster.min_node_gpu_memory
        for job in ssn.jobs.values():
            for task in job.tasks.values():
                if task.status in ALLOCATED:
                    used = task_quantities(task)
                    self._walk(job.queue, used, allocated=True, non_preemptible=not job.preemptible)
                elif task.status is PodStatus.PENDING or admission_gated(task):
                    self._walk(job.queue, pending_quantities(task, min_memory), allocated=False)

    def _walk(self, leaf: str, amounts: Quantities, allocated: bool, non_preemptible: bool = False) -> None:
        """Add a task's request (and, when placed, its allocation) to its queue and every ancestor."""
        for queue in ancestry(self.queues, leaf):
            for i, amount in enumerate(amounts):
                queue.share(i).request += amount
            if allocated:
                self._allocate(queue, amounts, 1.0, non_preemptible)

    @staticmethod
    def _allocate(queue: QueueAttributes, amounts: Quantities, sign: float, non_preemptible: bool) -> None:
        for i, amount in enumerate(amounts):
            queue.allocated[i] += sign * amount
            if non_preemptible:
                queue.allocated_non_preemptible[i] += sign * amount

    def _charge(self, task: TaskInfo, sign: float) -> None:
        job = self.ssn.jobs[task.job_key]
        amounts = task_quantities(task)
        for queue in ancestry(self.queues, job.queue):
            self._allocate(queue, amounts, sign, not job.preemptible)

    def on_allocate(self, task: TaskInfo) -> None:
        self._charge(task, 1.0)

    def on_deallocate(self, task: TaskInfo) -> None:
        self._charge(task, -1.0)

    def queue_order(
        self,
        left: QueueInfo,
        right: QueueInfo,
        left_job: PodGroupInfo | None,
        right_job: PodGroupInfo | None,
        left_victims: list[PodGroupInfo],
        right_victims: list[PodGroupInfo],
    ) -> int:
        lattr, rattr = self.queues.get(left.uid), self.queues.get(right.uid)
        if lattr is None:
            return 1
        if rattr is None:
            return -1
        if not left_victims and not right_victims:
            return self._remembered_order(lattr, rattr, _request(self.ssn, left_job), _request(self.ssn, right_job))
        return queue_order(
            lattr,
            rattr,
            _request(self.ssn, left_job),
            _request(self.ssn, right_job),
            (lambda: self._allocated(left_victims)) if left_victims else _no_victims,
            (lambda: self._allocated(right_victims)) if right_victims else _no_victims,
            self.standings,
        )

    def _remembered_order(self, left: QueueAttributes, right: QueueAttributes, lreq: Request, rreq: Request) -> int:
        """``queue_order`` without victims, remembered by the two queues' allocations and requests, of which it is a
        pure function in a session (shares are settled at open): the jobs of a queue mostly ask alike, and every
        simulation ends with the allocations as they were."""
        la, ra = left.allocated, right.allocated
        key = (left.uid, right.uid, la[0], la[1], la[2], ra[0], ra[1], ra[2], lreq, rreq)
        known = self._orders.get(key)
        if known is None:
            if len(self._orders) >= ORDERS_LIMIT:
                self._orders.clear()
            known = self._orders[key] = queue_order(left, right, lreq, rreq, _no_victims, _no_victims, self.standings)
        return known

    def _allocated(self, jobs: list[PodGroupInfo]) -> list[Quantities]:
        """What each job holds, remembered until one of its tasks changes status: a victim queue compares the same
        victims again at every pop, and every simulation ends by putting them back. Every status change goes
        through the session's job (a victim may be a partial representative holding some of its tasks), whose
        ``status_version`` counts them; a task's GPUs change only with its status (``Statement``)."""
        if len(self._allocated_jobs) >= ALLOCATED_JOBS_LIMIT:
            self._allocated_jobs.clear()
        amounts = []
        for job in jobs:
            version = self.ssn.jobs.get(job.key, job).status_version
            known = self._allocated_jobs.get(id(job))
            if known is None or known[0] is not job or known[1] != version:
                known = self._allocated_jobs[id(job)] = (job, version, _job_allocated(job))
            amounts.append(known[2])
        return amounts

    def job_over_capacity(self, job: PodGroupInfo, tasks: list[TaskInfo]) -> JobFitError | None:
        requested = _required_quota(tasks, self.ssn.cluster.max_node_gpu_memory)
        return over_limit(self.queues, job.queue, requested, job.preemptible) or non_preemptible_over_quota(
            self.queues, job.queue, requested, job.preemptible
        )

    def non_preemptible_over_quota(self, job: PodGroupInfo, tasks: list[TaskInfo]) -> JobFitError | None:
        requested = _required_quota(tasks, self.ssn.cluster.max_node_gpu_memory)
        return non_preemptible_over_quota(self.queues, job.queue, requested, job.preemptible)

    def _task_over_capacity_on_node(self, task: TaskInfo, job: PodGroupInfo, node: NodeInfo) -> JobFitError | None:
        """The task as it would be charged on ``node`` (KAI's GetRequiredInitQuota): each device's share of this
        node's GPU memory, rounded up to hundredths."""
        request = task.request
        if request.gpu_kind is GpuRequestKind.MIG:
            gpus = task.gpus_quota
        else:
            memory = request.gpu_memory_mib or int(request.gpu_portion * node.gpu_memory_mib)
            gpus = request.gpu_devices * math.ceil(memory / node.gpu_memory_mib * 100) / 100
        requested = (request.milli_cpu, request.memory_bytes, gpus)
        return over_limit(self.queues, job.queue, requested, job.preemptible) or non_preemptible_over_quota(
            self.queues, job.queue, requested, job.preemptible
        )

    def can_reclaim(self, job: PodGroupInfo) -> bool:
        queue = self.queues.get(job.queue)
        return queue is not None and can_reclaim(queue, init_request(self.ssn, job), job.preemptible)

    def may_reclaim_from(self, reclaimer: PodGroupInfo, victim_queue: str) -> bool:
        """KAI's reclaim victim filter, on the queues as committed so far."""
        return may_reclaim_from(self.queues, reclaimer.queue, init_request(self.ssn, reclaimer), victim_queue)

    def job_solution_start(self) -> None:
        """Freeze queue allocations for the reclaim check of the solution about to be simulated."""
        self.simulation_queues = {uid: queue.clone() for uid, queue in self.queues.items()}

    def reclaim_validator(self, scenario: Any) -> bool:
        preemptor: PodGroupInfo = scenario.preemptor
        by_queue: dict[str, list[Quantities]] = {}
        consolidating = self.ssn.config.allow_consolidating_reclaim
        for job_key, tasks in scenario.victims.items():
            job = self.ssn.jobs[job_key]
            chunks = _victim_chunks(job, tasks, consolidating)
            if chunks:
                by_queue.setdefault(job.queue, []).extend(chunks)
        return reclaimable(
            self.simulation_queues,
            preemptor.queue,
            init_request(self.ssn, preemptor),
            preemptor.preemptible,
            by_queue,
            self.saturation_multiplier,
        )

    def reclaim_yield(self, reclaimer: PodGroupInfo, victim_queue: str) -> Yield:
        """What ``reclaim_validator`` lets the reclaimer's search take from ``victim_queue`` (``victims.hopeless``):
        nothing evicted from a side that holds no more than it deserves; with consolidating reclaim off, moved
        victims count as taken too."""
        if not refuses_every_eviction(self.simulation_queues, reclaimer.queue, victim_queue):
            return Yield.ANY
        return Yield.MOVES_ONLY if self.ssn.config.allow_consolidating_reclaim else Yield.NOTHING

    def queue_shares(self, uid: str) -> dict[str, dict[str, float]]:
        queue = self.queues[uid]
        return {
            "deserved": dict(zip(("cpu", "memory", "gpu"), queue.deserved(), strict=True)),
            "fairShare": dict(zip(("cpu", "memory", "gpu"), queue.fair_share(), strict=True)),
            "allocated": dict(zip(("cpu", "memory", "gpu"), queue.allocated, strict=True)),
            "usage": {
                "cpu": queue.shares.cpu.usage,
                "memory": queue.shares.memory.usage,
                "gpu": queue.shares.gpu.usage,
            },
            "request": dict(zip(("cpu", "memory", "gpu"), queue.request(), strict=True)),
        }

    def queue_order_terms(self, uid: str, job: PodGroupInfo) -> dict[str, Any]:
        """The terms ``queue_order`` compares, most decisive first, for ``job`` as the queue's next job."""
        queue = self.queues[uid]
        stand = self.standings.of(queue, init_request(self.ssn, job))
        return {
            "overFairShare": stand.over_fair_share,
            "withinDeservedWithJob": stand.within_deserved_with_job,
            "priority": queue.priority,
            "dominantShareWithJob": stand.dominant_share_with_job,
            "dominantShare": stand.dominant_share,
            "created": queue.creation_ts,
        }

    def allocation_sample(self) -> AllocationSample:
        """What the queues held when the session opened (bound and running pods: the cluster as it is, not the
        session's tentative decisions)."""
        return self.opening


class _VictimQueues:
    """The reclaim victim filter as a queue filter (``eviction.QueueVictimFilter``): it judges a victim by its
    queue alone, so a search can leave out the refused queues instead of asking about each of their jobs."""

    def __init__(self, plugin: ProportionPlugin) -> None:
        self.plugin = plugin

    def __call__(self, reclaimer: PodGroupInfo, victim: PodGroupInfo) -> bool:
        return self.plugin.may_reclaim_from(reclaimer, victim.queue)

    def refused(self, reclaimer: PodGroupInfo, queues: Iterable[str]) -> list[str]:
        return [queue for queue in queues if not self.plugin.may_reclaim_from(reclaimer, queue)]


def _node_gpus(info: NodeInfo, column: Any, names: list[str]) -> float:
    total = 0.0
    for row, name in enumerate(names):
        if name == "nvidia.com/gpu":
            total += float(column[row])
        else:
            total += mig_gpu_portion(name) * float(column[row])
    return total


def _victim_chunks(job: PodGroupInfo, tasks: list[TaskInfo], consolidating: bool) -> list[Quantities]:
    """Victim resources as KAI weighs them: tasks beyond a pod set's gang size one by one, the core as one chunk;
    tasks that were moved rather than evicted do not count when consolidating reclaim is allowed."""
    by_set: dict[str, list[TaskInfo]] = {}
    for task in tasks:
        by_set.setdefault(task.subgroup or "default", []).append(task)
    elastic: list[TaskInfo] = []
    core: list[TaskInfo] = []
    for name, set_tasks in by_set.items():
        minimum = job.pod_sets[name].min_available if name in job.pod_sets else 1
        core.extend(set_tasks[:minimum])
        elastic.extend(set_tasks[minimum:])

    def total(group: list[TaskInfo]) -> Quantities | None:
        counted = [t for t in group if not (consolidating and t.status in ACTIVE_ALLOCATED)]
        if not counted:
            return None
        cpu = sum(task_quantities(t)[0] for t in counted)
        memory = sum(task_quantities(t)[1] for t in counted)
        return (cpu, memory, sum(task_quantities(t)[2] for t in counted))

    chunks = [chunk for chunk in (total([t]) for t in elastic) if chunk is not None]
    core_chunk = total(core)
    if core_chunk is not None:
        chunks.append(core_chunk)
    return chunks


def _required_quota(tasks: list[TaskInfo], max_gpu_memory: int) -> Quantities:
    """What the tasks would charge their queue at least: a GPU-memory request as its share of the largest GPU in
    the cluster (KAI's getRequiredQuota: if even that is over a limit, no node can help)."""
    cpu = memory = gpu = 0.0
    for task in tasks:
        request = task.request
        cpu += request.milli_cpu
        memory += request.memory_bytes
        if request.gpu_memory_mib:
            gpu += request.gpu_devices * request.gpu_memory_mib / max_gpu_memory
        else:
            gpu += task.gpus_quota
    return (cpu, memory, gpu)


def _job_allocated(job: PodGroupInfo) -> Quantities:
    cpu = memory = gpu = 0.0
    for task in job.tasks.values():
        if task.status in ALLOCATED:
            used = task_quantities(task)
            cpu, memory, gpu = cpu + used[0], memory + used[1], gpu + used[2]
    return (cpu, memory, gpu)


def _attributes(queue: QueueInfo, usage: tuple[float, float, float] | None) -> QueueAttributes:
    """A queue's attributes; ``usage`` (cpu, memory, gpu) is its historical usage under time-based fair share."""
    spec = queue.queue
    cpu_usage, memory_usage, gpu_usage = usage or (0.0, 0.0, 0.0)

    def share(resource: Any, used: float) -> ResourceShare:
        return ResourceShare(resource.quota, resource.limit, resource.over_quota_weight, 0.0, used)

    shares = QueueShares(
        uid=queue.uid,
        name=queue.name,
        creation_ts=queue.creation_ts,
        priority=queue.priority,
        gpu=share(spec.gpu, gpu_usage),
        cpu=share(spec.cpu, cpu_usage),
        memory=share(spec.memory, memory_usage),
    )
    return QueueAttributes(
        queue.uid, queue.name, queue.parent, queue.children, queue.creation_ts, queue.priority, shares
    )

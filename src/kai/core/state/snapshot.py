"""The snapshot a cycle works on: parsed objects joined into jobs, queues and the node table.

Nothing is deep-copied: tasks are small objects pointing at the immutable parsed pods, and the node table is built
from resource vectors (docs/architecture.md §7). ``Snapshots`` goes further for a scheduler that snapshots one state
cycle after cycle: it keeps its jobs, tasks and node accounting and, for the next snapshot, rebuilds only what the
state's events changed and resets only what the last session could have changed — the tasks of the jobs it may have
touched (those with a waiting task, those that may be stale, and any whose task statuses it changed, as
``PodGroupInfo.set_status`` reports them), those jobs themselves, and the nodes whose accounting it changed. A snapshot
so taken equals a fresh one (``take_snapshot``) and stays valid until the next is taken, which reuses its objects.
"""

import difflib
import functools
from collections.abc import Iterable, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field, replace
from itertools import chain
from typing import Any

from kai.core.model import names
from kai.core.model.disruption_budget import DisruptionBudget
from kai.core.model.dra import GPU_DRIVERS, Device, ResourceClaim
from kai.core.model.numa import NodeTopology
from kai.core.model.objects import BindRequest, Pod, PodGroup, Topology, parse_queue, with_level_labels
from kai.core.model.resources import GpuRequestKind
from kai.core.model.suspension import is_stand_in
from kai.core.state.cluster_state import ClusterState
from kai.core.state.fit_errors import QUEUE_DOES_NOT_EXIST, JobFitError
from kai.core.state.node_table import NodeInfo, NodeTable, accepted_gpus
from kai.core.state.pod_status import ACTIVE_USED, PodStatus
from kai.core.state.podgroup_info import PodGroupInfo
from kai.core.state.queue_info import QueueInfo
from kai.core.state.reasons import Fix, FixKind, Reason, ReasonKind
from kai.core.state.resource_index import GPU_ROW, ResourceIndex, Vector
from kai.core.state.task import TaskInfo

STUCK_IN_RELEASING_S = 120.0
"""KAI's default ``--stuck-in-releasing-threshold`` (2m)."""
WAITING = frozenset({PodStatus.PENDING, PodStatus.GATED})
ON_NODE = frozenset({PodStatus.BOUND, PodStatus.RUNNING})
"""A pod bound to its node and not being deleted."""


@dataclass
class ClusterInfo:
    nodes: NodeTable
    jobs: dict[str, PodGroupInfo]
    queues: dict[str, QueueInfo]
    topologies: dict[str, Topology]
    unschedulable_jobs: dict[str, PodGroupInfo] = field(default_factory=dict)
    """Jobs the scheduler cannot consider (missing queue): reported, never scheduled."""
    bind_requests_to_delete: list[str] = field(default_factory=list)
    min_node_gpu_memory: int = names.DEFAULT_GPU_MEMORY_MIB
    """The smallest GPU memory (MiB) of a node whose GPUs report more than the default 100 MiB, else 100: turns
    GPU-memory requests into GPUs where the node is not known yet (queue order, reclaim, init requests)."""
    max_node_gpu_memory: int = names.DEFAULT_GPU_MEMORY_MIB
    """The largest such GPU memory: the conservative divisor for job-level queue capacity checks."""
    claims: dict[str, ResourceClaim] = field(default_factory=dict)
    devices: dict[str, list[Device]] = field(default_factory=dict)
    """DRA devices per node name, from ResourceSlices."""
    numa: Mapping[str, NodeTopology] = field(default_factory=dict)
    """NUMA zones per node name, from NodeResourceTopology objects (read-only)."""
    disruption_budgets: Mapping[str, DisruptionBudget] = field(default_factory=dict)
    """PodDisruptionBudgets by key (read-only)."""
    recent_evictions: int = 0
    """Evictions the scheduler sent in the minute before the cycle (its memory): the per-minute eviction budget."""
    config_maps: Mapping[str, object] = field(default_factory=dict)
    """The ConfigMaps that exist, by ``namespace/name`` (read-only)."""
    queue_usage: dict[str, tuple[float, float, float]] = field(default_factory=dict)
    """Time-based fair share: each queue's historical usage (cpu, memory, gpu), a share of the cluster's capacity
    (0..1), by queue name; empty when it is off."""
    pipelined_before: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """Podgroups the previous cycle pipelined, with the node of each pod it pipelined (the scheduler's memory, not the
    cluster's): allocate tries them first, and places their pods on those nodes where they fit, so that what their
    victims free goes to them (see docs/deviations.md)."""
    job_order: Mapping[str, int] = field(default_factory=dict)
    """A number per job (at least every job of ``jobs``) that sorts jobs in ``jobs`` order: a few are put in order
    without a walk over all of them."""
    waiting: AbstractSet[str] = frozenset()
    """Jobs of ``jobs`` with a pending or gated task in the snapshot."""
    maybe_stale: AbstractSet[str] = frozenset()
    """Jobs of ``jobs`` that may be stale in the snapshot: a pod set below its gang size, or a staleness time."""
    changed: list[PodGroupInfo] = field(default_factory=list)
    """Jobs a task of which changed status since the snapshot, each once (``PodGroupInfo.set_status`` adds them)."""
    generation: int = 0
    """This snapshot's number among those of its ``Snapshots`` (1, 2, ...; 0 for a single snapshot)."""
    rebuilt: AbstractSet[str] | None = None
    """Jobs whose view may differ from the previous snapshot's (deleted ones included); None: any job's may."""
    carry: dict[str, Any] = field(default_factory=dict)
    """What plugins keep from one snapshot to the next of the same ``Snapshots`` (empty for a single snapshot): what
    they derived from the jobs not in ``rebuilt``, valid for the next snapshot only (see ``generation``)."""

    def in_job_order(self, keys: Iterable[str]) -> list[PodGroupInfo]:
        """The jobs of ``jobs`` among ``keys``, each once, in ``jobs`` order."""
        jobs = self.jobs
        return [jobs[key] for key in sorted({key for key in keys if key in jobs}, key=self.job_order.__getitem__)]

    def may_wait(self) -> list[PodGroupInfo]:
        """Every job that may have a pending or gated task now, in ``jobs`` order: the snapshot's waiting jobs and
        the jobs whose tasks changed status since (a superset: the others certainly have none)."""
        return self.in_job_order(chain(self.waiting, (job.key for job in self.changed)))

    def may_be_stale(self) -> list[PodGroupInfo]:
        """Every job that may be stale or have a staleness time now, in ``jobs`` order (a superset, as above)."""
        return self.in_job_order(chain(self.maybe_stale, (job.key for job in self.changed)))


def _view(pod: Pod, bind_request: BindRequest | None, stuck_before: float) -> tuple[PodStatus, str, tuple[str, ...]]:
    """A pod's status, node and GPU groups as a snapshot sees them (a BindRequest in flight places it)."""
    status = _status(pod, bind_request, stuck_before)
    if status is PodStatus.BINDING and bind_request is not None:
        return status, bind_request.selected_node, bind_request.gpu_groups or _gpu_groups(pod)
    return status, pod.node_name, _gpu_groups(pod)


def _gpu_groups(pod: Pod) -> tuple[str, ...]:
    return (pod.gpu_group,) if pod.gpu_group else ()


def _status(pod: Pod, bind_request: BindRequest | None, stuck_before: float) -> PodStatus:
    """KAI's pod status; a running pod terminating since before ``stuck_before`` is StuckInReleasing."""
    phase = pod.phase
    if phase == "Running":
        deleted = pod.meta.deletion_ts
        if deleted is None:
            return PodStatus.RUNNING
        return PodStatus.STUCK_IN_RELEASING if deleted < stuck_before else PodStatus.RELEASING
    if phase == "Pending":
        if pod.deleting:
            return PodStatus.RELEASING
        if pod.node_name:
            return PodStatus.BOUND
        if bind_request is not None and not bind_request.failed:
            return PodStatus.BINDING
        if pod.gated:
            return PodStatus.GATED
        return PodStatus.PENDING
    if phase == "Succeeded":
        return PodStatus.SUCCEEDED
    if phase == "Failed":
        return PodStatus.FAILED
    return PodStatus.UNKNOWN


def _priority(state: ClusterState, class_name: str) -> tuple[int, str]:
    """The priority and the preemption policy of a podgroup's priority class (else the global default's)."""
    pc = state.priority_classes.get(class_name)
    if pc is not None:
        return pc.value, pc.preemption_policy
    for candidate in state.priority_classes.values():
        if candidate.global_default:
            return candidate.value, candidate.preemption_policy
    return names.DEFAULT_PRIORITY, ""


TOP_QUEUE = parse_queue(
    {
        "metadata": {"name": "default"},
        "spec": {"resources": {r: {"quota": -1, "limit": -1, "overQuotaWeight": 1} for r in ("gpu", "cpu", "memory")}},
    }
)
"""The one top queue of ``--full-hierarchy-fairness=false`` (KAI's: every resource unlimited, weight 1)."""


def _queues(state: ClusterState, full_hierarchy_fairness: bool = True) -> dict[str, QueueInfo]:
    """The usable queues with their children (KAI drops a queue whose parent is missing, with its subtree). Without
    full hierarchy fairness, as KAI: every queue with a parent goes under ``TOP_QUEUE``, the parentless ones go."""
    usable = {name: queue for name, queue in state.queues.items() if name not in state.unusable_queues}
    if not full_hierarchy_fairness:
        flat = {name: replace(queue, parent=TOP_QUEUE.name) for name, queue in usable.items() if queue.parent}
        usable = {TOP_QUEUE.name: TOP_QUEUE, **flat}
    alive = {name: QueueInfo(queue) for name, queue in usable.items()}
    for info in alive.values():
        if info.parent:
            alive[info.parent].children.append(info.uid)
    return alive


@functools.lru_cache(maxsize=256)
def _similar_queue(queue: str, known: tuple[str, ...]) -> str:
    """The existing queue most like a missing one (a typo: "did you mean"), "" when none is."""
    close = difflib.get_close_matches(queue, known, n=1)
    return close[0] if close else ""


def _queue_error(state: ClusterState, queue: str) -> JobFitError:
    """KAI's reason for a podgroup whose queue cannot be used; the message says why when the queue exists."""
    problem = state.unusable_queues.get(queue) or state.invalid.get(("Queue", queue))
    if problem is None:
        evidence = {"queue": queue}
        similar = _similar_queue(queue, tuple(sorted(state.queues)))
        if similar:
            evidence["similar"] = similar
        why = Reason(ReasonKind.QUEUE_UNUSABLE, evidence, (Fix(FixKind.CREATE_QUEUE, evidence),))
        return JobFitError(QUEUE_DOES_NOT_EXIST, [f"Queue '{queue}' does not exist"], subgroup="", why=why)
    if queue in state.unusable_queues:
        message = f"Queue '{queue}' is not usable: {problem.problem}"
    else:
        message = f"Queue '{queue}' is invalid: field {problem.field}: {problem.problem}"
    evidence = {"queue": queue, "field": problem.field, "problem": problem.problem}
    fix = Fix(FixKind.FIX_FIELD, {"object": problem.obj, "field": problem.field, "problem": problem.problem})
    why = Reason(ReasonKind.QUEUE_UNUSABLE, evidence, (fix,))
    return JobFitError(QUEUE_DOES_NOT_EXIST, [message], subgroup="", why=why)


def _request_vector(pod: Pod, index: ResourceIndex) -> Vector:
    """The pod's request on the node table's rows (whole GPUs in the GPU row), read-only: snapshots share it."""
    vec = index.vector(pod.request.amounts)
    if pod.request.gpu_kind is GpuRequestKind.REGULAR:
        vec[GPU_ROW] = pod.request.gpus
    vec.flags.writeable = False
    return vec


def _in_order(task: TaskInfo) -> int:
    return task.order


class Snapshots:
    """Snapshots of one cluster state for one scheduler, each built from the one before (see the module doc)."""

    def __init__(
        self, state: ClusterState, scheduler_name: str, keep: bool = True, full_hierarchy_fairness: bool = True
    ) -> None:
        """``keep``: snapshot after snapshot, each valid until the next; False for a single snapshot.
        ``full_hierarchy_fairness``: KAI's flag (``_queues``)."""
        self.state = state
        self.scheduler_name = scheduler_name
        self.full_hierarchy_fairness = full_hierarchy_fairness
        self._changes = state.track() if keep else None
        self._generation = 0
        self._carry: dict[str, Any] = {}
        self._start_over(None)

    def _start_over(self, index: ResourceIndex | None) -> None:
        """Forgets every snapshot so far: the next is built from the whole state."""
        self._index = index
        self._base: NodeTable | None = None
        """The snapshot's node accounting, which no session changes: each snapshot's table is a fork of it."""
        self._table: NodeTable | None = None
        """The last snapshot's table."""
        self._tasks: dict[str, TaskInfo] = {}
        self._jobs: dict[str, PodGroupInfo] = {}
        """Every parsed podgroup's job, in the state's order."""
        self._usable: dict[str, PodGroupInfo] = {}
        self._unusable: dict[str, PodGroupInfo] = {}
        self._job_order: dict[str, int] = {}
        self._waiting: set[str] = set()
        self._maybe_stale: set[str] = set()
        self._journal: list[PodGroupInfo] = []
        self._queue_names: frozenset[str] = frozenset()
        self._bind_requests: dict[str, BindRequest] = {}
        """BindRequests by pod key."""
        self._terminating: set[str] = set()
        """Running pods being deleted: whether they are stuck in releasing depends on the time."""
        self._suspending: set[str] = set()
        """PodGroups with a suspension record (``suspension``): their own pods still on a node are on their way out."""
        self._with_claims: set[str] = set()
        self._devices: dict[str, list[Device]] = {}
        self._dra_gpus: dict[str, float] = {}
        self._gpu_memory = (names.DEFAULT_GPU_MEMORY_MIB, names.DEFAULT_GPU_MEMORY_MIB)
        self._stuck_before = 0.0
        self._serial = 0

    def take(self, now: float = 0.0, stuck_in_releasing_s: float = STUCK_IN_RELEASING_S) -> ClusterInfo:
        """The cycle's view of the state at ``now`` (which decides which terminating pods are StuckInReleasing).
        A snapshot that fails half-made is no base for the next: that one is built from the whole state."""
        try:
            return self._take(now, stuck_in_releasing_s)
        except BaseException:
            self._start_over(None)
            raise

    def _take(self, now: float, stuck_in_releasing_s: float) -> ClusterInfo:
        state = self.state
        stuck_before = now - stuck_in_releasing_s
        index = ResourceIndex(set(state.resource_names))
        if state.vector_names != index.names:
            state.pod_vectors.clear()
            state.request_vectors.clear()
            state.vector_names = index.names
        touched = self._undo_session()
        changes = self._changes.take() if self._changes is not None else {}
        if self._base is None or self._index is None or self._index.names != index.names:
            self._start_over(index)
            changes = {
                "Pod": dict.fromkeys(state.pods, True),
                "PodGroup": dict.fromkeys(state.podgroups, True),
                "Node": dict.fromkeys(state.nodes, True),
                "BindRequest": {},
                "ResourceSlice": {},
            }
        queues = _queues(state, self.full_hierarchy_fairness)
        relayout, dirty_columns = self._update_nodes(changes)
        described = self._jobs_on(dirty_columns)  # a re-described node may hold its tasks' GPUs differently
        dirty_jobs = self._update_tasks(changes, index, stuck_before, relayout, dirty_columns)
        everything = self._update_jobs(changes, queues, dirty_jobs | touched) or relayout
        rebuilt = None if everything else dirty_jobs | described | changes.get("PodGroup", {}).keys()
        base = self._base
        assert base is not None
        if relayout:
            placed = []
            for key in state.pods:
                task = self._tasks[key]
                home = self._home(task)
                if home is not None:
                    placed.append((task, home))
                else:
                    task.accepted_gpus = 0.0  # its node may be gone
            base.add_placed(placed)
        else:
            base.recount(dirty_columns)
        table = base
        if self._changes is not None:
            previous = None if relayout else self._table
            refresh = dirty_columns | (previous.touched() if previous is not None else set())
            table = self._table = base.fork(previous, refresh)
        self._stuck_before = stuck_before
        self._generation += 1
        info = self._info(table, queues)
        info.generation, info.rebuilt, info.carry = self._generation, rebuilt, self._carry
        return info

    def _jobs_on(self, columns: set[int]) -> set[str]:
        if self._base is None:
            return set()
        infos = self._base.infos
        return {task.job_key for column in columns for task in infos[column].tasks.values() if task.job_key}

    def _undo_session(self) -> set[str]:
        """Puts the tasks of every job the last session may have touched back as the last snapshot had them;
        returns those jobs' keys (rebuilt afterwards, which drops what the session added to the jobs)."""
        touched = self._waiting | self._maybe_stale | {job.key for job in self._journal}
        self._journal.clear()
        for key in touched:
            for task in self._jobs[key].tasks.values():
                self._restore(task)
        return touched

    def _restore(self, task: TaskInfo) -> None:
        status, node_name, gpu_groups = _view(task.pod, self._bind_requests.get(task.key), self._stuck_before)
        task.status, task.node_name, task.gpu_groups, task.is_virtual = status, node_name, gpu_groups, False
        task.numa_placement = None
        home = self._home(task)
        task.accepted_gpus = accepted_gpus(task, home) if home is not None else 0.0

    def _home(self, task: TaskInfo) -> NodeInfo | None:
        """The node a task occupies in the base table (by its snapshot status)."""
        if not task.node_name or task.status not in ACTIVE_USED or self._base is None:
            return None
        return self._base.by_name.get(task.node_name)

    def _update_nodes(self, changes: dict[str, dict[str, bool]]) -> tuple[bool, set[int]]:
        """Nodes and their DRA devices; returns whether the table was laid out anew (every task to place again) and
        otherwise the columns whose nodes changed."""
        state = self.state
        changed = set(changes.get("Node", ()))
        if "ResourceSlice" in changes:
            devices: dict[str, list[Device]] = {}
            for resource_slice in state.resource_slices.values():
                devices.setdefault(resource_slice.node_name, []).extend(resource_slice.devices)
            dra_gpus = {node: float(sum(d.driver in GPU_DRIVERS for d in found)) for node, found in devices.items()}
            changed |= {
                name
                for name in dra_gpus.keys() | self._dra_gpus.keys()
                if dra_gpus.get(name) != self._dra_gpus.get(name)
            }
            self._devices, self._dra_gpus = devices, dra_gpus
        if "Node" in changes:
            reported = [
                n.gpu_memory_mib for n in state.nodes.values() if n.gpu_memory_mib > names.DEFAULT_GPU_MEMORY_MIB
            ]
            default = names.DEFAULT_GPU_MEMORY_MIB
            self._gpu_memory = (min(reported), max(reported)) if reported else (default, default)
        base = self._base
        layout_changed = any(inserted or key not in state.nodes for key, inserted in changes.get("Node", {}).items())
        if base is None or layout_changed:
            assert self._index is not None
            self._base = NodeTable(list(state.nodes.values()), self._index, self._dra_gpus)
            return True, set()
        columns = {
            base.replace_node(state.nodes[name], self._dra_gpus.get(name, 0.0))
            for name in changed
            if name in base.by_name
        }
        return False, columns

    def _update_tasks(
        self,
        changes: dict[str, dict[str, bool]],
        index: ResourceIndex,
        stuck_before: float,
        relayout: bool,
        dirty_columns: set[int],
    ) -> set[str]:
        """Tasks of the pods whose view changed (the pod, its BindRequest, its podgroup's existence, its claims,
        or the time for a terminating pod), placed in the base table; returns the keys of the jobs they left or
        joined."""
        state = self.state
        dirty: dict[str, bool] = dict(changes.get("Pod", {}))
        for key, inserted in changes.get("PodGroup", {}).items():
            podgroup = state.podgroups.get(key)
            suspending = podgroup is not None and bool(podgroup.suspended_pods)
            # a pod's job exists or not: its task's job changes; a suspension recorded or gone: its status does
            if inserted or podgroup is None or suspending != (key in self._suspending):
                _mark(self._suspending, key, suspending)
                for pod_key in state.pods_of(key):
                    dirty.setdefault(pod_key, False)
        if "BindRequest" in changes:
            by_pod = {br.pod_key: br for br in state.bind_requests.values()}
            for pod_key in by_pod.keys() | self._bind_requests.keys():
                if by_pod.get(pod_key) is not self._bind_requests.get(pod_key):
                    dirty.setdefault(pod_key, False)
            self._bind_requests = by_pod
        if "ResourceClaim" in changes:
            for pod_key in self._with_claims:
                dirty.setdefault(pod_key, False)
        for pod_key in self._terminating:
            deleted = self._tasks[pod_key].pod.meta.deletion_ts
            assert deleted is not None
            if (deleted < self._stuck_before) != (deleted < stuck_before):
                dirty.setdefault(pod_key, False)
        jobs: set[str] = set()
        for key, inserted in dirty.items():
            old = self._tasks.pop(key, None)
            if old is not None:
                home = None if relayout else self._home(old)
                if home is not None:
                    del home.tasks[key]
                    dirty_columns.add(home.column)
                if old.job_key:
                    jobs.add(old.job_key)
                self._terminating.discard(key)
                self._with_claims.discard(key)
            pod = state.pods.get(key)
            if pod is None:
                continue
            task = self._task(key, pod, index, stuck_before)
            if old is not None and not inserted:
                task.order = old.order
            else:
                task.order = self._serial = self._serial + 1
            self._tasks[key] = task
            home = None if relayout else self._home(task)
            if home is not None:
                _insert(home, task)
                dirty_columns.add(home.column)
            if task.job_key:
                jobs.add(task.job_key)
            if pod.phase == "Running" and pod.deleting:
                self._terminating.add(key)
            if pod.claims:
                self._with_claims.add(key)
        return jobs

    def _task(self, key: str, pod: Pod, index: ResourceIndex, stuck_before: float) -> TaskInfo:
        state = self.state
        status, node_name, gpu_groups = _view(pod, self._bind_requests.get(key), stuck_before)
        vec = state.pod_vectors.get(key)
        if vec is None:
            known = state.request_vectors.find(id(pod.request))
            if known is None:
                known = state.request_vectors.one(id(pod.request), (pod.request, _request_vector(pod, index)))
            vec = state.pod_vectors[key] = known[1]
        dra_gpus = 0.0
        dra_devices: tuple[Device, ...] = ()
        if pod.claims:
            claims = [
                claim
                for c in pod.claims
                if (claim := state.resource_claims.get(f"{pod.meta.namespace}/{c.claim_name}"))
            ]
            dra_gpus = float(sum(claim.gpus for claim in claims))
            dra_devices = tuple(d for claim in claims for _, d in claim.allocated if d.driver in GPU_DRIVERS)
            vec = vec.copy()
            vec[GPU_ROW] += dra_gpus
        job_key = f"{pod.meta.namespace}/{pod.podgroup_name}" if pod.podgroup_name else ""
        if job_key not in state.podgroups or pod.scheduler_name != self.scheduler_name:
            job_key = ""  # another scheduler's pod, a reservation pod or one of no podgroup: it only occupies its node
        if status in ON_NODE and job_key in self._suspending and not is_stand_in(key):
            status = PodStatus.RELEASING  # its workload is being suspended: its controller is to delete it
        task = TaskInfo(pod, status, node_name, job_key, vec, key)
        task.dra_gpus = dra_gpus
        task.dra_devices = dra_devices
        bind_request = self._bind_requests.get(key)
        task.numa_record = (
            pod.numa_observed or (bind_request and bind_request.predicted_numa_zones) or pod.numa_predicted
        )
        task.gpu_groups = gpu_groups
        return task

    def _update_jobs(self, changes: dict[str, dict[str, bool]], queues: dict[str, QueueInfo], dirty: set[str]) -> bool:
        """Jobs rebuilt where their podgroup, priority or tasks changed (and those the last session may have
        touched, and those of unusable queues, whose reason is given afresh), in the state's order. Returns whether
        every job may look different (priorities changed, or which jobs have a usable queue)."""
        state = self.state
        queue_names = frozenset(queues)
        relist = queue_names != self._queue_names
        self._queue_names = queue_names
        if "PriorityClass" in changes or "Topology" in changes:  # priorities, or the level aliases jobs resolved
            dirty |= self._jobs.keys()
        inserted = []
        for key, was_inserted in changes.get("PodGroup", {}).items():
            if (key not in state.podgroups or was_inserted) and key in self._job_order:
                self._forget(key)
            if key in state.podgroups:
                dirty.add(key)
                if was_inserted:
                    inserted.append(key)
        dirty |= self._unusable.keys()  # given their reason afresh; those whose queue became usable lose it
        if relist:
            self._relist(queues)
            dirty |= self._unusable.keys()
        dirty.difference_update(inserted)
        rebuilt = self._build(inserted + [key for key in dirty if key in state.podgroups])
        for job in rebuilt[: len(inserted)]:
            self._job_order[job.key] = self._serial = self._serial + 1
        moved = False
        for job in rebuilt:
            key = job.key
            old = self._jobs.get(key)
            if old is not None:
                _unlink(old)
            self._jobs[key] = job
            usable = job.queue in queues
            into, other = (self._usable, self._unusable) if usable else (self._unusable, self._usable)
            moved = moved or key in other
            if key in into or key not in other:
                into[key] = job
        if moved:
            self._relist(queues)
        everything = relist or moved or "PriorityClass" in changes
        for job in rebuilt:
            key = job.key
            if key in self._usable:
                _mark(self._waiting, key, any(task.status in WAITING for task in job.tasks.values()))
                _mark(self._maybe_stale, key, job.stale_ts is not None or not job.is_gang_satisfied())
            else:
                _mark(self._waiting, key, False)
                _mark(self._maybe_stale, key, False)
                job.add_fit_error(_queue_error(state, job.queue))
        return everything

    def _forget(self, key: str) -> None:
        job = self._jobs.get(key)
        if job is not None:
            _unlink(job)
        for keyed in (self._jobs, self._usable, self._unusable, self._job_order):
            keyed.pop(key, None)
        self._waiting.discard(key)
        self._maybe_stale.discard(key)

    def _relist(self, queues: Mapping[str, QueueInfo]) -> None:
        """Splits the jobs by whether their queue is usable, each part in the state's order."""
        self._usable = {key: job for key, job in self._jobs.items() if job.queue in queues}
        self._unusable = {key: job for key, job in self._jobs.items() if job.queue not in queues}

    def _build(self, keys: list[str]) -> list[PodGroupInfo]:
        """New jobs for these podgroups, with their tasks in the state's order."""
        state = self.state
        built = [self._job(state.podgroups[key]) for key in keys]
        if len(built) * 4 > len(state.podgroups):  # most of them: one pass over the pods
            by_key = {job.key: job for job in built}
            for pod_key in state.pods:
                task = self._tasks[pod_key]
                owner = by_key.get(task.job_key)
                if owner is not None:
                    owner.add_task(task)
            return built
        for job in built:
            tasks = [self._tasks[pod_key] for pod_key in state.pods_of(job.key)]
            for task in sorted((t for t in tasks if t.job_key == job.key), key=_in_order):
                job.add_task(task)
        return built

    def _job(self, podgroup: PodGroup) -> PodGroupInfo:
        resolved = with_level_labels(podgroup, self.state.topologies)
        priority, policy = _priority(self.state, podgroup.priority_class_name)
        job = PodGroupInfo(resolved, priority, self._journal)
        job.preemption_policy = policy
        return job

    def _info(self, table: NodeTable, queues: dict[str, QueueInfo]) -> ClusterInfo:
        state = self.state
        info = ClusterInfo(table, dict(self._usable), queues, state.topologies, dict(self._unusable))
        info.claims, info.devices, info.numa = state.resource_claims, self._devices, state.node_topologies
        info.disruption_budgets = state.disruption_budgets
        info.config_maps = state.config_maps
        info.min_node_gpu_memory, info.max_node_gpu_memory = self._gpu_memory
        info.bind_requests_to_delete = [
            key for key, br in state.bind_requests.items() if br.selected_node not in table.by_name or br.failed
        ]
        info.job_order = self._job_order
        info.waiting, info.maybe_stale = frozenset(self._waiting), frozenset(self._maybe_stale)
        info.changed = self._journal
        return info


def _insert(node: NodeInfo, task: TaskInfo) -> None:
    """Adds a task to a node's tasks, kept in the state's order."""
    tasks = node.tasks
    if tasks and next(reversed(tasks.values())).order > task.order:
        node.tasks = {t.key: t for t in sorted([*tasks.values(), task], key=_in_order)}
    else:
        tasks[task.key] = task


def _unlink(job: PodGroupInfo) -> None:
    """Breaks a dropped job's gang tree's links to parents, its only reference cycles: it is then freed by its
    reference count, even if frozen out of the cyclic GC (the scheduler loop freezes what its first snapshot built)."""
    groups = [job.root]
    while groups:
        group = groups.pop()
        for pod_set in group.pod_sets:
            pod_set.parent = None
        for child in group.children:
            child.parent = None
            groups.append(child)


def _mark(keys: set[str], key: str, member: bool) -> None:
    if member:
        keys.add(key)
    else:
        keys.discard(key)


def take_snapshot(
    state: ClusterState,
    scheduler_name: str,
    now: float = 0.0,
    stuck_in_releasing_s: float = STUCK_IN_RELEASING_S,
    full_hierarchy_fairness: bool = True,
) -> ClusterInfo:
    """A single snapshot of ``state`` at ``now``, built from scratch."""
    return Snapshots(state, scheduler_name, False, full_hierarchy_fairness).take(now, stuck_in_releasing_s)

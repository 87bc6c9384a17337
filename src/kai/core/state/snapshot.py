"""The snapshot a cycle works on: parsed objects joined into jobs, queues and the node table.

Nothing is deep-copied: tasks are small per-cycle objects pointing at the immutable parsed pods, and the node
table is built from resource vectors (DESIGN.md §7).
"""

from dataclasses import dataclass, field

from kai.core.model import names
from kai.core.model.dra import GPU_DRIVERS, Device, ResourceClaim
from kai.core.model.objects import BindRequest, Pod, Topology
from kai.core.model.resources import GpuRequestKind
from kai.core.state.cluster_state import ClusterState
from kai.core.state.fit_errors import QUEUE_DOES_NOT_EXIST, JobFitError
from kai.core.state.node_table import NodeInfo, NodeTable
from kai.core.state.pod_status import ACTIVE_USED, PodStatus
from kai.core.state.podgroup_info import PodGroupInfo
from kai.core.state.queue_info import QueueInfo
from kai.core.state.reasons import Fix, FixKind, Reason, ReasonKind
from kai.core.state.resource_index import GPU_ROW, ResourceIndex, Vector
from kai.core.state.task import TaskInfo

STUCK_IN_RELEASING_S = 120.0
"""KAI's default ``--stuck-in-releasing-threshold`` (2m)."""


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
    queue_usage: dict[str, tuple[float, float, float]] = field(default_factory=dict)
    """Time-based fair share: each queue's historical usage (cpu, memory, gpu), a share of the cluster's capacity
    (0..1), by queue name; empty when it is off."""
    pipelined_before: frozenset[str] = frozenset()
    """Podgroups the previous cycle pipelined (the scheduler's memory, not the cluster's): allocate tries them first,
    so that what their victims free goes to them (see docs/deviations.md)."""


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


def _priority(state: ClusterState, class_name: str) -> int:
    pc = state.priority_classes.get(class_name)
    if pc is not None:
        return pc.value
    for candidate in state.priority_classes.values():
        if candidate.global_default:
            return candidate.value
    return names.DEFAULT_PRIORITY


def _queues(state: ClusterState) -> dict[str, QueueInfo]:
    """The usable queues with their children (KAI drops a queue whose parent is missing, with its subtree)."""
    alive = {name: QueueInfo(queue) for name, queue in state.queues.items() if name not in state.unusable_queues}
    for info in alive.values():
        if info.parent:
            alive[info.parent].children.append(info.uid)
    return alive


def _queue_error(state: ClusterState, queue: str) -> JobFitError:
    """KAI's reason for a podgroup whose queue cannot be used; the message says why when the queue exists."""
    problem = state.unusable_queues.get(queue) or state.invalid.get(("Queue", queue))
    if problem is None:
        why = Reason(ReasonKind.QUEUE_UNUSABLE, {"queue": queue}, (Fix(FixKind.CREATE_QUEUE, {"queue": queue}),))
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


def take_snapshot(
    state: ClusterState, scheduler_name: str, now: float = 0.0, stuck_in_releasing_s: float = STUCK_IN_RELEASING_S
) -> ClusterInfo:
    """The cycle's view of ``state`` at ``now`` (which decides which terminating pods are StuckInReleasing)."""
    stuck_before = now - stuck_in_releasing_s
    index = ResourceIndex(set(state.resource_names))
    if state.vector_names != index.names:
        state.pod_vectors.clear()
        state.vector_names = index.names
    devices: dict[str, list[Device]] = {}
    for resource_slice in state.resource_slices.values():
        devices.setdefault(resource_slice.node_name, []).extend(resource_slice.devices)
    dra_gpus = {node: float(sum(d.driver in GPU_DRIVERS for d in found)) for node, found in devices.items()}
    table = NodeTable(list(state.nodes.values()), index, dra_gpus)
    queues = _queues(state)
    jobs: dict[str, PodGroupInfo] = {}
    missing_queue: dict[str, PodGroupInfo] = {}
    for key, podgroup in state.podgroups.items():
        job = PodGroupInfo(podgroup, _priority(state, podgroup.priority_class_name))
        if podgroup.queue in queues:
            jobs[key] = job
        else:
            job.add_fit_error(_queue_error(state, podgroup.queue))
            missing_queue[key] = job
    bind_requests = {br.pod_key: br for br in state.bind_requests.values()}
    info = ClusterInfo(table, jobs, queues, state.topologies, missing_queue)
    info.claims, info.devices = state.resource_claims, devices
    reported = [
        node.gpu_memory_mib for node in state.nodes.values() if node.gpu_memory_mib > names.DEFAULT_GPU_MEMORY_MIB
    ]
    if reported:
        info.min_node_gpu_memory, info.max_node_gpu_memory = min(reported), max(reported)
    for br_key, br in state.bind_requests.items():
        if br.selected_node not in table.by_name or br.failed:
            info.bind_requests_to_delete.append(br_key)
    placed: list[tuple[TaskInfo, NodeInfo]] = []
    for pod in state.pods.values():
        bind_request = bind_requests.get(pod.key)
        status = _status(pod, bind_request, stuck_before)
        node_name = pod.node_name
        if status is PodStatus.BINDING and bind_request is not None:
            node_name = bind_request.selected_node
        vec = state.pod_vectors.get(pod.key)
        if vec is None:
            vec = state.pod_vectors[pod.key] = _request_vector(pod, index)
        pod_dra_gpus = 0.0
        if pod.claims:
            claims = [state.resource_claims.get(f"{pod.meta.namespace}/{c.claim_name}") for c in pod.claims]
            pod_dra_gpus = float(sum(claim.gpus for claim in claims if claim is not None))
            vec = vec.copy()
            vec[GPU_ROW] += pod_dra_gpus
        job_key = f"{pod.meta.namespace}/{pod.podgroup_name}" if pod.podgroup_name else ""
        task = TaskInfo(pod, status, node_name, job_key, vec)
        task.dra_gpus = pod_dra_gpus
        if status is PodStatus.BINDING and bind_request is not None and bind_request.gpu_groups:
            task.gpu_groups = bind_request.gpu_groups
        owner = jobs.get(job_key) or missing_queue.get(job_key)
        if owner is not None and pod.scheduler_name == scheduler_name:
            owner.add_task(task)
        else:
            task.job_key = ""  # another scheduler's pod or a reservation pod: it only occupies its node
        if task.node_name and status in ACTIVE_USED:
            node_info = table.by_name.get(task.node_name)
            if node_info is not None:
                placed.append((task, node_info))
    table.add_placed(placed)
    return info

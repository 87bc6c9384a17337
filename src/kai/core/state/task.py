"""TaskInfo: one pod as a scheduling cycle sees it; mutable per cycle, pointing at the immutable parsed Pod."""

from kai.core.model import names
from kai.core.model.dra import Device
from kai.core.model.numa import NumaPlacement
from kai.core.model.objects import Pod
from kai.core.model.resources import ResourceRequest
from kai.core.state.pod_status import PodStatus
from kai.core.state.resource_index import Vector


class TaskInfo:
    """The cycle's view of a pod: status and node change as the session allocates, pipelines and evicts."""

    __slots__ = (
        "accepted_gpus",
        "dra_devices",
        "dra_gpus",
        "gpu_groups",
        "is_virtual",
        "job_key",
        "key",
        "node_name",
        "numa_placement",
        "numa_record",
        "order",
        "pod",
        "req_vec",
        "status",
        "subgroup",
    )

    def __init__(
        self, pod: Pod, status: PodStatus, node_name: str, job_key: str, req_vec: Vector, key: str | None = None
    ) -> None:
        """``key``: the pod's key when the caller has it (the state's own string, not another copy)."""
        self.pod = pod
        self.key = pod.key if key is None else key
        self.status = status
        self.node_name = node_name
        self.job_key = job_key
        self.subgroup = pod.subgroup_name
        self.req_vec = req_vec
        self.gpu_groups: tuple[str, ...] = (pod.gpu_group,) if pod.gpu_group else ()
        self.accepted_gpus = 0.0
        self.dra_gpus = 0.0
        self.dra_devices: tuple[Device, ...] = ()
        """GPU devices its claims already hold (their ``status.allocation``): counted once per node however many
        pods share them (``NodeTable``)."""
        self.is_virtual = False
        self.numa_record: NumaPlacement | None = None
        """The NUMA zones its pod is known to use: observed by its node, else as its BindRequest or its bind
        predicted them (KAI's order); None when unknown (never guessed)."""
        self.numa_placement: NumaPlacement | None = None
        """The NUMA zones the ``numa`` plugin charges it for in this session (its record, or what it predicts for a
        pod it places); None: not charged."""
        self.order = 0
        """The pod's place in the state's order (snapshots keep each job's and node's tasks in it)."""

    @property
    def name(self) -> str:
        return self.pod.meta.name

    @property
    def namespace(self) -> str:
        return self.pod.meta.namespace

    @property
    def request(self) -> ResourceRequest:
        return self.pod.request

    @property
    def gpus_quota(self) -> float:
        """GPUs charged to the queue: the pod's own (whole, fractions, MIG slices) plus GPUs of its DRA claims."""
        return self.request.gpus_quota + self.dra_gpus

    def should_allocate(self, real_allocation: bool) -> bool:
        """Pending tasks are allocated; in simulations, virtually evicted ones may be placed again."""
        return self.status is PodStatus.PENDING or (
            not real_allocation and self.status is PodStatus.RELEASING and self.is_virtual
        )

    def __repr__(self) -> str:
        return f"Task({self.key}, {self.status.value}, node={self.node_name or '-'})"


def admission_gated(task: TaskInfo) -> bool:
    """Held by the queue-admission gate and no other (kai's ``ungate`` action lifts it): its demand counts as a
    pending pod's, so fair shares are the same with and without gating."""
    return task.status is PodStatus.GATED and task.pod.scheduling_gates == (names.QUEUE_ADMISSION_GATE,)

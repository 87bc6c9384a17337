"""What each queue's jobs hold and ask for when a session opens, kept from one snapshot to the next: only the jobs a
snapshot rebuilt are charged again (at 100,000 jobs, charging every task was a tenth of a cycle).

Float sums depend on their order unless every partial sum is exact. They are when every amount is a non-negative
multiple of a unit (a millicore, a byte, 2**-20 GPU) and the totals stay within 2**53 units: then totals kept by
difference equal the task-by-task sums the plugin always made, in any order. Amounts off that grid (GPU fractions
such as 0.3, GPU-memory requests) make ``exact`` False, and the plugin sums task by task instead.
"""

from dataclasses import dataclass, field
from typing import Final

from kai.core.plugins.proportion.attributes import Quantities
from kai.core.state.pod_status import ALLOCATED, PodStatus
from kai.core.state.podgroup_info import PodGroupInfo
from kai.core.state.snapshot import ClusterInfo
from kai.core.state.task import TaskInfo, admission_gated

CARRY_KEY = "proportion.charges"
UNITS = (1.0, 1.0, 2.0**20)
"""Per resource (millicores, bytes, GPUs), how many grid steps make one."""
LIMIT = 2.0**53
"""Grid steps a total may reach for every partial sum to be exact."""


def task_quantities(task: TaskInfo) -> Quantities:
    """What a placed task is charged: its cpu, memory and accepted GPUs (fractions, MIG slices included)."""
    request = task.request
    gpus = task.accepted_gpus + task.dra_gpus if task.accepted_gpus else task.gpus_quota
    return (request.milli_cpu, request.memory_bytes, gpus)


def pending_quantities(task: TaskInfo, min_gpu_memory: int) -> Quantities:
    """What a pending task asks for: a GPU-memory request as its share of the smallest GPU."""
    request = task.request
    gpus = task.gpus_quota
    if request.gpu_memory_mib:
        gpus += request.gpu_devices * request.gpu_memory_mib / min_gpu_memory
    return (request.milli_cpu, request.memory_bytes, gpus)


JobCharge = tuple[str, bool, bool, Quantities, Quantities]
"""A job's queue, whether it is non-preemptible, whether its amounts are on the grid, what it requests (allocated and
pending tasks together) and what it holds: a tuple of immutable values, which the cyclic GC stops tracking (there
is one per job, kept across cycles)."""
QUEUE: Final = 0
NON_PREEMPTIBLE: Final = 1
EXACT: Final = 2
REQUESTED: Final = 3
HELD: Final = 4


@dataclass(slots=True)
class QueueCharge:
    """A queue's own jobs' charges (not its children's)."""

    requested: list[float] = field(default_factory=lambda: [0.0, 0.0, 0.0])
    allocated: list[float] = field(default_factory=lambda: [0.0, 0.0, 0.0])
    allocated_non_preemptible: list[float] = field(default_factory=lambda: [0.0, 0.0, 0.0])


def job_charge(job: PodGroupInfo, min_gpu_memory: int) -> JobCharge:
    requested, allocated, exact = [0.0, 0.0, 0.0], [0.0, 0.0, 0.0], True
    for task in job.tasks.values():
        if task.status in ALLOCATED:
            amounts = task_quantities(task)
            _add(allocated, amounts, 1.0)
        elif task.status is PodStatus.PENDING or admission_gated(task):
            amounts = pending_quantities(task, min_gpu_memory)
        else:
            continue
        _add(requested, amounts, 1.0)
        exact = exact and all(
            amount >= 0 and (amount * unit).is_integer() for amount, unit in zip(amounts, UNITS, strict=True)
        )
    return (job.queue, not job.preemptible, exact, _triple(requested), _triple(allocated))


class Charges:
    """Every job's charge and every queue's sum of them, for one snapshot."""

    def __init__(self, generation: int, min_gpu_memory: int) -> None:
        self.generation = generation
        self.min_gpu_memory = min_gpu_memory
        self.jobs: dict[str, JobCharge] = {}
        self.queues: dict[str, QueueCharge] = {}
        self.inexact = 0
        """Jobs whose charge is off the grid; while any is, ``queues`` is not kept."""

    @staticmethod
    def of(cluster: ClusterInfo) -> "Charges":
        """The charges of the snapshot's jobs: the previous snapshot's brought up to date, or all made anew."""
        kept = cluster.carry.get(CARRY_KEY)
        min_memory = cluster.min_node_gpu_memory
        if (
            not isinstance(kept, Charges)
            or kept.generation != cluster.generation - 1
            or kept.min_gpu_memory != min_memory
            or cluster.rebuilt is None
        ):
            charges = Charges(cluster.generation, min_memory)
            for key, job in cluster.jobs.items():
                charges._charge(key, job_charge(job, min_memory))
        else:
            charges = kept
            charges.generation = cluster.generation
            for key in cluster.rebuilt:
                charges._uncharge(key)
                rebuilt = cluster.jobs.get(key)
                if rebuilt is not None:
                    charges._charge(key, job_charge(rebuilt, min_memory))
        cluster.carry[CARRY_KEY] = charges
        return charges

    @property
    def exact(self) -> bool:
        """Whether every partial sum of the queues' charges is exact (then their order does not matter)."""
        if self.inexact:
            return False
        totals = [0.0, 0.0, 0.0]
        for queue in self.queues.values():
            _add(totals, queue.requested, 1.0)
        return all(total * unit <= LIMIT for total, unit in zip(totals, UNITS, strict=True))

    def _charge(self, key: str, charge: JobCharge) -> None:
        self.jobs[key] = charge
        if not charge[EXACT]:
            self.inexact += 1
            return
        if not self.inexact:
            self._add(charge, 1.0)

    def _uncharge(self, key: str) -> None:
        charge = self.jobs.pop(key, None)
        if charge is None:
            return
        if not charge[EXACT]:
            self.inexact -= 1
            if not self.inexact:  # the sums were not kept meanwhile
                self.queues = {}
                for kept in self.jobs.values():
                    self._add(kept, 1.0)
            return
        if not self.inexact:
            self._add(charge, -1.0)

    def _add(self, charge: JobCharge, sign: float) -> None:
        queue = self.queues.get(charge[QUEUE])
        if queue is None:
            queue = self.queues[charge[QUEUE]] = QueueCharge()
        _add(queue.requested, charge[REQUESTED], sign)
        _add(queue.allocated, charge[HELD], sign)
        if charge[NON_PREEMPTIBLE]:
            _add(queue.allocated_non_preemptible, charge[HELD], sign)


def _triple(amounts: list[float]) -> Quantities:
    return (amounts[0], amounts[1], amounts[2])


def _add(into: list[float], amounts: Quantities | list[float], sign: float) -> None:
    for i, amount in enumerate(amounts):
        into[i] += sign * amount

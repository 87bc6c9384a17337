"""Per-queue fair-share bookkeeping of the proportion plugin (KAI's QueueAttributes).

Quantities are (millicores, bytes, GPUs) triples in KAI's resource order cpu, memory, gpu; -1 is unlimited.
"""

from collections.abc import Mapping
from dataclasses import dataclass, field

from kai.core.plugins.proportion.resource_division import UNLIMITED, QueueShares, Resource, ResourceShare

RESOURCES = (Resource.CPU, Resource.MEMORY, Resource.GPU)
NO_FAIR_SHARE_DRF_MULTIPLIER = 1000.0
Quantities = tuple[float, float, float]


@dataclass(slots=True)
class QueueAttributes:
    uid: str
    name: str
    parent: str
    children: list[str]
    creation_ts: float
    priority: int
    shares: QueueShares
    allocated: list[float] = field(default_factory=lambda: [0.0, 0.0, 0.0])
    allocated_non_preemptible: list[float] = field(default_factory=lambda: [0.0, 0.0, 0.0])
    settled: tuple[Quantities, Quantities, Quantities] | None = None
    """Deserved, fair share and allocatable share, once the tree is divided (``settle``): fixed for the session,
    and read at every queue comparison."""

    def settle(self) -> None:
        self.settled = None
        self.settled = (self.deserved(), self.fair_share(), self.allocatable_share())

    def share(self, index: int) -> ResourceShare:
        return self.shares.share(RESOURCES[index])

    def deserved(self) -> Quantities:
        if self.settled is not None:
            return self.settled[0]
        return (self.shares.cpu.deserved, self.shares.memory.deserved, self.shares.gpu.deserved)

    def fair_share(self) -> Quantities:
        if self.settled is not None:
            return self.settled[1]
        return (self.shares.cpu.fair_share, self.shares.memory.fair_share, self.shares.gpu.fair_share)

    def max_allowed(self) -> Quantities:
        return (self.shares.cpu.max_allowed, self.shares.memory.max_allowed, self.shares.gpu.max_allowed)

    def request(self) -> Quantities:
        return (self.shares.cpu.request, self.shares.memory.request, self.shares.gpu.request)

    def allocatable_share(self) -> Quantities:
        if self.settled is not None:
            return self.settled[2]
        return (allocatable(self.shares.cpu), allocatable(self.shares.memory), allocatable(self.shares.gpu))

    def dominant_share(self, total: Quantities, allocated: list[float] | None = None) -> float:
        """DRF: the largest allocated / allocatable-share ratio; a resource with no share is penalised."""
        used = self.allocated if allocated is None else allocated
        dominant = 0.0
        for amount, share, whole in zip(used, self.allocatable_share(), total, strict=True):
            if share == UNLIMITED:
                share = whole
            value = amount * NO_FAIR_SHARE_DRF_MULTIPLIER if share == 0 else amount / share
            dominant = max(dominant, value)
        return dominant

    def clone(self) -> "QueueAttributes":
        return QueueAttributes(
            self.uid,
            self.name,
            self.parent,
            self.children,
            self.creation_ts,
            self.priority,
            self.shares,
            list(self.allocated),
            list(self.allocated_non_preemptible),
            self.settled,
        )


def ancestry(queues: Mapping[str, QueueAttributes], leaf: str) -> list[QueueAttributes]:
    """A queue and its ancestors, leaf first (queues whose parent is unknown end the chain)."""
    chain = []
    queue = queues.get(leaf)
    while queue is not None:
        chain.append(queue)
        queue = queues.get(queue.parent) if queue.parent else None
    return chain


def allocatable(share: ResourceShare) -> float:
    """What a queue may use: its limit when quota is unlimited, else max(quota, fair share) capped by the limit."""
    if share.deserved == UNLIMITED:
        return share.max_allowed
    result = max(share.deserved, share.fair_share)
    if share.max_allowed != UNLIMITED:
        result = min(share.max_allowed, result)
    return result


def less_equal(left: Quantities | list[float], right: Quantities | list[float]) -> bool:
    """Every resource (cpu, memory, gpu) of ``left`` at most ``right``'s, with -1 meaning unlimited on either side
    (written out: the queue order asks this at every comparison)."""
    return _at_most(left[0], right[0]) and _at_most(left[1], right[1]) and _at_most(left[2], right[2])


def _at_most(a: float, b: float) -> bool:
    if a == UNLIMITED:
        return b == UNLIMITED
    return b == UNLIMITED or not a > b


def strictly_less(left: Quantities | list[float], right: Quantities | list[float]) -> bool:
    """Every resource of ``left`` strictly below ``right``'s (plain comparison, as KAI's ``Less``)."""
    return left[0] < right[0] and left[1] < right[1] and left[2] < right[2]

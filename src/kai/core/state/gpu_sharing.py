"""Shared-GPU bookkeeping of one node (KAI's GpuSharingNodeInfo): GPU memory per GPU group.

A fractional or GPU-memory pod sits on one GPU group per device. The first pod on a group takes one whole GPU
from the node's idle GPUs; the last one to leave gives it back; a group whose pods are all releasing counts as
one releasing GPU. The arithmetic, including its odd guards, follows KAI so that idle/releasing GPU counts match.
"""

import math

from kai.core.model.resources import GpuRequestKind, ResourceRequest

WHOLE_GPU = "-2"
"""KAI's marker for "a whole free GPU" among the GPU candidates of a shared request."""


class SharedGpus:
    """Per-group memory (MiB) used, allocated and releasing on one node."""

    __slots__ = ("allocated", "marked_releasing", "releasing", "used")

    def __init__(self) -> None:
        self.used: dict[str, int] = {}
        self.allocated: dict[str, int] = {}
        self.releasing: dict[str, int] = {}
        self.marked_releasing: set[str] = set()

    def copy(self) -> "SharedGpus":
        copied = SharedGpus()
        copied.used, copied.allocated, copied.releasing = dict(self.used), dict(self.allocated), dict(self.releasing)
        copied.marked_releasing = set(self.marked_releasing)
        return copied

    def groups_in_use(self) -> int:
        return sum(1 for memory in self.used.values() if memory > 0)

    def fits_on_group(self, memory: int, group: str, gpu_memory: int) -> bool:
        """A group already in use, not wholly releasing, with room for ``memory`` counting releasing memory."""
        used = self.used.get(group, 0)
        allocated = self.allocated.get(group, 0)
        releasing = self.releasing.get(group, 0)
        return used != 0 and gpu_memory - allocated + releasing - memory >= 0 and allocated != releasing

    def enough_idle_on_group(self, memory: int, group: str, gpu_memory: int) -> bool:
        if group not in self.allocated:
            return False
        return gpu_memory - self.allocated[group] - memory >= 0

    def fitting_groups(self, memory: int, gpu_memory: int) -> list[str]:
        return [group for group in self.used if self.fits_on_group(memory, group, gpu_memory)]

    def releasing_from_shared_tasks(self, group: str) -> bool:
        used = self.used.get(group, 0)
        return used != 0 and self.releasing.get(group) == used

    def used_portion(self, group: str, gpu_memory: int) -> float:
        return self.used.get(group, 0) / gpu_memory


def task_gpu_memory(request: ResourceRequest, gpu_memory: int) -> int:
    """MiB a shared request takes on one GPU of a node with ``gpu_memory`` MiB per GPU."""
    if request.gpu_memory_mib > 0:
        return request.gpu_memory_mib
    return int(request.gpu_portion * gpu_memory)


def portion_on_node(memory: int, gpu_memory: int) -> float:
    """A memory amount as a GPU fraction of that node, rounded up to hundredths (KAI's rule)."""
    return math.ceil(memory / gpu_memory * 100) / 100


def request_portion(request: ResourceRequest, gpu_memory: int) -> float:
    if request.gpu_kind is GpuRequestKind.MEMORY:
        return portion_on_node(request.gpu_memory_mib, gpu_memory)
    return request.gpu_portion


def valid_portion(request: ResourceRequest, gpu_memory: int) -> bool:
    portion = request_portion(request, gpu_memory)
    return portion <= 1 or portion == int(portion)

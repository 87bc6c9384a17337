"""What a pod asks for, in the scheduler's units, with KAI's GPU request kinds.

A pod's GPU request is one of: none, whole GPUs (``nvidia.com/gpu``), a fraction of a GPU per device
(``gpu-fraction``), GPU memory per device (``gpu-memory``, MiB), or MIG profiles (``nvidia.com/mig-<g>g.<m>gb``).
Everything else (cpu, memory, pods, extended resources) is a plain amount per resource name.
"""

import re
from dataclasses import dataclass, field
from enum import Enum

from kai.core.model import names


class GpuRequestKind(Enum):
    NONE = "None"
    REGULAR = "Regular"
    FRACTION = "Fraction"
    MEMORY = "GpuMemory"
    MIG = "MigInstance"


_MIG_PROFILE = re.compile(r"^nvidia\.com/mig-(\d+)g\.(\d+)gb$")


def mig_gpu_portion(resource: str) -> int:
    """The number of GPU slices (g) a MIG profile counts for in quotas; 0 when the name is not a MIG profile."""
    match = _MIG_PROFILE.match(resource)
    return int(match.group(1)) if match else 0


@dataclass(frozen=True, slots=True)
class ResourceRequest:
    """Requests of one pod: ``amounts`` holds cpu (millicores), memory (bytes), pods and every scalar resource."""

    amounts: dict[str, float] = field(default_factory=dict)
    gpu_kind: GpuRequestKind = GpuRequestKind.NONE
    gpu_devices: int = 0
    gpu_portion: float = 0.0
    gpu_memory_mib: int = 0
    mig: dict[str, float] = field(default_factory=dict)

    @property
    def milli_cpu(self) -> float:
        return self.amounts.get(names.CPU, 0.0)

    @property
    def memory_bytes(self) -> float:
        return self.amounts.get(names.MEMORY, 0.0)

    @property
    def gpus(self) -> float:
        """GPU devices asked for (whole or fractional), as KAI's ``ResReq.GPUs()``; 0 for memory and MIG."""
        if self.gpu_kind in (GpuRequestKind.REGULAR, GpuRequestKind.FRACTION):
            return self.gpu_devices * self.gpu_portion
        return 0.0

    @property
    def gpus_quota(self) -> float:
        """GPUs counted against queue quota: fractions and whole GPUs, MIG slices; ``gpu-memory`` counts 0."""
        return self.gpus + sum(mig_gpu_portion(name) * count for name, count in self.mig.items())

    @property
    def is_cpu_only(self) -> bool:
        return self.gpu_kind is GpuRequestKind.NONE

    @property
    def is_shared_gpu(self) -> bool:
        return self.gpu_kind in (GpuRequestKind.FRACTION, GpuRequestKind.MEMORY)

    @property
    def is_best_effort(self) -> bool:
        """No cpu, memory or GPU request at all (KAI's minimum thresholds: 10 millicores, 10 MB)."""
        return self.milli_cpu < 10 and self.memory_bytes < 10 * names.MEGABYTE and self.is_cpu_only

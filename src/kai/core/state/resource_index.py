"""Maps resource names to rows of the resource-major node arrays (docs/architecture.md §7).

The first rows are fixed (cpu, memory, whole GPUs, pods) so hot code can index them by constant; any other
resource a node or pod names (MIG profiles, extended resources) gets the next row.
"""

import numpy as np
import numpy.typing as npt

from kai.core.model import names

CPU_ROW, MEMORY_ROW, GPU_ROW, PODS_ROW = 0, 1, 2, 3
Vector = npt.NDArray[np.float64]


class ResourceIndex:
    def __init__(self, extra: set[str]) -> None:
        fixed = [names.CPU, names.MEMORY, names.GPU, names.PODS]
        self.names: list[str] = fixed + sorted(extra - set(fixed))
        self.rows: dict[str, int] = {name: i for i, name in enumerate(self.names)}

    def __len__(self) -> int:
        return len(self.names)

    def vector(self, amounts: dict[str, float]) -> Vector:
        vec = np.zeros(len(self.names))
        for name, amount in amounts.items():
            row = self.rows.get(name)
            if row is not None:
                vec[row] = amount
        return vec

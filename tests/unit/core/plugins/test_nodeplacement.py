"""nodeplacement's binpack scores against the formula as first written (each mask worked out where it is used), on
random free GPUs, candidate sets and GPU-less nodes."""

from types import SimpleNamespace

import numpy as np
import pytest

from kai.core.framework.scores import MAX_HIGH_DENSITY
from kai.core.plugins.nodeplacement import NodePlacementPlugin
from kai.core.state.resource_index import GPU_ROW


def _plain(free: np.ndarray, overall: np.ndarray, candidates: np.ndarray) -> np.ndarray:
    considered = candidates & (overall != 0)
    if not considered.any():
        return np.zeros(len(free))
    low, high = float(free[considered].min()), float(free[considered].max())
    if high == 0:
        return np.zeros(len(free))
    if low == high:
        return np.where(overall == 0, 0.0, MAX_HIGH_DENSITY)
    return np.where(overall == 0, 0.0, MAX_HIGH_DENSITY * (1 - (free - low) / (high - low)))


@pytest.mark.parametrize("seed", range(40))
def test_binpack_scores_as_first_written(seed: int) -> None:
    rng = np.random.default_rng(seed)
    size = int(rng.integers(1, 12))
    rows = GPU_ROW + 1
    allocatable = np.zeros((rows, size))
    allocatable[GPU_ROW] = rng.choice([0.0, 4.0, 8.0], size)
    idle = np.zeros((rows, size))
    idle[GPU_ROW] = np.minimum(rng.choice([0.0, 0.5, 1.0, 3.0], size), allocatable[GPU_ROW])
    releasing = np.zeros((rows, size))
    releasing[GPU_ROW] = rng.choice([0.0, 0.0, 1.0], size)
    plugin = NodePlacementPlugin({})
    plugin.ssn = SimpleNamespace(nodes=_Nodes(idle, releasing, allocatable))  # type: ignore[assignment]
    task = SimpleNamespace(request=SimpleNamespace(is_cpu_only=False))
    candidates = rng.random(size) < 0.7
    expected = _plain(idle[GPU_ROW] + releasing[GPU_ROW], allocatable[GPU_ROW], candidates)
    assert np.array_equal(plugin.score(task, candidates), expected)  # type: ignore[arg-type]


class _Nodes:
    """The node table's arrays the score reads, and its length."""

    def __init__(self, idle: np.ndarray, releasing: np.ndarray, allocatable: np.ndarray) -> None:
        self.idle, self.releasing, self.allocatable = idle, releasing, allocatable

    def __len__(self) -> int:
        return int(self.allocatable.shape[1])

"""Which NUMA zones the kubelet's Topology Manager would give a pod's units on a node, under the node's policy.

- ``single-numa-node``: each unit wholly in one zone, the lowest that holds it.
- ``restricted``: each resource's preferred width is the fewest zones whose allocatable could hold it; all the unit's
  resources must prefer the same width, and the lowest set of that many zones (in zone order) must hold it now.
- ``best-effort`` never refuses (it only steers): zones are added greedily, the one covering most of what is still
  needed first, until the unit is covered.

The units of one pod are taken one after another from what the ones before left (``consumed``); each is drawn
across its zones lowest first. The result is each zone's draw (zone index to amounts per resource row), or None when
the node would refuse the pod.
"""

from itertools import combinations

import numpy as np

from kai.core.state.numa_ledger import Matrix, NumaLedger

Vector = np.ndarray
Draw = dict[int, Vector]


def solve(ledger: NumaLedger, aware: list[int], concurrent: list[Vector], serial: list[Vector]) -> Draw | None:
    consumed = np.zeros_like(ledger.available)
    draw: Draw = {}
    for need in concurrent:
        zones = _fit(ledger, aware, need, consumed)
        if zones is None:
            return None
        _draw(ledger.available - consumed, aware, zones, need, consumed, draw)
    for need in serial:
        if _fit(ledger, aware, need, np.zeros_like(ledger.available)) is None:
            return None
    return draw


def _fit(ledger: NumaLedger, aware: list[int], need: Vector, consumed: Matrix) -> list[int] | None:
    available = ledger.available - consumed
    wanted = [r for r in aware if need[r] > 0]
    if ledger.policy == "single-numa-node":
        return _lowest_single(available, wanted, need)
    if ledger.policy == "best-effort":
        return _greedy(available, wanted, need)
    return _restricted(ledger, available, wanted, need)


def _lowest_single(available: Matrix, wanted: list[int], need: Vector) -> list[int] | None:
    for z in range(available.shape[0]):
        if all(available[z, r] >= need[r] for r in wanted):
            return [z]
    return None


def _greedy(available: Matrix, wanted: list[int], need: Vector) -> list[int] | None:
    remaining = {r: float(need[r]) for r in wanted}
    zones: list[int] = []
    while len(zones) < available.shape[0]:
        if all(left <= 0 for left in remaining.values()):
            return zones
        best, best_cover = -1, 0.0
        for z in range(available.shape[0]):
            if z in zones:
                continue
            cover = sum(min(left, available[z, r]) for r, left in remaining.items() if left > 0)
            if cover > best_cover:
                best, best_cover = z, cover
        if best < 0:
            break
        zones.append(best)
        for r in remaining:
            remaining[r] -= available[best, r]
    return zones if all(left <= 0 for left in remaining.values()) else None


def _restricted(ledger: NumaLedger, available: Matrix, wanted: list[int], need: Vector) -> list[int] | None:
    width = -1
    for r in wanted:
        enough = np.flatnonzero(ledger.prefix[:, r] >= need[r])
        if not enough.size:
            return None
        if width not in (-1, int(enough[0]) + 1):
            return None
        width = int(enough[0]) + 1
    if width <= 0:
        return []
    for zones in combinations(range(available.shape[0]), width):
        if all(available[list(zones), r].sum() >= need[r] for r in wanted):
            return list(zones)
    return None


def _draw(available: Matrix, aware: list[int], zones: list[int], need: Vector, consumed: Matrix, draw: Draw) -> None:
    for r in aware:
        remaining = float(need[r])
        for z in zones:
            if remaining <= 0:
                break
            take = min(float(available[z, r]), remaining)
            if take <= 0:
                continue
            consumed[z, r] += take
            draw.setdefault(z, np.zeros(available.shape[1]))[r] += take
            remaining -= take

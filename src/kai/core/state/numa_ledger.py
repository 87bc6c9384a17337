"""One node's NUMA zones for a session: what each zone has allocatable and what is still available, per resource
the node reports per zone (KAI's NumaTopology).

Zones are in the topology's order (by NUMA node number); resources are the names the node's NodeResourceTopology
reports per zone that the cluster's pods or nodes also name (others can be asked for by no pod). The ``numa``
plugin starts ``available`` from the report or from ``allocatable`` less the placements of the pods there, then
charges what it places and credits what it evicts.
"""

from collections.abc import Mapping

import numpy as np
import numpy.typing as npt

from kai.core.model.numa import NodeTopology, NumaPlacement

Matrix = npt.NDArray[np.float64]


class NumaLedger:
    __slots__ = ("allocatable", "available", "policy", "prefix", "resources", "row", "scope", "zone_index", "zones")

    def __init__(self, topology: NodeTopology, known: frozenset[str] | set[str]) -> None:
        self.policy, self.scope = topology.policy, topology.scope
        self.zones = tuple(zone.name for zone in topology.zones)
        self.zone_index = {name: i for i, name in enumerate(self.zones)}
        reported = {name for zone in topology.zones for name in (*zone.allocatable, *zone.available)}
        self.resources = tuple(sorted(reported & known))
        self.row = {name: i for i, name in enumerate(self.resources)}
        self.allocatable: Matrix = np.array(
            [[zone.allocatable.get(name, 0.0) for name in self.resources] for zone in topology.zones], dtype=float
        ).reshape(len(self.zones), len(self.resources))
        self.available: Matrix = np.array(
            [[zone.available.get(name, 0.0) for name in self.resources] for zone in topology.zones], dtype=float
        ).reshape(len(self.zones), len(self.resources))
        self.prefix: Matrix = np.cumsum(-np.sort(-self.allocatable, axis=0), axis=0)
        """Per resource, the sums of its k largest zone allocatables (k = 1, 2, ...): the fewest zones that could
        ever hold an amount (the restricted policy's preferred width) is a lookup."""

    def placement_of(self, record: NumaPlacement | None) -> NumaPlacement | None:
        """A record whose zones all exist here; None otherwise (a partial one would under-credit: KAI drops it)."""
        if not record or any(zone.zone not in self.zone_index for zone in record):
            return None
        return record

    def charge(self, placement: NumaPlacement, sign: float = 1.0) -> None:
        """Takes a placement's amounts from its zones (``sign`` -1 gives them back)."""
        for zone in placement:
            z = self.zone_index.get(zone.zone)
            if z is None:
                continue
            for name, amount in zone.amounts.items():
                r = self.row.get(name)
                if r is not None:
                    self.available[z, r] -= sign * amount

    def available_by_zone(self) -> dict[str, Mapping[str, float]]:
        return {
            zone: dict(zip(self.resources, map(float, row), strict=True))
            for zone, row in zip(self.zones, self.available, strict=True)
        }

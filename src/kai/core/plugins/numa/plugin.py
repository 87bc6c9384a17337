"""numa: places pods where the kubelet's Topology Manager will NUMA-align them, and prefers nodes where they span the
fewest NUMA zones (KAI v0.16's ``numa`` plugin, as in KAI v0.17.0).

Each node's NodeResourceTopology gives its Topology Manager policy and its zones. On ``single-numa-node`` and
``restricted`` nodes a pod the kubelet would refuse is filtered out; ``best-effort`` nodes never refuse, but the
plugin keeps their zones' accounting and scores them too; ``none`` and nodes without a topology are not
NUMA-filtered. What counts: devices the node reports per zone (GPUs, NICs) for any pod; cpu, memory and hugepages
only for Guaranteed pods (the kubelet's CPU and memory managers align only those), minus ``ignoreList`` (resources
reported per zone that the kubelet does not align). A node's score is 100 / the zones the pod would span there.

Each session keeps every zone's available resources (``NumaLedger``): from the report, or (``reconstructAvailable``,
the default) from allocatable less the placements of the pods there, which never lags. A pod's placement is its
record (observed > its BindRequest's prediction > the bind's prediction); a pod without one is never guessed. A pod
being placed is given the placement this plugin predicts, which its BindRequest carries; placing charges it, evicting
credits it.
"""

from collections.abc import Mapping
from typing import Any

import numpy as np

from kai.core.framework.scores import NUMA
from kai.core.framework.session import Session
from kai.core.model.numa import NumaPlacement, ZonePlacement
from kai.core.model.pod_requests import GUARANTEED
from kai.core.plugins.numa.evaluator import solve
from kai.core.plugins.numa.requests import NumaRequests, numa_requests
from kai.core.state.node_table import Mask, NodeInfo
from kai.core.state.numa_ledger import NumaLedger
from kai.core.state.pod_status import ACTIVE_ALLOCATED
from kai.core.state.podgroup_info import PodGroupInfo
from kai.core.state.reasons import Predicate, Refusal
from kai.core.state.resource_index import Vector
from kai.core.state.task import TaskInfo

NOT_ALIGNED = "node cannot NUMA-align the pod's resources under its Topology Manager policy"
FILTERED = ("single-numa-node", "restricted")
SCORED = (*FILTERED, "best-effort")


def _qos_gated(name: str) -> bool:
    """Aligned by the kubelet only for Guaranteed pods (CPU manager, memory manager)."""
    return name in ("cpu", "memory") or name.startswith("hugepages-")


def _flag(arguments: Mapping[str, Any], key: str, default: bool) -> bool:
    value = arguments.get(key, default)
    if isinstance(value, str):
        return value.strip().lower() not in ("false", "0", "f", "no")
    return bool(value)


class NumaPlugin:
    name = "numa"

    def __init__(self, arguments: Mapping[str, Any]) -> None:
        ignore = arguments.get("ignoreList", "")
        self.ignore = frozenset(n.strip() for n in str(ignore).split(",") if n.strip())
        self.reconstruct = _flag(arguments, "reconstructAvailable", True)

    def on_session_open(self, ssn: Session) -> None:
        self.ssn = ssn
        known = set(ssn.nodes.index.names)
        self.ledgers = {
            name: NumaLedger(topology, known)
            for name, topology in ssn.cluster.numa.items()
            if name in ssn.nodes.by_name and topology.zones
        }
        self.max_zones = max((len(ledger.zones) for ledger in self.ledgers.values()), default=0)
        self.devices = {
            name
            for ledger in self.ledgers.values()
            if ledger.policy in SCORED
            for name in ledger.resources
            if not _qos_gated(name) and name not in self.ignore
        }
        self.requests: dict[str, NumaRequests] = {}
        self.charged: dict[str, tuple[NumaLedger, NumaPlacement]] = {}
        self._seed()
        ssn.result.numa = self.ledgers
        ssn.predicates.append(self.predicate)
        ssn.node_order_fns.append(self.score)
        ssn.numa_placement_fn = self.placement
        ssn.allocate_handlers.append(self.charge)
        ssn.deallocate_handlers.append(self.credit)

    def _seed(self) -> None:
        """Each placed task's placement from its record, and each zone's available resources (see the module doc)."""
        for info in self.ssn.nodes.infos:
            ledger = self.ledgers.get(info.name)
            scored = ledger is not None and ledger.policy in SCORED
            if scored and self.reconstruct:
                assert ledger is not None
                ledger.available = ledger.allocatable.copy()
            for task in info.tasks.values():
                task.numa_placement = None
                if not scored:
                    continue
                assert ledger is not None
                record = ledger.placement_of(task.numa_record)
                active = task.status in ACTIVE_ALLOCATED
                if record is not None and active and self.reconstruct:
                    ledger.charge(record)
                if record is not None and self._handles(task, ledger):
                    task.numa_placement = record
                    if active:
                        self.charged[task.key] = (ledger, record)

    def _requests(self, task: TaskInfo) -> NumaRequests:
        found = self.requests.get(task.key)
        if found is None:
            found = self.requests[task.key] = numa_requests(task.pod)
        return found

    def _handles(self, task: TaskInfo, ledger: NumaLedger) -> bool:
        """The pod's resources the node aligns include some it asks for: a Guaranteed pod, or a reported device."""
        if task.pod.qos_class == GUARANTEED:
            return True
        wanted = self._requests(task).pod
        return any(
            wanted.get(name, 0) > 0 for name in ledger.resources if not _qos_gated(name) and name not in self.ignore
        )

    def _solve(self, task: TaskInfo, ledger: NumaLedger) -> dict[int, Vector] | None:
        aware = [
            r
            for r, name in enumerate(ledger.resources)
            if name not in self.ignore and (task.pod.qos_class == GUARANTEED or not _qos_gated(name))
        ]
        concurrent, serial = self._requests(task).for_scope(ledger.scope)

        def vector(amounts: Mapping[str, float]) -> Vector:
            return np.array([amounts.get(name, 0.0) for name in ledger.resources], dtype=float)

        return solve(ledger, aware, [vector(c) for c in concurrent], [vector(s) for s in serial])

    def predicate(self, task: TaskInfo, job: PodGroupInfo, node: NodeInfo) -> str | None:
        ledger = self.ledgers.get(node.name)
        if ledger is None or ledger.policy not in FILTERED or not self._handles(task, ledger):
            return None
        if self._solve(task, ledger) is None:
            return Refusal(NOT_ALIGNED, Predicate.NUMA, {"policy": ledger.policy, "zones": len(ledger.zones)})
        return None

    def placement(self, task: TaskInfo, node: NodeInfo) -> NumaPlacement | None:
        ledger = self.ledgers.get(node.name)
        if ledger is None or ledger.policy not in SCORED or not self._handles(task, ledger):
            return ()
        draw = self._solve(task, ledger) or {}
        return tuple(
            ZonePlacement(
                ledger.zones[z],
                {ledger.resources[r]: float(amount) for r, amount in enumerate(amounts) if amount > 0},
            )
            for z, amounts in sorted(draw.items())
        )

    def score(self, task: TaskInfo, candidates: Mask) -> Vector:
        nodes = self.ssn.nodes
        scores = np.zeros(len(nodes))
        if not self.max_zones or not self._wants_numa(task):
            return scores
        for column in np.flatnonzero(candidates):
            info = nodes.infos[column]
            ledger = self.ledgers.get(info.name)
            if ledger is None:
                span = self.max_zones
            elif ledger.policy not in SCORED or not self._handles(task, ledger):
                span = len(ledger.zones)
            else:
                draw = self._solve(task, ledger)
                if draw is None:
                    continue
                span = max(len(draw), 1)
            scores[column] = NUMA / span
        return scores

    def _wants_numa(self, task: TaskInfo) -> bool:
        if task.pod.qos_class == GUARANTEED:
            return True
        wanted = self._requests(task).pod
        return any(wanted.get(name, 0) > 0 for name in self.devices)

    def charge(self, task: TaskInfo) -> None:
        ledger = self.ledgers.get(task.node_name)
        if ledger is None or not task.numa_placement or task.key in self.charged:
            return
        ledger.charge(task.numa_placement)
        self.charged[task.key] = (ledger, task.numa_placement)

    def credit(self, task: TaskInfo) -> None:
        charged = self.charged.pop(task.key, None)
        if charged is not None:
            charged[0].charge(charged[1], -1.0)

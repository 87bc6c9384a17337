"""The stand-in of kube-controller-manager's disruption controller: each PodDisruptionBudget's status from its pods,
so that the scheduler reads, and the in-memory cluster's eviction subresource judges, what they would in a cluster.

As the controller: the pods are those of the PDB's namespace its selector matches; a pod is healthy while it runs
(simulated pods are ready once they run), is not being deleted, and is not in ``disruptedPods`` (an eviction the
API server let through that the controller has not seen go through yet: dropped once the pod is being deleted or
gone, or after two minutes). The expected count is the pods that are not finished (the controller asks their
workload's scale, which the stand-ins keep at that count); ``minAvailable`` and ``maxUnavailable`` as percentages
round up. ``disruptionsAllowed`` is what the healthy pods have above the desired number.
"""

import math
from collections.abc import Mapping
from typing import Any

from kai.cluster.memory import MemoryCluster, json_copy
from kai.core.model.disruption_budget import DisruptionBudget, IntOrPercent, parse_disruption_budget
from kai.core.model.errors import InvalidObject
from kai.core.model.meta import parse_time

DISRUPTED_POD_TIMEOUT_S = 120.0


def update_budgets(cluster: MemoryCluster, now: float) -> None:
    """Writes the status of every PodDisruptionBudget whose status changed (one the scheduler cannot read is left
    alone: the scheduler reports it)."""
    budgets = cluster.view("PodDisruptionBudget")
    if not budgets:
        return
    pods = cluster.view("Pod")
    for raw in budgets:
        try:
            budget = parse_disruption_budget(raw)
        except InvalidObject:
            continue
        status = _status(budget, raw, [p for p in pods if _covered(budget, p)], now)
        current = raw.get("status") or {}
        if any(current.get(key) != value for key, value in status.items()):
            cluster.patch_status("PodDisruptionBudget", budget.key, {**json_copy(dict(current)), **status})


def _covered(budget: DisruptionBudget, pod: Mapping[str, Any]) -> bool:
    meta = pod.get("metadata") or {}
    return budget.covers(str(meta.get("namespace", "")), meta.get("labels") or {})


def _status(
    budget: DisruptionBudget, raw: Mapping[str, Any], pods: list[Mapping[str, Any]], now: float
) -> dict[str, Any]:
    by_name = {str((p.get("metadata") or {}).get("name")): p for p in pods}
    disrupted = {}
    for name, since in ((raw.get("status") or {}).get("disruptedPods") or {}).items():
        pod = by_name.get(name)
        if pod is None or (pod.get("metadata") or {}).get("deletionTimestamp"):
            continue
        try:
            expired = parse_time(since, budget.key, "status.disruptedPods") + DISRUPTED_POD_TIMEOUT_S < now
        except InvalidObject:
            expired = True
        if not expired:
            disrupted[name] = since
    live = [p for p in pods if (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")]
    healthy = sum(
        1
        for p in live
        if (p.get("status") or {}).get("phase") == "Running"
        and not (p.get("metadata") or {}).get("deletionTimestamp")
        and str((p.get("metadata") or {}).get("name")) not in disrupted
    )
    expected = len(live)
    if budget.min_available is not None:
        desired = _scaled(budget.min_available, expected)
    elif budget.max_unavailable is not None:
        desired = max(0, expected - _scaled(budget.max_unavailable, expected))
    else:
        desired = expected
    generation = (raw.get("metadata") or {}).get("generation", 0)
    return {
        "observedGeneration": generation,
        "currentHealthy": healthy,
        "desiredHealthy": desired,
        "expectedPods": expected,
        "disruptionsAllowed": max(0, healthy - desired) if expected else 0,
        "disruptedPods": disrupted or None,
    }


def _scaled(value: IntOrPercent, total: int) -> int:
    if isinstance(value, int):
        return value
    return math.ceil(total * int(value.removesuffix("%")) / 100)

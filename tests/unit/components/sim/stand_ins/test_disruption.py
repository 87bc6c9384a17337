"""The simulator's disruption-controller stand-in: a PodDisruptionBudget's status from its pods, as
kube-controller-manager's controller keeps it."""

from typing import Any

import pytest
from sim_support import gpu_pod, pdb

from kai.cluster.memory import MemoryCluster
from kai.components.sim.stand_ins.disruption import update_budgets

WEB = {"app": "web"}


def status(spec: dict[str, Any], running: int = 4, pending: int = 0, now: float = 0.0) -> dict[str, Any]:
    made = MemoryCluster()
    made.create("PodDisruptionBudget", pdb("web", WEB, **spec))
    for i in range(running):
        made.create("Pod", gpu_pod(f"run-{i}", "team", on="n1", labels=WEB))
    for i in range(pending):
        made.create("Pod", gpu_pod(f"wait-{i}", "team", labels=WEB))
    made.create("Pod", gpu_pod("other", "team", on="n1"))
    update_budgets(made, now)
    found = made.get("PodDisruptionBudget", "ns/web")
    assert found is not None
    return dict(found["status"])


@pytest.mark.parametrize(
    ("spec", "allowed", "desired"),
    [
        ({"minAvailable": 3}, 1, 3),
        ({"minAvailable": "50%"}, 2, 2),
        ({"maxUnavailable": 1}, 1, 3),
        ({"maxUnavailable": "30%"}, 2, 2),  # 30% of 4 rounds up to 2
        ({"maxUnavailable": 0}, 0, 4),
    ],
)
def test_disruptions_allowed_are_the_healthy_pods_above_the_desired_number(spec, allowed, desired) -> None:
    found = status(spec)
    assert (found["disruptionsAllowed"], found["desiredHealthy"], found["currentHealthy"]) == (allowed, desired, 4)
    assert found["expectedPods"] == 4


def test_a_pod_not_running_is_expected_but_not_healthy() -> None:
    found = status({"maxUnavailable": 1}, running=3, pending=1)
    assert (found["currentHealthy"], found["expectedPods"], found["disruptionsAllowed"]) == (3, 4, 0)


def test_an_eviction_not_yet_seen_through_is_counted_until_its_pod_is_gone_or_two_minutes_passed() -> None:
    made = MemoryCluster(clock=lambda: "1970-01-01T00:00:00Z")
    made.create("PodDisruptionBudget", pdb("web", WEB, maxUnavailable=1))
    for i in range(3):
        made.create("Pod", gpu_pod(f"run-{i}", "team", on="n1", labels=WEB))
    update_budgets(made, 0.0)
    made.patch_status(
        "PodDisruptionBudget", "ns/web", {"disruptionsAllowed": 0, "disruptedPods": {"run-0": "1970-01-01T00:00:00Z"}}
    )
    update_budgets(made, 60.0)
    assert made.get("PodDisruptionBudget", "ns/web")["status"]["currentHealthy"] == 2  # type: ignore[index]
    update_budgets(made, 121.0)
    found = made.get("PodDisruptionBudget", "ns/web")["status"]  # type: ignore[index]
    assert (found["currentHealthy"], "disruptedPods" in found) == (3, False)

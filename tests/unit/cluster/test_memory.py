"""The embedded cluster's eviction subresource judges a pod's PodDisruptionBudget as the API server does."""

import pytest
from sim_support import gpu_pod, pdb

from kai.cluster.memory import MemoryCluster
from kai.cluster.port import EvictionRefused

WEB = {"app": "web"}


def cluster(allowed: int, *budgets: str) -> MemoryCluster:
    made = MemoryCluster(clock=lambda: "2026-01-01T00:00:00Z")
    for name in budgets or ("web",):
        budget = pdb(name, WEB, maxUnavailable=1)
        budget["status"] = {"disruptionsAllowed": allowed, "currentHealthy": 2, "desiredHealthy": 2}
        made.create("PodDisruptionBudget", budget)
    made.create("Pod", gpu_pod("web-0", "team", on="n1", labels=WEB))
    return made


def terminating(made: MemoryCluster) -> bool:
    pod = made.get("Pod", "ns/web-0")
    return pod is not None and bool(pod["metadata"].get("deletionTimestamp"))


def test_an_allowed_eviction_deletes_the_pod_and_charges_its_budget_until_the_controller_sees_it_go() -> None:
    made = cluster(1)
    made.evict("ns", "web-0")
    assert terminating(made)
    status = made.get("PodDisruptionBudget", "ns/web")["status"]  # type: ignore[index]
    assert (status["disruptionsAllowed"], status["disruptedPods"]) == (0, {"web-0": "2026-01-01T00:00:00Z"})


def test_an_eviction_the_budget_does_not_allow_is_refused_naming_it_and_nothing_changes() -> None:
    made = cluster(0)
    with pytest.raises(EvictionRefused, match="disruption budget web needs 2 healthy pods and has 2 currently"):
        made.evict("ns", "web-0")
    assert not terminating(made)


def test_a_dry_run_judges_without_taking() -> None:
    made = cluster(1)
    made.evict("ns", "web-0", dry_run=True)
    assert not terminating(made)
    assert made.get("PodDisruptionBudget", "ns/web")["status"]["disruptionsAllowed"] == 1  # type: ignore[index]


def test_a_pod_of_two_budgets_is_refused() -> None:
    with pytest.raises(EvictionRefused, match="more than one PodDisruptionBudget"):
        cluster(1, "web", "web-too").evict("ns", "web-0")


def test_a_pod_that_does_not_run_goes_whatever_its_budget_says_and_a_missing_one_counts_as_evicted() -> None:
    made = cluster(0)
    made.create("Pod", gpu_pod("waiting", "team", labels=WEB))
    made.evict("ns", "waiting")
    made.evict("ns", "gone")
    assert made.get("Pod", "ns/waiting")["metadata"]["deletionTimestamp"]  # type: ignore[index]

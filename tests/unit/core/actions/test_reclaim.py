"""reclaim: a queue below its fair share takes GPUs back from a queue above its own."""

from action_support import run_action
from core_builders import T0, node, pod, podgroup, queue

from kai.core.actions import reclaim
from kai.core.framework.decisions import CycleResult, Eviction

PLUGINS = {
    "tiers": [
        {"plugins": [{"name": n} for n in ("predicates", "proportion", "priority", "elastic", "sg-nodelocalgreedy")]}
    ]
}


def one_reclaimer(holder: str, holder_quota: float, reclaimer: str, reclaimer_quota: float, gpus: int) -> CycleResult:
    """``holder`` runs a one-GPU podgroup on each of n1's ``gpus`` GPUs; ``reclaimer`` has one one-GPU pod waiting."""
    return run_action(
        reclaim.NAME,
        ("Queue", queue("root")),
        ("Queue", queue(holder, parent="root", gpu_quota=holder_quota)),
        ("Queue", queue(reclaimer, parent="root", gpu_quota=reclaimer_quota)),
        ("Node", node("n1", gpus)),
        *(("PodGroup", podgroup(f"{holder}-{i}", holder, T0 - 600)) for i in range(gpus)),
        *(("Pod", pod(f"{holder}-{i}-0", f"{holder}-{i}", node_name="n1")) for i in range(gpus)),
        ("PodGroup", podgroup(reclaimer, reclaimer, T0)),
        ("Pod", pod(f"{reclaimer}-0", reclaimer)),
        **PLUGINS,
    )


def test_a_queue_within_its_quota_reclaims_from_one_above_it() -> None:
    result = one_reclaimer("greedy", 0, "owed", 2, gpus=2)
    assert len(result.evictions) == 1 and result.evictions[0].pod_key.startswith("default/greedy-")
    assert [p.pod_key for p in result.pipelined] == ["default/owed-0"]


def test_a_queue_above_its_fair_share_reclaims_nothing() -> None:
    result = run_action(
        reclaim.NAME,
        ("Queue", queue("root")),
        ("Queue", queue("a", parent="root", gpu_quota=1)),
        ("Queue", queue("b", parent="root", gpu_quota=1)),
        ("Node", node("n1", 2)),
        ("PodGroup", podgroup("a", "a", T0 - 600)),
        ("Pod", pod("a-0", "a", node_name="n1")),
        ("PodGroup", podgroup("b", "b", T0 - 600)),
        ("Pod", pod("b-0", "b", node_name="n1")),
        ("PodGroup", podgroup("more", "b", T0)),
        ("Pod", pod("more-0", "more")),
        **PLUGINS,
    )
    assert result.evictions == []


def _why(evictions: list[Eviction]) -> set[str]:
    return {e.why for e in evictions}


def test_the_audit_names_the_quota_a_queue_below_it_is_owed_whatever_the_rest_of_the_cluster_has_free() -> None:
    """owed's quota is owed to it however much the rest of the cluster has free (greedy's fair share depends on
    that): the reason that holds regardless comes first."""
    result = one_reclaimer("greedy", 0, "owed", 2, gpus=2)
    assert _why(result.evictions) == {"owed below its quota by 2 GPUs, greedy over its quota by 2 GPUs"}


def test_the_audit_names_the_victims_excess_over_its_fair_share_when_the_reclaimer_is_past_its_quota() -> None:
    result = one_reclaimer("a", 0, "b", 0, gpus=4)
    assert _why(result.evictions) == {"a over its fair share by 1 GPU"}

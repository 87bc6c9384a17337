"""reclaim: a queue below its fair share takes GPUs back from a queue above its own."""

from action_support import run_action
from core_builders import T0, node, pod, podgroup, queue

from kai.core.actions import reclaim
from kai.core.framework.decisions import Eviction

PLUGINS = {
    "tiers": [
        {"plugins": [{"name": n} for n in ("predicates", "proportion", "priority", "elastic", "sg-nodelocalgreedy")]}
    ]
}


def test_a_queue_within_its_quota_reclaims_from_one_above_it() -> None:
    result = run_action(
        reclaim.NAME,
        ("Queue", queue("root")),
        ("Queue", queue("greedy", parent="root", gpu_quota=0)),
        ("Queue", queue("owed", parent="root", gpu_quota=2)),
        ("Node", node("n1", 2)),
        *(("PodGroup", podgroup(f"greedy-{i}", "greedy", T0 - 600)) for i in range(2)),
        *(("Pod", pod(f"greedy-{i}-0", f"greedy-{i}", node_name="n1")) for i in range(2)),
        ("PodGroup", podgroup("owed", "owed", T0)),
        ("Pod", pod("owed-0", "owed")),
        **PLUGINS,
    )
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
    result = run_action(
        reclaim.NAME,
        ("Queue", queue("root")),
        ("Queue", queue("greedy", parent="root", gpu_quota=0)),
        ("Queue", queue("owed", parent="root", gpu_quota=2)),
        ("Node", node("n1", 2)),
        *(("PodGroup", podgroup(f"greedy-{i}", "greedy", T0 - 600)) for i in range(2)),
        *(("Pod", pod(f"greedy-{i}-0", f"greedy-{i}", node_name="n1")) for i in range(2)),
        ("PodGroup", podgroup("owed", "owed", T0)),
        ("Pod", pod("owed-0", "owed")),
        **PLUGINS,
    )
    assert _why(result.evictions) == {"owed below its quota by 2 GPUs, greedy over its quota by 2 GPUs"}


def test_the_audit_names_the_victims_excess_over_its_fair_share_when_the_reclaimer_is_past_its_quota() -> None:
    result = run_action(
        reclaim.NAME,
        ("Queue", queue("root")),
        ("Queue", queue("a", parent="root", gpu_quota=0)),
        ("Queue", queue("b", parent="root", gpu_quota=0)),
        ("Node", node("n1", 4)),
        *(("PodGroup", podgroup(f"a-{i}", "a", T0 - 600)) for i in range(4)),
        *(("Pod", pod(f"a-{i}-0", f"a-{i}", node_name="n1")) for i in range(4)),
        ("PodGroup", podgroup("b", "b", T0)),
        ("Pod", pod("b-0", "b")),
        **PLUGINS,
    )
    assert _why(result.evictions) == {"a over its fair share by 1 GPU"}

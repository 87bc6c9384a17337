"""consolidation: running pods are moved to other nodes so a pending pod that fits nowhere gets a whole node."""

from pathlib import Path

from action_support import run_action
from core_builders import T0, node, pod, podgroup, queue

from kai.components.sim.runner import run_scenario
from kai.components.sim.scenario import load_scenario
from kai.core.actions import consolidation

SCENARIOS = Path(__file__).parent / "scenarios"

QUEUES = (("Queue", queue("root")), ("Queue", queue("q", parent="root")))


def test_a_pod_is_moved_to_make_room_for_a_two_gpu_pod() -> None:
    result = run_action(
        consolidation.NAME,
        *QUEUES,
        ("Node", node("n1", 2)),
        ("Node", node("n2", 2)),
        ("PodGroup", podgroup("a", "q", T0 - 600)),
        ("Pod", pod("a-0", "a", node_name="n1")),
        ("PodGroup", podgroup("b", "q", T0 - 600)),
        ("Pod", pod("b-0", "b", node_name="n2")),
        ("PodGroup", podgroup("wide", "q", T0)),
        ("Pod", pod("wide-0", "wide", gpus=2)),
    )
    (moved,) = result.evictions
    assert (moved.pod_key, moved.node) in (("default/a-0", "n1"), ("default/b-0", "n2"))  # the node it ran on
    assert "preempted and rescheduled due to bin packing" in moved.message
    pipelined = {p.pod_key: p.node for p in result.pipelined}
    assert pipelined.keys() == {"default/wide-0", moved.pod_key}
    assert pipelined["default/wide-0"] != pipelined[moved.pod_key]


def test_a_pod_an_earlier_consolidation_moved_is_not_left_pending_by_the_next() -> None:
    """A consolidation moved a pod; the next one, for a job of the same queue held by its limit, took the pipelined
    pod as its victim, put it back to pending and took its place: the pod was evicted and never placed again. As
    KAI's allPodsReallocated, a victim left pending is not moved: the scenario's expect block holds KAI's outcome."""
    run = run_scenario(load_scenario(SCENARIOS / "consolidation-re-places-a-moved-pod.yaml"))
    assert run.passed, run.mismatches
    (evicted,) = run.cycles[-1].session.result.evictions
    assert (evicted.pod_key, evicted.action) == ("default/moved-0", "consolidation")

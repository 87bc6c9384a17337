"""stalegangeviction: a gang whose running pods fell below its minimum for longer than its grace period is evicted
whole; a younger one is left alone."""

import pytest
from action_support import run_action
from core_builders import T0, node, pod, podgroup, queue

from kai.core.actions import stalegangeviction
from kai.core.model.meta import format_time

QUEUES = (("Queue", queue("root")), ("Queue", queue("q", parent="root")))


@pytest.mark.parametrize(("stale_for_s", "evicted"), [(120.0, ["default/g-0"]), (30.0, [])])
def test_a_gang_stale_past_its_grace_period_is_evicted(stale_for_s: float, evicted: list[str]) -> None:
    stale = {"kai.scheduler/stale-podgroup-timestamp": format_time(T0 - stale_for_s)}
    result = run_action(
        stalegangeviction.NAME,
        *QUEUES,
        ("Node", node("n1", 2)),
        ("PodGroup", podgroup("g", "q", T0 - 600, minMember=2, annotations=stale)),
        ("Pod", pod("g-0", "g", node_name="n1")),
    )
    assert [e.pod_key for e in result.evictions] == evicted

"""allocate: pending podgroups placed in fair-share order, each gang all or nothing."""

from action_support import run_action
from core_builders import T0, node, pod, podgroup, queue

from kai.core.actions import allocate

QUEUES = (("Queue", queue("root")), ("Queue", queue("q", parent="root")))


def test_a_gang_that_fits_is_bound_whole_and_one_that_does_not_waits_with_nothing_bound() -> None:
    result = run_action(
        allocate.NAME,
        *QUEUES,
        ("Node", node("n1", 2)),
        ("Node", node("n2", 2)),
        ("PodGroup", podgroup("fits", "q", T0 - 60, minMember=3)),
        *(("Pod", pod(f"fits-{i}", "fits")) for i in range(3)),
        ("PodGroup", podgroup("too-big", "q", T0, minMember=2)),
        *(("Pod", pod(f"too-big-{i}", "too-big")) for i in range(2)),
    )
    assert sorted(bind.pod_key for bind in result.binds) == ["default/fits-0", "default/fits-1", "default/fits-2"]
    assert list(result.unschedulable) == ["default/too-big"]
    assert result.scheduled == {"allocate": 1}

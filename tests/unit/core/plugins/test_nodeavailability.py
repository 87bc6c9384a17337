"""nodeavailability: a node where the pod fits in idle resources scores above one where it must wait for a releasing
pod to go, or does not fit."""

from core_builders import T0, node, pod, podgroup
from plugin_support import opened, task

from kai.core.framework.scores import AVAILABILITY
from kai.core.plugins.nodeavailability import NodeAvailabilityPlugin


def test_only_nodes_with_idle_room_score() -> None:
    ssn = opened(
        NodeAvailabilityPlugin(),
        ("Node", node("n1-busy", 1)),
        ("Node", node("n2-releasing", 1)),
        ("Node", node("n3-free", 1)),
        ("PodGroup", podgroup("running", "q", T0 - 60)),
        ("Pod", pod("running-0", "running", node_name="n1-busy")),
        ("PodGroup", podgroup("leaving", "q", T0 - 60)),
        ("Pod", pod("leaving-0", "leaving", node_name="n2-releasing", deleted=T0 - 1)),
        ("PodGroup", podgroup("new", "q", T0)),
        ("Pod", pod("new-0", "new")),
    )
    (score,) = ssn.node_order_fns
    everywhere = ssn.nodes.fits_non_allocated(task(ssn, "new-0"))
    assert list(score(task(ssn, "new-0"), everywhere)) == [0.0, 0.0, AVAILABILITY]

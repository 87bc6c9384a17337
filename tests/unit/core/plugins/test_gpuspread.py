"""gpuspread: a GPU-fraction pod goes to a whole free GPU first, else to the least used shared GPU."""

from core_builders import T0, podgroup
from plugin_support import fraction_pod, opened, shared_gpu_node, task

from kai.core.plugins.gpuspread import GpuSpreadPlugin
from kai.core.state.gpu_sharing import WHOLE_GPU

OBJECTS = (
    ("Node", shared_gpu_node("n1", 4)),
    ("PodGroup", podgroup("held", "q", T0 - 60, minMember=1)),
    ("Pod", fraction_pod("held-0", "held", "0.5", "n1", "busy")),
    ("Pod", fraction_pod("held-1", "held", "0.25", "n1", "quiet")),
    ("PodGroup", podgroup("new", "q", T0, minMember=1)),
    ("Pod", fraction_pod("new-0", "new", "0.25")),
)


def test_a_whole_gpu_scores_highest_then_the_least_used_one() -> None:
    ssn = opened(GpuSpreadPlugin(), *OBJECTS)
    (score,) = ssn.gpu_order_fns
    new, n1 = task(ssn, "new-0"), ssn.nodes.by_name["n1"]
    scores = {group: score(new, n1, group) for group in ("busy", "quiet", WHOLE_GPU)}
    assert scores == {"busy": 0.5, "quiet": 0.75, WHOLE_GPU: 1.0}

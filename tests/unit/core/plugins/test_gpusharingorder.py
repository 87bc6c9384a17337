"""gpusharingorder: a GPU-fraction pod scores on nodes that already have a shared GPU it fits on, so fractions pack
onto shared GPUs before taking a whole one; a whole-GPU pod scores nowhere."""

from core_builders import T0, pod, podgroup
from plugin_support import fraction_pod, opened, shared_gpu_node, task

from kai.core.framework.scores import GPU_SHARING
from kai.core.plugins.gpusharingorder import GpuSharingOrderPlugin


def test_a_fraction_prefers_a_node_with_a_shared_gpu_it_fits_on() -> None:
    ssn = opened(
        GpuSharingOrderPlugin(),
        ("Node", shared_gpu_node("n1-full-share", 1)),
        ("Node", shared_gpu_node("n2-half-share", 1)),
        ("Node", shared_gpu_node("n3-whole", 1)),
        ("PodGroup", podgroup("held", "q", T0 - 60, minMember=1)),
        ("Pod", fraction_pod("held-0", "held", "0.8", "n1-full-share", "g1")),
        ("Pod", fraction_pod("held-1", "held", "0.5", "n2-half-share", "g2")),
        ("PodGroup", podgroup("new", "q", T0, minMember=1)),
        ("Pod", fraction_pod("half-0", "new", "0.5")),
        ("Pod", pod("whole-0", "new", gpus=1)),
    )
    (score,) = ssn.node_order_fns
    every = ssn.nodes.fits_non_allocated(task(ssn, "half-0"))
    assert list(score(task(ssn, "half-0"), every)) == [0.0, GPU_SHARING, 0.0]
    assert list(score(task(ssn, "whole-0"), every)) == [0.0, 0.0, 0.0]

"""resourcetype: a CPU-only pod scores on CPU-only nodes, so GPU nodes stay free for GPU pods; a GPU pod scores
nowhere."""

from core_builders import T0, node, pod, podgroup
from plugin_support import opened, task

from kai.core.framework.scores import RESOURCE_TYPE
from kai.core.plugins.resourcetype import ResourceTypePlugin


def test_a_cpu_only_pod_prefers_cpu_only_nodes_and_a_gpu_pod_has_no_preference() -> None:
    ssn = opened(
        ResourceTypePlugin(),
        ("Node", node("cpu-node", 0)),
        ("Node", node("gpu-node", 4)),
        ("PodGroup", podgroup("web", "q", T0)),
        ("Pod", pod("web-0", "web", gpus=0)),
        ("PodGroup", podgroup("train", "q", T0)),
        ("Pod", pod("train-0", "train", gpus=1)),
    )
    (score,) = ssn.node_order_fns
    every = ssn.nodes.fits_non_allocated(task(ssn, "web-0"))
    assert list(score(task(ssn, "web-0"), every)) == [RESOURCE_TYPE, 0.0]
    assert list(score(task(ssn, "train-0"), every)) == [0.0, 0.0]

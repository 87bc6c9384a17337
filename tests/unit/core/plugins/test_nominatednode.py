"""nominatednode: the node named by a pod's status.nominatedNodeName scores above all others."""

from core_builders import T0, node, pod, podgroup
from plugin_support import opened, task

from kai.core.framework.scores import NOMINATED_NODE
from kai.core.plugins.nominatednode import NominatedNodePlugin


def test_the_nominated_node_and_only_it_scores() -> None:
    nominated = pod("nominated-0", "job")
    nominated["status"]["nominatedNodeName"] = "n2"
    unknown = pod("elsewhere-0", "job")
    unknown["status"]["nominatedNodeName"] = "gone"
    ssn = opened(
        NominatedNodePlugin(),
        *(("Node", node(name, 1)) for name in ("n1", "n2", "n3")),
        ("PodGroup", podgroup("job", "q", T0, minMember=1)),
        ("Pod", nominated),
        ("Pod", unknown),
        ("Pod", pod("plain-0", "job")),
    )
    (score,) = ssn.node_order_fns
    every = ssn.nodes.fits_non_allocated(task(ssn, "plain-0"))
    assert list(score(task(ssn, "nominated-0"), every)) == [0.0, NOMINATED_NODE, 0.0]
    assert list(score(task(ssn, "elsewhere-0"), every)) == [0.0, 0.0, 0.0]
    assert list(score(task(ssn, "plain-0"), every)) == [0.0, 0.0, 0.0]

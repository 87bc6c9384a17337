"""topology: a gang with a required topology level gets the nodes of the domains of that level that can hold it
whole, each as one candidate set; a gang naming a topology that does not exist gets none, and says so."""

from typing import Any

import numpy as np
from core_builders import T0, node, pod, podgroup
from plugin_support import opened

from kai.core.plugins.topology import TopologyPlugin

RACKS = {"metadata": {"name": "racks"}, "spec": {"levels": [{"nodeLabel": "rack"}]}}


def _node(name: str, rack: str) -> tuple[str, dict[str, Any]]:
    racked = node(name, 4)
    racked["metadata"]["labels"]["rack"] = rack
    return "Node", racked


def _session(topology: str):  # type: ignore[no-untyped-def]
    constraint = {"topology": topology, "requiredTopologyLevel": "rack"}
    return opened(
        TopologyPlugin(),
        ("Topology", RACKS),
        _node("a1", "rack-a"),
        _node("a2", "rack-a"),
        _node("b1", "rack-b"),
        _node("b2", "rack-b"),
        ("PodGroup", podgroup("busy", "q", T0 - 60)),
        ("Pod", pod("busy-0", "busy", gpus=4, node_name="a1")),
        ("PodGroup", podgroup("gang", "q", T0, minMember=4, topologyConstraint=constraint)),
        *(("Pod", pod(f"gang-{i}", "gang", gpus=2)) for i in range(4)),
    )


def _subsets(ssn: Any) -> list[list[str]]:
    (subset,) = ssn.subset_nodes_fns
    job = ssn.jobs["default/gang"]
    everywhere = np.ones(len(ssn.nodes), dtype=bool)
    masks = subset(job, job.root, list(job.pod_sets.values()), list(job.tasks.values()), everywhere)
    return [[ssn.nodes.infos[c].name for c in np.flatnonzero(mask)] for mask in masks]


def test_a_gang_that_must_share_a_rack_gets_the_racks_that_can_hold_it_whole() -> None:
    ssn = _session("racks")
    assert _subsets(ssn) == [["b1", "b2"]]  # rack-a has 4 of the 8 GPUs free
    assert ssn.jobs["default/gang"].fit_errors == []


def test_a_gang_naming_a_missing_topology_gets_no_nodes_and_a_reason() -> None:
    ssn = _session("nowhere")
    assert _subsets(ssn) == []
    (error,) = ssn.jobs["default/gang"].fit_errors
    assert error.messages == ["Requested topology nowhere does not exist"]

"""NodeResourceTopology read as the kubelet reports it, and NUMA placement records read from pods' annotations."""

import pytest
from core_builders import numa_topology as nrt

from kai.core.model.errors import InvalidObject
from kai.core.model.numa import ZonePlacement, parse_node_topology, parse_placement


def test_a_node_resource_topology_keeps_numa_nodes_in_number_order_with_policy_and_scope():
    raw = nrt("n1", "restricted", {"node-10": {"cpu": "2"}, "node-2": {"cpu": "8", "memory": "1Gi"}}, scope="pod")
    raw["zones"].append({"name": "socket-0", "type": "Socket", "resources": []})
    topology = parse_node_topology(raw)
    assert (topology.node, topology.policy, topology.scope) == ("n1", "restricted", "pod")
    assert [(z.name, dict(z.allocatable)) for z in topology.zones] == [
        ("node-2", {"cpu": 8000.0, "memory": 2**30}),
        ("node-10", {"cpu": 2000.0}),
    ]
    legacy = parse_node_topology({"metadata": {"name": "n2"}, "topologyPolicies": ["SingleNUMANodePodLevel"]})
    assert (legacy.policy, legacy.scope) == ("single-numa-node", "pod")
    unknown = parse_node_topology({"metadata": {"name": "n3"}, "attributes": []})
    assert (unknown.policy, unknown.scope) == ("none", "container")


def test_a_placement_record_is_read_from_json_and_a_bad_one_names_its_field():
    record = parse_placement('[{"zone":"node-0","amount":{"cpu":"3","nvidia.com/gpu":"1"}}]', "Pod a/b", "f")
    assert record == (ZonePlacement("node-0", {"cpu": 3000.0, "nvidia.com/gpu": 1.0}),)
    with pytest.raises(InvalidObject, match="field f: is not JSON"):
        parse_placement("[{", "Pod a/b", "f")

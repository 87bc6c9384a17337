"""Topology level aliases (KAI v0.17, its ``allocate/topology`` suite's "references the rack level by alias"): a
PodGroup may name a level of its Topology by the level's alias instead of its node label, and is placed as if it had
named the label."""

from __future__ import annotations

from pathlib import Path

from controlplane import ControlPlane
from kai_support import Kai, apply, kubectl_json, wait_until
from test_explain import bound, gang, queue_tree, two_racks
from testcluster import Kwok


def test_a_gang_naming_its_rack_level_by_alias_lands_in_one_rack(
    control_plane: ControlPlane, namespace: str, kai: Kai, kwok: Kwok, tmp_path: Path
) -> None:
    """Two racks of two 2-GPU nodes, one GPU held on one node of each: bin-packing alone would put a gang of three
    1-GPU pods on the two fullest nodes, one per rack; the rack level, named by its alias, keeps it in one rack. The
    rack label is this test's own (test_explain's topology test counts the racks of its label)."""
    pool, parent, queue, rack_label = f"alias-{namespace}", f"p-{namespace}", f"q-{namespace}", "kai.test/aliased-rack"
    queue_tree(control_plane, tmp_path, parent, (queue, {}))
    racks = two_racks(control_plane, kwok, tmp_path, namespace, pool, queue, {"nodeLabel": rack_label, "alias": "rack"})
    constraint = {"topology": f"racks-{namespace}", "requiredTopologyLevel": "rack"}
    apply(control_plane, tmp_path, *gang(namespace, "racked", queue, pool, 3, 1, topologyConstraint=constraint))

    def placed() -> list[str] | None:
        nodes = [bound(control_plane, namespace, f"racked-{i}") for i in range(3)]
        return nodes if all(nodes) else None

    nodes = wait_until("the gang to be bound", placed)
    assert len({racks[node] for node in nodes}) == 1, f"the gang spans racks: {nodes}"
    assert kubectl_json(control_plane, "get", "podgroup", "racked", "-n", namespace)["spec"]["topologyConstraint"] == (
        constraint
    ), "the PodGroup keeps the alias it was written with"

"""Topology level aliases (KAI v0.17, its ``allocate/topology`` suite's "references the rack level by alias"): a
PodGroup may name a level of its Topology by the level's alias instead of its node label, and is placed as if it had
named the label."""

from __future__ import annotations

from pathlib import Path

from controlplane import ControlPlane
from kai_support import Kai, apply, gpu_pod, kubectl_json, wait_until
from test_explain import bound, gang, queue_tree
from testcluster import Kwok


def test_a_gang_naming_its_rack_level_by_alias_lands_in_one_rack(
    control_plane: ControlPlane, namespace: str, kai: Kai, kwok: Kwok, tmp_path: Path
) -> None:
    """Two racks of two 2-GPU nodes, one GPU held on one node of each: bin-packing alone would put a gang of three
    1-GPU pods on the two fullest nodes, one per rack; the rack level, named by its alias, keeps it in one rack."""
    pool, parent, queue, rack_label = f"alias-{namespace}", f"p-{namespace}", f"q-{namespace}", "kai.test/rack"
    queue_tree(control_plane, tmp_path, parent, (queue, {}))
    topology = {
        "apiVersion": "kai.scheduler/v1alpha1",
        "kind": "Topology",
        "metadata": {"name": f"racks-{namespace}"},
        "spec": {"levels": [{"nodeLabel": rack_label, "alias": "rack"}]},
    }
    apply(control_plane, tmp_path, topology)
    racks = {}
    for rack in ("r1", "r2"):
        for i in range(2):
            name = f"{pool}-{rack}-{i}"
            kwok.node(name, 2, {"pool": pool})
            control_plane.kubectl("label", "node", name, f"{rack_label}={rack}", "--overwrite")
            racks[name] = rack
    fillers = []
    for node in (f"{pool}-r1-0", f"{pool}-r2-1"):
        filler = gpu_pod(namespace, f"filler-{node}", queue, pool, 1)
        filler["spec"] |= {"schedulerName": "default-scheduler", "nodeName": node}
        fillers.append(filler)
    apply(control_plane, tmp_path, *fillers)
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

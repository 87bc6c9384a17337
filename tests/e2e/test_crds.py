"""kai's CRDs (deploy/crds) on a real API server: installed, validating, shown by kubectl as KAI's are."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from controlplane import REPO, ControlPlane, api_error_message
from lightkube import ApiError, Client, codecs
from lightkube.generic_resource import create_global_resource, create_namespaced_resource
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.apiextensions_v1 import CustomResourceDefinition
from lightkube.types import PatchType

SEED_QUEUES = REPO / "examples" / "seed" / "queues.yaml"

Queue = create_global_resource("scheduling.run.ai", "v2", "Queue", "queues")
PodGroup = create_namespaced_resource("scheduling.run.ai", "v2alpha2", "PodGroup", "podgroups")
BindRequest = create_namespaced_resource("scheduling.run.ai", "v1alpha2", "BindRequest", "bindrequests")
Topology = create_global_resource("kai.scheduler", "v1alpha1", "Topology", "topologies")

OUR_CRDS = {
    "queues.scheduling.run.ai",
    "podgroups.scheduling.run.ai",
    "bindrequests.scheduling.run.ai",
    "topologies.kai.scheduler",
}
SEED_PARENTS = {"departement-ml": None, "equipe-training": "departement-ml", "equipe-inference": "departement-ml"}


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def rejected(kube: Client, obj: Any, namespace: str | None = None) -> str:
    """Creates `obj`, expects the API server to refuse it as invalid (422), returns the server's message."""
    with pytest.raises(ApiError) as caught:
        if namespace is None:
            kube.create(obj)
        else:
            kube.create(obj, namespace=namespace)
    assert caught.value.status.code == 422, api_error_message(caught.value)
    return api_error_message(caught.value)


def kubectl_table(out: str) -> list[dict[str, str]]:
    """Rows of kubectl's table output as {column: cell}; columns are cut at the header's offsets."""
    header, *lines = out.splitlines()
    starts = [i for i, ch in enumerate(header) if ch != " " and (i == 0 or header[i - 1] == " ")]
    bounds = list(zip(starts, [*starts[1:], None], strict=True))
    names = [header[a:b].strip() for a, b in bounds]
    return [{n: line[a:b].strip() for n, (a, b) in zip(names, bounds, strict=True)} for line in lines]


def podgroup(name: str, **spec: Any) -> Any:
    return PodGroup(metadata=ObjectMeta(name=name), spec={"queue": "equipe-training", "minMember": 1, **spec})


# ------------------------------------------------------------------------------------------ on the API server


def test_our_crds_are_installed_and_established(kube: Client) -> None:
    crds = {crd.metadata.name: crd for crd in kube.list(CustomResourceDefinition) if crd.metadata.name in OUR_CRDS}
    assert set(crds) == OUR_CRDS
    for name, crd in crds.items():
        conditions = {c.type: c.status for c in crd.status.conditions}
        assert conditions.get("Established") == "True", (name, conditions)
        assert conditions.get("NamesAccepted") == "True", (name, conditions)
    assert crds["podgroups.scheduling.run.ai"].spec.names.shortNames == ["pg"]


def test_seed_queues_apply_unchanged_and_list_with_their_parents(kube: Client) -> None:
    objects = codecs.load_all_yaml(SEED_QUEUES.read_text())
    assert [o.metadata.name for o in objects] == list(SEED_PARENTS)
    for obj in objects:
        kube.apply(obj, field_manager="kai-e2e-seed")
    kube.apply(objects[0], field_manager="kai-e2e-seed")  # applying again is a no-op, not an error

    queues = {q.metadata.name: q for q in kube.list(Queue)}
    assert set(SEED_PARENTS) <= set(queues)
    for name, parent in SEED_PARENTS.items():
        assert queues[name]["spec"].get("parentQueue") == parent
    assert queues["equipe-training"]["spec"]["resources"]["gpu"] == {"quota": 10, "limit": 20, "overQuotaWeight": 2}
    assert queues["departement-ml"]["spec"]["resources"]["cpu"]["quota"] == -1


def test_kubectl_shows_queues_with_kai_columns(control_plane: ControlPlane, kube: Client) -> None:
    control_plane.kubectl("apply", "-f", str(SEED_QUEUES))
    parent, child = unique("dept"), unique("team")
    kube.create(Queue(metadata=ObjectMeta(name=parent), spec={"priority": 150, "resources": {}}))
    kube.create(
        Queue(
            metadata=ObjectMeta(name=child),
            spec={"parentQueue": parent, "displayName": "Team A", "resources": {"gpu": {"quota": 2}}},
        )
    )
    kube.patch(Queue.Status, parent, {"status": {"childQueues": [child]}}, patch_type=PatchType.MERGE)

    table = kubectl_table(control_plane.kubectl("get", "queues").stdout)
    assert list(table[0]) == ["NAME", "PRIORITY", "PARENT", "CHILDREN", "DISPLAYNAME"]  # as KAI's: no AGE
    rows = {row["NAME"]: row for row in table}
    assert set(SEED_PARENTS) | {parent, child} <= set(rows)
    for name, seed_parent in SEED_PARENTS.items():
        assert rows[name]["PARENT"] == (seed_parent or "")
    assert rows[parent] == {
        "NAME": parent,
        "PRIORITY": "150",
        "PARENT": "",
        "CHILDREN": f'["{child}"]',
        "DISPLAYNAME": "",
    }
    assert rows[child] == {"NAME": child, "PRIORITY": "", "PARENT": parent, "CHILDREN": "", "DISPLAYNAME": "Team A"}

    short = control_plane.kubectl("get", "pg", "-A").stdout + control_plane.kubectl("get", "pg", "-A").stderr
    assert "error" not in short.lower()


def test_valid_podgroup_is_accepted(kube: Client, namespace: str) -> None:
    spec = {
        "preemptibility": "non-preemptible",
        "minMember": 2,
        "markUnschedulable": False,
        "schedulingBackoff": -1,
        "topologyConstraint": {"topology": "cluster", "requiredTopologyLevel": "rack"},
        "subGroups": [{"name": "workers", "minMember": 2}, {"name": "leader", "minMember": 1, "parent": "workers"}],
    }
    created = kube.create(podgroup("ok", **spec), namespace=namespace)
    assert created["spec"]["preemptibility"] == "non-preemptible"
    assert created["spec"]["subGroups"][1]["parent"] == "workers"
    got = kube.get(PodGroup, "ok", namespace=namespace)
    assert got["spec"]["minMember"] == 2 and got["spec"]["queue"] == "equipe-training"


def test_podgroup_with_invalid_preemptibility_is_rejected(kube: Client, namespace: str) -> None:
    message = rejected(kube, podgroup("bad-preempt", preemptibility="sometimes"), namespace)
    assert "spec.preemptibility" in message
    assert "sometimes" in message and '"preemptible"' in message and '"non-preemptible"' in message


def test_podgroup_gang_sizes_are_validated(kube: Client, namespace: str) -> None:
    message = rejected(kube, podgroup("bad-min", minMember=-1), namespace)
    assert "spec.minMember" in message and "greater than or equal to 0" in message
    kube.create(podgroup("no-gang", minMember=0), namespace=namespace)  # KAI #1989: 0 is no gang requirement
    message = rejected(kube, podgroup("bad-min-sub", minMember=None, minSubGroup=-1), namespace)
    assert "spec.minSubGroup" in message and "greater than or equal to 0" in message

    message = rejected(kube, podgroup("bad-sub", subGroups=[{"name": "a", "minMember": -1}]), namespace)
    assert "spec.subGroups[0].minMember" in message

    both = podgroup("both", minMember=1, minSubGroup=1, subGroups=[{"name": "a", "minMember": 0}])
    assert kube.create(both, namespace=namespace)  # as KAI's schema: its webhook refuses the pair, in KAI's words

    message = rejected(kube, podgroup("bad-type", minMember="four"), namespace)
    assert "spec.minMember" in message


def test_the_queue_schema_stores_what_kais_stores(kube: Client) -> None:
    """KAI's Queue schema requires nothing and has no minimum: its webhook refuses a Queue without resources, and
    kai's scheduler reports what it cannot use on the Queue; the schema refuses only wrong types."""
    for spec in ({"parentQueue": "x"}, {"resources": {"gpu": {"quota": -2}}}, {"preemptMinRuntime": "ten minutes"}):
        name = unique("q")
        assert kube.create(Queue(metadata=ObjectMeta(name=name), spec=spec))
        kube.delete(Queue, name)
    message = rejected(kube, Queue(metadata=ObjectMeta(name=unique("q")), spec={"resources": {"gpu": {"quota": "x"}}}))
    assert "spec.resources.gpu.quota" in message


def test_bindrequest_status_subresource(kube: Client, namespace: str) -> None:
    spec = {
        "podName": "p",
        "selectedNode": "n1",
        "receivedResourceType": "Regular",
        "receivedGPU": {"count": 1, "portion": "1.00"},
    }
    kube.create(BindRequest(metadata=ObjectMeta(name="p"), spec=spec), namespace=namespace)
    kube.patch(
        BindRequest.Status, "p", {"status": {"phase": "Succeeded"}}, namespace=namespace, patch_type=PatchType.MERGE
    )
    got = kube.get(BindRequest, "p", namespace=namespace)
    assert got["status"]["phase"] == "Succeeded" and got["spec"]["selectedNode"] == "n1"

    bad = {**spec, "receivedGPU": {"count": "one"}}
    message = rejected(kube, BindRequest(metadata=ObjectMeta(name="q"), spec=bad), namespace)
    assert "spec.receivedGPU.count" in message


def test_topology_levels_are_validated(kube: Client) -> None:
    def topology(levels: list[str]) -> Any:
        return Topology(metadata=ObjectMeta(name=unique("topo")), spec={"levels": [{"nodeLabel": x} for x in levels]})

    ok = kube.create(topology(["example.com/block", "example.com/rack", "kubernetes.io/hostname"]))
    assert [lv["nodeLabel"] for lv in ok["spec"]["levels"]][-1] == "kubernetes.io/hostname"

    assert "spec.levels" in rejected(kube, topology([]))
    assert "spec.levels" in rejected(kube, topology([f"example.com/l{i}" for i in range(17)]))
    assert "must be unique" in rejected(kube, topology(["example.com/rack", "example.com/rack"]))
    assert "lowest level" in rejected(kube, topology(["kubernetes.io/hostname", "example.com/rack"]))
    assert "nodeLabel" in rejected(kube, topology(["not a label!"]))

    with pytest.raises(ApiError) as caught:
        kube.patch(
            Topology,
            ok.metadata.name,
            {"spec": {"levels": [{"nodeLabel": "example.com/zone"}]}},
            patch_type=PatchType.MERGE,
        )
    assert caught.value.status.code == 422 and "immutable" in api_error_message(caught.value)

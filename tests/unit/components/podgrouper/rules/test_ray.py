"""The PodGroup KAI v0.17 makes for rayClusters, RayJobs and RayServices (rules/ray.py): one gang of the head and every
worker group's minimum, by the RayCluster."""

import pytest
import yaml
from podgrouper_support import NS, grouped, obj, pod, rule_grouping, spec_of, subgroup_of, warnings
from repo import REPO

from kai.components.podgrouper.rules import ray as rule

QUEUE = "kai.scheduler/queue"


def ray_pod(name: str, cluster: dict[str, object], group: str, **spec: object) -> dict[str, object]:
    role = "head" if group == "headgroup" else "worker"
    return pod(name, cluster, labels={"ray.io/group": group, "ray.io/node-type": role}, **spec)


def test_the_seed_raycluster_is_one_gang_of_five_with_head_and_worker_subgroups() -> None:
    raycluster = yaml.safe_load((REPO / "examples" / "seed" / "raycluster.yaml").read_text())
    raycluster["metadata"].update(namespace=NS, uid="uid-rc")
    pods = [ray_pod("training-distributed-head-x", raycluster, "headgroup", priorityClassName="train")]
    pods += [ray_pod(f"training-distributed-workers-worker-{i}", raycluster, "workers") for i in range(4)]
    cluster = grouped(raycluster, *pods)
    for member in pods:
        assert spec_of(cluster, member["metadata"]["name"]) == (  # type: ignore[index]
            "pg-training-distributed-uid-rc",
            {
                "minMember": 5,
                "queue": "equipe-training",
                "priorityClassName": "train",
                "subGroups": [{"name": "headgroup", "minMember": 1}, {"name": "workers", "minMember": 4}],
            },
        )
    assert subgroup_of(cluster, "training-distributed-head-x") == "headgroup"
    assert subgroup_of(cluster, "training-distributed-workers-worker-3") == "workers"


def test_a_rayjob_is_grouped_by_its_ray_cluster_and_names_its_priority_class() -> None:
    job = obj(
        "ray.io/v1",
        "RayJob",
        "tune",
        labels={QUEUE: "equipe-training", "ray.io/priority-class-name": "high"},
        status={"rayClusterName": "tune-raycluster-k2"},
    )
    groups = [
        {"groupName": "small", "replicas": 2, "minReplicas": 1, "numOfHosts": 2},
        {"groupName": "none", "replicas": 0},
        {"groupName": "paused", "replicas": 3, "suspended": True},
    ]
    raycluster = obj("ray.io/v1", "RayCluster", "tune-raycluster-k2", {"workerGroupSpecs": groups}, owner=job)
    cluster = grouped(job, raycluster, ray_pod("tune-head", raycluster, "headgroup"))
    assert spec_of(cluster, "tune-head") == (
        "pg-tune-uid-tune",
        {
            "minMember": 3,
            "queue": "equipe-training",
            "priorityClassName": "high",
            "subGroups": [{"name": "headgroup", "minMember": 1}, {"name": "small", "minMember": 2}],
        },
    )


def test_a_rayservice_is_grouped_by_its_active_ray_cluster() -> None:
    service = obj("ray.io/v1", "RayService", "serve", status={"activeServiceStatus": {"rayClusterName": "serve-a"}})
    raycluster = obj("ray.io/v1", "RayCluster", "serve-a", {"workerGroupSpecs": [{"replicas": 2}]}, owner=service)
    cluster = grouped(service, raycluster, ray_pod("serve-a-worker-x", raycluster, "worker-group-0"))
    assert spec_of(cluster, "serve-a-worker-x")[1]["subGroups"] == [
        {"name": "headgroup", "minMember": 1},
        {"name": "worker-group-0", "minMember": 2},
    ]
    assert subgroup_of(cluster, "serve-a-worker-x") == "worker-group-0"


def test_ray_worker_group_topology_from_its_template() -> None:
    template = {
        "metadata": {
            "annotations": {"kai.scheduler/topology": "cluster", "kai.scheduler/topology-preferred-placement": "rack"}
        }
    }
    raycluster = obj(
        "ray.io/v1",
        "RayCluster",
        "rc",
        {"workerGroupSpecs": [{"groupName": "gpu", "replicas": 2, "template": template}]},
    )
    cluster = grouped(raycluster, ray_pod("rc-head", raycluster, "headgroup"))
    assert spec_of(cluster, "rc-head")[1]["subGroups"][1] == {
        "name": "gpu",
        "minMember": 2,
        "topologyConstraint": {"topology": "cluster", "preferredTopologyLevel": "rack"},
    }


@pytest.mark.parametrize(
    ("kind", "spec", "status", "message"),
    [
        (
            "RayCluster",
            {"workerGroupSpecs": [{"groupName": "gpu", "replicas": 2, "minReplicas": 3}]},
            None,
            "RayCluster ml/rc: field spec.workerGroupSpecs[0].minReplicas: got 3, more than the group's 2 replicas; "
            "minReplicas must not exceed replicas",
        ),
        (
            "RayCluster",
            {
                "workerGroupSpecs": [
                    {
                        "replicas": 1,
                        "template": {
                            "metadata": {"annotations": {"kai.scheduler/topology-required-placement": "rack"}}
                        },
                    }
                ]
            },
            None,
            "RayCluster ml/rc: field spec.workerGroupSpecs[0].template.metadata.annotations: sets a topology placement "
            "level but no kai.scheduler/topology annotation naming the Topology",
        ),
        (
            "RayJob",
            {},
            None,
            "RayJob ml/rc: field status.rayClusterName: names no Ray cluster yet; the RayJob's RayCluster appears once "
            "the ray-operator has created it",
        ),
        (
            "RayJob",
            {},
            {"rayClusterName": "gone"},
            "RayJob ml/rc: field status.rayClusterName: names RayCluster ml/gone, which does not exist",
        ),
    ],
)
def test_a_ray_workload_that_cannot_be_a_gang_is_reported(
    kind: str, spec: dict[str, object], status: dict[str, object] | None, message: str
) -> None:
    top = obj("ray.io/v1", kind, "rc", spec, status=status)
    cluster = grouped(top, ray_pod("rc-head", top, "headgroup"))
    assert warnings(cluster, "rc-head") == [message]
    assert cluster.list("PodGroup") == []


def test_the_ray_rule_groups_a_cluster_as_its_head_and_each_worker_groups_minimum() -> None:
    workers = {"groupName": "gpu", "replicas": 4, "minReplicas": 2, "template": {}}
    cluster = obj("ray.io/v1", "RayCluster", "rc", {"headGroupSpec": {"template": {}}, "workerGroupSpecs": [workers]})
    grouping = rule_grouping(rule.ray, "rc-gpu-0", cluster, ray_pod("rc-gpu-0", cluster, "gpu"))
    assert grouping.min_member == 3
    assert [(s.name, s.min_member) for s in grouping.subgroups] == [("headgroup", 1), ("gpu", 2)]

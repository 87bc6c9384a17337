"""The PodGroup KAI v0.17 makes for pyTorchJobs (rules/pytorch.py): one gang with master and worker sub-groups, elastic
gangs, segments with their topology."""

import pytest
from podgrouper_support import (
    REPLICA_INDEX,
    REPLICA_TYPE,
    grouped,
    obj,
    pod,
    rule_grouping,
    spec_of,
    subgroup_of,
    warnings,
)

from kai.components.podgrouper.rules import pytorch as rule

QUEUE = "kai.scheduler/queue"


def pytorch(name: str, spec: dict[str, object]) -> dict[str, object]:
    return obj("kubeflow.org/v1", "PyTorchJob", name, spec)


def worker(job: dict[str, object], index: int, **annotations: str) -> dict[str, object]:
    name = job["metadata"]["name"]  # type: ignore[index]
    return pod(
        f"{name}-worker-{index}",
        job,
        labels={REPLICA_TYPE: "worker", REPLICA_INDEX: str(index)},
        annotations=annotations,
    )


def test_a_pytorchjob_is_one_gang_with_master_and_worker_subgroups() -> None:
    job = pytorch("bert", {"pytorchReplicaSpecs": {"Master": {"replicas": 1}, "Worker": {"replicas": 2}}})
    master = pod("bert-master-0", job, labels={REPLICA_TYPE: "master", REPLICA_INDEX: "0"})
    cluster = grouped(job, master, worker(job, 0), worker(job, 1))
    assert spec_of(cluster, "bert-master-0") == (
        "pg-bert-uid-bert",
        {
            "minMember": 3,
            "queue": "default-queue",
            "priorityClassName": "train",
            "subGroups": [{"name": "master", "minMember": 1}, {"name": "worker", "minMember": 2}],
        },
    )
    assert [subgroup_of(cluster, p) for p in ("bert-master-0", "bert-worker-0", "bert-worker-1")] == [
        "master",
        "worker",
        "worker",
    ]


@pytest.mark.parametrize(
    ("policies", "gang"),
    [
        ({"elasticPolicy": {"minReplicas": 2}}, 2),
        ({"elasticPolicy": {"minReplicas": 2}, "runPolicy": {"schedulingPolicy": {"minAvailable": 3}}}, 3),
    ],
)
def test_an_elastic_pytorchjob_gang_is_its_min_replicas(policies: dict[str, object], gang: int) -> None:
    job = pytorch("elastic", {"pytorchReplicaSpecs": {"Worker": {"replicas": 4}}, **policies})
    cluster = grouped(job, worker(job, 0))
    assert spec_of(cluster, "elastic-worker-0")[1] == {
        "minMember": gang,
        "queue": "default-queue",
        "priorityClassName": "train",
        "subGroups": [{"name": "worker", "minMember": gang}],
    }


def test_pytorch_workers_in_segments_with_their_topology() -> None:
    template = {
        "metadata": {
            "annotations": {
                "kai.scheduler/segment-size": "2",
                "kai.scheduler/topology": "cluster",
                "kai.scheduler/segment-topology-required-placement": "rack",
            }
        }
    }
    job = pytorch(
        "gpt", {"pytorchReplicaSpecs": {"Master": {"replicas": 1}, "Worker": {"replicas": 5, "template": template}}}
    )
    cluster = grouped(job, worker(job, 3))
    rack = {"topology": "cluster", "requiredTopologyLevel": "rack"}
    assert spec_of(cluster, "gpt-worker-3")[1] == {
        "minMember": 6,
        "queue": "default-queue",
        "priorityClassName": "train",
        "subGroups": [
            {"name": "master", "minMember": 1},
            {"name": "worker", "minSubGroup": 3},
            {"name": "worker-0", "minMember": 2, "parent": "worker", "topologyConstraint": rack},
            {"name": "worker-1", "minMember": 2, "parent": "worker", "topologyConstraint": rack},
            {"name": "worker-2", "minMember": 1, "parent": "worker", "topologyConstraint": rack},
        ],
    }
    assert subgroup_of(cluster, "gpt-worker-3") == "worker-1"


def test_segments_beyond_an_elastic_gang_are_elastic() -> None:
    job = pytorch("elastic", {"pytorchReplicaSpecs": {"Worker": {"replicas": 6}}, "elasticPolicy": {"minReplicas": 3}})
    cluster = grouped(job, worker(job, 5, **{"kai.scheduler/segment-size": "2"}))
    assert spec_of(cluster, "elastic-worker-5")[1]["subGroups"] == [
        {"name": "worker", "minSubGroup": 3},
        {"name": "worker-0", "minMember": 2, "parent": "worker"},
        {"name": "worker-1", "minMember": 2, "parent": "worker"},
        {"name": "worker-2", "minMember": 0, "parent": "worker"},
    ]
    assert subgroup_of(cluster, "elastic-worker-5") == "worker-2"


def test_a_segmented_worker_needs_its_replica_index() -> None:
    job = pytorch("gpt", {"pytorchReplicaSpecs": {"Worker": {"replicas": 4}}})
    task = pod("gpt-worker-x", job, labels={REPLICA_TYPE: "worker"}, annotations={"kai.scheduler/segment-size": "2"})
    cluster = grouped(job, task)
    assert warnings(cluster, "gpt-worker-x") == [
        "Pod ml/gpt-worker-x: field metadata.labels[training.kubeflow.org/replica-index]: is required on a worker of "
        "a segmented PyTorchJob"
    ]


def test_the_pytorch_rule_makes_master_and_worker_subgroups_and_the_pods_own() -> None:
    job = pytorch("bert", {"pytorchReplicaSpecs": {"Master": {"replicas": 1}, "Worker": {"replicas": 2}}})
    grouping = rule_grouping(rule.pytorch_job, "bert-worker-1", job, worker(job, 1))
    assert grouping.min_member == 3
    assert [(s.name, s.min_member) for s in grouping.subgroups] == [("master", 1), ("worker", 2)]
    assert grouping.pod_subgroup == "worker"

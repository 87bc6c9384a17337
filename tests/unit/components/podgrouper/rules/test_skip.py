"""The PodGroup KAI v0.17 makes for orchestrators whose pods are grouped by the owner below them (rules/skip.py): Argo
Workflows, TrainJobs, Dynamo, Run:ai workloads, lending it their labels."""

import pytest
from podgrouper_support import (
    REPLICA_INDEX,
    REPLICA_TYPE,
    grouped,
    grove_objects,
    jobset,
    jobset_pod,
    obj,
    pod,
    podgroup_of,
    rule_grouping,
    spec_of,
)

from kai.components.podgrouper.rules import default, skip

QUEUE = "kai.scheduler/queue"


def test_an_argo_workflow_pod_is_grouped_by_itself_with_the_workflow_labels() -> None:
    workflow = obj("argoproj.io/v1alpha1", "Workflow", "wf", labels={QUEUE: "pipelines", "priorityClassName": "high"})
    cluster = grouped(workflow, pod("wf-step-1", workflow))
    podgroup = podgroup_of(cluster, "wf-step-1")
    assert podgroup["metadata"]["name"] == "pg-wf-step-1-uid-wf-step-1"
    assert podgroup["spec"] == {"minMember": 1, "queue": "pipelines", "priorityClassName": "high"}


def test_an_argo_workflow_running_a_pytorchjob_is_grouped_as_the_pytorchjob() -> None:
    workflow = obj("argoproj.io/v1alpha1", "Workflow", "wf", labels={QUEUE: "pipelines"})
    job = obj(
        "kubeflow.org/v1", "PyTorchJob", "bert", {"pytorchReplicaSpecs": {"Worker": {"replicas": 2}}}, owner=workflow
    )
    cluster = grouped(workflow, job, pod("bert-worker-0", job, labels={REPLICA_TYPE: "worker", REPLICA_INDEX: "0"}))
    assert spec_of(cluster, "bert-worker-0") == (
        "pg-bert-uid-bert",
        {
            "minMember": 2,
            "queue": "pipelines",
            "priorityClassName": "train",
            "subGroups": [{"name": "worker", "minMember": 2}],
        },
    )


def test_a_trainjob_is_grouped_as_the_jobset_it_runs() -> None:
    train = obj("trainer.kubeflow.org/v1alpha1", "TrainJob", "tj", labels={QUEUE: "equipe-training"})
    js = jobset()
    js["metadata"]["ownerReferences"] = [  # type: ignore[index]
        {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "name": "tj", "uid": "uid-tj"}
    ]
    cluster = grouped(train, js, *jobset_pod(js, "driver", 0))
    name, spec = spec_of(cluster, "train-driver-0-x")
    assert (name, spec["queue"], spec["minSubGroup"]) == ("pg-train-uid-train", "equipe-training", 2)


@pytest.mark.parametrize(
    "kind",
    [
        "TrainingWorkload",
        "InteractiveWorkload",
        "DistributedWorkload",
        "InferenceWorkload",
        "DistributedInferenceWorkload",
    ],
)
def test_runai_workloads_of_any_version_are_skipped_for_what_they_run(kind: str) -> None:
    workload = obj("run.ai/v2alpha1", kind, "w", labels={QUEUE: "research"})
    job = obj(
        "kubeflow.org/v1",
        "PyTorchJob",
        "w",
        {"pytorchReplicaSpecs": {"Worker": {"replicas": 3}}},
        owner=workload,
        uid="uid-job",
    )
    cluster = grouped(workload, job, pod("w-worker-0", job, labels={REPLICA_TYPE: "worker", REPLICA_INDEX: "0"}))
    name, spec = spec_of(cluster, "w-worker-0")
    assert (name, spec["minMember"], spec["queue"]) == ("pg-w-uid-job", 3, "research")


def test_a_dynamo_graph_deployment_is_skipped_for_its_podcliqueset_and_lends_it_its_labels() -> None:
    dgd = obj("nvidia.com/v1beta1", "DynamoGraphDeployment", "llm", labels={"priorityClassName": "inference"})
    cluster = grouped(*grove_objects(dgd))
    assert spec_of(cluster, "pcs-0-frontend-a")[1]["priorityClassName"] == "inference"


def test_the_skip_rule_hands_the_pod_to_the_owner_below_with_the_skipped_ones_labels() -> None:
    workflow = obj("argoproj.io/v1alpha1", "Workflow", "wf", labels={QUEUE: "team"})
    job = obj("batch/v1", "Job", "step", owner=workflow)
    grouping = rule_grouping(
        lambda w, c: skip.skip_top_owner(w, c, lambda _top: default.default_rule),
        "step-x",
        workflow,
        job,
        pod("step-x", job),
    )
    assert (grouping.name, grouping.owner["kind"], grouping.queue) == ("pg-step-uid-step", "Job", "team")

"""The PodGroup KAI v0.17 makes for kubeflow's training jobs, MPIJobs and Notebooks (rules/kubeflow.py): a gang of
every replica unless the scheduling policy says less; what a job lacks is reported."""

import pytest
from podgrouper_support import grouped, obj, pod, rule_grouping, spec_of, warnings

from kai.components.podgrouper.rules import kubeflow

QUEUE = "kai.scheduler/queue"


def test_a_tfjob_is_a_gang_of_every_replica_unless_its_scheduling_policy_says_less() -> None:
    specs = {"tfReplicaSpecs": {"PS": {"replicas": 1}, "Worker": {"replicas": 3}}}
    full = obj("kubeflow.org/v1", "TFJob", "mnist", specs)
    partial = obj(
        "kubeflow.org/v1", "TFJob", "cifar", {**specs, "runPolicy": {"schedulingPolicy": {"minAvailable": 2}}}
    )
    cluster = grouped(full, pod("mnist-worker-0", full), partial, pod("cifar-worker-0", partial))
    assert spec_of(cluster, "mnist-worker-0") == (
        "pg-mnist-uid-mnist",
        {"minMember": 4, "queue": "default-queue", "priorityClassName": "train"},
    )
    assert spec_of(cluster, "cifar-worker-0")[1]["minMember"] == 2


@pytest.mark.parametrize(
    ("kind", "spec", "message"),
    [
        (
            "XGBoostJob",
            {"xgbReplicaSpecs": {"Worker": {"replicas": 2}}},
            "XGBoostJob ml/job: field spec.xgbReplicaSpecs.Master: is required: a XGBoostJob needs Master and Worker "
            "replicas",
        ),
        (
            "JAXJob",
            {"jaxReplicaSpecs": {}},
            "JAXJob ml/job: field spec.jaxReplicaSpecs.Worker: is required: a JAXJob needs Worker replicas",
        ),
        (
            "MPIJob",
            {"mpiReplicaSpecs": {"Worker": {"replicas": 2}}},
            "MPIJob ml/job: field spec.mpiReplicaSpecs.Launcher: is required: a MPIJob needs Launcher and Worker "
            "replicas",
        ),
        (
            "TFJob",
            {"tfReplicaSpecs": {"Worker": {"replicas": 0}}},
            "TFJob ml/job: field spec.tfReplicaSpecs.Worker.replicas: got 0; a replica type needs at least 1 replica",
        ),
        (
            "TFJob",
            {"tfReplicaSpecs": {"Worker": {"replicas": "three"}}},
            "TFJob ml/job: field spec.tfReplicaSpecs.Worker.replicas: got 'three'; expected an integer",
        ),
        (
            "PyTorchJob",
            {"runPolicy": {}},
            "PyTorchJob ml/job: field spec.pytorchReplicaSpecs: is required: the replica types of a PyTorchJob",
        ),
        ("TFJob", "oops", "TFJob ml/job: field spec: got 'oops'; expected a mapping"),
    ],
)
def test_a_training_job_without_its_required_replicas_is_reported(kind: str, spec: object, message: str) -> None:
    job = obj("kubeflow.org/v1", kind, "job")
    job["spec"] = spec
    cluster = grouped(job, pod("job-worker-0", job))
    assert warnings(cluster, "job-worker-0") == [message]
    assert cluster.list("PodGroup") == []


@pytest.mark.parametrize("version", ["v1", "v2beta1"])
def test_an_mpijob_waiting_for_its_workers_counts_its_launcher_once_it_exists(version: str) -> None:
    specs = {
        "mpiReplicaSpecs": {"Launcher": {"replicas": 1}, "Worker": {"replicas": 2}},
        "launcherCreationPolicy": "WaitForWorkersReady",
    }
    mpi = obj(f"kubeflow.org/{version}", "MPIJob", "allreduce", specs)
    role = "training.kubeflow.org/job-role"
    worker = pod("allreduce-worker-0", mpi, labels={"training.kubeflow.org/job-name": "allreduce", role: "worker"})
    before = grouped(mpi, worker)
    assert spec_of(before, "allreduce-worker-0") == (
        "pg-allreduce-uid-allreduce",
        {"minMember": 2, "queue": "default-queue", "priorityClassName": "train"},
    )
    launcher = pod("allreduce-launcher", mpi, labels={"training.kubeflow.org/job-name": "allreduce", role: "launcher"})
    after = grouped(mpi, worker, launcher)
    assert spec_of(after, "allreduce-worker-0")[1]["minMember"] == 3


def test_a_notebook_has_the_build_priority_class() -> None:
    notebook = obj("kubeflow.org/v1beta1", "Notebook", "lab")
    cluster = grouped(notebook, pod("lab-0", notebook))
    assert spec_of(cluster, "lab-0")[1] == {"minMember": 1, "queue": "default-queue", "priorityClassName": "build"}


def test_xgboost_and_jax_jobs_are_gangs_of_every_replica() -> None:
    xgb = obj(
        "kubeflow.org/v1",
        "XGBoostJob",
        "xgb",
        {"xgbReplicaSpecs": {"Master": {"replicas": 1}, "Worker": {"replicas": 2}}},
    )
    jax = obj("kubeflow.org/v1", "JAXJob", "jax", {"jaxReplicaSpecs": {"Worker": {"replicas": 4}}})
    cluster = grouped(xgb, pod("xgb-0", xgb), jax, pod("jax-0", jax))
    assert spec_of(cluster, "xgb-0") == (
        "pg-xgb-uid-xgb",
        {"minMember": 3, "queue": "default-queue", "priorityClassName": "train"},
    )
    assert spec_of(cluster, "jax-0") == (
        "pg-jax-uid-jax",
        {"minMember": 4, "queue": "default-queue", "priorityClassName": "train"},
    )


def test_the_tfjob_rule_counts_every_replica_and_the_notebook_rule_names_build() -> None:
    job = obj(
        "kubeflow.org/v1", "TFJob", "mnist", {"tfReplicaSpecs": {"PS": {"replicas": 1}, "Worker": {"replicas": 3}}}
    )
    assert rule_grouping(kubeflow.tfjob, "mnist-worker-0", job, pod("mnist-worker-0", job)).min_member == 4
    notebook = obj("kubeflow.org/v1beta1", "Notebook", "lab")
    grouping = rule_grouping(kubeflow.notebook, "lab-0", notebook, pod("lab-0", notebook))
    assert (grouping.priority_class, grouping.min_member) == ("build", 1)

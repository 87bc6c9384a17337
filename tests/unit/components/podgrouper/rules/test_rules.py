"""The PodGroup KAI v0.17 makes for each owner kind, written out: name, gang size, queue, priority class,
preemptibility, sub-groups and topology, and the pod's sub-group; and the error a pod gets when its workload cannot be
grouped as written."""

import pytest
import yaml
from podgrouper_support import NS, grouped, obj, pod, podgroup_of, spec_of, subgroup_of, warnings
from repo import REPO

from kai.components.podgrouper import Settings

QUEUE = "kai.scheduler/queue"


# ------------------------------------------------------------------------------------------- default rule, pods


def test_an_ownerless_pod_is_its_own_podgroup() -> None:
    cluster = grouped(pod("train-1", labels={QUEUE: "equipe-training"}, priorityClassName="train"))
    podgroup = podgroup_of(cluster, "train-1")
    assert podgroup["metadata"]["name"] == "pg-train-1-uid-train-1"
    assert podgroup["spec"] == {"minMember": 1, "queue": "equipe-training", "priorityClassName": "train"}
    assert podgroup["metadata"]["ownerReferences"] == [
        {"apiVersion": "v1", "kind": "Pod", "name": "train-1", "uid": "uid-train-1"}
    ]
    assert podgroup["metadata"]["labels"] == {QUEUE: "equipe-training"}
    assert podgroup["metadata"]["annotations"] == {
        "kai.scheduler/top-owner-metadata": 'name: train-1\nuid: uid-train-1\ngroup: ""\nversion: v1\nkind: Pod\n'
    }


@pytest.mark.parametrize(
    ("job_labels", "pod_labels", "queue"),
    [
        ({QUEUE: "from-job"}, {QUEUE: "from-pod"}, "from-job"),
        ({}, {QUEUE: "from-pod"}, "from-pod"),
        ({"project": "vision"}, {"kai.scheduler/node-pool": "a100"}, "vision-a100"),
        ({}, {"project": "vision"}, "vision"),
        ({}, {}, "default-queue"),
    ],
)
def test_queue_from_the_top_owner_then_the_pod_then_the_project(
    job_labels: dict[str, str], pod_labels: dict[str, str], queue: str
) -> None:
    job = obj("batch/v1", "Job", "etl", labels=job_labels)
    cluster = grouped(job, pod("etl-x", job, labels=pod_labels))
    assert spec_of(cluster, "etl-x")[1]["queue"] == queue


@pytest.mark.parametrize(
    ("job_labels", "pod_labels", "pod_class", "expected"),
    [
        ({"priorityClassName": "high"}, {"priorityClassName": "inference"}, "build", "high"),
        ({}, {"priorityClassName": "inference"}, "build", "inference"),
        ({}, {}, "build", "build"),
        ({}, {}, None, "train"),
    ],
)
def test_priority_class_from_labels_then_the_pod_spec_then_the_kind_default(
    job_labels: dict[str, str], pod_labels: dict[str, str], pod_class: str | None, expected: str
) -> None:
    job = obj("batch/v1", "Job", "etl", labels=job_labels)
    extra = {"priorityClassName": pod_class} if pod_class else {}
    cluster = grouped(job, pod("etl-x", job, labels=pod_labels, **extra))
    assert spec_of(cluster, "etl-x")[1]["priorityClassName"] == expected
    assert warnings(cluster, "etl-x") == []


def test_a_priority_class_label_naming_no_priority_class_is_warned_and_skipped() -> None:
    job = obj("batch/v1", "Job", "etl", labels={"priorityClassName": "hgih"})
    cluster = grouped(job, pod("etl-x", job, priorityClassName="build"))
    # as KAI: the owner's label is tried (and refused) instead of the pod's spec, then the kind's default
    assert spec_of(cluster, "etl-x")[1]["priorityClassName"] == "train"
    assert warnings(cluster, "etl-x") == [
        "Job ml/etl: field metadata.labels[priorityClassName]: 'hgih' is not a PriorityClass; it is ignored"
    ]


def test_preemptibility_and_durations_from_the_owners_then_the_pod() -> None:
    job = obj(
        "batch/v1",
        "Job",
        "etl",
        labels={"kai.scheduler/preemptibility": "sometimes"},
        annotations={"kai.scheduler/preemption-delay": "90s", "kai.scheduler/staleness-grace-period": "soon"},
    )
    task = pod(
        "etl-x",
        job,
        labels={"kai.scheduler/preemptibility": "non-preemptible"},
        annotations={"kai.scheduler/staleness-grace-period": "-1s"},
    )
    cluster = grouped(job, task)
    assert spec_of(cluster, "etl-x")[1] == {
        "minMember": 1,
        "queue": "default-queue",
        "priorityClassName": "train",
        "preemptibility": "non-preemptible",
        "preemptionDelay": "1m30s",
        "stalenessGracePeriod": "-1s",
    }
    assert warnings(cluster, "etl-x") == [
        "Job ml/etl: field metadata.labels[kai.scheduler/preemptibility]: got 'sometimes'; "
        "allowed: preemptible, non-preemptible",
        "Job ml/etl: field metadata.annotations[kai.scheduler/staleness-grace-period]: got 'soon'; "
        "expected a duration such as 60s, 1m30s, 2h or -1s",
    ]


def defaults_configmap(types: str) -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "priorities", "namespace": "kai-scheduler", "uid": "uid-cm"},
        "data": {"types": types},
    }


DEFAULTS = Settings(default_priorities_configmap="kai-scheduler/priorities")


def test_the_default_priorities_configmap_gives_each_kind_its_defaults() -> None:
    types = (
        '[{"typeName": "Job", "group": "batch", "priorityName": "high", "preemptibility": "Non-Preemptible"},'
        ' {"typeName": "Deployment", "priorityName": "build"}]'
    )
    job = obj("batch/v1", "Job", "etl")
    labelled = obj("batch/v1", "Job", "report", labels={"priorityClassName": "inference"})
    web = obj("apps/v1", "Deployment", "web")
    replicas = obj("apps/v1", "ReplicaSet", "web-1", owner=web)
    cluster = grouped(
        defaults_configmap(types),
        job,
        pod("etl-x", job),
        labelled,
        pod("report-x", labelled),
        web,
        replicas,
        pod("web-1-a", replicas),
        settings=DEFAULTS,
    )
    assert spec_of(cluster, "etl-x")[1] == {
        "minMember": 1,
        "queue": "default-queue",
        "priorityClassName": "high",
        "preemptibility": "non-preemptible",
    }
    assert spec_of(cluster, "report-x")[1]["priorityClassName"] == "inference"
    assert spec_of(cluster, "report-x")[1]["preemptibility"] == "non-preemptible"
    assert spec_of(cluster, "web-1-a")[1] == {"minMember": 1, "queue": "default-queue", "priorityClassName": "build"}


def test_a_malformed_default_priorities_configmap_is_reported_on_it_and_ignored() -> None:
    job = obj("batch/v1", "Job", "etl")
    cluster = grouped(defaults_configmap("[{"), job, pod("etl-x", job), settings=DEFAULTS)
    assert spec_of(cluster, "etl-x")[1]["priorityClassName"] == "train"
    [event] = [e for e in cluster.list("Event") if e["involvedObject"]["kind"] == "ConfigMap"]
    assert event["involvedObject"]["name"] == "priorities"
    assert event["message"].startswith("ConfigMap kai-scheduler/priorities: field data.types: is not JSON")


def test_spark_driver_and_executors_share_the_podgroup_their_selector_names() -> None:
    spark = {"spark-app-name": "wordcount", "spark-app-selector": "spark-8f2e"}
    driver = pod("wordcount-driver", labels=spark)
    cluster = grouped(driver, pod("wordcount-exec-1", driver, labels=spark))
    assert spec_of(cluster, "wordcount-driver") == spec_of(cluster, "wordcount-exec-1")
    assert spec_of(cluster, "wordcount-exec-1") == (
        "spark-8f2e",
        {"minMember": 1, "queue": "default-queue", "priorityClassName": "train"},
    )


def test_topology_from_the_top_owner_annotations() -> None:
    topology = {"kai.scheduler/topology": "cluster", "kai.scheduler/topology-required-placement": "rack"}
    job = obj("batch/v1", "Job", "etl", annotations=topology)
    cluster = grouped(job, pod("etl-x", job))
    assert spec_of(cluster, "etl-x")[1]["topologyConstraint"] == {
        "topology": "cluster",
        "requiredTopologyLevel": "rack",
    }


# ------------------------------------------------------------------------------------------- apps, batch


def test_each_deployment_pod_is_its_own_inference_podgroup() -> None:
    web = obj("apps/v1", "Deployment", "web", labels={QUEUE: "equipe-inference"})
    replicas = obj("apps/v1", "ReplicaSet", "web-5d9", owner=web)
    cluster = grouped(web, replicas, pod("web-5d9-a", replicas), pod("web-5d9-b", replicas))
    for name in ("web-5d9-a", "web-5d9-b"):
        podgroup = podgroup_of(cluster, name)
        assert podgroup["metadata"]["name"] == f"pg-{name}-uid-{name}"
        assert podgroup["spec"] == {"minMember": 1, "queue": "equipe-inference", "priorityClassName": "inference"}
        assert podgroup["metadata"]["ownerReferences"] == [
            {"apiVersion": "v1", "kind": "Pod", "name": name, "uid": f"uid-{name}"}
        ]


@pytest.mark.parametrize("kind", ["StatefulSet", "ReplicaSet"])
def test_a_statefulset_or_replicaset_is_one_podgroup(kind: str) -> None:
    owner = obj("apps/v1", kind, "db")
    cluster = grouped(owner, pod("db-0", owner), pod("db-1", owner))
    assert spec_of(cluster, "db-0") == spec_of(cluster, "db-1")
    assert spec_of(cluster, "db-1") == (
        "pg-db-uid-db",
        {"minMember": 1, "queue": "default-queue", "priorityClassName": "train"},
    )
    assert podgroup_of(cluster, "db-0")["metadata"]["ownerReferences"][0]["kind"] == kind


def test_a_batch_job_is_one_podgroup_for_all_its_pods() -> None:
    job = obj("batch/v1", "Job", "etl", {"parallelism": 2})
    cluster = grouped(job, pod("etl-x", job), pod("etl-y", job))
    assert spec_of(cluster, "etl-x") == spec_of(cluster, "etl-y")
    assert spec_of(cluster, "etl-y") == (
        "pg-etl-uid-etl",
        {"minMember": 1, "queue": "default-queue", "priorityClassName": "train"},
    )


def test_batch_min_member_makes_a_job_a_gang() -> None:
    job = obj("batch/v1", "Job", "etl", {"parallelism": 3}, annotations={"kai.scheduler/batch-min-member": "3"})
    cluster = grouped(job, pod("etl-x", job))
    assert spec_of(cluster, "etl-x")[1]["minMember"] == 3


@pytest.mark.parametrize("value", ["three", "0", "-2"])
def test_a_bad_batch_min_member_is_reported(value: str) -> None:
    job = obj("batch/v1", "Job", "etl", annotations={"kai.scheduler/batch-min-member": value})
    cluster = grouped(job, pod("etl-x", job))
    assert warnings(cluster, "etl-x") == [
        f"Job ml/etl: field metadata.annotations[kai.scheduler/batch-min-member]: got {value!r}; "
        "expected an integer >= 1"
    ]
    assert cluster.list("PodGroup") == []


def test_a_cronjob_pod_is_grouped_by_its_job() -> None:
    cron = obj("batch/v1", "CronJob", "nightly", labels={QUEUE: "cron-queue"})
    job = obj(
        "batch/v1",
        "Job",
        "nightly-290",
        owner=cron,
        labels={QUEUE: "job-queue"},
        annotations={"kai.scheduler/batch-min-member": "3"},
    )
    cluster = grouped(cron, job, pod("nightly-290-x", job))
    podgroup = podgroup_of(cluster, "nightly-290-x")
    assert podgroup["metadata"]["name"] == "pg-nightly-290-uid-nightly-290"
    # the Job is grouped as the default grouper groups it: gang size 1 whatever its annotation says
    assert podgroup["spec"] == {"minMember": 1, "queue": "job-queue", "priorityClassName": "train"}
    assert podgroup["metadata"]["ownerReferences"][0] == {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "name": "nightly-290",
        "uid": "uid-nightly-290",
    }


# ------------------------------------------------------------------------------------------- kubeflow


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


# ------------------------------------------------------------------------------------------- pytorch

ROLE = "training.kubeflow.org/replica-type"
INDEX = "training.kubeflow.org/replica-index"


def pytorch(name: str, spec: dict[str, object]) -> dict[str, object]:
    return obj("kubeflow.org/v1", "PyTorchJob", name, spec)


def worker(job: dict[str, object], index: int, **annotations: str) -> dict[str, object]:
    name = job["metadata"]["name"]  # type: ignore[index]
    return pod(f"{name}-worker-{index}", job, labels={ROLE: "worker", INDEX: str(index)}, annotations=annotations)


def test_a_pytorchjob_is_one_gang_with_master_and_worker_subgroups() -> None:
    job = pytorch("bert", {"pytorchReplicaSpecs": {"Master": {"replicas": 1}, "Worker": {"replicas": 2}}})
    master = pod("bert-master-0", job, labels={ROLE: "master", INDEX: "0"})
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
    task = pod("gpt-worker-x", job, labels={ROLE: "worker"}, annotations={"kai.scheduler/segment-size": "2"})
    cluster = grouped(job, task)
    assert warnings(cluster, "gpt-worker-x") == [
        "Pod ml/gpt-worker-x: field metadata.labels[training.kubeflow.org/replica-index]: is required on a worker of "
        "a segmented PyTorchJob"
    ]


# ------------------------------------------------------------------------------------------- ray


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


# ------------------------------------------------------------------------------------------- leader-worker sets

GROUP = "leaderworkerset.sigs.k8s.io/group-index"
WORKER = "leaderworkerset.sigs.k8s.io/worker-index"


def lws_pods(lws: dict[str, object], size: int, **leader_spec: object) -> list[dict[str, object]]:
    """The pods of replica group 0 as the LWS controller makes them: the leader (of the leader StatefulSet) and its
    workers (of a StatefulSet the leader pod owns)."""
    leaders = obj("apps/v1", "StatefulSet", "llm", owner=lws)
    leader = pod("llm-0", leaders, labels={GROUP: "0", WORKER: "0"}, **leader_spec)
    workers = obj("apps/v1", "StatefulSet", "llm-0", owner=leader)
    members = [pod(f"llm-0-{i}", workers, labels={GROUP: "0", WORKER: str(i)}) for i in range(1, size)]
    return [lws, leaders, leader, workers, *members]


def lws(size: int, **spec: object) -> dict[str, object]:
    return obj(
        "leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet", "llm", {"leaderWorkerTemplate": {"size": size}, **spec}
    )


def test_a_leader_worker_set_group_is_a_gang_of_leader_and_workers() -> None:
    cluster = grouped(*lws_pods(lws(3), 3))
    assert spec_of(cluster, "llm-0-2") == (
        "pg-llm-uid-llm-group-0",
        {
            "minMember": 3,
            "queue": "default-queue",
            "priorityClassName": "train",
            "subGroups": [{"name": "leader", "minMember": 1}, {"name": "workers", "minMember": 2}],
        },
    )
    assert [subgroup_of(cluster, p) for p in ("llm-0", "llm-0-1")] == ["leader", "workers"]


def test_with_leader_ready_the_gang_is_the_leader_until_it_is_scheduled() -> None:
    leader_only = grouped(*lws_pods(lws(3, startupPolicy="LeaderReady"), 1))
    assert spec_of(leader_only, "llm-0")[1]["minMember"] == 1
    assert spec_of(leader_only, "llm-0")[1]["subGroups"] == [{"name": "leader", "minMember": 1}]
    scheduled = grouped(*lws_pods(lws(3, startupPolicy="LeaderReady"), 3, nodeName="node-1"))
    assert spec_of(scheduled, "llm-0-1")[1]["minMember"] == 3


def test_a_segmented_leader_worker_set_keeps_its_leader_in_the_first_segment() -> None:
    segmented = lws(5)
    segmented["spec"]["leaderWorkerTemplate"]["subGroupPolicy"] = {"subGroupSize": 2}  # type: ignore[index]
    cluster = grouped(*lws_pods(segmented, 5))
    assert spec_of(cluster, "llm-0")[1]["subGroups"] == [
        {"name": "segment-0", "minSubGroup": 2},
        {"name": "segment-1", "minMember": 2},
        {"name": "leader", "minMember": 1, "parent": "segment-0"},
        {"name": "workers", "minMember": 2, "parent": "segment-0"},
    ]
    assert [subgroup_of(cluster, p) for p in ("llm-0", "llm-0-1", "llm-0-2", "llm-0-3", "llm-0-4")] == [
        "leader",
        "workers",
        "workers",
        "segment-1",
        "segment-1",
    ]


def test_segments_of_a_leader_worker_set_whose_workers_do_not_divide_evenly() -> None:
    segmented = lws(4)
    segmented["spec"]["leaderWorkerTemplate"]["subGroupPolicy"] = {"subGroupSize": 2}  # type: ignore[index]
    cluster = grouped(*lws_pods(segmented, 4))
    assert spec_of(cluster, "llm-0")[1]["subGroups"] == [
        {"name": "segment-0", "minSubGroup": 2},
        {"name": "segment-1", "minMember": 2},
        {"name": "leader", "minMember": 1, "parent": "segment-0"},
        {"name": "workers", "minMember": 1, "parent": "segment-0"},
    ]


def test_a_leader_excluded_from_the_segments_has_a_subgroup_of_its_own() -> None:
    segmented = lws(5)
    segmented["spec"]["leaderWorkerTemplate"]["subGroupPolicy"] = {  # type: ignore[index]
        "subGroupSize": 2,
        "subGroupPolicyType": "LeaderExcluded",
    }
    cluster = grouped(*lws_pods(segmented, 5))
    assert spec_of(cluster, "llm-0")[1]["subGroups"] == [
        {"name": "leader", "minMember": 1},
        {"name": "segment-0", "minMember": 2},
        {"name": "segment-1", "minMember": 2},
    ]
    assert [subgroup_of(cluster, p) for p in ("llm-0", "llm-0-1", "llm-0-3")] == ["leader", "segment-0", "segment-1"]


def test_a_single_segment_counts_its_leader_once() -> None:
    segmented = lws(3, **{})
    segmented["metadata"]["annotations"] = {"kai.scheduler/segment-size": "2"}  # type: ignore[index]
    cluster = grouped(*lws_pods(segmented, 3))
    assert spec_of(cluster, "llm-0")[1]["subGroups"] == [
        {"name": "segment-0", "minSubGroup": 2},
        {"name": "leader", "minMember": 1, "parent": "segment-0"},
        {"name": "workers", "minMember": 2, "parent": "segment-0"},
    ]


# ------------------------------------------------------------------------------------------- jobsets


def jobset(**spec: object) -> dict[str, object]:
    rack = {"kai.scheduler/topology": "cluster", "kai.scheduler/topology-required-placement": "rack"}
    replicated = [
        {"name": "driver", "replicas": 1, "template": {"spec": {"parallelism": 1}}},
        {"name": "workers", "replicas": 2, "template": {"metadata": {"annotations": rack}, "spec": {"parallelism": 4}}},
    ]
    return obj("jobset.x-k8s.io/v1alpha2", "JobSet", "train", {"replicatedJobs": replicated, **spec})


def jobset_pod(js: dict[str, object], replicated: str, index: int) -> list[dict[str, object]]:
    job = obj("batch/v1", "Job", f"train-{replicated}-{index}", owner=js)
    labels = {"jobset.sigs.k8s.io/replicatedjob-name": replicated, "jobset.sigs.k8s.io/job-index": str(index)}
    return [job, pod(f"train-{replicated}-{index}-x", job, labels=labels)]


def test_a_jobset_is_one_podgroup_of_replicated_jobs_and_their_replicas() -> None:
    js = jobset()
    cluster = grouped(js, *jobset_pod(js, "workers", 1))
    rack = {"topology": "cluster", "requiredTopologyLevel": "rack"}
    assert spec_of(cluster, "train-workers-1-x") == (
        "pg-train-uid-train",
        {
            "minSubGroup": 2,
            "queue": "default-queue",
            "priorityClassName": "train",
            "subGroups": [
                {"name": "driver", "minSubGroup": 1},
                {"name": "driver-replica-0", "minMember": 1, "parent": "driver"},
                {"name": "workers", "minSubGroup": 2},
                {"name": "workers-replica-0", "minMember": 4, "parent": "workers", "topologyConstraint": rack},
                {"name": "workers-replica-1", "minMember": 4, "parent": "workers", "topologyConstraint": rack},
            ],
        },
    )
    assert subgroup_of(cluster, "train-workers-1-x") == "workers-replica-1"


def test_a_jobset_started_in_order_needs_one_replicated_job_at_a_time() -> None:
    js = jobset(startupPolicy={"startupPolicyOrder": "InOrder"})
    cluster = grouped(js, *jobset_pod(js, "driver", 0))
    assert spec_of(cluster, "train-driver-0-x")[1]["minSubGroup"] == 1


def test_batch_min_member_on_a_jobset_and_on_its_replica_templates() -> None:
    js = jobset()
    js["metadata"]["annotations"] = {"kai.scheduler/batch-min-member": "1"}  # type: ignore[index]
    js["spec"]["replicatedJobs"][1]["template"]["metadata"]["annotations"]["kai.scheduler/batch-min-member"] = "2"  # type: ignore[index]
    cluster = grouped(js, *jobset_pod(js, "workers", 0))
    spec = spec_of(cluster, "train-workers-0-x")[1]
    assert spec["minSubGroup"] == 1
    assert [s["minMember"] for s in spec["subGroups"] if s.get("parent") == "workers"] == [2, 2]


def test_a_jobset_pod_without_its_replica_labels_is_reported() -> None:
    js = jobset()
    job = obj("batch/v1", "Job", "train-workers-0", owner=js)
    cluster = grouped(js, job, pod("stray", job))
    assert warnings(cluster, "stray") == [
        "Pod ml/stray: field metadata.labels[jobset.sigs.k8s.io/replicatedjob-name]: is required on a JobSet's pod"
    ]


# ------------------------------------------------------------------------------------------- grove, dynamo


def grove_objects(top: dict[str, object] | None = None) -> list[dict[str, object]]:
    labels = {QUEUE: "equipe-inference"}
    pcs = obj("grove.io/v1alpha1", "PodCliqueSet", "pcs", labels=labels, owner=top)
    clique = obj("grove.io/v1alpha1", "PodClique", "pcs-0-frontend", owner=pcs)
    frontend = [pod(f"pcs-0-frontend-{x}", clique, labels={"grove.io/podgang": "pcs-0"}) for x in ("a", "b")]
    gang = obj(
        "scheduler.grove.io/v1alpha1",
        "PodGang",
        "pcs-0",
        {
            "podgroups": [
                {
                    "name": "pcs-0-frontend",
                    "minReplicas": 2,
                    "podReferences": [{"namespace": NS, "name": p["metadata"]["name"]} for p in frontend],  # type: ignore[index]
                },
                {
                    "name": "pcs-0-backend",
                    "minReplicas": 1,
                    "podReferences": [{"namespace": NS, "name": "pcs-0-backend-a"}],
                    "topologyConstraint": {"packConstraint": {"required": "host"}},
                },
            ],
            "topologyConstraintGroupConfigs": [
                {
                    "name": "serving",
                    "podGroupNames": ["pcs-0-frontend", "pcs-0-backend"],
                    "topologyConstraint": {"packConstraint": {"preferred": "rack"}},
                }
            ],
            "topologyConstraint": {"packConstraint": {"required": "zone"}},
        },
        labels=labels,
        annotations={"grove.io/topology-name": "cluster"},
    )
    return [*([top] if top else []), pcs, clique, gang, *frontend]


def test_a_grove_podgang_is_the_podgroup_with_its_cliques_as_subgroups() -> None:
    cluster = grouped(*grove_objects())
    podgroup = podgroup_of(cluster, "pcs-0-frontend-a")
    assert podgroup["metadata"]["name"] == "pg-pcs-0-uid-pcs-0"
    assert podgroup["metadata"]["ownerReferences"][0]["kind"] == "PodGang"
    assert podgroup["spec"] == {
        "minMember": 3,
        "queue": "equipe-inference",
        "priorityClassName": "train",
        "topologyConstraint": {"topology": "cluster", "requiredTopologyLevel": "zone"},
        "subGroups": [
            {
                "name": "serving",
                "minSubGroup": 2,
                "topologyConstraint": {"topology": "cluster", "preferredTopologyLevel": "rack"},
            },
            {"name": "pcs-0-frontend", "minMember": 2, "parent": "serving"},
            {
                "name": "pcs-0-backend",
                "minMember": 1,
                "parent": "serving",
                "topologyConstraint": {"topology": "cluster", "requiredTopologyLevel": "host"},
            },
        ],
    }
    assert subgroup_of(cluster, "pcs-0-frontend-b") == "pcs-0-frontend"


def test_a_dynamo_graph_deployment_is_skipped_for_its_podcliqueset_and_lends_it_its_labels() -> None:
    dgd = obj("nvidia.com/v1beta1", "DynamoGraphDeployment", "llm", labels={"priorityClassName": "inference"})
    cluster = grouped(*grove_objects(dgd))
    assert spec_of(cluster, "pcs-0-frontend-a")[1]["priorityClassName"] == "inference"


# ------------------------------------------------------------------------------------------- knative


def knative_objects(min_scale: str = "2") -> list[dict[str, object]]:
    service = obj("serving.knative.dev/v1", "Service", "hello")
    configuration = obj("serving.knative.dev/v1", "Configuration", "hello", owner=service)
    revision = obj(
        "serving.knative.dev/v1",
        "Revision",
        "hello-00001",
        owner=configuration,
        labels={QUEUE: "equipe-inference"},
        annotations={"autoscaling.knative.dev/min-scale": min_scale},
    )
    deployment = obj("apps/v1", "Deployment", "hello-00001-deployment", owner=revision)
    replicas = obj("apps/v1", "ReplicaSet", "hello-00001-deployment-7f", owner=deployment)
    pods = [pod(f"hello-00001-{x}", replicas, labels={"serving.knative.dev/revision": "hello-00001"}) for x in "ab"]
    return [service, configuration, revision, deployment, replicas, *pods]


def test_a_knative_revision_is_a_gang_of_its_min_scale() -> None:
    cluster = grouped(*knative_objects())
    podgroup = podgroup_of(cluster, "hello-00001-a")
    assert podgroup_of(cluster, "hello-00001-b")["metadata"]["name"] == podgroup["metadata"]["name"]
    assert podgroup["metadata"]["name"] == "pg-hello-00001-uid-hello-00001"
    assert podgroup["metadata"]["ownerReferences"][0]["kind"] == "Revision"
    assert podgroup["spec"] == {"minMember": 2, "queue": "equipe-inference", "priorityClassName": "inference"}


def test_without_knative_gangs_each_pod_is_its_own_podgroup() -> None:
    cluster = grouped(*knative_objects(), settings=Settings(knative_gang_schedule=False))
    assert spec_of(cluster, "hello-00001-a") == (
        "pg-hello-00001-a-uid-hello-00001-a",
        {"minMember": 1, "queue": "equipe-inference", "priorityClassName": "inference"},
    )


# ------------------------------------------------------------------------------------------- vendors, skipped owners


def test_an_aml_job_is_a_gang_of_its_node_count() -> None:
    aml = obj("amlarc.azureml.com/v1alpha1", "AmlJob", "aml", {"job": {"options": {"envs": {"AZUREML_NODE_COUNT": 3}}}})
    cluster = grouped(aml, pod("aml-0", aml))
    assert spec_of(cluster, "aml-0")[1]["minMember"] == 3
    missing = obj("amlarc.azureml.com/v1alpha1", "AmlJob", "aml", {"job": {}})
    assert warnings(grouped(missing, pod("aml-0", missing)), "aml-0") == [
        "AmlJob ml/aml: field spec.job.options.envs.AZUREML_NODE_COUNT: got None; an AmlJob needs its node count "
        "(at least 1)"
    ]


def test_a_spot_request_is_inference_and_a_runai_job_is_named_after_its_pods() -> None:
    spot = obj("egx.nvidia.io/v1", "SPOTRequest", "spot")
    runai = obj("run.ai/v1", "RunaiJob", "sweep")
    cluster = grouped(spot, pod("spot-0", spot), runai, pod("sweep-x7k2p", runai))
    assert spec_of(cluster, "spot-0")[1]["priorityClassName"] == "inference"
    assert spec_of(cluster, "sweep-x7k2p")[0] == "pg-sweep-uid-sweep"


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
    cluster = grouped(workflow, job, pod("bert-worker-0", job, labels={ROLE: "worker", INDEX: "0"}))
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
    ("annotation", "written"),
    [("0", "0s"), ("1.5s", "1.5s"), ("500ms", "500ms"), ("1h", "1h0m0s"), ("2h30m", "2h30m0s"), ("90m", "1h30m0s")],
)
def test_a_preemption_delay_is_written_as_kai_writes_a_duration(annotation: str, written: str) -> None:
    job = obj("batch/v1", "Job", "etl", annotations={"kai.scheduler/preemption-delay": annotation})
    cluster = grouped(job, pod("etl-x", job))
    assert spec_of(cluster, "etl-x")[1]["preemptionDelay"] == written


@pytest.mark.parametrize(
    ("api_version", "kind"),
    [
        ("machinelearning.seldon.io/v1", "SeldonDeployment"),
        ("machinelearning.seldon.io/v1alpha2", "SeldonDeployment"),
        ("kubevirt.io/v1", "VirtualMachineInstance"),
        ("workspace.devfile.io/v1alpha2", "DevWorkspace"),
        ("kubeflow.org/v1beta1", "ScheduledWorkflow"),
        ("tekton.dev/v1", "PipelineRun"),
        ("tekton.dev/v1", "TaskRun"),
        ("example.com/v1", "AnythingElse"),
    ],
)
def test_kinds_grouped_as_they_are_make_one_podgroup_of_gang_size_one(api_version: str, kind: str) -> None:
    owner = obj(api_version, kind, "w", labels={QUEUE: "equipe-inference"})
    cluster = grouped(owner, pod("w-0", owner), pod("w-1", owner))
    assert spec_of(cluster, "w-0") == spec_of(cluster, "w-1")
    assert spec_of(cluster, "w-1") == (
        "pg-w-uid-w",
        {"minMember": 1, "queue": "equipe-inference", "priorityClassName": "train"},
    )
    assert podgroup_of(cluster, "w-0")["metadata"]["ownerReferences"][0]["kind"] == kind


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
    cluster = grouped(workload, job, pod("w-worker-0", job, labels={ROLE: "worker", INDEX: "0"}))
    name, spec = spec_of(cluster, "w-worker-0")
    assert (name, spec["minMember"], spec["queue"]) == ("pg-w-uid-job", 3, "research")


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


def test_a_podgangset_is_grouped_as_a_podcliqueset() -> None:
    objects = grove_objects()
    objects[0]["kind"] = "PodGangSet"
    objects[1]["metadata"]["ownerReferences"][0]["kind"] = "PodGangSet"  # type: ignore[index]
    cluster = grouped(*objects)
    assert spec_of(cluster, "pcs-0-frontend-a")[0] == "pg-pcs-0-uid-pcs-0"
    assert spec_of(cluster, "pcs-0-frontend-a")[1]["minMember"] == 3


def test_a_knative_revision_scaled_to_zero_is_a_podgroup_of_no_gang() -> None:
    """``min-scale: "0"`` gives ``minMember: 0`` (KAI #1989): every pod of the revision is elastic."""
    cluster = grouped(*knative_objects(min_scale="0"))
    assert podgroup_of(cluster, "hello-00001-a")["spec"]["minMember"] == 0

"""The PodGroup KAI v0.17 makes for the default rule every kind falls back to (rules/default.py): queue, priority
class, preemptibility, durations, topology and the default-priorities ConfigMap, read from the top owner, then the
pod; and the kinds grouped as they are."""

import pytest
from podgrouper_support import grouped, obj, pod, podgroup_of, rule_grouping, spec_of, warnings

from kai.components.podgrouper import Settings
from kai.components.podgrouper.rules import default, keys

QUEUE = "kai.scheduler/queue"


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


def test_topology_from_the_top_owner_annotations() -> None:
    topology = {"kai.scheduler/topology": "cluster", "kai.scheduler/topology-required-placement": "rack"}
    job = obj("batch/v1", "Job", "etl", annotations=topology)
    cluster = grouped(job, pod("etl-x", job))
    assert spec_of(cluster, "etl-x")[1]["topologyConstraint"] == {
        "topology": "cluster",
        "requiredTopologyLevel": "rack",
    }


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


def test_the_default_rule_reads_the_top_owners_labels_before_the_pods() -> None:
    job = obj(
        "example.com/v1",
        "Widget",
        "w",
        labels={
            keys.PRIORITY_LABEL: "build",
            keys.PREEMPTIBILITY_LABEL: "non-preemptible",
            keys.PROJECT_LABEL: "vision",
        },
    )
    member = pod("w-0", job, labels={keys.PRIORITY_LABEL: "inference", keys.NODE_POOL_LABEL: "a100"})
    grouping = rule_grouping(default.default_rule, "w-0", job, member)
    assert (grouping.name, grouping.owner["kind"]) == (f"{keys.PODGROUP_PREFIX}-w-uid-w", "Widget")
    assert (grouping.priority_class, grouping.preemptibility, grouping.queue) == (
        "build",
        "non-preemptible",
        "vision-a100",
    )
    assert grouping.annotations[keys.TOP_OWNER_ANNOTATION].startswith("name: w\n")

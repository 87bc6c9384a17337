"""The doctor's checks on objects as the API server returns them: the healthy answer and each broken case with
its exact text (NVCF's key phrases, NVCA's resource-violation line), and the verdict they add up to."""

from typing import Any

import pytest
from rich.console import Console

from kai.components.doctor import checks, report
from kai.components.doctor.checks import ERROR, OK, WARNING, Finding

UNLIMITED = {"quota": -1, "limit": -1, "overQuotaWeight": 1}
ALL_CRDS = checks.SCHEDULING_CRDS + checks.OPERATOR_CRDS


def queue(name: str, parent: str = "", **resources: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = {"resources": {r: resources.get(r, UNLIMITED) for r in ("gpu", "cpu", "memory")}}
    if parent:
        spec["parentQueue"] = parent
    return {"metadata": {"name": name}, "spec": spec}


def default_queues(**child: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {
        "default-parent-queue": queue("default-parent-queue"),
        "default-queue": queue("default-queue", "default-parent-queue", **child),
    }


def test_crds_installed_or_not() -> None:
    assert checks.crds(ALL_CRDS) == [
        Finding("crds", OK, "KAI's CRDs are installed (queues.scheduling.run.ai, podgroups.scheduling.run.ai, "
                "bindrequests.scheduling.run.ai, topologies.kai.scheduler)")
    ]  # fmt: skip
    assert checks.crds(checks.SCHEDULING_CRDS)[1] == Finding(
        "crds", WARNING, "configs.kai.scheduler, schedulingshards.kai.scheduler not installed: no operator (fine for "
        "a local `kai all`)"
    )  # fmt: skip
    assert checks.crds(["queues.scheduling.run.ai", "configs.kai.scheduler"]) == [
        Finding("crds", ERROR, "KAI Scheduler is not installed: the CRDs podgroups.scheduling.run.ai, "
                "bindrequests.scheduling.run.ai, topologies.kai.scheduler are missing. Install it with "
                "`helm upgrade -i kai-scheduler <chart> -n kai-scheduler --create-namespace`")
    ]  # fmt: skip


def test_default_queues_healthy() -> None:
    assert checks.nvca_queues(default_queues(), unlimited=True) == [
        Finding("default-queues", OK, "default-queue is a child of default-parent-queue with quota, limit and "
                "overQuotaWeight -1/-1/1")
    ]  # fmt: skip
    kais_chart_defaults = {"quota": 0, "limit": -1, "overQuotaWeight": 1}  # KAI's own defaultQueue values
    assert checks.nvca_queues(default_queues(gpu=kais_chart_defaults), unlimited=False) == [
        Finding("default-queues", OK, "default-queue is a child of default-parent-queue")
    ]


@pytest.mark.parametrize("present", [[], ["default-parent-queue"], ["default-queue"]])
def test_default_queues_missing(present: list[str]) -> None:
    missing = ", ".join(name for name in ("default-parent-queue", "default-queue") if name not in present)
    (finding,) = checks.nvca_queues({name: queue(name) for name in present}, unlimited=True)
    assert finding == Finding(
        "default-queues", ERROR, "Queues default-parent-queue and default-queue are expected: either one or both "
        f"were not found (missing: {missing}). Apply the defaultQueue values (createDefaultQueue: true)"
    )  # fmt: skip


@pytest.mark.parametrize(("parent", "shown"), [("", "'(none)'"), ("team-a", "'team-a'")])
def test_default_queues_not_linked(parent: str, shown: str) -> None:
    queues = {**default_queues(), "default-queue": queue("default-queue", parent)}
    assert checks.nvca_queues(queues, unlimited=True) == [
        Finding("default-queues", ERROR, f"Queue hierarchy misconfigured: default-queue has parentQueue {shown}, "
                "expected default-parent-queue. Correct parentName and childName in the defaultQueue values")
    ]  # fmt: skip


def test_resource_violations_name_the_resource_and_what_was_found() -> None:
    queues = default_queues(gpu={"quota": 4, "limit": 8, "overQuotaWeight": 1}, memory={"quota": 0, "limit": -1})
    queues["default-parent-queue"]["spec"]["resources"]["cpu"] = {"quota": -1, "limit": -1, "overQuotaWeight": 2.5}
    assert [f.message for f in checks.nvca_queues(queues, unlimited=True)] == [
        "CPU resource violation for queue default-parent-queue: expected limit=-1, quota=-1, overQuotaWeight=1, "
        "got limit=-1, quota=-1, overQuotaWeight=2.5",
        "GPU resource violation for queue default-queue: expected limit=-1, quota=-1, overQuotaWeight=1, "
        "got limit=8, quota=4, overQuotaWeight=1",
        "Memory resource violation for queue default-queue: expected limit=-1, quota=-1, overQuotaWeight=1, "
        "got limit=-1, quota=0, overQuotaWeight=0",  # an unset weight is 0, as KAI reads it
    ]
    unset = default_queues()
    del unset["default-queue"]["spec"]["resources"]
    assert {f.level for f in checks.nvca_queues(unset, unlimited=True)} == {ERROR}


def test_queue_tree_problems_are_warnings() -> None:
    assert checks.queue_tree(default_queues()) == [Finding("queues", OK, "2 queues, every one usable")]
    queues = {**default_queues(), "c": queue("c", "nowhere"), "d": queue("d", gpu={"quota": "lots"})}
    found = checks.queue_tree(queues)
    assert {f.level for f in found} == {WARNING} and len(found) == 2
    assert any("Queue d" in f.message and "spec.resources.gpu.quota" in f.message for f in found)
    assert any("Queue c" in f.message and "parent queue 'nowhere' does not exist" in f.message for f in found)


NODE = {
    "metadata": {"name": "n"},
    "status": {
        "allocatable": {"nvidia.com/gpu": "8", "cpu": "4", "memory": "2G"},
        "conditions": [{"type": "Ready", "status": "True"}],
    },
}


def test_quotas_above_the_cluster() -> None:
    not_ready = {
        "metadata": {"name": "m"},
        "status": {**NODE["status"], "conditions": [{"type": "Ready", "status": "False"}]},
    }
    assert checks.capacity(default_queues(), [NODE, not_ready]) == [
        Finding("capacity", OK, "every quota fits the cluster's ready nodes")
    ]
    queues = {
        "a": queue("a", gpu={"quota": 6, "limit": -1, "overQuotaWeight": 1}, cpu={"quota": 5000}),
        "b": queue("b", gpu={"quota": 12, "limit": -1, "overQuotaWeight": 1}, memory={"quota": 3000}),
    }
    assert [f.message for f in checks.capacity(queues, [NODE, not_ready])] == [
        "queue b: gpu quota 12 is more than the cluster's 8 GPUs (ready nodes)",
        "top-level queues: gpu quotas add up to 18, more than the cluster's 8 GPUs",
        "queue a: cpu quota 5000 is more than the cluster's 4000 millicores (ready nodes)",
        "queue b: memory quota 3000 is more than the cluster's 2000 MB (ready nodes)",
    ]


def pod(name: str, created: str, reason: str = "", scheduler: str = "kai-scheduler") -> dict[str, Any]:
    conditions = [{"type": "PodScheduled", "status": "False", "reason": reason, "message": "no GPU\nmore"}]
    return {"metadata": {"name": name, "namespace": "ns", "creationTimestamp": created},
            "spec": {"schedulerName": scheduler},
            "status": {"phase": "Pending", "conditions": conditions if reason else []}}  # fmt: skip


def test_pods_pending_too_long_with_their_reason() -> None:
    now = 1_000_000.0  # 1970-01-12T13:46:40Z
    pods = [pod("new", "1970-01-12T13:46:00Z"), pod("other", "1970-01-12T10:00:00Z", scheduler="default-scheduler"),
            pod("old", "1970-01-12T13:00:00Z", "Unschedulable"), pod("older", "1970-01-12T11:46:40Z")]  # fmt: skip
    assert [f.message for f in checks.pending(pods, now, 300, "kai-scheduler")] == [
        "pod ns/older pending for 2h00m: no PodScheduled condition yet",
        "pod ns/old pending for 46m40s: Unschedulable: no GPU",
    ]
    assert checks.pending(pods[:1], now, 300, "kai-scheduler") == [
        Finding("pending", OK, "no kai pod has waited longer than 5m00s")
    ]


def test_components_and_probes() -> None:
    deployments = [
        {"metadata": {"name": "binder"}, "spec": {"replicas": 2}, "status": {"availableReplicas": 1}},
        {"metadata": {"name": "kai-scheduler-default"}, "spec": {"replicas": 1}, "status": {"availableReplicas": 1}},
    ]
    assert checks.deployments(deployments, "kai-scheduler") == [
        Finding("components", ERROR, "Deployment kai-scheduler/binder: 1/2 replicas available"),
        Finding("components", OK, "Deployment kai-scheduler/kai-scheduler-default: 1/1 replicas available"),
    ]
    answers = [
        ("http://x/readyz?verbose", 500, "[+]a ok\n[-]informers not synced yet: Pod\n"),
        ("http://y/readyz?verbose", 200, "[+]a ok\n"),
        ("http://z/readyz?verbose", 0, "Connection refused"),
    ]
    assert checks.probes(answers) == [
        Finding("components", ERROR, "http://x/readyz?verbose: not ready: informers not synced yet: Pod"),
        Finding("components", OK, "http://y/readyz?verbose: ready"),
        Finding("components", ERROR, "http://z/readyz?verbose: not ready: Connection refused"),
    ]


def test_webhooks_registered_and_answering() -> None:
    found = {"kai-queue-validation-v2": {}}
    reached = {"kai-queue-validation-v2/queue-validation.kai.scheduler": "",
               "kai-queue-validation-v2/other": "[Errno 111] Connection refused"}  # fmt: skip
    expected = ["kai-podgroup-validation-v2alpha2", "kai-queue-validation-v2"]
    assert checks.webhook_configurations(found, expected, reached) == [
        Finding(
            "webhooks",
            WARNING,
            "not registered: kai-podgroup-validation-v2alpha2; bad objects are not refused at admission (kai still "
            "reports them on the objects)",
        ),
        Finding(
            "webhooks", ERROR, "webhook kai-queue-validation-v2/other does not answer: [Errno 111] Connection refused"
        ),
        Finding("webhooks", OK, "webhook kai-queue-validation-v2/queue-validation.kai.scheduler answers"),
    ]


def test_the_verdict_counts_errors_only() -> None:
    fine = [Finding("crds", OK, "a"), Finding("queues", WARNING, "b")]
    broken = [*fine, Finding("default-queues", ERROR, "c")]
    assert report.healthy(fine) and report.verdict(fine) == "healthy: 0 errors, 1 warnings"
    assert not report.healthy(broken) and report.verdict(broken) == "unhealthy: 1 errors, 1 warnings"
    assert report.as_json(broken)["findings"][2] == {"check": "default-queues", "level": "error", "message": "c"}
    console = Console(width=120, record=True)
    report.print_table(broken, console)
    text = console.export_text()
    assert "default-queues │ error   │ c" in text and text.rstrip().endswith("unhealthy: 1 errors, 1 warnings")


def test_each_component_must_have_a_scrape_target_that_is_up():
    up = [
        ({"job": "binder", "namespace": "kai-scheduler", "pod": "binder-1"}, 1.0),
        ({"job": "queue-controller", "pod": "queue-controller-1"}, 0.0),
        ({"job": "kai-scheduler-default", "pod": "a"}, 0.0),
        ({"job": "kai-scheduler-default", "pod": "b"}, 1.0),
        ({"job": "node-exporter"}, 1.0),
    ]
    found = checks.scraped(["queue-controller", "binder", "kai-scheduler-default", "pod-grouper"], up, "P")
    assert [(f.level, f.message.split(":")[0]) for f in found] == [
        ("ok", "binder"),
        ("ok", "kai-scheduler-default"),
        ("error", "pod-grouper"),
        ("error", "queue-controller"),
    ]
    assert found[1].message == "kai-scheduler-default: scraped by P, 1/2 targets up"
    assert "no scrape target in P: no ServiceMonitor selects it" in found[2].message
    assert "0/1 scrape targets up in P: its last scrape failed" in found[3].message

"""The PodGroup KAI v0.17 makes for jobs and CronJobs (rules/batch.py): one PodGroup per Job, a gang when
kai.scheduler/batch-min-member says so."""

import pytest
from podgrouper_support import grouped, obj, pod, podgroup_of, rule_grouping, spec_of, warnings

from kai.components.podgrouper.rules import batch
from kai.components.podgrouper.rules.model import Obj

QUEUE = "kai.scheduler/queue"


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


def test_the_job_rule_takes_its_gang_from_batch_min_member() -> None:
    job = obj("batch/v1", "Job", "etl", annotations={"kai.scheduler/batch-min-member": "3"})
    grouping = rule_grouping(batch.job, "etl-x", job, pod("etl-x", job))
    assert (grouping.name, grouping.min_member, grouping.owner["kind"]) == ("pg-etl-uid-etl", 3, "Job")
    assert batch.min_member_override(Obj.parse(job, "Job")) == 3

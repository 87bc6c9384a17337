"""The PodGroup KAI v0.17 makes for jobSets (rules/jobset.py): one PodGroup of replicated jobs and their replicas."""

from podgrouper_support import grouped, jobset, jobset_pod, obj, pod, rule_grouping, spec_of, subgroup_of, warnings

from kai.components.podgrouper.rules import jobset as rule

QUEUE = "kai.scheduler/queue"


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


def test_the_jobset_rule_counts_every_replicated_job_and_its_parallelism() -> None:
    workload = jobset()
    job, member = jobset_pod(workload, "workers", 1)
    grouping = rule_grouping(rule.jobset, member["metadata"]["name"], workload, job, member)
    assert (grouping.min_subgroup, grouping.pod_subgroup) == (2, "workers-replica-1")
    assert [(s.name, s.min_member) for s in grouping.subgroups if s.min_member] == [
        ("driver-replica-0", 1),
        ("workers-replica-0", 4),
        ("workers-replica-1", 4),
    ]

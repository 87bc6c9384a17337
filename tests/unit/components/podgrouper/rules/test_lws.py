"""The PodGroup KAI v0.17 makes for leaderWorkerSets (rules/lws.py): a group is a gang of its leader and workers, in
segments."""

from podgrouper_support import grouped, obj, pod, rule_grouping, spec_of, subgroup_of

from kai.components.podgrouper.rules import lws as rule

QUEUE = "kai.scheduler/queue"


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


def test_the_leader_worker_set_rule_makes_a_group_a_gang_of_its_size() -> None:
    grouping = rule_grouping(rule.leader_worker_set, "llm-0-1", *lws_pods(lws(3), 3))
    assert (grouping.name, grouping.min_member) == ("pg-llm-uid-llm-group-0", 3)

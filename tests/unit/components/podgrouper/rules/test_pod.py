"""The PodGroup KAI v0.17 makes for a pod without an owner is its own PodGroup (rules/pod.py)."""

from podgrouper_support import grouped, pod, podgroup_of, rule_grouping, spec_of

from kai.components.podgrouper.rules import pod as rule

QUEUE = "kai.scheduler/queue"


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


def test_the_pod_rule_groups_spark_pods_by_their_selector() -> None:
    labels = {"spark-app-name": "etl", "spark-app-selector": "spark-42"}
    assert rule_grouping(rule.pod, "driver", pod("driver", labels=labels)).name == "spark-42"
    assert rule_grouping(rule.pod, "solo", pod("solo")).name == "pg-solo-uid-solo"


def test_spark_driver_and_executors_share_the_podgroup_their_selector_names() -> None:
    spark = {"spark-app-name": "wordcount", "spark-app-selector": "spark-8f2e"}
    driver = pod("wordcount-driver", labels=spark)
    cluster = grouped(driver, pod("wordcount-exec-1", driver, labels=spark))
    assert spec_of(cluster, "wordcount-driver") == spec_of(cluster, "wordcount-exec-1")
    assert spec_of(cluster, "wordcount-exec-1") == (
        "spark-8f2e",
        {"minMember": 1, "queue": "default-queue", "priorityClassName": "train"},
    )

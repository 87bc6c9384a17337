"""The PodGroup KAI v0.17 makes for deployments (each pod its own inference PodGroup), StatefulSets and ReplicaSets
(rules/apps.py)."""

import pytest
from podgrouper_support import grouped, obj, pod, podgroup_of, rule_grouping, spec_of

from kai.components.podgrouper.rules import apps, default

QUEUE = "kai.scheduler/queue"


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


def test_the_deployment_rule_groups_each_pod_alone_as_inference_where_the_default_rule_groups_the_deployment() -> None:
    deployment = obj("apps/v1", "Deployment", "web", labels={QUEUE: "team"})
    replicas = obj("apps/v1", "ReplicaSet", "web-abc", owner=deployment)
    objects = (deployment, replicas, pod("web-abc-1", replicas))
    alone = rule_grouping(apps.deployment, "web-abc-1", *objects)
    assert (alone.name, alone.owner["kind"], alone.priority_class, alone.queue) == (
        "pg-web-abc-1-uid-web-abc-1",
        "Pod",
        "inference",
        "team",
    )
    whole = rule_grouping(default.default_rule, "web-abc-1", *objects)
    assert (whole.name, whole.owner["kind"], whole.priority_class) == ("pg-web-uid-web", "Deployment", "train")

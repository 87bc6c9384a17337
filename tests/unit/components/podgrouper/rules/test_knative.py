"""The PodGroup KAI v0.17 makes for knative Services (rules/knative.py): a revision is a gang of its min scale, unless
Knative gangs are off."""

from podgrouper_support import grouped, knative_objects, podgroup_of, rule_grouping, spec_of

from kai.components.podgrouper import Settings
from kai.components.podgrouper.rules import knative as rule

QUEUE = "kai.scheduler/queue"


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


def test_a_knative_revision_scaled_to_zero_is_a_podgroup_of_no_gang() -> None:
    """``min-scale: "0"`` gives ``minMember: 0`` (KAI #1989): every pod of the revision is elastic."""
    cluster = grouped(*knative_objects(min_scale="0"))
    assert podgroup_of(cluster, "hello-00001-a")["spec"]["minMember"] == 0


def test_the_knative_rule_makes_a_revision_a_gang_of_its_min_scale() -> None:
    objects = knative_objects("3")
    grouping = rule_grouping(rule.knative_service, objects[-1]["metadata"]["name"], *objects)
    assert grouping.min_member == 3

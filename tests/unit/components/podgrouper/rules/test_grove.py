"""The PodGroup KAI v0.17 makes for grove's PodGangs (rules/grove.py): the PodGroup with its cliques as sub-groups."""

from podgrouper_support import grouped, grove_objects, podgroup_of, rule_grouping, spec_of, subgroup_of

from kai.components.podgrouper.rules import grove as rule

QUEUE = "kai.scheduler/queue"


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


def test_a_podgangset_is_grouped_as_a_podcliqueset() -> None:
    objects = grove_objects()
    objects[0]["kind"] = "PodGangSet"
    objects[1]["metadata"]["ownerReferences"][0]["kind"] = "PodGangSet"  # type: ignore[index]
    cluster = grouped(*objects)
    assert spec_of(cluster, "pcs-0-frontend-a")[0] == "pg-pcs-0-uid-pcs-0"
    assert spec_of(cluster, "pcs-0-frontend-a")[1]["minMember"] == 3


def test_the_grove_rule_makes_the_podgang_the_podgroup_with_a_subgroup_per_clique() -> None:
    objects = grove_objects()
    grouping = rule_grouping(rule.grove, "pcs-0-frontend-a", *objects)
    assert grouping.name == "pg-pcs-0-uid-pcs-0"
    assert {s.name for s in grouping.subgroups} >= {"pcs-0-frontend", "pcs-0-backend"}

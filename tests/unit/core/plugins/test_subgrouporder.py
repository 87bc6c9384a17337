"""subgrouporder: the sub-groups of a podgroup below their gang go first; among satisfied ones, a required one before
an optional one (gang 0), then the one least filled (for optional ones: the one with the fewest pods placed)."""

from functools import cmp_to_key

from core_builders import T0, node, pod, podgroup
from plugin_support import opened

from kai.core.plugins.subgrouporder import SubGroupOrderPlugin

SUBGROUPS = [
    {"name": "short", "minMember": 2},  # 1 of 2 placed
    {"name": "half", "minMember": 2},  # 2 of 2 placed, ratio 1
    {"name": "over", "minMember": 1},  # 2 of 1 placed, ratio 2
    {"name": "optional-few", "minMember": 0},  # 1 placed
    {"name": "optional-many", "minMember": 0},  # 2 placed
]
PLACED = {"short": 1, "half": 2, "over": 2, "optional-few": 1, "optional-many": 2}


def _session():  # type: ignore[no-untyped-def]
    pods = [
        ("Pod", pod(f"{name}-{i}", "job", node_name="n1", subgroup=name))
        for name, count in PLACED.items()
        for i in range(count)
    ]
    return opened(
        SubGroupOrderPlugin(),
        ("Node", node("n1", 16)),
        ("PodGroup", podgroup("job", "q", T0, subGroups=SUBGROUPS)),
        *pods,
    )


def test_members_below_their_gang_first_then_required_ones_least_filled_first_then_optional_ones() -> None:
    ssn = _session()
    job = ssn.jobs["default/job"]
    (hook,) = ssn.subgroup_order_fns
    members = {member.name: member for member in job.root.members()}
    assert hook(members["short"], members["half"]) == -1
    assert hook(members["half"], members["over"]) == -1
    assert hook(members["over"], members["optional-few"]) == -1
    assert hook(members["optional-few"], members["optional-many"]) == -1
    assert hook(members["half"], members["half"]) == 0
    ordered = sorted(reversed(members.values()), key=cmp_to_key(hook))
    assert [member.name for member in ordered] == ["short", "half", "over", "optional-few", "optional-many"]

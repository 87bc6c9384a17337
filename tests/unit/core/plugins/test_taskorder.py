"""taskorder: pods labelled kai.scheduler/task-priority go first, the higher value first; KAI's quirks are kept (a
value that is not a number sorts after any number)."""

import pytest
from core_builders import T0, pod, podgroup
from plugin_support import labelled, opened, task

from kai.core.plugins.taskorder import TaskOrderPlugin

PRIORITY = "kai.scheduler/task-priority"


def _session(left: str | None, right: str | None):  # type: ignore[no-untyped-def]
    pods = [pod("left", "job"), pod("right", "job")]
    for one, value in zip(pods, (left, right), strict=True):
        if value is not None:
            labelled(one, {PRIORITY: value})
    ssn = opened(TaskOrderPlugin(), ("PodGroup", podgroup("job", "q", T0, minMember=2)), *(("Pod", p) for p in pods))
    (hook,) = ssn.task_order_fns
    return hook(task(ssn, "left"), task(ssn, "right"))


@pytest.mark.parametrize(
    ("left", "right", "order"),
    [
        ("10", "2", -1),  # higher first
        ("2", "10", 1),
        ("5", "5", 0),
        ("1", None, -1),  # labelled before unlabelled
        (None, "1", 1),
        (None, None, 0),
        ("high", "1", 1),  # not a number: after
        ("1", "high", -1),
    ],
)
def test_labelled_first_and_the_higher_priority_first(left: str | None, right: str | None, order: int) -> None:
    assert _session(left, right) == order

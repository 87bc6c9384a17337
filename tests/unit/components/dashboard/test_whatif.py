"""The page's what-if form read as the command line reads its flags: one change a line or a change file, the
clock both runs share, and every mistake refused with the CLI's words before any cycle."""

import pytest

from kai.components.dashboard.whatif import WhatIfRequest
from kai.components.sim.whatif.changes import ChangeError, NodeAddition, QueueChange


def test_changes_one_a_line_or_as_a_change_file() -> None:
    request = WhatIfRequest(
        {
            "changes": "queue.a.gpu.quota=8\n\n# a comment\nadd-nodes 2:like=n0\nremove-node n1\nplacement.gpu=spread",
            "changeFile": "queues: {b: {gpu: {limit: 4}}}\nnodes: {remove: [n2]}",
            "duration": "1h",
            "period": "7m",
        }
    )
    assert request.changes.queues == [QueueChange("b", ("gpu", "limit"), 4), QueueChange("a", ("gpu", "quota"), 8)]
    assert request.changes.add_nodes == [NodeAddition("n0", 2)]
    assert request.changes.remove_nodes == ["n2", "n1"] and request.changes.placement == {"gpu": "spread"}
    assert (request.cycles, request.period_s, request.default_run_time_s) == (9, 420, 3600)
    assert WhatIfRequest({"changes": "queue.a.gpu.quota=8", "defaultRunTime": "none"}).default_run_time_s is None
    assert WhatIfRequest({"changes": "queue.a.gpu.quota=8"}).cycles == 120  # 2h of one cycle a minute


@pytest.mark.parametrize(
    ("form", "says"),
    [
        ({}, "no change given"),
        ({"changes": "queue.a.gpu.quota"}, "--set queue.a.gpu.quota: expected FIELD=VALUE"),
        ({"changes": "add-nodes two:like=n0"}, "--add-nodes two:like=n0: expected N:like=<node>"),
        ({"changeFile": "queues: [a]"}, "the change file: field queues: "),
        ({"changeFile": "queues: {a: {gpu: {quota: 4}}"}, "the change file: not valid YAML"),
        ({"changes": "queue.a.gpu.quota=8", "duration": "soon"}, "duration"),
        ({"changes": "queue.a.gpu.quota=8", "duration": "1m", "period": "5m"}, "must be at least one period"),
    ],
)
def test_a_form_that_cannot_be_run_is_refused_with_the_reason(form: dict[str, str], says: str) -> None:
    with pytest.raises(ChangeError, match=says.replace("[", r"\[").replace("(", r"\(")):
        WhatIfRequest(form)

"""The one view every insight command shows: the queue tree's numbers, borrowing and counts, the waiting podgroups
in the real job order with their reasons and positions, and the queues kai cannot use, as rows."""

from pathlib import Path

import pytest
import yaml
from insight_support import NOW, node_obj, pod_obj, podgroup_obj, queue_obj, team_scenario
from repo import REPO

from kai.components.insight.build import build_view
from kai.components.insight.inspect import Moment, inspect
from kai.components.insight.queues import NoQueues, subtree
from kai.components.insight.view import Amounts, View, view_json
from kai.components.sim.scenario import load_scenario


def view_of(path: Path, moment: Moment = Moment.AFTER) -> View:
    return build_view(inspect(load_scenario(path), moment))


def test_the_queue_tree_after_the_cycle_has_its_numbers_counts_and_borrowing(tmp_path: Path) -> None:
    view = view_of(team_scenario(tmp_path))
    assert view.moment == "after cycle 1"
    rows = {row.queue: row for row in view.queues}
    assert [row.queue for row in view.queues] == ["dept", "a", "b", "c"]
    assert [(row.depth, row.parent) for row in view.queues] == [(0, ""), (1, "dept"), (1, "dept"), (1, "dept")]
    # b's small job was placed by cycle 1 and is bound: b holds 1 of its 2, c holds 3 of its 1
    assert rows["c"].resources["gpu"] == Amounts(
        quota=1, limit=-1, weight=1, deserved=1, fair_share=3, allocated=3, requested=3, usage=None,
        borrows=(("b", 1),), unassigned=1,
    )  # fmt: skip
    assert rows["b"].resources["gpu"].lends == (("c", 1),)
    assert (rows["a"].running, rows["a"].pending, rows["a"].in_line) == (1, 1, 1)
    assert (rows["b"].running, rows["b"].pending, rows["b"].in_line) == (1, 1, 0)  # later: gated, not in line
    assert (rows["dept"].running, rows["dept"].pending, rows["dept"].pending_pods) == (3, 2, 3)
    assert rows["a"].oldest_pending == rows["dept"].oldest_pending == 1735689660.0
    assert [(row.podgroup, row.state, row.reason and row.reason.kind.value) for row in view.pending] == [
        ("team/big", "waiting", "QueueLimit"),
        ("team/later", "waiting", "SchedulingGate"),
    ]


def test_as_given_the_numbers_are_the_inputs_and_the_cycle_only_says_what_it_would_do(tmp_path: Path) -> None:
    view = view_of(team_scenario(tmp_path), Moment.GIVEN)
    assert view.moment == "as given"
    rows = {row.queue: row for row in view.queues}
    assert rows["b"].resources["gpu"].allocated == 0 and rows["b"].pending == 2
    small = next(row for row in view.pending if row.podgroup == "team/small")
    assert small.state == "starting" and small.position.in_queue is not None and small.position.in_queue.place == 1


def test_positions_are_per_level_and_the_order_key_names_each_level(tmp_path: Path) -> None:
    (big,) = [row for row in view_of(team_scenario(tmp_path)).pending if row.position.in_line]
    assert big.position.in_queue is not None and big.position.cluster is not None
    assert (big.position.queue, big.position.in_queue.place, big.position.cluster.place) == ("a", 1, 1)
    assert [(level.queue, level.place, level.of, level.under) for level in big.position.levels] == [
        ("a", 1, 3, "dept"),
        ("dept", 1, 1, ""),
    ]
    assert big.order_key is not None
    assert [terms.queue for terms in big.order_key.queues] == ["a", "dept"]
    assert big.order_key.priority == 50 and big.order_key.created == 1735689660.0


def test_queues_kai_cannot_use_are_rows_saying_why(tmp_path: Path) -> None:
    """A queue with an unreadable quota and one that does not exist but is named by a waiting podgroup are rows of
    the tree (with the podgroups waiting in them), not silently missing."""
    broken = queue_obj("vision", "dept")
    broken["spec"]["resources"]["gpu"]["quota"] = "lots"
    objects = [
        queue_obj("dept"),
        queue_obj("llm", "dept"),
        broken,
        node_obj("n0", 8),
        podgroup_obj("nb", "vison", 1),
        pod_obj("nb-0", "nb", 1),
        podgroup_obj("train", "vision", 1),
        pod_obj("train-0", "train", 1),
    ]
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump({"name": "typos", "now": NOW, "objects": objects}))
    view = view_of(path)
    rows = {row.queue: row for row in view.queues}
    assert [(row.queue, row.depth) for row in view.queues] == [("dept", 0), ("llm", 1), ("vision", 1), ("vison", 0)]
    assert rows["vision"].problem == "field spec.resources.gpu.quota: got 'lots'; expected a number"
    assert rows["vision"].pending == 1 and rows["vision"].resources == {}
    assert rows["vison"].problem == "does not exist; did you mean vision?" and rows["vison"].pending == 1
    assert subtree(list(view.queues), "dept") == {"dept", "llm", "vision"}
    try:
        subtree(list(view.queues), "lm")
    except NoQueues as error:
        assert str(error) == "no queue lm; did you mean llm?"
    else:
        raise AssertionError("an unknown queue is an error")
    document = view_json(view)
    assert document["queues"][2]["problem"].startswith("field spec.resources.gpu.quota")
    assert {row["podgroup"] for row in document["pending"]} == {"team/nb", "team/train"}


def test_recent_usage_is_the_time_based_fair_share_the_next_cycle_reads() -> None:
    """With usageDBConfig, each queue shows its recent usage (as sshare shows its decayed usage); without, none."""
    scenario = load_scenario(REPO / "examples" / "two-queue-oscillation.yaml", cycles=12)
    rows = {row.queue: row for row in build_view(inspect(scenario)).queues}
    usage = {name: row.resources["gpu"].usage for name, row in rows.items()}
    assert usage["team-a"] is not None and usage["team-b"] is not None and usage["team-a"] > 0
    assert usage["training-department"] == pytest.approx(usage["team-a"] + usage["team-b"], abs=0.002)

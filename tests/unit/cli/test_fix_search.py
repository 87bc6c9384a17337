"""The fix search the commands hand the view: none without a budget, none on a running clock (the proof starts at
the input's start, the view is of a later moment), one fix per row for a listing, one deadline for every file."""

import time
from pathlib import Path

import yaml
from insight_support import NOW, node_obj, pod_obj, podgroup_obj, queue_obj

from kai.cli.fix_search import LISTED_FIXES, deadline, fix_search
from kai.components.insight.inspect import Inspection, inspect
from kai.components.sim.scenario import load_scenario


def inspected(tmp_path: Path, clock: dict[str, str] | None = None) -> Inspection:
    objects = [queue_obj("a"), node_obj("n0", 2), podgroup_obj("first", "a", 1), pod_obj("first-0", "first", 2, "n0")]
    objects += [podgroup_obj("big", "a", 1), pod_obj("big-0", "big", 2)]
    scenario = {"name": "one", "now": NOW, "objects": objects, **({"clock": clock} if clock else {})}
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump(scenario))
    return inspect(load_scenario(path))


def test_no_search_without_a_budget_or_on_a_running_clock(tmp_path: Path) -> None:
    ins = inspected(tmp_path)
    assert fix_search(ins, 0, 12) is None and fix_search(ins, 10, 0) is None
    assert fix_search(inspected(tmp_path, {"period": "1m", "duration": "3m"}), 10, 12) is None


def test_a_listing_stops_at_the_first_fix_and_files_share_one_deadline(tmp_path: Path) -> None:
    ins = inspected(tmp_path)
    listed = fix_search(ins, 10, 12, listing=True)
    assert listed is not None
    found = listed("team/big", ins.session.result.unschedulable["team/big"].reasons)
    assert found.budget.fixes == LISTED_FIXES and [fix.text for fix in found.proven] == ["add 1 node like n0, 2 GPUs"]
    past = fix_search(ins, 10, 12, listing=True, deadline=deadline(10) - 10)  # an earlier file took the budget
    assert past is not None
    assert past("team/big", ins.session.result.unschedulable["team/big"].reasons).unreached
    assert deadline(10) > time.monotonic() + 9

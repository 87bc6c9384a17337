"""The queue tree and the pending order `kai queues` shows: deserved, allocated, borrowing and lending, and the
place of each pending podgroup in the real job order."""

import json
from pathlib import Path

from click.testing import CliRunner
from insight_support import run, team_scenario

from kai.cli.main import main
from kai.components.insight.inspect import inspect
from kai.components.insight.queues import pending, queue_tree
from kai.components.sim.scenario import load_scenario


def test_queue_tree_numbers_borrowing_and_pending_order(tmp_path: Path) -> None:
    scenario = team_scenario(tmp_path)
    inspection = inspect(load_scenario(scenario))
    rows = {row["queue"]: row for row in queue_tree(inspection)}
    assert [row["queue"] for row in queue_tree(inspection)] == ["dept", "a", "b", "c"]
    c = rows["c"]["resources"]["gpu"]
    assert (c["quota"], c["deserved"], c["allocated"], c["requested"]) == (1, 1, 3, 3)
    assert c["borrows"] == [{"from": "b", "amount": 2}] and c["unassigned"] == 0
    assert rows["b"]["resources"]["gpu"]["lends"] == [{"to": "c", "amount": 2}]
    assert rows["a"]["resources"]["gpu"]["limit"] == 4 and rows["dept"]["depth"] == 0 and rows["b"]["depth"] == 1
    waiting = pending(inspection, "dept")
    assert [(row["podgroup"], row["place"], row["state"]) for row in waiting] == [
        ("team/small", 1, "starting"),  # queue b is below its quota: it comes first
        ("team/big", 2, "waiting"),
        ("team/later", None, "waiting"),
    ]
    text = run("queues", "b", "-f", str(scenario))
    assert "├ a" in text and "└ c" in text and "borrows 2 from b" in text and "lends 2 to c" in text
    assert "Pending in b" in text and "team/small" in text and "team/later" in text
    shown = json.loads(run("queues", "-f", str(scenario), "-o", "json", "--resource", "all"))
    assert shown["source"] == "team cluster" and "pending" not in shown
    result = CliRunner().invoke(main, ["queues", "nowhere", "-f", str(scenario)])
    assert result.exit_code == 1 and "queue nowhere does not exist" in result.output

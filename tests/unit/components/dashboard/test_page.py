"""The page's document is the one view: the queue tree, the summary and the waiting podgroups in order carry the
numbers and the proven fix ``kai queues -o json`` gives for the same file, the pods are counted but not listed, and
a reason keeps its first causes only."""

import json
from dataclasses import replace
from pathlib import Path

from click.testing import CliRunner
from dashboard_support import MARKUP, cluster_file, file_board

from kai.cli.fix_search import fix_search
from kai.cli.main import main
from kai.components.dashboard.page import CAUSES, view_document
from kai.components.insight.build import build_view
from kai.components.insight.fixes.found import DEFAULT_CANDIDATES, DEFAULT_SECONDS
from kai.components.insight.inspect import inspect
from kai.components.sim.scenario import load_scenario
from kai.core.state.reason_text import as_json
from kai.core.state.reasons import Reason, ReasonKind


def test_the_page_shows_the_numbers_and_the_fixes_kai_queues_shows(tmp_path: Path) -> None:
    path = cluster_file(tmp_path, cycles=None)  # no clock: the fix search runs, as for a snapshot
    board = file_board(path, lambda ins: fix_search(ins, DEFAULT_SECONDS, DEFAULT_CANDIDATES, listing=True))
    board.refresh()
    page = board.current.document["view"]
    result = CliRunner().invoke(main, ["queues", "-f", str(path), "--pending", "-o", "json"])
    assert result.exit_code == 0, result.output
    cli = json.loads(result.output)
    assert [{k: v for k, v in q.items() if k != "displayName"} for q in page["queues"]] == cli["queues"]
    assert page["summary"] == cli["summary"] and page["summary"]["pods"] == len(cli["pods"]) == 4
    assert "pods" not in page
    assert [(r["podgroup"], r["position"], r["waitingSince"], r["estimatedStart"]) for r in page["pending"]] == [
        (r["podgroup"], r["position"], r["waitingSince"], r["estimatedStart"]) for r in cli["pending"]
    ]
    (big,) = page["pending"]
    (cli_big,) = cli["pending"]
    assert big["reason"]["text"] == cli_big["reason"]["text"]
    assert big["fix"] == f"{cli_big['fixes']['proven'][0]['text']} (proven)" and big["proven"] is True
    assert big["fixSearch"] == cli_big["fixes"]["summary"]
    assert [q["displayName"] for q in page["queues"]] == ["dept", "a", MARKUP]


def test_a_reason_keeps_its_first_causes_and_counts_the_rest(tmp_path: Path) -> None:
    ins = inspect(load_scenario(cluster_file(tmp_path)))
    view = build_view(ins)
    (row,) = view.pending
    assert row.reason is not None
    causes = tuple(Reason(ReasonKind.GANG_INCOMPLETE, {"pod": f"team/big-{n}"}) for n in range(CAUSES + 3))
    many = replace(view, pending=(replace(row, reasons=(replace(row.reason, children=causes),)),))
    (shown,) = view_document(many, ins)["pending"]
    assert len(shown["reason"]["causes"]) == CAUSES and shown["reason"]["moreCauses"] == 3
    assert shown["reason"]["causes"][0] == as_json(causes[0], ins.now)["text"]

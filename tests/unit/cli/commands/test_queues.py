"""`kai queues` on a scenario file, as a user runs it: pending podgroups named by their workload, and --watch."""

import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from insight_support import run, team_scenario, workloads_file
from research_cluster import copy_with, dash_f, kai, kai_json

from kai.cli.main import main


def test_queues_watch_shows_each_look_and_stops_on_ctrl_c(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`kai queues --watch -f FILE` reads the file again at every refresh: a quota raised between two looks shows,
    and Ctrl-C ends it quietly (exit 0)."""
    scenario = team_scenario(tmp_path)
    looks: list[float] = []

    def between_looks(seconds: float) -> None:
        looks.append(seconds)
        if len(looks) == 2:
            raise KeyboardInterrupt
        document = yaml.safe_load(scenario.read_text())
        for obj in document["objects"]:
            if obj["kind"] == "Queue" and obj["metadata"]["name"] == "c":
                obj["spec"]["resources"]["gpu"]["quota"] = 5
        scenario.write_text(yaml.safe_dump(document))

    monkeypatch.setattr("kai.cli.commands.queues.time.sleep", between_looks)
    monkeypatch.setenv("COLUMNS", "200")
    result = CliRunner().invoke(main, ["queues", "--watch", "--interval", "1s", "-f", str(scenario)])
    assert result.exit_code == 0, result.output
    assert looks == [1.0, 1.0]
    rows = [line for line in result.output.splitlines() if "└ c" in line]
    assert rows, result.output
    assert rows[-1].split()[2] == "5", rows[-1]  # the quota column (a terminal shows each look in place)


def test_pending_podgroups_in_a_queue_name_their_workload(tmp_path: Path) -> None:
    report = json.loads(run("queues", "a", "-f", str(workloads_file(tmp_path)), "-o", "json"))
    assert [row["workload"] for row in report["pending"]] == ["PyTorchJob/bert"]  # the Deployment's pods run
    text = run("queues", "a", "-f", str(workloads_file(tmp_path)))
    assert "PyTorchJob bert" in text


def test_a_queue_kai_cannot_use_is_shown_with_why(tmp_path: Path) -> None:
    """A Queue with `quota: lots` made kai queues report nothing of it, then say it "does not exist (or cannot be
    used)"; now it is a row of the tree, marked, with the field and what is allowed."""
    files = copy_with(tmp_path, "quota: 16, limit: 24", "quota: lots, limit: 24")
    args = [arg for path in files for arg in ("-f", str(path))]
    text = kai("queues", "team-vision", *args)
    assert "✗ team-vision" in text
    assert "✗ team-vision: kai cannot use it: field spec.resources.gpu.quota: got 'lots'; expected a number" in text
    assert "Queue team-vision spec.resources.gpu.quota got 'lots'; expected a number" in " ".join(text.split())


def test_an_unknown_queue_gets_a_did_you_mean() -> None:
    """A queue no object names is an error naming the nearest one; one a waiting pod names is shown with it."""
    result = CliRunner().invoke(main, ["queues", "team-visio", *dash_f()])
    assert result.exit_code == 1
    assert "Error: no queue team-visio; did you mean team-vision? in nodes + queues + workloads" in result.output
    text = kai("queues", "team-visoin", *dash_f())
    assert "✗ team-visoin: kai cannot use it: does not exist; did you mean team-vision?" in text
    (row,) = kai_json("queues", "team-visoin", *dash_f())["pending"]
    assert row["reason"]["text"] == "queue team-visoin does not exist (did you mean team-vision?)"
    assert row["needs"]["text"] == "create queue team-visoin, or name queue team-vision instead"

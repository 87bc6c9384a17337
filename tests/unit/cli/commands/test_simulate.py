"""`kai simulate` as a user runs it: --check prints KAI-style check lines and exits non-zero on a failure; the
cluster after the last cycle fits the terminal, starts with a summary line, folds long lists and filters."""

import json
from pathlib import Path
from typing import Any

import yaml
from click.testing import CliRunner
from repo import REPO
from research_cluster import FILES, RESEARCH, dash_f, kai
from sim_support import QUEUE, node

from kai.cli.main import main

SCENARIOS = REPO / "tests" / "conformance" / "kai-v0.17"


def test_check_output_and_exit_code(tmp_path: Path) -> None:
    good = SCENARIOS / "allocate" / "allocateGang_test" / "000-allocate-train-gang-job.yaml"
    broken = tmp_path / "broken.yaml"
    broken.write_text("objects: 7\n")
    result = CliRunner().invoke(main, ["simulate", str(good), str(broken), "--check"])
    lines = result.output.splitlines()
    assert lines[0] == f"PASS {good}"
    assert lines[1] == f"FAIL {broken}"
    assert "field objects" in lines[2] and lines[2].startswith("    ")
    assert lines[-1] == "1 passed, 1 failed"
    assert result.exit_code == 1


def test_a_scenario_without_expectations_has_nothing_to_pass(tmp_path: Path) -> None:
    """--check printed PASS for a file with no expect block: nothing was checked."""
    result = CliRunner().invoke(main, ["simulate", *map(str, FILES), "--check"])
    assert result.output.splitlines()[0] == f"NONE {FILES[0]}"
    assert result.output.splitlines()[-1] == "0 passed, 0 failed, 1 without expectations"
    assert result.exit_code == 1


def test_a_file_that_cannot_be_read_is_told_before_any_table(tmp_path: Path) -> None:
    """The tables of the good files came first, the error of a later file last, after pages of output."""
    broken = tmp_path / "broken.yaml"
    broken.write_text("objects: [\n")
    result = CliRunner().invoke(main, ["simulate", str(REPO / "examples" / "department.yaml"), str(broken)])
    lines = result.output.splitlines()
    assert lines[0].startswith(f"error: {broken}") and "Pods" in [line.strip() for line in lines[3:]]
    assert result.exit_code == 1


def test_a_pod_of_a_misspelt_scheduler_is_warned_of(tmp_path: Path) -> None:
    """A pod with kai's queue label and schedulerName kai-schedular was dropped without a word."""
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "typo", "namespace": "team", "labels": {"kai.scheduler/queue": "team"}},
        "spec": {
            "schedulerName": "kai-schedular",
            "containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": "1"}}}],
        },
    }
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump_all([QUEUE, node("n0", 8), pod]))
    view = json.loads(CliRunner().invoke(main, ["simulate", str(path), "-o", "json"]).output)[0]["view"]
    told = "kai-schedular is not kai-scheduler: kai leaves this pod to that scheduler (did you mean kai-scheduler?)"
    assert [{**problem, "message": ""} for problem in view["problems"]] == [
        {
            "severity": "warning",
            "kind": "Pod",
            "name": "team/typo",
            "field": "spec.schedulerName",
            "problem": told,
            "message": "",
        }
    ]
    assert view["summary"]["otherSchedulers"] == 1
    text = CliRunner().invoke(main, ["simulate", str(path)]).output
    assert "1 pod of other schedulers" in text.splitlines()[1] and "did you mean kai-scheduler?" in text


def test_the_output_fits_a_100_column_terminal() -> None:
    """Tables were 200 columns wide whatever the terminal (explain's 160): every line wrapped at 100."""
    for args in (
        ["simulate", str(RESEARCH)],
        ["queues", "team-llm", *dash_f()],
        ["explain", "pytorchjob", "llama-finetune", "-n", "llm", *dash_f()],
        ["simulate", str(RESEARCH), "--duration", "1h", "--set", "queue.team-llm.gpu.quota=32"],
    ):
        lines = kai(*args, width=100).splitlines()
        assert max(len(line) for line in lines) <= 100, args
        assert max(len(line) for line in kai(*args, "--width", "80").splitlines()) <= 80, args


NO_FIXES = ("--fix-budget", "0")


def many_jobs(tmp_path: Path, count: int) -> Path:
    """``count`` one-GPU pods in two namespaces on 8 nodes of 8 GPUs: 64 run, the rest wait."""
    objects: list[dict[str, Any]] = [QUEUE, *(node(f"n{i}", 8) for i in range(8))]
    for i in range(count):
        meta = {"name": f"job-{i}", "namespace": f"ns-{i % 2}", "labels": {"kai.scheduler/queue": "team"}}
        resources = {"limits": {"nvidia.com/gpu": "1"}}
        spec = {"schedulerName": "kai-scheduler", "containers": [{"name": "c", "resources": resources}]}
        objects.append({"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec})
    path = tmp_path / "many.yaml"
    path.write_text(yaml.safe_dump_all(objects))
    return path


def test_many_pods_start_with_a_summary_and_fold_into_counts(tmp_path: Path) -> None:
    """5,000 pods printed 6,016 lines with no summary and no filter. (The fix search is off here: it has its own
    tests, and would take its budget each time.)"""
    path = many_jobs(tmp_path, 300)
    lines = kai("simulate", str(path), *NO_FIXES).splitlines()
    assert lines[1] == "300 pods: 64 placed, 236 waiting (236 NodeFit)"
    assert len(lines) < 80  # 30 podgroups of two lines (podgroup, workload), then counts
    assert any(line.startswith("… and 270 more podgroups (") for line in lines)
    assert len(kai("simulate", str(path), "-o", "wide", *NO_FIXES).splitlines()) > 300
    waiting = kai("simulate", str(path), "--pending", "--namespace", "ns-1", *NO_FIXES).splitlines()
    assert waiting[1] == "Only namespace ns-1, pending yes: 118 pods: 0 placed, 118 waiting (118 NodeFit)"
    only = kai("simulate", str(path), "--queue", "team", *NO_FIXES).splitlines()
    assert only[1].startswith("Only queue team: 300 pods")


def test_the_fix_search_says_what_its_budget_did_not_reach(tmp_path: Path) -> None:
    """Each waiting podgroup's fix is searched first in line first; those the budget did not reach are counted."""
    text = kai("simulate", str(many_jobs(tmp_path, 100)), "--fix-budget", "0.001")
    assert "36 waiting podgroups not searched: the --fix-budget ran out before them" in text
    assert "(proven)" not in text


def test_make_run_shows_the_cluster_after_the_cycle_with_a_waiting_pod_and_why() -> None:
    """make run ended with every pod Binding, no summary and no waiting pod to show why pods wait."""
    assert "kai simulate examples/research" in (REPO / "Makefile").read_text()
    lines = kai("simulate", str(RESEARCH)).splitlines()
    assert lines[1].startswith("14 pods: 8 placed, 6 waiting (") and "Binding" not in "\n".join(lines)
    assert any("TooLargeForAnyNode: pod llm/huge-" in line for line in lines)
    fixes = lines.index(next(line for line in lines if line.startswith("What would start them")))
    assert [" ".join(line.split()) for line in lines[fixes + 3 : fixes + 6]] == [
        "Job huge (llm) needs: request at most 8 GPUs (the largest node), or add a larger node",
        "PyTorchJob llama-finetune (llm) add 2 nodes like dgx-01, 8 GPUs each (proven)",
        "Pod alice-notebook (vision) needs: create queue team-visoin, or name queue team-vision instead",
    ]  # as kai queues' fix column and kai explain say them


def test_files_may_be_given_with_f_as_explain_and_queues_take_them() -> None:
    given = kai("simulate", *dash_f(), "--fix-budget", "0", width=100)
    assert given.splitlines()[1].startswith("14 pods: 8 placed, 6 waiting")
    nothing = CliRunner().invoke(main, ["simulate"])
    assert nothing.exit_code == 2 and "give the scenario files or folders" in nothing.output

"""`kai explain` on a scenario file, as a user runs it: what it prints and its JSON."""

import json
import logging
from pathlib import Path
from typing import Any

import yaml
from click.testing import CliRunner
from insight_support import (
    NOW,
    explain_json,
    node_obj,
    pod_obj,
    podgroup_obj,
    queue_obj,
    run,
    team_scenario,
    workloads_file,
)
from research_cluster import FILES, RESEARCH, dash_f, kai

from kai.cli.main import main


def test_a_gang_over_its_queue_limit(tmp_path: Path) -> None:
    scenario = team_scenario(tmp_path)
    told = explain_json(scenario, "podgroup", "big")
    assert told["state"] == "waiting" and told["moment"] == "after cycle 1"
    assert told["kai"]["reason"] == "OverLimit"
    assert [r["kind"] for r in told["reasons"]] == ["QueueLimit"]
    assert told["needs"] is None
    fixes = told["fixes"]
    assert [fix["text"] for fix in fixes["proven"]] == [
        "raise the GPU limit of queue a from 4 to 6 GPUs; move team/held-0 off node n0 (evicted: back to pending)",
        "raise the GPU limit of queue a from 4 to 6 GPUs; add 1 node like n0, 8 GPUs",
    ]  # the limit alone leaves it without room: queue c, above its quota, may give some up
    assert fixes["proven"][0]["changes"] == {"queues": {"a": {"gpu": {"limit": 6}}}, "pods": {"evict": ["team/held-0"]}}
    assert fixes["proven"][0]["cost"] == {"gpus": 2.0, "podsDisturbed": 1, "objects": 2}
    assert [tried["text"] for tried in fixes["tried"]] == ["raise the GPU limit of queue a from 4 to 6 GPUs"]
    assert told["position"] == {
        "inLine": True,
        "inQueue": {"queue": "a", "place": 1, "of": 1},
        "queues": [
            {"queue": "a", "place": 1, "of": 3, "under": "dept"},  # b's small job was placed in cycle 1
            {"queue": "dept", "place": 1, "of": 1, "under": ""},
        ],
        "cluster": {"place": 1, "of": 1},
    }
    assert [level["queue"] for level in told["orderKey"]["queues"]] == ["a", "dept"]
    assert told["orderKey"]["priority"] == 50 and told["waitingSince"] == 1735689660.0  # its pods' creation
    assert told["estimatedStart"]["at"] is None
    assert told["lastCycles"]["cycles"] == [
        {
            "cycle": 1,
            "at": 1735690200.0,
            "did": "waited",
            "reason": "OverLimit",
            "kind": "QueueLimit",
            "text": "queue a would exceed its GPU limit: limit 4 GPUs, 2 allocated, 4 requested",
        }
    ]
    text = run("explain", "podgroup", "team/big", "-f", str(scenario))
    for line in (
        "PodGroup team/big  queue a · 2 pods (minMember 2) · priority 50 · preemptible",
        "State: waiting",
        "QueueLimit  queue a would exceed its GPU limit: limit 4 GPUs, 2 allocated, 4 requested",
        "team cluster — after cycle 1",
        "KAI: OverLimit: ",
        "Fixes: 2 proven: with each, a what-if run of this input starts it in the next cycles",
        "  2. raise the GPU limit of queue a from 4 to 6 GPUs; add 1 node like n0, 8 GPUs (starts in cycle 1)",
        "In line: 1st of 1 in queue a · a 1st of 3 under dept · dept 1st of 1 at the top · 1st of 1 in the cluster",
        "Order key",
        "cycle 1 (00:10:00Z (now)): waited: QueueLimit: (the reason above)",
    ):
        assert line in text, f"{line!r} not in:\n{text}"
    assert "OverLimit: OverLimit" not in text  # KAI's reason, said once


def test_a_job_the_cycle_placed_runs_after_it(tmp_path: Path) -> None:
    """A file is shown after its cycles, the binds done (as kai simulate shows it): the job cycle 1 placed runs."""
    scenario = team_scenario(tmp_path)
    told = explain_json(scenario, "podgroup", "small")
    assert told["state"] == "running" and told["reasons"] == [] and told["needs"] is None and told["fixes"] is None
    assert told["pods"] == [
        {"name": "team/small-0", "status": "Running", "node": "n0", "nextCycle": "placed on n0", "reason": None}
    ]
    assert told["estimatedStart"] == {"at": None, "basis": ""} and told["waitingSince"] is None
    assert told["lastCycles"]["cycles"][0]["did"] == "placed"


def test_a_gated_job_is_not_in_line_and_names_its_gates(tmp_path: Path) -> None:
    scenario = team_scenario(tmp_path)
    told = explain_json(scenario, "podgroup", "later")
    assert told["position"] == {"inLine": False, "why": "it is not ready: too few of its pods exist or they are gated"}
    assert told["reasons"][0]["kind"] == "SchedulingGate"
    assert told["needs"]["text"] == "remove the scheduling gates of team/later-0"
    assert told["fixes"]["proven"] == [] and told["fixes"]["summary"].startswith("none searched: no change")
    assert "Needs: remove the scheduling gates of team/later-0" in run(
        "explain", "podgroup", "later", "-n", "team", "-f", str(scenario)
    )


def test_a_pod_is_explained_with_its_podgroup(tmp_path: Path) -> None:
    scenario = team_scenario(tmp_path)
    told = explain_json(scenario, "pod", "big-1")
    assert told["podgroup"] == "team/big" and len(told["explanation"]["fixes"]["proven"]) == 2
    text = run("explain", "pod", "big-1", "-n", "team", "-f", str(scenario))
    assert "Pod team/big-1 of podgroup team/big" in text and "  1. raise the GPU limit of queue a from 4" in text


def test_objects_kai_cannot_use_or_does_not_schedule(tmp_path: Path) -> None:
    scenario = team_scenario(tmp_path)
    told = explain_json(scenario, "podgroup", "broken")
    assert told["state"] == "invalid" and told["reasons"][0]["kind"] == "InvalidObject"
    assert told["needs"]["text"].startswith("fix PodGroup team/broken, field spec.minMember:")
    other = explain_json(scenario, "pod", "other")
    assert other["summary"] == "pod team/other is scheduled by default-scheduler, not by kai"
    result = CliRunner().invoke(main, ["explain", "podgroup", "nowhere", "-n", "team", "-f", str(scenario)])
    assert result.exit_code == 1 and "Error: podgroup team/nowhere not found in team cluster" in result.output


def test_a_workload_is_explained_by_its_kind_and_name(tmp_path: Path) -> None:
    path = workloads_file(tmp_path)
    told = explain_json(path, "pytorchjobs", "bert")
    assert (told["kind"], told["name"]) == ("pytorchjobs", "team/bert")
    (podgroup,) = told["podgroups"]
    assert podgroup["name"].startswith("team/pg-bert-") and podgroup["minMember"] == 4
    assert podgroup["state"] == "waiting"
    assert [fix["text"] for fix in podgroup["fixes"]["proven"]] == ["add 1 node like n0, 3 GPUs"]
    deployment = explain_json(path, "deploy", "serve")
    assert len(deployment["podgroups"]) == 2
    assert {p["state"] for p in deployment["podgroups"]} == {"running"}
    text = run("explain", "PyTorchJob", "team/bert", "-f", str(path))
    assert "\nPyTorchJob team/bert: 1 podgroup\n" in text and "minMember 4" in text


def test_a_workload_without_pods_is_an_error_that_says_why(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["explain", "job", "bert", "-n", "team", "-f", str(workloads_file(tmp_path))])
    assert result.exit_code == 1
    assert "job team/bert: no podgroup or pod of it in workloads" in result.output


def test_a_podgroup_that_used_up_its_scheduling_backoff_is_explained_as_left_out(tmp_path: Path) -> None:
    """Tried once in its pool (``schedulingBackoff: 1``) and found unschedulable there: kai leaves it out, and says
    so of it and of its pods instead of not knowing them."""
    once = podgroup_obj("once", "a", 1, schedulingBackoff=1)
    once["status"] = {
        "schedulingConditions": [{"type": "UnschedulableOnNodePool", "nodePool": "default", "transitionID": "1"}]
    }
    objects = [queue_obj("a"), node_obj("n0", 8), once, pod_obj("once-0", "once", 16)]
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump({"name": "team cluster", "now": NOW, "objects": objects}))
    told = explain_json(path, "podgroup", "once")
    assert told["state"] == "left out" and "schedulingBackoff is used up" in told["summary"]
    pod = explain_json(path, "pod", "once-0")
    assert pod["summary"].startswith("pod team/once-0: podgroup team/once was found unschedulable")
    shown = run("explain", "podgroup", "once", "-n", "team", "-f", str(path))
    assert "moved to another pool" in " ".join(shown.split())


def test_kai_s_texts_are_not_doubled_and_no_paragraph_is_printed_twice() -> None:
    """KAI's condition repeats its reason and ends a quoted sentence with a second full stop: explain printed
    `PodSchedulingErrors: PodSchedulingErrors.` and `GPUs..`, and the headline again under Last cycles."""
    text = kai("explain", "pytorchjob", "llama-finetune", "-n", "llm", *dash_f())
    flat = " ".join(text.split())
    assert "KAI: PodSchedulingErrors: Resources were found for 1 pods" in flat
    assert "PodSchedulingErrors: PodSchedulingErrors" not in flat and ".." not in flat
    headline = "queue team-llm may not reclaim: its 0 GPUs allocated plus 32 requested exceed its GPU fair share"
    assert flat.count(headline) == 1 and "waited: FairShareBelowRequest: (the reason above)" in flat
    pods = kai("simulate", str(RESEARCH))
    assert " ".join(pods.split()).count(headline) == 1  # the master's; the other workers say "as above"


def test_unknown_kinds_and_names_get_a_did_you_mean() -> None:
    for args, told in (
        (["pytorchjb", "llama-finetune"], "kai knows no workload kind pytorchjb; did you mean pytorchjob?"),
        (["pytorchjob", "llama-finetun"], "no podgroup or pod of it in nodes + queues + workloads; did you mean "
         "llm/llama-finetune?"),
        (["pod", "llama-finetune-master"], "did you mean llm/llama-finetune-master-0?"),
    ):  # fmt: skip
        result = CliRunner().invoke(main, ["explain", *args, "-n", "llm", *dash_f()])
        assert result.exit_code == 1 and told in result.output, result.output
    text = kai("explain", "pod", "alice-notebook", "-n", "vision", *dash_f())
    assert "QueueUnusable  queue team-visoin does not exist (did you mean team-vision?)" in text
    assert "Needs: create queue team-visoin, or name queue team-vision instead" in text


def test_several_files_with_one_error_say_that_error(tmp_path: Path) -> None:
    """Several -f files, one of them with a YAML error, said "give one scenario or snapshot…", hiding the error."""
    broken = tmp_path / "workloads.yaml"
    broken.write_text((RESEARCH / "workloads.yaml").read_text().replace("kind: Job", "kind: Job\n  bad: [", 1))
    args = ["explain", "pod", "x", "-f", str(FILES[0]), "-f", str(FILES[1]), "-f", str(broken)]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 1 and "give one scenario" not in result.output
    assert f"Error: {broken}: not valid YAML at line" in result.output


def test_the_kubeconfig_help_says_where_kai_looks() -> None:
    """--kubeconfig's help said "default: in-cluster" where the error named ~/.kube/config."""
    for command in ("explain", "queues", "snapshot", "doctor", "scheduler", "all"):
        text = " ".join(CliRunner().invoke(main, [command, "--help"]).output.split())
        assert "its service account; else $KUBECONFIG; else ~/.kube/config" in text, command
        assert "default: in-cluster" not in text, command


def test_issue_27s_pytorchjob_gets_the_fix_that_works_and_the_what_if_agrees(tmp_path: Path) -> None:
    """Issue 27: the nearest fix said "raise team-llm's quota to 32", with which the job still waits. The proven fix
    is two more nodes (vision's pods hold dgx-01 and part of dgx-02, the gang needs four whole nodes); the quota
    raise was tried and is not offered. The fix's change file, given to `kai simulate --what-if`, starts the job."""
    told = json.loads(run("explain", "pytorchjob", "llama-finetune", "-n", "llm", *dash_f(), "-o", "json"))
    (podgroup,) = told["podgroups"]
    fixes = podgroup["fixes"]
    assert [fix["text"] for fix in fixes["proven"]] == ["add 2 nodes like dgx-01, 8 GPUs each"]
    assert fixes["proven"][0]["startsInCycle"] == 1 and fixes["cycles"] == 2
    tried = {fix["text"]: fix["outcome"] for fix in fixes["tried"]}
    assert tried["raise the GPU quota of queue team-llm from 16 to 32 GPUs"].startswith("still waits: ")
    change = tmp_path / "fix.yaml"
    change.write_text(yaml.safe_dump(fixes["proven"][0]["changes"]))
    what_if = json.loads(run("simulate", str(RESEARCH), "--what-if", str(change), "--cycles", "2", "--json"))
    assert what_if["base"]["queues"]["team-llm"]["podsStarted"] == 0
    assert what_if["changed"]["queues"]["team-llm"]["podsStarted"] == 4
    text = run("explain", "pytorchjob", "llama-finetune", "-n", "llm", *dash_f())
    assert "  1. add 2 nodes like dgx-01, 8 GPUs each (starts in cycle 1)" in text
    assert "raise the GPU quota" not in text


def test_issue_27s_job_of_100_gpus_gets_an_honest_answer() -> None:
    told = json.loads(run("explain", "job", "huge", "-n", "llm", *dash_f(), "-o", "json"))
    (podgroup,) = told["podgroups"]
    assert podgroup["fixes"]["proven"] == [] and podgroup["fixes"]["tried"] == []
    assert podgroup["fixes"]["summary"].startswith(
        "none searched: no change of quota, room or nodes starts it while pod llm/huge-"
    )
    assert podgroup["needs"]["text"] == "request at most 8 GPUs (the largest node), or add a larger node"


class _Seen(logging.Handler):
    """What reaches the root logger (whose handlers, or Python's last resort, write to the user's terminal)."""

    def __init__(self) -> None:
        super().__init__()
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def test_pods_whose_owners_do_not_exist_are_one_line_not_a_log_line_each(tmp_path: Path) -> None:
    """As on informer_bench's cluster (its pods name Jobs that do not exist): the pod explained is told its own
    problem, the others are summed up in one line, and the simulated pod-grouper logs nothing."""
    objects: list[dict[str, Any]] = [queue_obj("dept"), queue_obj("a", "dept"), node_obj("n0", 8)]
    for index in range(5):
        pod = pod_obj(f"p{index}", f"g{index}", 1)
        pod["metadata"]["labels"] = {"kai.scheduler/queue": "a"}
        owner = {"apiVersion": "batch/v1", "kind": "Job", "name": f"gone-{index}", "uid": f"u{index}"}
        pod["metadata"]["ownerReferences"] = [owner]
        objects += [podgroup_obj(f"g{index}", "a", 1), pod]
    path = tmp_path / "owners.yaml"
    scenario = {"name": "owners", "now": NOW, "config": {"actions": "allocate"}, "objects": objects}
    path.write_text(yaml.safe_dump(scenario))
    seen = _Seen()
    logging.getLogger().addHandler(seen)
    try:
        text = run("explain", "pod", "p2", "-n", "team", "-f", str(path))
    finally:
        logging.getLogger().removeHandler(seen)
    assert "Pod team/p2 of podgroup team/g2" in text
    assert "Problem: Pod team/p2: field metadata.ownerReferences[0]: names Job team/gone-2" in text
    elsewhere = "Elsewhere in the input: 4 problems, 4 of them of a Pod's metadata.ownerReferences[0]; the first: "
    assert elsewhere in text and "team/p0" in text and "team/p1" not in text
    assert not [message for message in seen.messages if "cannot group pod" in message]

"""Every malformed input of issue 6 through `kai simulate`: the error names the object, the field and what is
allowed; the bad object is skipped (a warning: used and reported); the good pod in the same file still schedules;
file-level problems exit non-zero with one line; nothing prints a traceback."""

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from repo import REPO

from kai.cli.main import main

GOOD_POD = "default/good-pod"
BASE = """
apiVersion: v1
kind: Node
metadata: {name: gpu-node}
status: {allocatable: {cpu: "32", memory: 256Gi, nvidia.com/gpu: "8", pods: "110"}}
---
apiVersion: scheduling.run.ai/v2
kind: Queue
metadata: {name: root}
spec:
  resources:
    gpu: {quota: -1, limit: -1, overQuotaWeight: 1}
    cpu: {quota: -1, limit: -1, overQuotaWeight: 1}
    memory: {quota: -1, limit: -1, overQuotaWeight: 1}
---
apiVersion: scheduling.run.ai/v2
kind: Queue
metadata: {name: good}
spec:
  parentQueue: root
  resources:
    gpu: {quota: 4, limit: -1, overQuotaWeight: 1}
    cpu: {quota: -1, limit: -1, overQuotaWeight: 1}
    memory: {quota: -1, limit: -1, overQuotaWeight: 1}
---
apiVersion: v1
kind: Pod
metadata: {name: good-pod, labels: {kai.scheduler/queue: good}}
spec:
  schedulerName: kai-scheduler
  containers: [{name: main, resources: {requests: {nvidia.com/gpu: "1"}, limits: {nvidia.com/gpu: "1"}}}]
"""


def _queue(name: str, parent: str = "root", gpu: str = "{quota: 1, limit: -1, overQuotaWeight: 1}") -> str:
    return f"""
---
apiVersion: scheduling.run.ai/v2
kind: Queue
metadata: {{name: {name}}}
spec:
  parentQueue: {parent}
  resources:
    gpu: {gpu}
    cpu: {{quota: -1, limit: -1, overQuotaWeight: 1}}
    memory: {{quota: -1, limit: -1, overQuotaWeight: 1}}
"""


def _pod(name: str, queue: str = "good", annotations: str = "{}", resources: str = "{}", extra: str = "") -> str:
    return f"""
---
apiVersion: v1
kind: Pod
metadata: {{name: {name}, labels: {{kai.scheduler/queue: {queue}}}, annotations: {annotations}}}
spec:
  schedulerName: kai-scheduler
  containers: [{{name: main, resources: {resources}}}]
{extra}"""


def _simulate(tmp_path: Path, text: str, *options: str) -> Result:
    path = tmp_path / "cluster.yaml"
    path.write_text(text)
    result = CliRunner().invoke(main, ["simulate", str(path), *options])
    assert "Traceback" not in result.output and "Traceback" not in result.stderr
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result


def _json_run(tmp_path: Path, extra: str) -> dict[str, Any]:
    """The run of BASE + extra as `kai simulate --json` prints it; the tables show the same problems."""
    result = _simulate(tmp_path, BASE + extra, "--json")
    assert result.exit_code == 0, result.output
    [run] = json.loads(result.stdout)
    tables = _simulate(tmp_path, BASE + extra)
    assert tables.exit_code == 0
    assert all(f"{p['kind']} {p['name']}".strip() in tables.stdout for p in run["problems"])
    if run["problems"]:
        assert "Problems" in tables.stdout
    pods = run["cycles"][-1]["pods"]
    assert pods[GOOD_POD]["status"] == "Binding", "the good pod schedules next to the bad objects"
    return run


def _problem(run: dict[str, Any], kind: str, name: str) -> dict[str, Any]:
    found = [p for p in run["problems"] if p["kind"] == kind and p["name"] == name]
    assert len(found) == 1, run["problems"]
    return found[0]


def _why(run: dict[str, Any], pod: str) -> str:
    """The podgroup's reason, as the pods table and the PodGroup condition show it."""
    cycle = run["cycles"][-1]
    return str(cycle["podGroups"][cycle["pods"][pod]["podgroup"]]["fitErrorMessage"])


def _line(result: Result) -> str:
    """A file-level problem: a non-zero exit and exactly one line."""
    assert result.exit_code == 1
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1, result.output
    return lines[0]


def test_negative_quota_is_an_error_naming_what_is_allowed(tmp_path: Path) -> None:
    run = _json_run(tmp_path, _queue("minus", gpu="{quota: -5, limit: -1}") + _pod("waits", queue="minus"))
    problem = _problem(run, "Queue", "minus")
    assert problem["severity"] == "error" and problem["field"] == "spec.resources.gpu.quota"
    assert problem["problem"] == "got -5; allowed: -1 (unlimited) or a number of at least 0"
    assert "Queue 'minus' is invalid: field spec.resources.gpu.quota: got -5" in _why(run, "default/waits")


def test_negative_over_quota_weight_is_used_with_a_warning(tmp_path: Path) -> None:
    run = _json_run(tmp_path, _queue("light", gpu="{quota: 1, limit: -1, overQuotaWeight: -2}") + _pod("runs", "light"))
    problem = _problem(run, "Queue", "light")
    assert problem["severity"] == "warning" and problem["field"] == "spec.resources.gpu.overQuotaWeight"
    assert problem["problem"].startswith("got -2; allowed: a number of at least 0")
    assert run["cycles"][-1]["pods"]["default/runs"]["status"] == "Binding"


def test_missing_parent_is_reported_on_the_queue_its_subtree_and_its_pods(tmp_path: Path) -> None:
    extra = _queue("orphan", parent="nope") + _queue("grandchild", parent="orphan") + _pod("waits", "grandchild")
    run = _json_run(tmp_path, extra)
    assert _problem(run, "Queue", "orphan")["message"] == (
        "Queue orphan: field spec.parentQueue: parent queue 'nope' does not exist"
    )
    assert _problem(run, "Queue", "grandchild")["problem"] == (
        "parent queue 'orphan' is not usable (orphan: parent queue 'nope' does not exist)"
    )
    why = _why(run, "default/waits")
    assert "QueueDoesNotExist" in why and "Queue 'grandchild' is not usable: parent queue 'orphan'" in why
    assert "does not exist." not in why.split("not usable")[0], "the queue exists: the reason says why it is unusable"


def test_parent_cycle_is_reported_with_the_cycle(tmp_path: Path) -> None:
    run = _json_run(tmp_path, _queue("a", parent="b") + _queue("b", parent="a") + _pod("waits", "a"))
    assert _problem(run, "Queue", "a")["problem"] == "parent cycle a → b → a"
    assert _problem(run, "Queue", "b")["problem"] == "parent cycle b → a → b"
    assert "Queue 'a' is not usable: parent cycle a → b → a" in _why(run, "default/waits")


def test_min_member_above_the_pod_count_says_so_with_kais_words(tmp_path: Path) -> None:
    extra = """
---
apiVersion: scheduling.run.ai/v2alpha2
kind: PodGroup
metadata: {name: gang, namespace: default}
spec: {queue: good, minMember: 3}
""" + "".join(_pod(f"gang-{i}", annotations="{pod-group-name: gang}") for i in range(2))
    run = _json_run(tmp_path, extra)
    assert run["cycles"][-1]["podGroups"]["default/gang"]["fitErrorMessage"] == (
        "\nNotReady.\nJob is not ready for scheduling. Waiting for 3 pods, currently 2 exist, 0 are gated."
    )
    assert run["cycles"][-1]["pods"]["default/gang-0"]["status"] == "Pending"


def test_pod_without_containers_is_skipped(tmp_path: Path) -> None:
    extra = """
---
apiVersion: v1
kind: Pod
metadata: {name: empty}
spec: {schedulerName: kai-scheduler, containers: []}
"""
    run = _json_run(tmp_path, extra)
    assert _problem(run, "Pod", "default/empty")["message"] == (
        "Pod default/empty: field spec.containers: is required: a pod has at least one container"
    )
    assert "default/empty" not in run["cycles"][-1]["pods"]


def test_seed_inference_light_runs_half_a_gpu_with_a_warning(tmp_path: Path) -> None:
    seed = (REPO / "examples" / "seed" / "inference-light.yaml").read_text()
    run = _json_run(tmp_path, _queue("equipe-inference") + "\n---\n" + seed)
    problem = _problem(run, "Pod", "default/inference-light")
    assert problem["severity"] == "warning" and problem["field"] == "metadata.annotations.gpu-fraction"
    assert "nvidia.com/gpu request of 1" in problem["problem"] and "Allowed: the annotation or" in problem["problem"]
    pod = run["cycles"][-1]["pods"]["default/inference-light"]
    assert pod["status"] == "Binding" and pod["requestedGPUs"] == 0.5


@pytest.mark.parametrize(
    ("annotation", "value", "allowed"),
    [
        ("gpu-fraction", "1.5", 'allowed: a number in (0, 1], e.g. "0.5"'),
        ("gpu-fraction", "half", 'allowed: a number in (0, 1], e.g. "0.5"'),
        ("gpu-memory", "-3", 'allowed: a whole number of MiB above 0, e.g. "4096"'),
        ("gpu-fraction-num-devices", "0", 'allowed: a whole number above 0, e.g. "2"'),
    ],
)
def test_bad_gpu_annotation_names_the_annotation_and_the_range(
    tmp_path: Path, annotation: str, value: str, allowed: str
) -> None:
    run = _json_run(tmp_path, _pod("shared", annotations=f'{{{annotation}: "{value}", gpu-fraction-x: "1"}}'))
    problem = _problem(run, "Pod", "default/shared")
    assert problem["field"] == f"metadata.annotations.{annotation}"
    assert problem["problem"] == f"got {value!r}; {allowed}"
    assert "default/shared" not in run["cycles"][-1]["pods"]


def test_pod_naming_a_missing_podgroup_is_reported(tmp_path: Path) -> None:
    run = _json_run(tmp_path, _pod("lost", annotations="{pod-group-name: nowhere}"))
    problem = _problem(run, "Pod", "default/lost")
    assert problem["field"] == "metadata.annotations.pod-group-name"
    assert problem["problem"].startswith("PodGroup 'nowhere' does not exist in namespace default")


def test_unknown_plugin_or_action_is_an_error_listing_the_allowed_names(tmp_path: Path) -> None:
    plugin = _line(_simulate(tmp_path, "config: {tiers: [{plugins: [{name: proportio}]}]}\nobjects:\n- " + _node()))
    assert "field tiers[0].plugins[0].name: unknown plugin 'proportio'; allowed: predicates, priority," in plugin
    action = _line(_simulate(tmp_path, "config: {actions: 'allocate, reclam'}\nobjects:\n- " + _node()))
    assert "field actions: unknown action 'reclam'; allowed: allocate, consolidation, reclaim" in action


def test_every_kai_plugin_a_config_names_runs_without_a_problem(tmp_path: Path) -> None:
    config = "config: {tiers: [{plugins: [{name: proportion}, {name: podaffinity}]}]}\nobjects:\n"
    result = _simulate(tmp_path, config + "- " + _node(), "--json")
    assert result.exit_code == 0
    [report] = json.loads(result.stdout)
    assert report["problems"] == []


def _node() -> str:
    return '{kind: Node, metadata: {name: n}, status: {allocatable: {cpu: "1", pods: "1"}}}\n'


def test_empty_and_binary_files_are_one_line_errors(tmp_path: Path) -> None:
    assert _line(_simulate(tmp_path, "")).endswith(
        "cluster.yaml: holds no Kubernetes objects (an empty file, or a scenario without objects)"
    )
    binary = tmp_path / "image.yaml"
    binary.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\xd0\xcf")
    result = CliRunner().invoke(main, ["simulate", str(binary)])
    assert _line(result) == f"error: {binary}: not a text file (byte 0 is not UTF-8); expected YAML"
    broken = _line(_simulate(tmp_path, "kind: Pod\nmetadata: {name: [unclosed\n"))
    assert "not valid YAML at line 3, column 1:" in broken
    values = _line(_simulate(tmp_path, "scheduler: {placementStrategy: binpack}\ndefaultQueue: {}\n"))
    assert values.endswith(
        "cluster.yaml: neither Kubernetes objects (no kind) nor a scenario (no objects): its top-level keys are "
        "defaultQueue, scheduler"
    )


def test_duplicate_names_keep_the_first(tmp_path: Path) -> None:
    extra = _pod("twin", resources='{requests: {nvidia.com/gpu: "2"}, limits: {nvidia.com/gpu: "2"}}')
    extra += _pod("twin", resources='{requests: {nvidia.com/gpu: "3"}, limits: {nvidia.com/gpu: "3"}}')
    run = _json_run(tmp_path, extra)
    problem = _problem(run, "Pod", "default/twin")
    assert problem["problem"] == "duplicate of objects[4]; the first is kept"
    assert run["cycles"][-1]["pods"]["default/twin"]["requestedGPUs"] == 2


@pytest.mark.parametrize(
    ("shape", "field"),
    [
        ("metadata: null\nspec: {}", "metadata"),
        ("metadata: {name: stringy}\nspec: just-a-string", "spec"),
        ("metadata: {name: listy, labels: [a, b]}", "metadata.labels"),
        ("metadata: {name: 7}", "metadata.name"),
    ],
)
def test_malformed_envelopes_are_skipped(tmp_path: Path, shape: str, field: str) -> None:
    run = _json_run(tmp_path, f"\n---\nkind: Pod\n{shape}\n" + f"\n---\nkind: Queue\n{shape}\n")
    problems = [p for p in run["problems"] if p["field"] == field]
    assert [p["kind"] for p in problems] == ["Pod", "Queue"]
    assert all(p["severity"] == "error" and "expected" in p["problem"] for p in problems)


def test_broken_kubeconfig_is_one_line(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text("apiVersion: v1\nclusters: []\n")
    no_ports = ["--plugin-server-port=0", "--metrics-bind-address=0", "--health-probe-bind-address=0"]
    result = CliRunner().invoke(main, ["all", "--kubeconfig", str(kubeconfig), *no_ports])  # the ports may be taken
    assert "Traceback" not in result.output
    assert _line(result) == f"Error: kubeconfig {kubeconfig}: field contexts: is required: a list of {{name, context}}"

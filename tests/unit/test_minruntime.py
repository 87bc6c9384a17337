"""minruntime: a victim that started less than its queue's preemptMinRuntime ago is not preempted.

Built on KAI's preempt scenario "1 train job running, 1 build job pending in the same queue" (the victim started a
minute before the scenario's clock)."""

from pathlib import Path
from typing import Any

import pytest
import yaml

from kai.components.sim.runner import run_scenario
from kai.components.sim.scenario import load_scenario

SCENARIOS = Path(__file__).resolve().parents[1] / "conformance" / "kai-v0.17"
BASE = next((SCENARIOS / "preempt" / "preempt_test").glob("001-*.yaml"))


def _with_min_runtime(tmp_path: Path, queue_field: str, value: str, plugin_args: dict[str, Any]) -> Path:
    doc = yaml.safe_load(BASE.read_text())
    for obj in doc["objects"]:
        if obj["kind"] == "Queue" and obj["spec"].get("parentQueue") and queue_field:
            obj["spec"][queue_field] = value
    for plugin in doc["config"]["tiers"][0]["plugins"]:
        if plugin["name"] == "minruntime":
            plugin["arguments"] = plugin_args
    doc.pop("expect")
    path = tmp_path / "scenario.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


@pytest.mark.parametrize(
    ("queue_value", "plugin_args", "evicted"),
    [
        ("1h", {}, False),  # started 1 minute ago: protected for an hour
        ("30s", {}, True),  # protection already over
        ("", {"defaultPreemptMinRuntime": "2d"}, False),  # plugin default, with KAI's day unit
    ],
)
def test_young_victims_are_protected(
    tmp_path: Path, queue_value: str, plugin_args: dict[str, Any], evicted: bool
) -> None:
    scenario = load_scenario(_with_min_runtime(tmp_path, "preemptMinRuntime", queue_value, plugin_args))
    result = run_scenario(scenario).cycles[-1].session.result
    assert bool(result.evictions) is evicted
    assert [e.pod_key for e in result.evictions] == (["default/running_job0-0"] if evicted else [])

"""minruntime: a victim that started less than its queue's preemptMinRuntime ago is not preempted.

Built on KAI's preempt scenario "1 train job running, 1 build job pending in the same queue" (the victim started a
minute before the scenario's clock)."""

import random
from pathlib import Path
from typing import Any

import pytest
import yaml
from core_builders import T0, cluster, node, pod, podgroup, queue
from repo import REPO

from kai.components.sim.runner import run_scenario
from kai.components.sim.scenario import load_scenario
from kai.core.cycle import open_session
from kai.core.framework.config import SchedulerConfig
from kai.core.plugins.minruntime import ScopedFilter
from kai.core.state.snapshot import take_snapshot

SCENARIOS = REPO / "tests" / "conformance" / "kai-v0.17"
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


def test_reclaim_involved_as_first_written() -> None:
    """The jobs a reclaim search asks the filter about (protected first, then not elastic) are those of the test
    as first written (not elastic, then protected), on jobs started at random times, some elastic."""
    rng = random.Random(2)
    objects: list[tuple[str, dict[str, Any]]] = [("Queue", queue("a")), ("Queue", queue("b")), ("Node", node("n", 8))]
    for i in range(40):
        name, members = f"g{i}", rng.choice((1, 2))
        objects.append(("PodGroup", podgroup(name, rng.choice("ab"), T0 - i, minMember=rng.choice((1, members)))))
        objects += [("Pod", pod(f"{name}-{k}", name, 0, "n")) for k in range(members)]
    config = SchedulerConfig()
    ssn = open_session(take_snapshot(cluster(*objects), config.scheduler_name, T0), config, T0)
    plugin = next(f.involved.__self__ for f in ssn.reclaim_victim_filters if isinstance(f, ScopedFilter))
    plugin.reclaim_default = 600.0
    for job in ssn.jobs.values():
        job.last_start_ts = rng.choice((None, T0 - 1_000, T0 - 100))
    for reclaimer in ("a", "b"):
        plain = [
            key
            for key, job in ssn.jobs.items()
            if not plugin._elastic(job) and plugin._protected(job, plugin._queues_reclaim_min(reclaimer, job.queue))
        ]
        assert plugin.reclaim_involved(reclaimer) == plain
        assert plain and len(plain) < len(ssn.jobs)

"""The bounded victim search (KAI v0.17): logarithmic probes, generators from plugins, duplicates skipped, budgets."""

import itertools
from typing import Any

import pytest
from core_builders import T0, cluster, node, pod, podgroup, queue
from prometheus_client import CollectorRegistry

from kai.components.shared.metrics import SchedulerMetrics
from kai.core.config import parse_config
from kai.core.cycle import run_cycle
from kai.core.framework.victims.scenario_search import Outcome, SearchResult, largest_solvable
from kai.core.model.errors import InvalidObject
from kai.core.state.cluster_state import ClusterState
from kai.core.state.snapshot import take_snapshot

PLUGINS = [{"name": n} for n in ("predicates", "proportion", "priority", "elastic", "subgrouporder", "taskorder")]
GENERATORS = [{"name": "sg-nodelocalgreedy"}, {"name": "sg-multinodegang"}]


@pytest.mark.parametrize(
    ("n", "solvable", "probes"),
    [
        (8, 5, [1, 2, 4, 8, 6, 5]),
        (8, 8, [1, 2, 4, 8]),
        (8, 0, [1]),
        (100, 37, [1, 2, 4, 8, 16, 32, 64, 48, 40, 36, 38, 37]),
    ],
)
def test_largest_solvable_k_in_log_probes(n: int, solvable: int, probes: list[int]) -> None:
    tried: list[int] = []

    def probe(k: int) -> Outcome:
        tried.append(k)
        return Outcome(SearchResult.SOLVED if k <= solvable else SearchResult.GENERATORS_EXHAUSTED)

    best, _ = largest_solvable(n, probe)
    assert best == solvable
    assert tried == probes


def test_a_stopping_probe_ends_the_search() -> None:
    best, outcome = largest_solvable(8, lambda k: Outcome(SearchResult.DEADLINE_EXHAUSTED))
    assert best == 0 and outcome is not None and outcome.result is SearchResult.DEADLINE_EXHAUSTED


def _preemption(preemptor_pods: int) -> ClusterState:
    """n0 (2 GPUs) runs train jobs a and b, n1 (1 GPU) runs train job c; a build gang of ``preemptor_pods`` 1-GPU
    pods of the same queue wants them."""
    objects: list[tuple[str, dict[str, Any]]] = [
        ("Queue", queue("root")),
        ("Queue", queue("q", parent="root")),
        ("Node", node("n0", 2)),
        ("Node", node("n1", 1)),
    ]
    for name, where in (("a", "n0"), ("b", "n0"), ("c", "n1")):
        objects += [
            ("PodGroup", podgroup(name, "q", T0 - 600, minMember=1)),
            ("Pod", pod(f"{name}-0", name, node_name=where)),
        ]
    objects.append(("PodGroup", podgroup("big", "q", T0, minMember=preemptor_pods, priority_class="build")))
    objects += [("Pod", pod(f"big-{i}", "big")) for i in range(preemptor_pods)]
    return cluster(*objects)


def _run(state: ClusterState, generators: list[dict[str, str]]) -> Any:
    conf = parse_config({"actions": "preempt", "tiers": [{"plugins": PLUGINS + generators}]})
    return run_cycle(take_snapshot(state, conf.scheduler_name, T0), conf, T0).result


def test_a_gang_over_several_nodes_finds_its_victims() -> None:
    result = _run(_preemption(3), GENERATORS)
    assert sorted(e.pod_key for e in result.evictions) == ["default/a-0", "default/b-0", "default/c-0"]
    assert result.search.jobs == {("preempt", "solved", False): 1}
    assert result.search.scenarios[("preempt", "NodeLocalGreedy", "simulated")] > 0


def test_without_generators_nothing_is_preempted() -> None:
    """As in KAI, reclaim and preempt need a scenario generator plugin."""
    result = _run(_preemption(1), [])
    assert result.evictions == []
    assert result.search.jobs == {("preempt", "no_generator", False): 1}


def test_failed_scenarios_are_not_simulated_again() -> None:
    """Two 1-GPU pods that may only run on the 1-GPU node n1: every scenario fails, though the scenario filters
    cannot tell (victims free GPUs on n0 too). The second generator proposes some victim sets the first one already
    failed with; those are counted as duplicates instead of simulated."""
    state = _preemption(0)
    state.apply("PodGroup", podgroup("pinned", "q", T0, minMember=2, priority_class="build"))
    for i in range(2):
        pinned = pod(f"pinned-{i}", "pinned")
        pinned["spec"]["nodeSelector"] = {"nvidia.com/gpu.count": "1"}
        state.apply("Pod", pinned)
    result = _run(state, GENERATORS)
    scenarios = result.search.scenarios
    assert result.evictions == []
    assert scenarios[("preempt", "MultiNodeGang", "duplicate")] > 0
    emitted = sum(n for (_, _, state), n in scenarios.items() if state == "emitted")
    simulated = sum(n for (_, _, state), n in scenarios.items() if state == "simulated")
    duplicates = sum(n for (_, _, state), n in scenarios.items() if state == "duplicate")
    assert emitted == simulated + duplicates
    assert result.search.jobs == {("preempt", "generators_exhausted", False): 1}


@pytest.mark.parametrize(
    ("budget", "result", "exhausted"),
    [("1s", "not_attempted", 0), ("10s", "deadline_exhausted", 1)],
)
def test_a_spent_action_budget_stops_the_action(budget: str, result: str, exhausted: int) -> None:
    """Each clock reading advances a second. With 1s for the whole action the first job gets no time at all; with
    10s its search runs out midway. Either way preempt stops: the second pending job is not tried."""
    ticks = itertools.count()
    conf = parse_config(
        {
            "actions": "preempt",
            "tiers": [{"plugins": PLUGINS + GENERATORS}],
            "scenarioSearchBudgets": {"maxActionSearchDuration": {"preempt": budget}},
        }
    )
    state = _preemption(3)
    state.apply("PodGroup", podgroup("small", "q", T0 + 1, minMember=1, priority_class="build"))
    state.apply("Pod", pod("small-0", "small"))
    outcome = run_cycle(take_snapshot(state, conf.scheduler_name, T0), conf, T0, lambda: float(next(ticks))).result
    assert outcome.evictions == []
    assert sum(outcome.search.jobs.values()) == 1
    assert [key[1] for key in outcome.search.jobs] == [result]
    assert outcome.search.budget_exhausted["preempt"] == exhausted


def test_budget_config_is_read_with_kai_defaults() -> None:
    budgets = parse_config({}).search_budgets
    assert budgets.action_limit("reclaim") == 300 and budgets.job_s == 240 and budgets.min_job_s == 0
    assert budgets.generator_limits() == {"MultiNodeGang": 120.0, "NodeLocalGreedy": 30.0, "default": 120.0}
    custom = parse_config(
        {
            "scenarioSearchBudgets": {
                "maxActionSearchDuration": {"default": "10s", "reclaim": "2s"},
                "maxGeneratorSearchDuration": {"default": "5s"},
                "maxJobSearchDuration": "0s",
            }
        }
    ).search_budgets
    assert (custom.action_limit("reclaim"), custom.action_limit("preempt"), custom.job_s) == (2, 10, 0)
    assert custom.generator_limit("NodeLocalGreedy") == 5


@pytest.mark.parametrize(
    ("budgets", "field"),
    [
        ({"maxJobSearchDuration": "-1s"}, "maxJobSearchDuration"),
        ({"maxJobSearchDuration": "10s", "minJobSearchDuration": "10s"}, "minJobSearchDuration"),
        ({"maxActionSearchDuration": ["5s"]}, "maxActionSearchDuration"),
    ],
)
def test_bad_budgets_name_the_field(budgets: dict[str, Any], field: str) -> None:
    with pytest.raises(InvalidObject, match=field):
        parse_config({"scenarioSearchBudgets": budgets})


def test_the_search_is_exported_as_kai_metrics() -> None:
    """The scheduler's metrics carry KAI's scenario_search_* series and queue labels, from the cycle result."""
    registry = CollectorRegistry()
    metrics = SchedulerMetrics(registry)
    conf = parse_config({"actions": "preempt", "tiers": [{"plugins": PLUGINS + GENERATORS}]})
    session = run_cycle(take_snapshot(_preemption(3), conf.scheduler_name, T0), conf, T0)
    metrics.observe(session, 1.0)
    value = registry.get_sample_value
    assert (
        value("kai_scenario_search_jobs_total", {"action": "preempt", "result": "solved", "reduced_budget": "false"})
        == 1
    )
    simulated = {"action": "preempt", "generator": "NodeLocalGreedy", "state": "simulated"}
    assert (
        value("kai_scenario_search_scenarios_total", simulated)
        == session.result.search.scenarios[("preempt", "NodeLocalGreedy", "simulated")]
    )
    assert value("kai_scenario_search_action_budget_configured_seconds", {"action": "preempt"}) == 300
    assert value("kai_scenario_search_generator_budget_configured_seconds", {"generator": "NodeLocalGreedy"}) == 30
    solved = {"action": "preempt", "generator": "NodeLocalGreedy", "result": "solved"}
    assert value("kai_scenario_search_duration_seconds_count", solved) == 4  # probes for k = 1, 2, 3, then all 3
    queue_labels = {"queue_name": "q", "queue_metadata_name": "q", "queue_display_name": ""}
    assert value("kai_queue_fair_share_gpu", queue_labels) is not None

"""KAI's two-queue oscillation example over simulated hours: with time-based fair share the queue that used the
cluster more recently gets the smaller fair share and the cluster changes hands; without it, it never does."""

import dataclasses

from repo import REPO

from kai.components.sim.runner import ScenarioRun, run_scenario
from kai.components.sim.scenario import ClockSpec, load_scenario
from kai.components.sim.timeline import TimelineSample

EXAMPLE = REPO / "examples" / "two-queue-oscillation.yaml"
QUEUES = ("team-a", "team-b")
TEN_MINUTES = ClockSpec(period_s=600)
"""The example's 16 hours in 96 cycles instead of 192 (quicker; the same story)."""


def holder(sample: TimelineSample) -> str:
    """The team holding the 16-GPU node after the cycle ("" while it changes hands)."""
    held = [q for q in QUEUES if sample.queues[q].allocated["gpu"] == 16]
    return held[0] if held else ""


def handovers(run: ScenarioRun) -> list[tuple[TimelineSample, TimelineSample]]:
    """(last sample of the old holder, first sample of the new one) for every change of holder."""
    changes = []
    last: TimelineSample | None = None
    for sample in run.timeline:
        if not holder(sample):
            continue
        if last is not None and holder(sample) != holder(last):
            changes.append((last, sample))
        last = sample
    return changes


def test_two_queues_with_equal_weights_trade_the_cluster_under_time_based_fair_share() -> None:
    run = run_scenario(load_scenario(EXAMPLE, clock=TEN_MINUTES))
    assert run.passed and not run.problems
    assert run.timeline[-1].elapsed_s == 16 * 3600 - 600
    changes = handovers(run)
    assert len(changes) >= 4
    for before, after in changes:
        old, new = holder(before), holder(after)
        # the queue that used more recently has the higher usage and the smaller fair share, and loses the node
        assert before.queues[old].usage["gpu"] > before.queues[new].usage["gpu"]
        assert before.queues[old].fair_share["gpu"] < before.queues[new].fair_share["gpu"]
        assert after.evictions == 1  # reclaimed, not waited for: the jobs run 8h, longer than any turn
    held = {q: sum(1 for s in run.timeline if holder(s) == q) for q in QUEUES}
    assert 0.4 < held["team-a"] / sum(held.values()) < 0.6  # over the run, each gets about half


def test_the_same_run_without_time_based_fair_share_does_not_oscillate() -> None:
    scenario = load_scenario(EXAMPLE, clock=TEN_MINUTES)
    scenario.config = dataclasses.replace(scenario.config, usage_db=None)
    run = run_scenario(scenario)
    assert {holder(sample) for sample in run.timeline} == {"team-a"}
    assert sum(sample.evictions for sample in run.timeline) == 0
    assert {s.queues[q].fair_share["gpu"] for s in run.timeline for q in QUEUES} == {8}
    assert run.completed == 1  # team-a's first job ran its 8 hours; team-a's second job followed it

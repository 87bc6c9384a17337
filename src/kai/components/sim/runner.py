"""Running a scenario: the real scheduler cycle over the embedded cluster, cycle after cycle.

Each cycle takes a snapshot of the state fed by the cluster's events, runs the configured actions, writes the
decisions back, and lets the binder and workload stand-ins move the world on (scenario-format.md §4).
"""

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kai.cluster.memory import MemoryCluster
from kai.components.binder import Binder
from kai.components.podgrouper import PodGrouper
from kai.components.scheduler.writer import DecisionWriter
from kai.components.sim.expect import check
from kai.components.sim.outcome import Outcome, observe
from kai.components.sim.problems import ERROR, WARNING, Problem
from kai.components.sim.scenario import Scenario
from kai.components.sim.world import run_workload
from kai.core.cycle import run_cycle
from kai.core.framework.session import Session
from kai.core.model.meta import format_time
from kai.core.state.cluster_state import ClusterState
from kai.core.state.snapshot import ClusterInfo, take_snapshot


@dataclass
class CycleRecord:
    number: int
    outcome: Outcome
    session: Session


@dataclass
class ScenarioRun:
    scenario: Scenario
    cycles: list[CycleRecord] = field(default_factory=list)
    mismatches: list[str] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    """What was wrong with the input: the file's unusable entries, the config's warnings, and the objects the
    scheduler skipped or used with a warning, as they stand after the last cycle."""

    @property
    def passed(self) -> bool:
        return not self.mismatches


class Simulation:
    def __init__(self, scenario: Scenario) -> None:
        self.scenario = scenario
        self.cluster = MemoryCluster(clock=lambda: format_time(scenario.now))
        self.state = ClusterState()
        self.writer = DecisionWriter(self.cluster, lambda: scenario.now)
        self.binder = Binder(self.cluster, lambda: scenario.now)
        self.grouper = PodGrouper(self.cluster, scenario.config.scheduler_name)
        self.cluster.subscribe(self._on_change)
        for obj in scenario.objects:
            self.cluster.create(obj["kind"], obj)

    def _on_change(self, kind: str, obj: Mapping[str, Any], deleted: bool) -> None:
        self.state.apply(kind, obj, deleted)

    def cycle(self, number: int) -> CycleRecord:
        self.grouper.reconcile()
        cluster_info = self._snapshot()
        session = run_cycle(cluster_info, self.scenario.config, self.scenario.now)
        return CycleRecord(number, observe(session.cluster, session.result), session)

    def advance(self, record: CycleRecord) -> None:
        self.writer.write(record.session.result, record.session.jobs)
        self.binder.reconcile()
        stuck_before = self.scenario.now - self.scenario.config.stuck_in_releasing_s
        run_workload(self.cluster, self.scenario.runner.podgroups_being_deleted, stuck_before)
        self.binder.sync_reservations()

    def observe_cluster(self) -> Outcome:
        return observe(self._snapshot(), None)

    def _snapshot(self) -> ClusterInfo:
        config = self.scenario.config
        return take_snapshot(self.state, config.scheduler_name, self.scenario.now, config.stuck_in_releasing_s)

    def problems(self) -> list[Problem]:
        found = list(self.scenario.problems)
        found += [Problem.of(WARNING, "SchedulerConfig", "config", w) for w in self.scenario.config.warnings]
        found += [Problem.of(ERROR, kind, key, error) for (kind, key), error in sorted(self.state.invalid.items())]
        for (kind, key), warnings in sorted(self.state.warnings.items()):
            found += [Problem.of(WARNING, kind, key, warning) for warning in warnings]
        return found


def run_scenario(scenario: Scenario) -> ScenarioRun:
    sim = Simulation(scenario)
    run = ScenarioRun(scenario)
    if scenario.runner.multi_cycle:
        _run_multi_cycle(sim, run)
    else:
        _run_single_check(sim, run)
    run.problems = sim.problems()
    return run


def _run_single_check(sim: Simulation, run: ScenarioRun) -> None:
    """Run ``cyclesBeforeCheck`` cycles (default 1) and check ``expect`` right after the last one (§4.1)."""
    scenario = run.scenario
    for number in range(1, scenario.runner.cycles_before_check + 1):
        record = sim.cycle(number)
        run.cycles.append(record)
        if number < scenario.runner.cycles_before_check:
            sim.advance(record)
    run.mismatches = check(scenario.expect, run.cycles[-1].outcome, scenario.now, f"cycle {len(run.cycles)}")


def _run_multi_cycle(sim: Simulation, run: ScenarioRun) -> None:
    """The runner block (§4.2): cycles, a check of the cluster as it then is, then checked cycles."""
    scenario = run.scenario
    runner, expect = scenario.runner, scenario.expect
    for number in range(1, runner.cycles_before_check + 1):
        record = sim.cycle(number)
        run.cycles.append(record)
        run.mismatches += check({"maxCounts": expect.get("maxCounts")}, record.outcome, scenario.now, f"cycle {number}")
        sim.advance(record)
    after = sim.observe_cluster()
    last = run.cycles[-1].outcome.podgroups
    for key, podgroup in after.podgroups.items():
        podgroup["fitErrorMessage"] = last.get(key, {}).get("fitErrorMessage", "")
    run.mismatches += check(expect, after, scenario.now, f"after cycle {runner.cycles_before_check}")
    for offset in range(1, runner.check_cycles + 1):
        number = runner.cycles_before_check + offset
        record = sim.cycle(number)
        run.cycles.append(record)
        run.mismatches += check(expect, record.outcome, scenario.now, f"cycle {number}")
        sim.advance(record)

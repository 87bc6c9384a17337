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
from kai.components.sim.scenario import Scenario
from kai.components.sim.world import run_workload
from kai.core.cycle import run_cycle
from kai.core.framework.session import Session
from kai.core.model.meta import format_time
from kai.core.state.cluster_state import ClusterState
from kai.core.state.snapshot import take_snapshot

NAMESPACED = ("Pod", "PodGroup", "BindRequest", "ResourceClaim", "Event")


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
    invalid: list[str] = field(default_factory=list)

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
            if obj["kind"] in NAMESPACED and not (obj.get("metadata") or {}).get("namespace"):
                obj = {**obj, "metadata": {**(obj.get("metadata") or {}), "namespace": "default"}}  # as kubectl does
            self.cluster.create(str(obj["kind"]), obj)

    def _on_change(self, kind: str, obj: Mapping[str, Any], deleted: bool) -> None:
        self.state.apply(kind, obj, deleted)

    def cycle(self, number: int) -> CycleRecord:
        self.grouper.reconcile()
        cluster_info = take_snapshot(self.state, self.scenario.config.scheduler_name)
        session = run_cycle(cluster_info, self.scenario.config, self.scenario.now)
        return CycleRecord(number, observe(session.cluster, session.result), session)

    def advance(self, record: CycleRecord) -> None:
        self.writer.write(record.session.result)
        self.binder.reconcile()
        run_workload(self.cluster, self.scenario.runner.podgroups_being_deleted)
        self.binder.sync_reservations()

    def observe_cluster(self) -> Outcome:
        return observe(take_snapshot(self.state, self.scenario.config.scheduler_name), None)


def run_scenario(scenario: Scenario) -> ScenarioRun:
    sim = Simulation(scenario)
    run = ScenarioRun(scenario, invalid=[str(error) for error in sim.state.invalid.values()])
    runner, expect = scenario.runner, scenario.expect
    if not runner.multi_cycle:
        for number in range(1, runner.cycles_before_check + 1):
            record = sim.cycle(number)
            run.cycles.append(record)
            if number < runner.cycles_before_check:
                sim.advance(record)
        run.mismatches = check(expect, run.cycles[-1].outcome, scenario.now, f"cycle {len(run.cycles)}")
        return run
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
    return run

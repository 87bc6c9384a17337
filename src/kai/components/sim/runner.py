"""Running a scenario: the real scheduler cycle over the embedded cluster, cycle after cycle.

Each cycle takes a snapshot of the state fed by the cluster's events, runs the configured actions, writes the
decisions back, and lets the binder and workload stand-ins move the world on (scenario-format.md §4). With a running
clock (§8) time then advances by the period, pods whose run time is over finish and finished jobs are submitted
again (``lifecycle``), and every cycle adds a sample to the run's timeline of per-queue allocation. With
``usageDBConfig`` the cycle reads and feeds a usage store on the simulated clock, as the scheduler does on its own.

``Simulation`` is the reusable part: build one from a scenario (and, for what-if runs, a clock and a default run
time), then call ``cycle`` and ``advance`` in turn.
"""

import difflib
import logging
from collections import ChainMap
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kai.cluster.memory import MemoryCluster, json_copy
from kai.cluster.port import Raw
from kai.components.admission.queue_gate import gates_pod, with_gate
from kai.components.binder.component import Binder
from kai.components.podgrouper import PodGrouper
from kai.components.podgrouper.component import WARNING_REASON as GROUPER_WARNING
from kai.components.scheduler.node_pool import NodePool
from kai.components.scheduler.usage import BuiltinUsage, cycle_with_usage
from kai.components.scheduler.writer import DecisionWriter
from kai.components.sim.clock import SimClock
from kai.components.sim.expect import check
from kai.components.sim.lifecycle import WorkloadLifecycle
from kai.components.sim.outcome import Outcome, observe
from kai.components.sim.problems import ERROR, WARNING, Problem
from kai.components.sim.scenario import Scenario
from kai.components.sim.stand_ins.dispatch import WorkloadControllers
from kai.components.sim.stand_ins.disruption import update_budgets
from kai.components.sim.timeline import TimelineSample, sample_of
from kai.components.sim.world import run_workload
from kai.core.actions import ungate
from kai.core.cycle import open_session
from kai.core.framework.config import SchedulerConfig
from kai.core.framework.session import Session
from kai.core.framework.usage.usage_config import CLIENT_PROMETHEUS
from kai.core.model import names
from kai.core.model.errors import InvalidObject
from kai.core.model.meta import format_time
from kai.core.state.cluster_state import ClusterState, object_key
from kai.core.state.snapshot import ClusterInfo, Snapshots, take_snapshot

SIMILAR_NAME = 0.8
"""How alike a scheduler name must be to kai's to be taken for a typo of it (difflib's ratio)."""
GROUPER_LOG = logging.getLogger(f"{__name__}.podgrouper")
"""The simulated pod-grouper's log, kept quiet: what it cannot do it tells as events, which are the run's problems
(``grouper_warnings``, once per object and problem), not a line per pod on the terminal of whoever asked."""
GROUPER_LOG.addHandler(logging.NullHandler())
GROUPER_LOG.propagate = False


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
    timeline: list[TimelineSample] = field(default_factory=list)
    """Every cycle's per-queue allocation, fair share and usage."""
    clock: SimClock | None = None
    completed: int = 0
    """Pods that finished their run time."""
    failed: int = 0
    """Pods that failed (``simulate.kai.scheduler/fail-after``)."""

    @property
    def passed(self) -> bool:
        return not self.mismatches


class Simulation:
    def __init__(
        self,
        scenario: Scenario,
        clock: SimClock | None = None,
        default_run_time_s: float | None = None,
        reuse_snapshots: bool = False,
    ) -> None:
        """``clock``: the simulated time (default: the scenario's ``now`` and period); ``default_run_time_s``: how
        long pods without a run-time annotation run before they succeed (default: until evicted);
        ``reuse_snapshots``: each cycle's snapshot built from the last, as the scheduler's are (a cycle's session is
        then valid only until the next cycle, where reports read every kept cycle's)."""
        self.scenario = scenario
        self.clock = clock if clock is not None else SimClock(scenario.now, scenario.clock.period_s)
        self.cluster = MemoryCluster(clock=lambda: format_time(self.clock.now))
        if ungate.NAME in scenario.config.actions:  # queue admission gating: kai's webhook gates pods at create
            self.cluster.admission = self._gate
        self.state = ClusterState()
        config = scenario.config
        self.snapshots = (
            Snapshots(self.state, config.scheduler_name, full_hierarchy_fairness=config.full_hierarchy_fairness)
            if reuse_snapshots
            else None
        )
        self.pool = scenario.node_pool or NodePool()
        self.partitioned = scenario.node_pool is not None
        for key in scenario.podgroups_elsewhere:
            self.state.mark_elsewhere(key)
        self.writer = DecisionWriter(
            self.cluster,
            self._now,
            node_pool=self.pool,
            through_eviction_api=scenario.config.disruption.pod_disruption_budgets,
        )
        self.binder = Binder(self.cluster, self._now)
        # its passes and retries on the simulated clock (a pass takes every queued pod, however loaded the machine)
        self.grouper = PodGrouper(self.cluster, scenario.config.scheduler_name, clock=self._now, logger=GROUPER_LOG)
        self.cluster.subscribe(self._on_change)
        self.workloads = WorkloadControllers.start(scenario.objects, self.clock.now, scenario.config.scheduler_name)
        for obj in self.workloads.objects:
            self.cluster.create(obj["kind"], obj)
        self.workloads.run_cron_jobs(self.cluster, self.clock.now)
        update_budgets(self.cluster, self.clock.now)
        self.lifecycle = WorkloadLifecycle(
            self.workloads.objects, self.clock.now, default_run_time_s, self.workloads.later_pods()
        )
        usage_db = scenario.config.usage_db
        self.usage = BuiltinUsage(usage_db.params) if usage_db is not None else None
        self.pipelined: Mapping[str, tuple[str, ...]] = {}
        """Podgroups the last cycle pipelined (allocate tries them first next cycle, as the scheduler does)."""
        self.timeline: list[TimelineSample] = []
        self.settled = 0
        """The last cycle whose decisions were written back (``settle``)."""

    def _now(self) -> float:
        return self.clock.now

    def _gate(self, kind: str, obj: Raw) -> Raw:
        """What kai's admission webhook does with ``--queue-admission-gating`` to a pod being created."""
        if kind != "Pod" or (obj.get("spec") or {}).get("schedulerName") != self.scenario.config.scheduler_name:
            return obj
        gated = gates_pod(obj, self.state.queues, self.scenario.config.queue_label_key)
        return with_gate(json_copy(obj)) if gated else obj

    def _on_change(self, kind: str, obj: Mapping[str, Any], deleted: bool) -> None:
        """As the scheduler takes objects: a shard's snapshot, its pool's; otherwise every one (one pool), but a
        PodGroup that used up its scheduling backoff (in the pool its node-pool label names) is kept out."""
        takes = self.pool.schedules if self.partitioned else self.pool.up_for_scheduling
        self.state.apply(kind, obj, deleted, elsewhere=not takes(kind, obj))

    def backed_off(self, podgroup_key: str) -> bool:
        """Whether a PodGroup the run leaves out is of its pool, and left out for its used-up scheduling backoff
        (not another pool's)."""
        podgroup = self.cluster.get("PodGroup", podgroup_key)
        if podgroup is None or (self.partitioned and not self.pool.holds("PodGroup", podgroup)):
            return False
        return not self.pool.up_for_scheduling("PodGroup", podgroup)

    def cycle(self, number: int) -> CycleRecord:
        self.grouper.reconcile()
        config = self.scenario.config
        if self.snapshots is not None:
            cluster_info = self.snapshots.take(self.clock.now, config.stuck_in_releasing_s)
        else:
            cluster_info = self._snapshot()
        now = self.clock.now
        cluster_info.pipelined_before = self.pipelined
        cluster_info.recent_evictions = self.writer.evictor.recent(now)
        timer = self.scenario.search_timer
        session = cycle_with_usage(self.usage, cluster_info, self.scenario.config, now, *([timer] if timer else []))
        self.pipelined = session.result.pipelined_podgroups()
        self.timeline.append(sample_of(number, now, self.clock.elapsed_s, session))
        return CycleRecord(number, observe(session.cluster, session.result), session)

    def settle(self, record: CycleRecord) -> None:
        """Write the cycle's decisions back and let the binder and the kubelet act, at the same moment: the cluster
        as it stands once the cycle's binds are done (what ``kai simulate`` shows after a cycle)."""
        if self.settled == record.number:
            return
        self.settled = record.number
        session = record.session
        self.writer.write(session.result, ChainMap(session.jobs, session.cluster.unschedulable_jobs))
        self.binder.reconcile()
        stuck_before = self.clock.now - self.scenario.config.stuck_in_releasing_s
        run_workload(self.cluster, self.scenario.runner.podgroups_being_deleted, stuck_before, self.clock.now)
        self.binder.sync_reservations()

    def advance(self, record: CycleRecord) -> None:
        """Settle the cycle, then move the clock on and let the workloads act."""
        self.settle(record)
        self.clock.tick()
        self.lifecycle.step(self.cluster, self.clock.now)
        self.workloads.step(self.cluster, self.clock.now)
        update_budgets(self.cluster, self.clock.now)

    def observe_cluster(self) -> Outcome:
        return observe(self._snapshot(), None)

    def open(self) -> Session:
        """A session opened on the cluster as it stands (no action run): queue shares and the order jobs stand in
        line for the next cycle."""
        self.grouper.reconcile()
        cluster_info = self._snapshot()
        if self.usage is not None:  # recent usage as the next cycle reads it (nothing is recorded)
            cluster_info.queue_usage = self.usage.read(self.clock.now)
        return open_session(cluster_info, self.scenario.config, self.clock.now)

    def _snapshot(self) -> ClusterInfo:
        config = self.scenario.config
        return take_snapshot(
            self.state,
            config.scheduler_name,
            self.clock.now,
            config.stuck_in_releasing_s,
            config.full_hierarchy_fairness,
        )

    def problems(self) -> list[Problem]:
        found = list(self.scenario.problems)
        found += [Problem.of(WARNING, "SchedulerConfig", "config", w) for w in self.scenario.config.warnings]
        usage_db = self.scenario.config.usage_db
        if usage_db is not None and usage_db.client_type == CLIENT_PROMETHEUS:
            note = "kai simulate keeps its own usage history on the simulated clock; Prometheus is not queried"
            found.append(
                Problem.of(
                    WARNING,
                    "SchedulerConfig",
                    "config",
                    InvalidObject("scheduler config", "usageDBConfig.clientType", note),
                )
            )
        found += self.workloads.problems
        if not self.clock.running:
            frozen = (
                "the clock does not move (no clock.period or --period): only the Job of a time already due at the "
                "start is made, none later"
            )
            for key in self.workloads.cron_jobs.specs:
                found.append(
                    Problem.of(WARNING, "CronJob", key, InvalidObject(f"CronJob {key}", "spec.schedule", frozen))
                )
        left_out = "was found unschedulable in its node pool and its backoff is used up there: left out until moved"
        for key in sorted(self.state.elsewhere):
            if not self.backed_off(key):
                continue  # another pool's: the snapshot's problems count those
            error = InvalidObject(f"PodGroup {key}", "spec.schedulingBackoff", left_out)
            found.append(Problem.of(WARNING, "PodGroup", key, error))
        found += grouper_warnings(self.cluster)
        found += other_scheduler_warnings(self.state, self.scenario.config)
        found += self.lifecycle.problems
        found += [Problem.of(ERROR, kind, key, error) for (kind, key), error in sorted(self.state.invalid.items())]
        for (kind, key), warnings in sorted(self.state.warnings.items()):
            found += [Problem.of(WARNING, kind, key, warning) for warning in warnings]
        return found


def grouper_warnings(cluster: MemoryCluster) -> list[Problem]:
    """What the pod-grouper told of pods (its Warning events): a pod it cannot group, or something of a workload it
    ignores, such as a priority class that does not exist. Each names the object and field it is about (the event's
    ``related`` reference: the pod or an owner), once however many pods were told."""
    found: dict[tuple[str, str, str, str], Problem] = {}
    for event in cluster.list("Event"):
        if event.get("reason") != GROUPER_WARNING:
            continue
        about = event.get("related") or event.get("involvedObject") or {}
        kind, key, field = str(about.get("kind", "")), object_key({"metadata": about}), str(about.get("fieldPath", ""))
        message = str(event.get("message", ""))
        problem = message.removeprefix(f"{kind} {key}: field {field}: ") if field else message
        found.setdefault((kind, key, field, message), Problem(WARNING, kind, key, field, problem, message))
    return list(found.values())


BeforeLast = Callable[[Simulation], None]
"""Called once, right before the last cycle (``kai explain`` opens a session on the cluster that cycle starts from)."""


def other_scheduler_warnings(state: ClusterState, config: SchedulerConfig) -> list[Problem]:
    """Pods that look meant for kai but name another scheduler (a name like kai's, or kai's queue label or PodGroup
    annotation): kai leaves them alone, and without a word they would vanish from every table."""
    found = []
    for key, pod in sorted(state.pods.items()):
        name = pod.scheduler_name
        if name == config.scheduler_name or pod.is_reservation:
            continue
        similar = difflib.SequenceMatcher(None, name, config.scheduler_name).ratio() >= SIMILAR_NAME
        marked = config.queue_label_key in pod.meta.labels or names.POD_GROUP_ANNOTATION in pod.meta.annotations
        if not (similar or marked):
            continue
        problem = f"{name or 'default-scheduler'} is not {config.scheduler_name}: kai leaves this pod to that scheduler"
        if similar:
            problem += f" (did you mean {config.scheduler_name}?)"
        else:
            problem += " though it carries kai's queue label or PodGroup annotation"
        found.append(Problem.of(WARNING, "Pod", key, InvalidObject(f"Pod {key}", "spec.schedulerName", problem)))
    return found


def run_scenario(
    scenario: Scenario, sim: Simulation | None = None, before_last: BeforeLast | None = None
) -> ScenarioRun:
    sim = sim or Simulation(scenario)
    run = ScenarioRun(scenario, clock=sim.clock)
    if scenario.runner.multi_cycle:
        _run_multi_cycle(sim, run, before_last)
    else:
        _run_single_check(sim, run, before_last)
    run.problems = sim.problems()
    run.timeline = sim.timeline
    run.completed, run.failed = sim.lifecycle.completed, sim.lifecycle.failed
    return run


def _keep(run: ScenarioRun, record: CycleRecord, clock: SimClock) -> None:
    """Keep every cycle of a frozen run; of a run over time only the last (the timeline has all of them)."""
    if clock.running:
        run.cycles[:] = [record]
    else:
        run.cycles.append(record)


def _run_single_check(sim: Simulation, run: ScenarioRun, before_last: BeforeLast | None) -> None:
    """Run ``cyclesBeforeCheck`` cycles (default 1) and check ``expect`` right after the last one (§4.1)."""
    scenario = run.scenario
    last = scenario.runner.cycles_before_check
    for number in range(1, last + 1):
        if number == last and before_last is not None:
            before_last(sim)
        record = sim.cycle(number)
        _keep(run, record, sim.clock)
        if number < scenario.runner.cycles_before_check:
            sim.advance(record)
    run.mismatches = check(scenario.expect, record.outcome, sim.clock.now, f"cycle {number}")


def _run_multi_cycle(sim: Simulation, run: ScenarioRun, before_last: BeforeLast | None) -> None:
    """The runner block (§4.2): cycles, a check of the cluster as it then is, then checked cycles."""
    scenario = run.scenario
    runner, expect = scenario.runner, scenario.expect
    final = runner.cycles_before_check + runner.check_cycles
    for number in range(1, runner.cycles_before_check + 1):
        if number == final and before_last is not None:
            before_last(sim)
        record = sim.cycle(number)
        _keep(run, record, sim.clock)
        run.mismatches += check(
            {"maxCounts": expect.get("maxCounts")}, record.outcome, sim.clock.now, f"cycle {number}"
        )
        sim.advance(record)
    after = sim.observe_cluster()
    last = run.cycles[-1].outcome.podgroups
    for key, podgroup in after.podgroups.items():
        podgroup["fitErrorMessage"] = last.get(key, {}).get("fitErrorMessage", "")
    run.mismatches += check(expect, after, sim.clock.now, f"after cycle {runner.cycles_before_check}")
    for offset in range(1, runner.check_cycles + 1):
        number = runner.cycles_before_check + offset
        if number == final and before_last is not None:
            before_last(sim)
        record = sim.cycle(number)
        _keep(run, record, sim.clock)
        run.mismatches += check(expect, record.outcome, sim.clock.now, f"cycle {number}")
        sim.advance(record)

"""The base and the changed world run side by side, cycle by cycle on the same clock, and what each run did.

Both runs start at the scenario's time with the same period and default run time (``Assumptions``, which head
every rendering of the report); per run it keeps each pod's time to start (from when it was submitted, or the run's
start for pods already waiting, to the cycle that bound it; a pod counts once however often it is evicted and bound
again), evictions by action, the cluster's GPUs and the timeline of per-queue allocation and fair share. Pods still
waiting at the end are counted in every queue, the ones of a queue that does not exist too.
"""

import statistics
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from kai.components.sim.clock import SimClock
from kai.components.sim.runner import CycleRecord, Simulation
from kai.components.sim.scenario import Scenario
from kai.components.sim.timeline import TimelineSample
from kai.core.state.pod_status import PodStatus
from kai.core.state.resource_index import GPU_ROW

DEFAULT_PERIOD_S = 60.0
"""What-if runs need a running clock: one cycle a simulated minute unless --period says otherwise."""
DEFAULT_RUN_TIME_S = 3600.0
"""How long a pod without a run-time annotation runs in a what-if run (a snapshot has none)."""


@dataclass(frozen=True)
class Assumptions:
    """What a what-if run takes for granted, said before its figures."""

    inputs: tuple[str, ...]
    """The files the cluster was read from."""
    start: float
    """The simulated time both runs start at (the input's)."""
    cycles: int
    period_s: float
    default_run_time_s: float | None
    """How long batch pods without a run time run (None: until evicted); pods of long-running controllers run to
    the horizon (``lifecycle``)."""

    @property
    def horizon_s(self) -> float:
        return self.cycles * self.period_s

    @classmethod
    def defaults(cls, scenario: Scenario, cycles: int) -> "Assumptions":
        """``kai simulate SCENARIO --what-if … --cycles CYCLES`` with no other option."""
        return cls((str(scenario.path),), scenario.now, cycles, DEFAULT_PERIOD_S, DEFAULT_RUN_TIME_S)


@dataclass
class RunMetrics:
    start: float
    waits: dict[str, list[float]] = field(default_factory=dict)
    """Seconds from submission to binding of each pod that started, by queue."""
    started: set[str] = field(default_factory=set)
    evictions: Counter[str] = field(default_factory=Counter)
    """Evicted pods by the action that evicted them (reclaim, preempt, consolidation, stalegangeviction)."""
    capacity: list[float] = field(default_factory=list)
    """The cluster's GPUs at each cycle."""
    timeline: list[TimelineSample] = field(default_factory=list)
    pending: Counter[str] = field(default_factory=Counter)
    """Pods still pending after the last cycle, by queue."""
    completed: int = 0
    failed: int = 0

    def observe(self, record: CycleRecord) -> None:
        session, now = record.session, record.session.now
        jobs = session.jobs
        for bind in session.result.binds:
            if bind.pod_key in self.started:
                continue
            self.started.add(bind.pod_key)
            job = jobs[bind.podgroup_key]
            created = job.tasks[bind.pod_key].pod.meta.creation_ts
            self.waits.setdefault(job.queue, []).append(now - max(created, self.start))
        self.evictions.update(eviction.action for eviction in session.result.evictions)
        self.capacity.append(float(session.cluster.nodes.allocatable[GPU_ROW].sum()))

    def finish(self, record: CycleRecord, sim: Simulation) -> None:
        session = record.session
        for job in (*session.jobs.values(), *session.cluster.unschedulable_jobs.values()):
            waiting = sum(1 for task in job.tasks.values() if task.status is PodStatus.PENDING)
            if waiting:
                self.pending[job.queue] += waiting
        self.timeline = sim.timeline
        self.completed, self.failed = sim.lifecycle.completed, sim.lifecycle.failed

    def utilisation(self) -> list[float]:
        """Allocated share of the cluster's GPUs at each cycle (0..1)."""
        values = []
        for sample, gpus in zip(self.timeline, self.capacity, strict=True):
            allocated = sum(sample.queues[uid].allocated["gpu"] for uid in sample.leaves if uid in sample.queues)
            values.append(allocated / gpus if gpus else 0.0)
        return values

    def mean_queue(self, queue: str, key: str) -> float:
        """The mean over the run of a queue's GPUs ``allocated`` or ``fair_share``."""
        values = [getattr(s.queues[queue], key)["gpu"] for s in self.timeline if queue in s.queues]
        return statistics.fmean(values) if values else 0.0

    def outcome(self) -> tuple[object, ...]:
        """What ran, without the fair shares: pods' times to start, evictions, what was left, and each queue's
        allocation at every cycle (two runs with the same outcome did the same)."""
        allocated = [{uid: queue.allocated for uid, queue in sample.queues.items()} for sample in self.timeline]
        return (self.waits, self.started, self.evictions, self.pending, self.completed, self.failed, allocated)


def wait_stats(waits: list[float]) -> tuple[float, float] | None:
    """(p50, max) of times to start; None when no pod started."""
    return (statistics.median(waits), max(waits)) if waits else None


@dataclass
class Comparison:
    base: RunMetrics
    changed: RunMetrics
    changes: list[str]
    assumptions: Assumptions

    @property
    def cycles(self) -> int:
        return self.assumptions.cycles

    @property
    def period_s(self) -> float:
        return self.assumptions.period_s

    @property
    def default_run_time_s(self) -> float | None:
        return self.assumptions.default_run_time_s

    def queues(self) -> list[str]:
        """Leaf queues of either run, and queues that do not exist but pods wait in, by name."""
        leaves = {uid for run in (self.base, self.changed) for s in run.timeline[-1:] for uid in s.leaves}
        return sorted(leaves | {uid for run in (self.base, self.changed) for uid in run.pending})

    @property
    def identical(self) -> bool:
        """Whether the changes changed nothing that ran (fair shares may still differ)."""
        return self.base.outcome() == self.changed.outcome()


def what_if_simulation(scenario: Scenario, assumptions: Assumptions) -> Simulation:
    """One run of a what-if (the base or the changed world) as ``assumptions`` say: from their start, a cycle every
    period, batch pods without a run time running the default run time. The one place such a run is made:
    ``kai explain`` proves a fix on it, so a proof and a what-if of the same change are the same run."""
    return Simulation(scenario, SimClock(assumptions.start, assumptions.period_s), assumptions.default_run_time_s)


def compare(
    base: Scenario,
    changed: Scenario,
    assumptions: Assumptions,
    changes: list[str],
    on_cycle: Callable[[int], None] | None = None,
) -> Comparison:
    cycles = assumptions.cycles
    sims = [what_if_simulation(s, assumptions) for s in (base, changed)]
    metrics = [RunMetrics(sim.clock.now) for sim in sims]
    last: list[CycleRecord] = []
    for number in range(1, cycles + 1):
        last = []
        for sim, run in zip(sims, metrics, strict=True):
            record = sim.cycle(number)
            run.observe(record)
            last.append(record)
            if number < cycles:
                sim.advance(record)
        if on_cycle is not None:
            on_cycle(number)
    for sim, run, record in zip(sims, metrics, last, strict=True):
        run.finish(record, sim)
    return Comparison(metrics[0], metrics[1], changes, assumptions)

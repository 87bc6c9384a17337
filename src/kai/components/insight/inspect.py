"""A scenario run for questions about it (``kai explain``, ``kai queues``): the real scheduler over the embedded
cluster, as ``kai simulate`` runs it, keeping what the answers need.

The scenario comes from a file, a snapshot, or the objects of a live cluster (``capture``), so a live answer is
one dry cycle of the real core over what the scheduler sees: it writes nothing. Kept: a session opened on the state
the last cycle starts from (queue shares, and the order jobs stand in line, before that cycle changes them), the
last cycle's session (its decisions and typed reasons), and every cycle run.
"""

from dataclasses import dataclass

from kai.cluster.memory import MemoryCluster
from kai.components.sim.problems import Problem
from kai.components.sim.runner import CycleRecord, Simulation
from kai.components.sim.scenario import Scenario
from kai.core.cycle import open_session
from kai.core.framework.queueing.job_order import JobOrder, job_order
from kai.core.framework.session import Session
from kai.core.state.cluster_state import ClusterState
from kai.core.state.snapshot import take_snapshot


@dataclass
class Inspection:
    scenario: Scenario
    state: ClusterState
    opened: Session
    """Opened (no action run) on the state the last cycle starts from."""
    order: JobOrder
    session: Session
    """The last cycle's."""
    cycles: list[CycleRecord]
    problems: list[Problem]
    cluster: MemoryCluster
    """The embedded cluster after the last cycle (the objects as the components left them)."""
    backed_off: frozenset[str]
    """The podgroups left out for their used-up scheduling backoff (the others the state keeps out are other
    pools')."""

    @property
    def now(self) -> float:
        return self.scenario.now


def inspect(scenario: Scenario) -> Inspection:
    """Run the scenario's cycles (one for manifests, snapshots and live clusters), moving the world between them."""
    sim = Simulation(scenario)
    runner = scenario.runner
    total = max(1, runner.cycles_before_check + (runner.check_cycles if runner.multi_cycle else 0))
    records: list[CycleRecord] = []
    for number in range(1, total):
        records.append(sim.cycle(number))
        sim.advance(records[-1])
    sim.grouper.reconcile()
    config = scenario.config
    snapshot = take_snapshot(sim.state, config.scheduler_name, scenario.now, config.stuck_in_releasing_s)
    opened = open_session(snapshot, config, scenario.now)
    order = job_order(opened)
    records.append(sim.cycle(total))
    backed_off = frozenset(key for key in sim.state.elsewhere if sim.backed_off(key))
    session = records[-1].session
    return Inspection(scenario, sim.state, opened, order, session, records, sim.problems(), sim.cluster, backed_off)

"""A scenario run for questions about it (``kai simulate``, ``kai explain``, ``kai queues``): the real scheduler over
the embedded cluster, as ``kai simulate`` runs it, keeping what the answers need.

The scenario comes from a file, a snapshot, or the objects of a live cluster (``capture``), so a live answer is
one dry cycle of the real core over what the scheduler sees: it writes nothing. Every answer is about one moment:

- *as given* (a live cluster): the cluster as it is, the state the dry cycle starts from; the cycle only says what
  it would do and why the others wait;
- *after the last cycle* (files): the cluster once the file's cycles ran and the last one's binds were done, as
  ``kai simulate`` shows it; the last cycle says why the others wait.

Kept: the last cycle's session (its decisions and typed reasons), one opened on the moment shown (queue shares, and
the order jobs stand in line then), and the run.
"""

from dataclasses import dataclass
from enum import StrEnum

from kai.cluster.memory import MemoryCluster
from kai.components.sim.problems import Problem
from kai.components.sim.runner import CycleRecord, ScenarioRun, Simulation, run_scenario
from kai.components.sim.scenario import Scenario
from kai.core.framework.queueing.job_order import JobOrder, job_order
from kai.core.framework.session import Session
from kai.core.state.cluster_state import ClusterState


class Moment(StrEnum):
    GIVEN = "as given"
    AFTER = "after the last cycle"


@dataclass
class Inspection:
    scenario: Scenario
    moment: Moment
    run: ScenarioRun
    """The cycles run (all of a frozen clock's, the last of a running one's), the timeline and the problems."""
    state: ClusterState
    session: Session
    """The last cycle's: its decisions and why the others wait."""
    shown: Session
    """Opened (no action run) on the moment shown: the state the last cycle starts from as given, else the cluster
    after the last cycle's binds."""
    order: JobOrder
    """The order jobs stand in line at the moment shown (the next cycle's)."""
    cluster: MemoryCluster
    """The embedded cluster after the last cycle (the objects as the components left them)."""
    backed_off: frozenset[str]
    """The podgroups left out for their used-up scheduling backoff (the others the state keeps out are other
    pools')."""
    now: float
    """The time of the moment shown."""

    @property
    def cycles(self) -> list[CycleRecord]:
        return self.run.cycles

    @property
    def problems(self) -> list[Problem]:
        return self.run.problems

    @property
    def cycle(self) -> int:
        """The number of the last cycle."""
        return self.run.cycles[-1].number


def inspect(scenario: Scenario, moment: Moment = Moment.AFTER) -> Inspection:
    """Run the scenario's cycles (one for manifests, snapshots and live clusters), moving the world between them."""
    sim = Simulation(scenario)
    opened: list[Session] = []
    run = run_scenario(scenario, sim, (lambda at: opened.append(at.open())) if moment is Moment.GIVEN else None)
    session = run.cycles[-1].session
    if moment is Moment.AFTER:
        sim.settle(run.cycles[-1])
        opened.append(sim.open())
    backed_off = frozenset(key for key in sim.state.elsewhere if sim.backed_off(key))
    return Inspection(
        scenario,
        moment,
        run,
        sim.state,
        session,
        opened[0],
        job_order(opened[0]),
        sim.cluster,
        backed_off,
        sim.clock.now,
    )

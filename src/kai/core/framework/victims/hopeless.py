"""Victim scenarios proven unsolvable without simulating them, from what a validator will not let go.

A validator can say of a victim queue, before any simulation, that it refuses every scenario in which a victim of
that queue is evicted (``Yield.MOVES_ONLY``: reclaim's fair share when the victim's side holds no more than its
deserved quota), or every scenario with a victim of it at all (``Yield.NOTHING``). A scenario whose victims all
come from such queues can then pass only if every victim is moved, not evicted — and moving victims never adds
room: evicting a victim frees what re-placing it takes, so the pending pods would have to fit in the room the
cluster has already (``room``). When they cannot, no simulation of the scenario could succeed, and when that holds
for every victim the search could take, no scenario of the pending job could: the search is hopeless.

Nothing is remembered from one job or cycle to the next: the proof is read off the queues and the node table as
they are, so it goes stale with them by construction (a victim queue going over its deserved quota, room freed by a
pod that ends, a node added). Time-based budgets make KAI spend its whole search on such jobs (KAI issue: reclaim
filling its 300 s searching for gangs that cannot be helped); the proof gives the same answer at once.

A simulation leaves one trace outside its statement: the fit errors of the victim tasks it fails to re-place. They
are reported only for a job that waits (``close_session``), so nothing is proven where a victim has a pending pod:
the skipped simulations would have left what the cycle reports.
"""

from collections.abc import Callable, Iterable
from enum import IntEnum

import numpy as np

from kai.core.framework.session import Session
from kai.core.framework.victims.scenario import Scenario
from kai.core.state.podgroup_info import PodGroupInfo
from kai.core.state.resource_index import Vector
from kai.core.state.task import TaskInfo

TOLERANCE = 1e-6


class Yield(IntEnum):
    """What a validator may let a pending job take from a victim queue (stricter is larger)."""

    ANY = 0
    """Evictions may pass."""
    MOVES_ONLY = 1
    """A scenario passes only if no victim of the queue is evicted (each is re-placed elsewhere or where it was)."""
    NOTHING = 2
    """A scenario with any victim of the queue is refused."""


Yields = Callable[[PodGroupInfo, str], Yield]
"""What the action's validator lets ``job`` take from the victim queue ``queue``, for the job's current search."""


def strictest(fns: list[Yields]) -> Yields | None:
    """Every registered answer together (a scenario passes only if every validator accepts it); None without any."""
    if not fns:
        return None

    def combined(job: PodGroupInfo, queue: str) -> Yield:
        return max(fn(job, queue) for fn in fns)

    return combined


def room(ssn: Session) -> Vector:
    """Per resource, the idle and releasing amounts of every node that has some: all that pending pods could be
    placed on without an eviction, however the victims were moved around."""
    nodes = ssn.nodes
    return np.maximum(nodes.non_allocated(), 0.0).sum(axis=1)  # type: ignore[no-any-return]


def moves_cannot_place(ssn: Session, pending: list[TaskInfo]) -> bool:
    """The pending tasks ask for more than ``room`` in some resource. Moving a victim frees on one node what it takes
    on another only when pods hold whole devices (a shared GPU's accounting does not add up so): with a shared GPU
    in use anywhere, nothing is proven."""
    if not pending or ssn.nodes.shared_columns:
        return False
    demand = np.sum([task.req_vec for task in pending], axis=0)
    available = room(ssn)
    return bool(np.any(demand > available * (1 + TOLERANCE) + TOLERANCE))


def _refusals(yields: Yields, job: PodGroupInfo, queues: Iterable[str]) -> list[Yield] | None:
    """What each queue refuses; None when one may let an eviction pass."""
    refused = [yields(job, queue) for queue in dict.fromkeys(queues)]
    return None if Yield.ANY in refused else refused


def search_hopeless(
    ssn: Session, yields: Yields, job: PodGroupInfo, queues: list[str], pending: list[TaskInfo]
) -> bool:
    """No scenario whose victims come from ``queues`` (every queue the job's victims could come from) can be solved
    for ``job`` and its next ``pending`` tasks: each queue refuses what an eviction takes, and either each refuses
    any victim or moving every victim would leave no room for the pending tasks."""
    refused = _refusals(yields, job, queues)
    if refused is None:
        return False
    return all(answer is Yield.NOTHING for answer in refused) or moves_cannot_place(ssn, pending)


def scenario_hopeless(ssn: Session, yields: Yields, scenario: Scenario) -> bool:
    """The same for one scenario, whose victims come from each of its queues: one queue that refuses any victim is
    enough."""
    if not scenario.victims:
        return False
    refused = _refusals(yields, scenario.preemptor, (ssn.jobs[key].queue for key in scenario.victims))
    if refused is None:
        return False
    return Yield.NOTHING in refused or moves_cannot_place(ssn, scenario.pending_tasks)


class Proofs:
    """The proofs of one evicting action, over its jobs: the queues of the jobs that have both a placed pod (may be
    victims) and a pending one (report fit errors) are read again only after a commit."""

    def __init__(self, ssn: Session, yields: Yields) -> None:
        self.ssn = ssn
        self.yields = yields
        self._seen = -1
        self._waiting: set[str] = set()

    def _waiting_queues(self) -> set[str]:
        ssn = self.ssn
        if self._seen != len(ssn.committed):
            self._seen = len(ssn.committed)
            self._waiting = {job.queue for job in ssn.pending_jobs() if job.has_active_allocated()}
        return self._waiting

    def search(self, job: PodGroupInfo, queues: Iterable[str], pending: list[TaskInfo]) -> bool:
        """``search_hopeless``, unless a victim of ``queues`` may be waiting (module doc)."""
        unique = list(dict.fromkeys(queues))
        if not self._waiting_queues().isdisjoint(unique):
            return False
        return search_hopeless(self.ssn, self.yields, job, unique, pending)

    def scenario(self, scenario: Scenario) -> bool:
        """``scenario_hopeless``, unless one of its victims is waiting (module doc)."""
        if any(self.ssn.jobs[key].has_pending() for key in scenario.victims):
            return False
        return scenario_hopeless(self.ssn, self.yields, scenario)

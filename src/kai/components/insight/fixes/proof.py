"""Whether a change starts a podgroup: the changed run of a what-if (the run ``kai simulate --what-if`` makes of
the same input and changes) for at most a few cycles, watched for the cycle that places the podgroup.

The podgroup starts when a cycle places or pipelines pods of it (to be bound once their victims are gone) and its
gang is then whole (every sub-group's minimum, as the scheduler counts it). Between cycles the world moves on as in
the what-if: the binder binds, evicted pods go, the clock advances one period.
"""

from dataclasses import dataclass

from kai.components.sim.scenario import Scenario
from kai.components.sim.whatif.apply import apply_changes
from kai.components.sim.whatif.changes import ChangeError, Changes
from kai.components.sim.whatif.compare import Assumptions, what_if_simulation
from kai.core.framework.session import Session
from kai.core.state.reason_text import describe


@dataclass(frozen=True)
class Proof:
    started_in: int | None
    """The cycle that placed the podgroup (1 = the next one); None when none of the cycles did."""
    evicted: tuple[str, ...]
    """Pods the scheduler evicted during the run (for this podgroup or another): pods the change disturbs."""
    outcome: str
    """When it did not start: why it still waits at the last cycle (or why the change cannot be made)."""

    @property
    def started(self) -> bool:
        return self.started_in is not None


def prove(scenario: Scenario, changes: Changes, podgroup: str, cycles: int) -> tuple[Proof, Session | None]:
    """Run ``scenario`` changed by ``changes`` for up to ``cycles`` cycles; stop at the one that starts
    ``podgroup``. With the proof, the session of the last cycle run (None when the change cannot be made)."""
    try:
        changed = apply_changes(scenario, changes) if not changes.empty else scenario
    except ChangeError as error:
        return Proof(None, (), f"the change cannot be made: {error}"), None
    sim = what_if_simulation(changed, Assumptions.defaults(scenario, cycles))
    evicted: list[str] = []
    for number in range(1, cycles + 1):
        record = sim.cycle(number)
        session = record.session
        evicted += [eviction.pod_key for eviction in session.result.evictions]
        if starts(session, podgroup):
            return Proof(number, tuple(evicted), ""), session
        if number < cycles:
            sim.advance(record)
    return Proof(None, tuple(evicted), still_waits(session, podgroup)), session


def starts(session: Session, podgroup: str) -> bool:
    """The cycle placed or pipelined pods of ``podgroup`` and its gang is whole."""
    job = session.jobs.get(podgroup)
    if job is None:
        return False
    result = session.result
    placed = any(bind.podgroup_key == podgroup for bind in result.binds)
    return (placed or podgroup in result.pipelined_podgroups()) and job.root.is_min_satisfied()


def still_waits(session: Session, podgroup: str) -> str:
    waits = session.result.unschedulable.get(podgroup)
    if waits is not None and waits.reasons:
        return f"still waits: {describe(waits.reasons[0], session.now)}"
    if waits is not None:
        return f"still waits: {waits.reason}"
    if podgroup not in session.jobs:
        return "its podgroup is not scheduled in the changed run"
    return "still waits (not tried in the cycle)"

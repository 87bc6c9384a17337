"""Changes that may start a waiting podgroup, cheapest first; none is offered before ``proof`` shows it works.

From the podgroup's typed reasons and the cluster it waits in, as a cycle left it (the inspected cycle's session:
what is free is what the jobs ahead of it left; or, to refine a change that did not start it, the session of that
change's last cycle, whose reasons say what held it next): the queue bounds it needs raised (``bounds``), the ways
to make room for it (``room``), and each bound together with each room, where both are missing; all of them on top
of the change being refined. While a queue's limit (or a non-preemptible podgroup's quota) holds it, no room is
tried: the room it needs is known from the run of the change that lifts the bound.

Cost: GPUs changed (quota and limit raised, nodes added), then pods moved, then objects changed. The estimate
orders the search; a proof adds the pods the scheduler itself evicts.
"""

from dataclasses import dataclass

from kai.components.insight.fixes.bounds import HARD_BOUNDS, Raise, bounds
from kai.components.insight.fixes.room import Room, rooms
from kai.components.insight.fixes.walk import walk
from kai.components.insight.inspect import Inspection
from kai.components.sim.whatif.changes import Changes, NodeAddition, QueueChange
from kai.core.framework.session import Session
from kai.core.state.reasons import Reason, ReasonKind

ROOM_KINDS = frozenset({ReasonKind.NODE_FIT, ReasonKind.GPU_SHARING, ReasonKind.GANG_SHORT, ReasonKind.TOPOLOGY})
"""Reasons that say the cycle found no room for a pod."""
UNSEARCHED = frozenset(
    {
        ReasonKind.INVALID_OBJECT,
        ReasonKind.QUEUE_UNUSABLE,
        ReasonKind.TOO_LARGE,
        ReasonKind.GANG_INCOMPLETE,
        ReasonKind.SCHEDULING_GATE,
        ReasonKind.DRA,
        ReasonKind.CONFIG_MAP,
        ReasonKind.PIPELINED,
    }
)
"""Reasons no change of quota, room or nodes can lift: an object to fix, a gate, a pod larger than any node, a
ConfigMap to create…"""


@dataclass(frozen=True)
class Candidate:
    raises: tuple[Raise, ...]
    room: Room

    @property
    def changes(self) -> Changes:
        """The change as ``kai simulate --what-if`` takes it."""
        return Changes(
            queues=[QueueChange(r.queue, (r.resource, r.item), r.new) for r in self.raises],
            add_nodes=[NodeAddition(model, count) for model, count, _ in self.room.added],
            evict_pods=[pod for pod, _ in self.room.moves],
        )

    @property
    def cost(self) -> tuple[float, int, int]:
        """GPUs changed (quota and limit raised, GPUs of nodes added), pods moved, objects changed (queues, nodes
        added, pods moved)."""
        gpus = sum(r.new - r.old for r in self.raises if r.resource == "gpu")
        gpus += sum(count * each for _, count, each in self.room.added)
        objects = len({r.queue for r in self.raises}) + sum(count for _, count, _ in self.room.added)
        return (round(gpus, 6), len(self.room.moves), objects + len(self.room.moves))

    @property
    def text(self) -> str:
        return "; ".join((*(r.text() for r in self.raises), *self.room.texts()))

    def plus(self, raises: tuple[Raise, ...], room: "Room") -> "Candidate":
        """This change and more: bounds raised further (each keeps its first old value), pods moved and nodes added
        besides."""
        merged = {(r.queue, r.resource, r.item): r for r in self.raises}
        for r in raises:
            first = merged.get((r.queue, r.resource, r.item))
            old = first.old if first is not None else r.old
            merged[(r.queue, r.resource, r.item)] = Raise(
                r.queue, r.resource, r.item, old, max(r.new, first.new if first else r.new)
            )
        added: dict[str, tuple[int, float]] = {model: (count, gpus) for model, count, gpus in self.room.added}
        for model, count, gpus in room.added:
            added[model] = (added.get(model, (0, gpus))[0] + count, gpus)
        moves = tuple(dict.fromkeys((*self.room.moves, *room.moves)))
        both = Room(moves, tuple((model, count, gpus) for model, (count, gpus) in added.items()))
        return Candidate(tuple(merged.values()), both)

    def within(self, other: "Candidate") -> bool:
        """Whether ``other`` makes every change this one makes, at least as far (so it is no other way)."""
        bounds = {(r.queue, r.resource, r.item): r.new for r in other.raises}
        added = {model: count for model, count, _ in other.room.added}
        return (
            all(bounds.get((r.queue, r.resource, r.item), -1.0) >= r.new for r in self.raises)
            and all(added.get(model, 0) >= count for model, count, _ in self.room.added)
            and set(self.room.moves) <= set(other.room.moves)
        )


def searchable(reasons: tuple[Reason, ...]) -> Reason | None:
    """The reason that no change of quota, room or nodes can lift, when one holds the podgroup; None otherwise."""
    return next((reason for reason in walk(reasons) if reason.kind in UNSEARCHED), None)


def candidates(ins: Inspection, key: str, reasons: tuple[Reason, ...]) -> list[Candidate]:
    """The candidate changes for the waiting podgroup ``key`` of the inspected cycle, cheapest first."""
    return around(ins, ins.session, key, reasons, Candidate((), Room()))


def around(ins: Inspection, ssn: Session, key: str, reasons: tuple[Reason, ...], base: Candidate) -> list[Candidate]:
    """``base`` and more, from what ``ssn`` (a cycle of the input changed by ``base``) says of ``key``: each bound
    its ``reasons`` name raised, each way to make room, and both; cheapest first (ties by their text)."""
    job = ssn.jobs.get(key)
    if job is None:
        return []
    raised = [raises for raises in bounds(ssn, job, reasons) if raises]
    made: list[Room] = []
    unbounded: list[tuple[Raise, ...]] = []
    if not any(reason.kind in HARD_BOUNDS for reason in walk(reasons)):
        # while a hard bound holds it, what room it needs is known only from the run of the change that lifts it
        made, unbounded = rooms(ins, ssn, job, any(r.kind in ROOM_KINDS for r in walk(reasons))), [()]
    if base.room.moves:
        made = [room for room in made if not room.moves]  # moved pods that came back: more moves chase them
    found: dict[str, Candidate] = {}
    for raises in [*unbounded, *raised]:
        for room in [Room(), *made]:
            if raises or room != Room():
                candidate = base.plus(raises, room)
                found.setdefault(candidate.text, candidate)
    return sorted(found.values(), key=lambda c: (c.cost, c.text))

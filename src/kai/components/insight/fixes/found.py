"""What a fix search found for one waiting podgroup: the fixes proven (each a change as ``kai simulate --what-if``
takes it, the cycle the podgroup starts in, its cost), what was tried and did not start it, what was not tried,
and what ran out. The one form a fix takes in the view (``view.PendingView.fixes``): ``kai explain``, ``kai queues``,
``kai simulate`` and their JSON all tell it from here, in the same words.
"""

from dataclasses import dataclass, field
from typing import Any

from kai.components.insight.fixes.candidates import Candidate
from kai.components.insight.fixes.proof import Proof
from kai.core.state.reason_text import describe
from kai.core.state.reasons import Reason

DEFAULT_SECONDS = 10.0
"""Time for the whole search of one command: about ten proofs at 500 nodes (bench/explain_bench.py)."""
DEFAULT_CANDIDATES = 12
"""Candidates proven at most per podgroup."""
FIXES = 3
"""Proven fixes enough to stop at (a listing, which shows one, stops at the first)."""


@dataclass(frozen=True)
class Budget:
    seconds: float = DEFAULT_SECONDS
    candidates: int = DEFAULT_CANDIDATES
    fixes: int = FIXES


@dataclass(frozen=True)
class ProvenFix:
    candidate: Candidate
    proof: Proof

    @property
    def text(self) -> str:
        return self.candidate.text

    @property
    def cost(self) -> tuple[float, int, int]:
        """The candidate's cost with the pods the scheduler evicted in its run counted as disturbed."""
        gpus, pods, objects = self.candidate.cost
        return (gpus, pods + len(self.proof.evicted), objects)


@dataclass
class FixSearch:
    """What the search found for one podgroup."""

    podgroup: str
    cycles: int
    """Cycles each proof ran at most (``kai simulate --what-if … --cycles``)."""
    budget: Budget
    held_by: Reason | None = None
    """A reason no change of quota, room or nodes can lift (nothing was searched)."""
    starts_anyway: int | None = None
    """The cycle the podgroup starts in with no change at all (nothing was searched)."""
    proven: list[ProvenFix] = field(default_factory=list)
    failed: list[tuple[Candidate, Proof]] = field(default_factory=list)
    not_tried: list[Candidate] = field(default_factory=list)
    ran_out: str | None = None
    """"time" or "candidates" when the budget ended the search before every candidate was tried."""
    seconds: float = 0.0

    @property
    def unreached(self) -> bool:
        """The deadline came before any change was tried (others took the budget)."""
        return self.ran_out == "time" and not self.failed and not self.proven


def summary(found: FixSearch, now: float) -> str:
    """One line: what was found, or honestly why nothing is offered."""
    if found.held_by is not None:
        return f"none searched: no change of quota, room or nodes starts it while {describe(found.held_by, now)}"
    if found.starts_anyway is not None:
        return f"no change needed: it starts in cycle {found.starts_anyway} of a what-if run as it is"
    if found.proven:
        count = len(found.proven)
        each = "it" if count == 1 else "each"
        return f"{count} proven: with {each}, a what-if run of this input starts it in the next cycles"
    tried, left, seconds = len(found.failed), len(found.not_tried), found.budget.seconds
    if not tried and not left:
        return "no proven fix: kai found no change of quota, room or nodes to try"
    more = "a longer --fix-budget" if found.ran_out == "time" else "a larger --fix-candidates"
    if not tried:
        return f"no proven fix: no change could be tried within {seconds:g} s ({left} found; {more} tries them)"
    within = f"tried within {seconds:g} s" if found.ran_out == "time" else f"of the {tried} tried"
    rest = f" ({left} more not tried: {more} tries them)" if left else ""
    return f"no proven fix: no change of quota, room or nodes {within} starts it{rest}"


def brief(found: FixSearch) -> str:
    """A few words for a listing's cell: the cheapest proven fix, else what the search came to ("" when it was
    held by a reason no change lifts: the reason's need is told instead)."""
    if found.proven:
        return f"{found.proven[0].text} (proven)"
    if found.held_by is not None:
        return ""
    if found.starts_anyway is not None:
        return f"none needed: starts in cycle {found.starts_anyway}"
    if found.unreached:
        return "not searched: the --fix-budget ran out"
    return "none proven (kai explain: what was tried)"


def as_json(found: FixSearch, now: float) -> dict[str, Any]:
    budget = found.budget
    return {
        "summary": summary(found, now),
        "cycles": found.cycles,
        "startsWithoutChange": found.starts_anyway,
        "proven": [
            {
                "text": fix.text,
                "changes": fix.candidate.changes.as_document(),
                "startsInCycle": fix.proof.started_in,
                "cost": _cost(fix.cost),
                "evicted": list(fix.proof.evicted),
            }
            for fix in found.proven
        ],
        "tried": [
            {"text": candidate.text, "changes": candidate.changes.as_document(), "outcome": proof.outcome}
            for candidate, proof in found.failed
        ],
        "notTried": [candidate.text for candidate in found.not_tried],
        "ranOut": found.ran_out,
        "seconds": round(found.seconds, 3),
        "budget": {"seconds": budget.seconds, "candidates": budget.candidates},
    }


def _cost(cost: tuple[float, int, int]) -> dict[str, Any]:
    gpus, pods, objects = cost
    return {"gpus": gpus, "podsDisturbed": pods, "objects": objects}

"""The search for proven fixes of a waiting podgroup, within a budget of time and candidates.

First the input as it is: a podgroup that starts within the cycles anyway needs no fix. Then the candidates,
cheapest first, each proven on its own run, until a few are proven or the budget runs out (the time budget is one
deadline for everything a command asks: several podgroups of one workload share it). A change that does not start
it is refined from what held the podgroup in its run (the next bound in the way, room still missing): the refined
changes join the others, in cost order. A candidate that makes every change of a fix already proven, and more, is
no other way to start it: it is skipped. Each proof runs in a child process that is stopped at the deadline (a
cycle's victim search can take long, and nothing inside a cycle can be interrupted), so the budget holds. The
proven fixes are ranked by
their cost with the pods the scheduler evicted in their runs counted as disturbed; what did not work, and what
was not tried, is kept so that "none found" can say what was tried.
"""

import multiprocessing
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from typing import Any, TypeVar

from kai.components.insight.fixes.candidates import Candidate, around, candidates, searchable
from kai.components.insight.fixes.proof import Proof, prove
from kai.components.insight.fixes.room import Room
from kai.components.insight.inspect import Inspection
from kai.core.state.reason_text import describe
from kai.core.state.reasons import Reason

DEFAULT_SECONDS = 10.0
"""Time for the whole search of one command: about ten proofs at 500 nodes (bench/explain_bench.py)."""
DEFAULT_CANDIDATES = 12
"""Candidates proven at most per podgroup."""
FIXES = 3
"""Proven fixes enough to stop at."""
T = TypeVar("T")
Trial = tuple[Proof, list[Candidate]]
"""A candidate's proof, and the candidates refined from its run when it did not start the podgroup."""


class ProofFailed(RuntimeError):
    """A proof's run raised (a kai bug): the message names the error."""


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
    def cost(self) -> tuple[float, int, int]:
        gpus, pods, objects = self.candidate.cost
        return (gpus, pods + len(self.proof.evicted), objects)


@dataclass
class FixSearch:
    """What the search found for one podgroup."""

    podgroup: str
    cycles: int
    """Cycles each proof ran at most (``kai simulate --what-if … --cycles``)."""
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


class FixFinder:
    """Searches the inspected input for proven fixes, sharing one deadline across the podgroups asked about."""

    def __init__(self, ins: Inspection, budget: Budget, clock: Callable[[], float] = time.monotonic) -> None:
        self.ins = ins
        self.budget = budget
        self.clock = clock
        self.deadline = clock() + budget.seconds
        self.cycles = len(ins.cycles) + 1
        """The inspected cycles and one more: the next cycle, and the one after it (pipelined pods bind)."""

    def search(self, key: str, reasons: tuple[Reason, ...]) -> FixSearch:
        started = self.clock()
        found = FixSearch(key, self.cycles)
        found.held_by = searchable(reasons)
        if found.held_by is not None:
            return found
        base = self._trial(key, Candidate((), Room()))
        if base is not None and base[0].started:
            found.starts_anyway = base[0].started_in
            found.seconds = self.clock() - started
            return found
        queue = candidates(self.ins, key, reasons)
        seen = {candidate.text for candidate in queue}
        while queue:
            if len(found.proven) >= self.budget.fixes:
                break
            if len(found.proven) + len(found.failed) >= self.budget.candidates:
                found.ran_out = "candidates"
                break
            if base is None or self.clock() >= self.deadline:
                found.ran_out = "time"
                break
            candidate = queue.pop(0)
            if any(fix.candidate.within(candidate) for fix in found.proven):
                continue
            trial = self._trial(key, candidate)
            if trial is None:
                found.ran_out = "time"
                queue.insert(0, candidate)
                break
            proof, refined = trial
            if proof.started:
                found.proven.append(ProvenFix(candidate, proof))
                continue
            found.failed.append((candidate, proof))
            refined = [c for c in refined if c.text not in seen]
            seen.update(c.text for c in refined)
            queue = sorted([*queue, *refined], key=lambda c: (c.cost, c.text))
        found.not_tried = queue if found.ran_out else []
        found.proven.sort(key=lambda fix: (fix.cost, fix.candidate.text))
        found.seconds = self.clock() - started
        return found

    def _trial(self, key: str, candidate: Candidate) -> Trial | None:
        """The candidate proven (None when the deadline came first); a failed run's own reasons refine it."""

        def run() -> Trial:
            proof, session = prove(self.ins.scenario, candidate.changes, key, self.cycles)
            if proof.started or session is None:
                return proof, []
            waits = session.result.unschedulable.get(key)
            return proof, around(self.ins, session, key, waits.reasons if waits is not None else (), candidate)

        try:
            return within(self.deadline - self.clock(), run)
        except ProofFailed as error:
            return Proof(None, (), f"kai failed to run it ({error}); please report it"), []


def within(seconds: float, work: Callable[[], T]) -> T | None:
    """``work()`` in a forked child process, its answer sent back; None when none came within ``seconds`` (the
    child is then killed). ``ProofFailed`` when it raised."""
    context = multiprocessing.get_context("fork")
    reader, writer = context.Pipe(duplex=False)
    child = context.Process(target=_answer, args=(work, writer), daemon=True)
    child.start()
    writer.close()
    try:
        if not reader.poll(max(seconds, 0.0)):
            return None
        failed, answer = reader.recv()
    except EOFError:
        failed, answer = True, f"its process ended with code {child.exitcode}"
    finally:
        reader.close()
        child.kill()
        child.join()
    if failed:
        raise ProofFailed(answer)
    return answer  # type: ignore[no-any-return]


def _answer(work: Callable[[], Any], writer: Connection) -> None:
    try:
        answer = (False, work())
    except Exception as error:  # a kai bug: the parent tells it as the outcome of that candidate
        answer = (True, f"{type(error).__name__}: {error}")
    writer.send(answer)
    writer.close()


def summary(found: FixSearch, budget: Budget, now: float) -> str:
    """One line: what was found, or honestly why nothing is offered."""
    if found.held_by is not None:
        return f"none searched: no change of quota, room or nodes starts it while {describe(found.held_by, now)}"
    if found.starts_anyway is not None:
        return f"no change needed: it starts in cycle {found.starts_anyway} of a what-if run as it is"
    if found.proven:
        count = len(found.proven)
        each = "it" if count == 1 else "each"
        return f"{count} proven: with {each}, a what-if run of this input starts it in the next cycles"
    tried, left = len(found.failed), len(found.not_tried)
    if not tried and not left:
        return "no proven fix: kai found no change of quota, room or nodes to try"
    more = "a longer --fix-budget" if found.ran_out == "time" else "a larger --fix-candidates"
    if not tried:
        return f"no proven fix: no change could be tried within {budget.seconds:g} s ({left} found; {more} tries them)"
    within = f"tried within {budget.seconds:g} s" if found.ran_out == "time" else f"of the {tried} tried"
    rest = f" ({left} more not tried: {more} tries them)" if left else ""
    return f"no proven fix: no change of quota, room or nodes {within} starts it{rest}"


def as_json(found: FixSearch, budget: Budget, now: float) -> dict[str, Any]:
    return {
        "summary": summary(found, budget, now),
        "cycles": found.cycles,
        "startsWithoutChange": found.starts_anyway,
        "proven": [
            {
                "text": fix.candidate.text,
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

"""The search for proven fixes of a waiting podgroup, within a budget of time and candidates.

First the input as it is: a podgroup that starts within the cycles anyway needs no fix. Then the candidates,
cheapest first, each proven on its own run, until a few are proven or the budget runs out (the time budget is one
deadline for everything a command asks: several podgroups of one workload share it). A change that does not start
it is refined from what held the podgroup in its run (the next bound in the way, room still missing): the refined
changes join the others, in cost order. A candidate that makes every change of a fix already proven, and more, is
no other way to start it: it is skipped. Each proof runs in a child process that is stopped at the deadline (a
cycle's victim search can take long, and nothing inside a cycle can be interrupted), so the budget holds. The
proven fixes are ranked by their cost with the pods the scheduler evicted in their runs counted as disturbed; what
did not work, and what was not tried, is kept so that "none found" can say what was tried (``found``).
"""

import multiprocessing
import time
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any, TypeVar

from kai.components.insight.fixes.candidates import Candidate, around, candidates, searchable
from kai.components.insight.fixes.found import Budget, FixSearch, ProvenFix
from kai.components.insight.fixes.proof import Proof, prove
from kai.components.insight.fixes.room import Room
from kai.components.insight.inspect import Inspection
from kai.core.state.reasons import Reason

T = TypeVar("T")
Trial = tuple[Proof, list[Candidate]]
"""A candidate's proof, and the candidates refined from its run when it did not start the podgroup."""


class ProofFailed(RuntimeError):
    """A proof's run raised (a kai bug): the message names the error."""


class FixFinder:
    """Searches the inspected input for proven fixes, sharing one deadline across the podgroups asked about."""

    def __init__(
        self,
        ins: Inspection,
        budget: Budget,
        clock: Callable[[], float] = time.monotonic,
        deadline: float | None = None,
    ) -> None:
        """``deadline`` (on ``clock``): when the command's search ends, if it began before this inspection (several
        files); by default the budget's seconds from now."""
        self.ins = ins
        self.budget = budget
        self.clock = clock
        self.deadline = deadline if deadline is not None else clock() + budget.seconds
        self.cycles = len(ins.cycles) + 1
        """The inspected cycles and one more: the next cycle, and the one after it (pipelined pods bind)."""

    def search(self, key: str, reasons: tuple[Reason, ...]) -> FixSearch:
        started = self.clock()
        found = FixSearch(key, self.cycles, self.budget)
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

"""Time budgets of the victim search (KAI's ActionSearchBudget): an action's deadline, a slice of it per pending
job (at least the guaranteed minimum), and a slice of that per scenario generator.

Time comes from the session's clock, so the core stays pure: the scheduler passes a monotonic clock, and a
simulation's frozen clock never runs a budget out.
"""

import math
from collections.abc import Callable

from kai.core.framework.config import SearchBudgets

Clock = Callable[[], float]


class Deadline:
    __slots__ = ("clock", "end")

    def __init__(self, seconds: float, clock: Clock) -> None:
        """``seconds`` from now; ``math.inf`` never ends."""
        self.clock = clock
        self.end = clock() + max(seconds, 0.0)

    def remaining(self) -> float:
        return max(self.end - self.clock(), 0.0)

    def exhausted(self) -> bool:
        return self.remaining() <= 0


class GeneratorBudget(Deadline):
    __slots__ = ()


class JobBudget(Deadline):
    __slots__ = ("budgets", "reduced")

    def __init__(self, seconds: float, clock: Clock, budgets: SearchBudgets, reduced: bool) -> None:
        super().__init__(seconds, clock)
        self.budgets = budgets
        self.reduced = reduced
        """The action had less left than a job's full budget (the ``reduced_budget`` metric label)."""

    def begin_generator(self, name: str) -> GeneratorBudget:
        limit = self.budgets.generator_limit(name)
        remaining = self.remaining()
        return GeneratorBudget(min(remaining, limit) if limit else remaining, self.clock)


class ActionBudget(Deadline):
    __slots__ = ("budgets",)

    def __init__(self, budgets: SearchBudgets, action: str, clock: Clock) -> None:
        limit = budgets.action_limit(action)
        super().__init__(limit if limit else math.inf, clock)
        self.budgets = budgets

    def begin_job(self) -> JobBudget:
        left = self.remaining()
        job_limit = self.budgets.job_s
        seconds = min(left, job_limit) if job_limit else left
        seconds = max(seconds, self.budgets.min_job_s)
        return JobBudget(seconds, self.clock, self.budgets, bool(job_limit) and left < job_limit)

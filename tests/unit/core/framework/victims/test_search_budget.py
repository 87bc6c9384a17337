"""Search budgets on an injected clock: an action's budget, a job's share of what is left (at least its minimum), a
generator's share of the job's; 0 is unlimited."""

import math

from kai.core.framework.config import SearchBudgets
from kai.core.framework.victims.search_budget import ActionBudget


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_job_gets_its_budget_or_what_the_action_has_left_and_its_generators_theirs() -> None:
    clock = Clock()
    budgets = SearchBudgets(action_s={"preempt": 300.0}, job_s=240.0, generator_s={"NodeLocalGreedy": 30.0})
    action = ActionBudget(budgets, "preempt", clock)
    job = action.begin_job()
    assert (job.remaining(), job.reduced) == (240.0, False)
    assert job.begin_generator("NodeLocalGreedy").remaining() == 30.0
    assert job.begin_generator("MultiNodeGang").remaining() == 120.0
    clock.now += 200
    late = action.begin_job()
    assert (late.remaining(), late.reduced) == (100.0, True)
    clock.now += 100
    assert action.exhausted() and late.exhausted()


def test_zero_is_unlimited_and_the_minimum_holds_when_the_action_is_spent() -> None:
    clock = Clock()
    unlimited = ActionBudget(SearchBudgets(action_s={"default": 0.0}, job_s=0.0), "reclaim", clock)
    assert unlimited.remaining() == math.inf and unlimited.begin_job().remaining() == math.inf
    spent = ActionBudget(SearchBudgets(action_s={"default": 1.0}, min_job_s=5.0), "reclaim", clock)
    clock.now += 10
    assert spent.exhausted() and spent.begin_job().remaining() == 5.0

"""The simulation's clock: the scheduler's ``now`` and every component's, advanced by a period between cycles.

A scenario's clock is frozen at its ``now`` (scenario-format.md §2), as KAI's table tests are; with a period
(``kai simulate --period``, the scenario's ``clock`` block) time moves on after every cycle, so min-runtime,
preemption delay, staleness and time-based fair share play out over simulated hours.
"""

import math
from dataclasses import dataclass, field


@dataclass
class SimClock:
    now: float
    period_s: float = 0.0
    """Simulated seconds between two cycles; 0 keeps the clock frozen."""
    start: float = field(init=False)

    def __post_init__(self) -> None:
        self.start = self.now

    @property
    def running(self) -> bool:
        return self.period_s > 0

    @property
    def elapsed_s(self) -> float:
        return self.now - self.start

    def tick(self) -> None:
        """Time passes from one cycle to the next."""
        self.now += self.period_s

    def cycles_for(self, duration_s: float) -> int:
        """How many cycles cover ``duration_s`` of simulated time (at least one)."""
        return max(1, math.ceil(duration_s / self.period_s - 1e-9)) if self.running else 1

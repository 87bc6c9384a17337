"""The fix search on the command line: ``--fix-budget`` and ``--fix-candidates`` for every command that shows fixes
(``kai explain``, ``kai queues QUEUE``, ``kai simulate``), and the search they give the view (``pending.Prove``)."""

import time
from collections.abc import Callable
from typing import Any, TypeVar

import click

from kai.components.insight.fixes.found import DEFAULT_CANDIDATES, DEFAULT_SECONDS, Budget
from kai.components.insight.fixes.search import FixFinder
from kai.components.insight.inspect import Inspection
from kai.components.insight.pending import Prove

F = TypeVar("F", bound=Callable[..., Any])
LISTED_FIXES = 1
"""A listing (a row per waiting podgroup) shows one fix: its search stops at the first proven, leaving the budget
to the rows after it."""


def fix_options(command: F) -> F:
    command = click.option(
        "--fix-candidates",
        type=click.IntRange(min=0),
        default=DEFAULT_CANDIDATES,
        show_default=True,
        help="Candidate changes to prove at most, per podgroup.",
    )(command)
    return click.option(
        "--fix-budget",
        type=click.FloatRange(min=0),
        default=DEFAULT_SECONDS,
        show_default=True,
        help="Seconds to search for proven fixes, all podgroups together (each candidate change is proven by a "
        "what-if run; 0: no search).",
    )(command)


def fix_search(
    ins: Inspection, seconds: float, candidates: int, listing: bool = False, deadline: float | None = None
) -> Prove | None:
    """The search for the waiting podgroups of ``ins``: one deadline for them all (``deadline``, on
    ``time.monotonic``, when the command began it before: several files). None when the budget is 0, or when the
    input's clock runs: a fix is proven from the input's start, and the view is of a later moment."""
    if not seconds or not candidates or ins.scenario.clock.period_s:
        return None
    budget = Budget(seconds, candidates, LISTED_FIXES) if listing else Budget(seconds, candidates)
    return FixFinder(ins, budget, deadline=deadline).search


def deadline(seconds: float) -> float:
    """The end of a search of ``seconds`` begun now, for ``fix_search``."""
    return time.monotonic() + seconds

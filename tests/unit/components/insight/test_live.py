"""A live cluster as a scenario."""

import time

from kai.components.insight.live import as_scenario
from kai.core.config import parse_config


def test_a_live_cluster_s_dry_cycle_searches_on_the_scheduler_s_clock() -> None:
    """So that its victim search ends at the scheduler's budgets (scenarioSearchBudgets), not never."""
    assert as_scenario({}, parse_config({}), 0.0, "the cluster").search_timer is time.perf_counter

"""The cluster state machine (``cluster_machine``) in CI: a few hundred derandomised examples."""

import pytest
from cluster_machine import ClusterMachine
from hypothesis import HealthCheck, settings

pytestmark = pytest.mark.slow  # run by `make test` (`make properties`), not by `make unit`

ClusterMachine.TestCase.settings = settings(
    max_examples=200,
    stateful_step_count=20,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
test_many_cycles_keep_the_invariants = ClusterMachine.TestCase

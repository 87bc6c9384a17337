"""Leader election's checks that need no server (its behaviour on a real Lease is in tests/e2e/kube)."""

import pytest

from kai.cluster.kube.leader import LeaderElector, micro_time


def test_lease_times_are_rfc3339_with_microseconds():
    assert micro_time(1_800_000_000.25) == "2027-01-15T08:00:00.250000Z"


@pytest.mark.parametrize(("duration", "deadline", "period"), [(10, 10.0, 2.0), (15, 10.0, 10.0), (15, 10.0, 0.0)])
def test_timings_must_leave_room_to_renew(duration, deadline, period):
    with pytest.raises(ValueError, match="0 < retry_period_s < renew_deadline_s < lease_duration_s"):
        LeaderElector(
            None,  # type: ignore[arg-type]
            namespace="n",
            name="l",
            identity="i",
            lease_duration_s=duration,
            renew_deadline_s=deadline,
            retry_period_s=period,
        )

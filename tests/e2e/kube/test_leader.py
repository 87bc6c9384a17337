"""Leader election on a real coordination.k8s.io/v1 Lease."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest
from kube_support import unique, wait_until

from kai.cluster.kube import KubeCluster, LeaderElector


class Clock:
    """A clock the test moves by hand (POSIX seconds)."""

    def __init__(self, now: float = 1_800_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def cluster(control_plane) -> Iterator[KubeCluster]:
    with KubeCluster.from_kubeconfig(control_plane.kubeconfig_path, component="kai-e2e") as client:
        yield client


def lease_spec(cluster: KubeCluster, key: str) -> dict:
    lease = cluster.get("Lease", key)
    assert lease is not None
    return lease["spec"]


class Tally:
    """Counts leadership callbacks per elector (they run on the electors' threads)."""

    def __init__(self) -> None:
        self.started: list[str] = []
        self.stopped: list[str] = []
        self._lock = threading.Lock()

    def elector(self, cluster: KubeCluster, namespace: str, lease: str, identity: str) -> LeaderElector:
        def started() -> None:
            with self._lock:
                self.started.append(identity)

        def stopped() -> None:
            with self._lock:
                self.stopped.append(identity)

        return LeaderElector(
            cluster,
            namespace=namespace,
            name=lease,
            identity=identity,
            lease_duration_s=3,
            renew_deadline_s=2.0,
            retry_period_s=0.1,
            on_started_leading=started,
            on_stopped_leading=stopped,
        )


def test_of_two_candidates_exactly_one_leads_and_the_other_takes_over_when_it_stops(cluster, namespace):
    lease = unique("kai-scheduler")
    tally = Tally()
    a = tally.elector(cluster, namespace, lease, "replica-a")
    b = tally.elector(cluster, namespace, lease, "replica-b")
    a.start()
    b.start()
    try:
        first = wait_until("a leader", lambda: tally.started[:1])[0]
        leader, follower = (a, b) if first == "replica-a" else (b, a)

        def renewed() -> dict | None:
            spec = lease_spec(cluster, f"{namespace}/{lease}")
            return spec if spec["renewTime"] != spec["acquireTime"] else None

        spec = wait_until("a renewal", renewed)
        assert spec["holderIdentity"] == leader.identity
        assert (leader.is_leader, follower.is_leader, spec["leaseTransitions"]) == (True, False, 0)

        leader.stop()
        assert tally.stopped == [leader.identity]
        wait_until("the follower to take over", lambda: follower.is_leader)
        spec = lease_spec(cluster, f"{namespace}/{lease}")
        assert (spec["holderIdentity"], spec["leaseTransitions"]) == (follower.identity, 1)
        assert tally.started == [leader.identity, follower.identity]
    finally:
        a.stop()
        b.stop()
    assert tally.stopped == [leader.identity, follower.identity]
    assert "holderIdentity" not in lease_spec(cluster, f"{namespace}/{lease}")  # released on stop


def test_a_lease_whose_holder_stopped_renewing_is_taken_over_only_once_it_expires(cluster, namespace):
    """Stepped by hand on a fake clock: replica-a crashes (no release); replica-b waits out the lease duration,
    measured from when it last saw the Lease change."""
    clock = Clock()
    lease = unique("kai-binder")
    key = f"{namespace}/{lease}"

    def elector(identity: str) -> LeaderElector:
        return LeaderElector(
            cluster, namespace=namespace, name=lease, identity=identity, lease_duration_s=15, clock=clock
        )

    a, b = elector("replica-a"), elector("replica-b")
    assert a.try_acquire_or_renew() is True  # created
    acquired = lease_spec(cluster, key)
    assert (acquired["holderIdentity"], acquired["leaseTransitions"], acquired["leaseDurationSeconds"]) == (
        "replica-a",
        0,
        15,
    )
    assert b.try_acquire_or_renew() is False

    clock.now += 5
    assert a.try_acquire_or_renew() is True  # renewed
    renewed = lease_spec(cluster, key)
    assert renewed["acquireTime"] == acquired["acquireTime"]
    assert renewed["renewTime"] > acquired["renewTime"]
    assert b.try_acquire_or_renew() is False  # b sees the renewal now

    clock.now += 14  # then replica-a crashes: 14 s without a change, the lease (15 s) still holds
    assert b.try_acquire_or_renew() is False
    clock.now += 1
    assert b.try_acquire_or_renew() is True
    taken = lease_spec(cluster, key)
    assert (taken["holderIdentity"], taken["leaseTransitions"]) == ("replica-b", 1)
    assert a.try_acquire_or_renew() is False  # a is back, but b holds a fresh lease

"""Leader election on a coordination.k8s.io/v1 Lease, so that each singleton component runs once (docs/architecture.md
§8).

client-go's algorithm (``tools/leaderelection``): every ``retry_period_s`` a candidate reads the Lease and

- creates it, holding it, when there is none;
- takes it over when its holder is empty (released) or has not renewed for ``leaseDurationSeconds``: expiry is
  measured from when *this* candidate last saw the record change, on its own clock, so clocks need not agree;
- renews it (``renewTime``) when it is the holder.

Every write is a PUT carrying the resourceVersion it read, so of two candidates racing for one Lease exactly one
wins (the other gets 409 Conflict). A leader that cannot renew for ``renew_deadline_s`` stops leading; on ``stop``
it releases the Lease (empty holder) so a successor takes over at once instead of after the lease duration.

Callbacks run on the elector's thread, between two attempts: they must return promptly (start work elsewhere).
The clock is injectable (``clock``: POSIX seconds) so tests can expire a lease without waiting for it.
"""

import logging
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from kai.cluster.kube.client import KubeCluster
from kai.cluster.kube.errors import AlreadyExists, ApiError, Conflict
from kai.cluster.port import Raw

log = logging.getLogger(__name__)


def micro_time(seconds: float) -> str:
    """A Lease's MicroTime: RFC 3339 with microseconds."""
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _nothing() -> None:
    return None


class LeaderElector:
    """Campaigns for the Lease ``namespace/name`` as ``identity``; see the module docstring."""

    def __init__(
        self,
        cluster: KubeCluster,
        *,
        namespace: str,
        name: str,
        identity: str,
        lease_duration_s: int = 15,
        renew_deadline_s: float = 10.0,
        retry_period_s: float = 2.0,
        on_started_leading: Callable[[], None] = _nothing,
        on_stopped_leading: Callable[[], None] = _nothing,
        release_on_stop: bool = True,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if not 0 < retry_period_s < renew_deadline_s < lease_duration_s:
            raise ValueError("leader election needs 0 < retry_period_s < renew_deadline_s < lease_duration_s")
        self.key = f"{namespace}/{name}"
        self.identity = identity
        self._cluster = cluster
        self._namespace, self._name = namespace, name
        self._lease_duration_s = lease_duration_s
        self._renew_deadline_s = renew_deadline_s
        self._retry_period_s = retry_period_s
        self._on_started = on_started_leading
        self._on_stopped = on_stopped_leading
        self._release_on_stop = release_on_stop
        self._clock = clock
        self._observed: Raw | None = None  # the Lease spec last read, and when (on our clock) it last changed
        self._observed_at = 0.0
        self._last_renewal = 0.0
        self._leading = False
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def is_leader(self) -> bool:
        return self._leading

    @property
    def holder(self) -> str:
        """Who held the Lease when it was last read ("" before the first read)."""
        return str((self._observed or {}).get("holderIdentity") or "")

    def start(self) -> None:
        self._stopping.clear()
        self._thread = threading.Thread(target=self._run, name=f"kai-leader-{self._name}", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stops campaigning; a leader releases the Lease (unless ``release_on_stop`` is off) and is told it stopped."""
        self._stopping.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def try_acquire_or_renew(self) -> bool:
        """One attempt: True if this candidate holds the Lease afterwards."""
        now = self._clock()
        lease = self._cluster.get("Lease", self.key)
        if lease is None:
            return self._create(now)
        spec: Raw = lease.get("spec") or {}
        if spec != self._observed:
            self._observed, self._observed_at = spec, now
        holder = spec.get("holderIdentity") or ""
        duration = spec.get("leaseDurationSeconds") or self._lease_duration_s
        if holder and holder != self.identity and now < self._observed_at + duration:
            return False
        mine = holder == self.identity
        new_spec: Raw = {
            "holderIdentity": self.identity,
            "leaseDurationSeconds": self._lease_duration_s,
            "acquireTime": spec.get("acquireTime") if mine else micro_time(now),
            "renewTime": micro_time(now),
            "leaseTransitions": int(spec.get("leaseTransitions") or 0) + (0 if mine else 1),
        }
        return self._write(lease, new_spec, now)

    def _create(self, now: float) -> bool:
        spec: Raw = {
            "holderIdentity": self.identity,
            "leaseDurationSeconds": self._lease_duration_s,
            "acquireTime": micro_time(now),
            "renewTime": micro_time(now),
            "leaseTransitions": 0,
        }
        try:
            self._cluster.create(
                "Lease", {"metadata": {"namespace": self._namespace, "name": self._name}, "spec": spec}
            )
        except AlreadyExists:
            return False
        self._observed, self._observed_at = spec, now
        return True

    def _write(self, lease: Raw, spec: Raw, now: float) -> bool:
        try:
            written = self._cluster.update("Lease", {**lease, "spec": spec})
        except Conflict:
            return False
        self._observed, self._observed_at = written.get("spec") or spec, now
        return True

    def _release(self) -> None:
        lease = self._cluster.get("Lease", self.key)
        if lease is None or (lease.get("spec") or {}).get("holderIdentity") != self.identity:
            return
        now = self._clock()
        spec: dict[str, Any] = {
            "leaseDurationSeconds": 1,
            "acquireTime": micro_time(now),
            "renewTime": micro_time(now),
            "leaseTransitions": int((lease.get("spec") or {}).get("leaseTransitions") or 0),
        }
        self._write(lease, spec, now)

    def _attempt(self) -> bool:
        try:
            return self.try_acquire_or_renew()
        except ApiError as e:
            log.warning("leader election on Lease %s: %s", self.key, e)
            return False

    def _run(self) -> None:
        while not self._stopping.is_set():
            acquired = self._attempt()
            now = self._clock()
            if acquired:
                self._last_renewal = now
                if not self._leading:
                    self._leading = True
                    log.info("%s leads (Lease %s)", self.identity, self.key)
                    self._notify(self._on_started)
            elif self._leading and now - self._last_renewal >= self._renew_deadline_s:
                self._leading = False
                log.warning(
                    "%s lost the Lease %s (no renewal for %.1fs)", self.identity, self.key, now - self._last_renewal
                )
                self._notify(self._on_stopped)
            self._stopping.wait(self._retry_period_s)
        if self._leading:
            if self._release_on_stop:
                try:
                    self._release()
                except ApiError as e:
                    log.warning("releasing the Lease %s: %s", self.key, e)
            self._leading = False
            self._notify(self._on_stopped)

    def _notify(self, callback: Callable[[], None]) -> None:
        try:
            callback()
        except Exception:
            log.exception("leader election callback %r failed", callback)
